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
  if (threads == 1 || rows == 1 || rows * std::max<int64_t>(row_cost, 1) < kMinPooledWork) {
    fn(0, rows);
    return;
  }
  ThreadPool& pool = ThreadPool::shared(threads);
  // About 8 ranges per worker: few enough that claiming costs nothing, enough to even out.
  const int64_t grain = std::max<int64_t>(1, rows / (8 * static_cast<int64_t>(pool.size())));
  std::atomic<int64_t> next{0};
  pool.run_on_all([&](int) {
    for (int64_t r0 = next.fetch_add(grain); r0 < rows; r0 = next.fetch_add(grain)) {
      fn(r0, std::min(rows, r0 + grain));
    }
  });
}

}  // namespace hanpu
