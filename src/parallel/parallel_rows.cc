// Row-parallel loops (see parallel_rows.h).
#include "parallel/parallel_rows.h"

#include <algorithm>
#include <atomic>

#include "parallel/thread_pool.h"

namespace hanpu {

void parallel_rows(int threads, int64_t rows, int64_t row_cost,
                   const std::function<void(int64_t, int64_t)>& fn) {
  if (rows <= 0) return;
  constexpr int64_t kMinPooledWork = int64_t{1} << 16;
  constexpr int64_t kMaxGrainWork = int64_t{1} << 17;  // see min_grain below
  if (threads == 1 || rows == 1 || rows * std::max<int64_t>(row_cost, 1) < kMinPooledWork) {
    fn(0, rows);
    return;
  }
  ThreadPool& pool = ThreadPool::shared(threads);
  // Each worker first runs a fixed share, together 7/8 of the rows; the last eighth is dealt
  // in guided ranges: each claim takes half of an even share of what is left, down to
  // 1 / (8 workers) of the rows, so the ranges shrink towards the end and the workers finish
  // together (a decode step's ~100 calls each ended waiting on one worker's last range), and
  // a core slowed by other load takes less of the tail. Every claim costs a hand-over of the
  // counter between cores and restarts a quantized kernel's row streams: with all rows dealt
  // guided down to 1 / (32 workers), the decode's 1024-row projections read their weights at
  // 42-49 GB/s, with the fixed shares at 51-55, and with the tail's claims no smaller than
  // 1 / (8 workers) at 56-57 in three rounds of four (docs/journal, 2026-12-06). The smallest
  // claim is also held to about kMaxGrainWork operations (a hundred 1280-wide rows): a large
  // projection's 1 / (8 workers) (an LM head's is megabytes, five experts' gate/up a few
  // hundred KB) left the other core idle at the end; the cap took a Kimi decode's summed
  // wait for the last core from 0.54-0.65 to 0.34-0.44 ms a step (docs/journal, 2026-12-06,
  // "Seventh session").
  const int64_t workers = static_cast<int64_t>(pool.size());
  const int64_t min_grain = std::max<int64_t>(
      1, std::min(rows / (8 * workers), kMaxGrainWork / std::max<int64_t>(row_cost, 1)));
  const int64_t share = rows * 7 / (8 * workers);
  std::atomic<int64_t> next{share * workers};
  pool.run_on_all([&](int w) {
    if (share > 0) fn(w * share, (w + 1) * share);
    int64_t r0 = next.load(std::memory_order_relaxed);
    while (r0 < rows) {
      const int64_t take = std::max(min_grain, (rows - r0) / (2 * workers));
      if (!next.compare_exchange_weak(r0, r0 + take, std::memory_order_relaxed)) continue;
      fn(r0, std::min(rows, r0 + take));
      r0 = next.load(std::memory_order_relaxed);
    }
  });
}

void parallel_rows_aligned(int threads, int64_t rows, int64_t align, int64_t row_cost,
                           const std::function<void(int64_t, int64_t)>& fn) {
  if (align <= 1) return parallel_rows(threads, rows, row_cost, fn);
  parallel_rows(threads, (rows + align - 1) / align, row_cost * align,
                [&](int64_t u0, int64_t u1) { fn(u0 * align, std::min(rows, u1 * align)); });
}

}  // namespace hanpu
