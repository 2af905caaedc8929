// parallel_rows (parallel/parallel_rows.h): every row handed out exactly once, in ranges that
// do not overlap, whatever the row count against the workers, and the ranges shrinking
// towards the end (a fixed share each, then guided dealing); the aligned form's ranges on
// multiples of its alignment.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "parallel/parallel_rows.h"

namespace hanpu {
namespace {

TEST(ParallelRows, EveryRowOnceInDisjointRanges) {
  for (int threads : {1, 2, 3}) {
    for (int64_t rows : {1, 2, 5, 63, 64, 1000, 8224, 100003}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(rows));
      std::mutex m;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      // A cost large enough that the pool is used.
      parallel_rows(threads, rows, int64_t{1} << 16, [&](int64_t r0, int64_t r1) {
        ASSERT_LT(r0, r1);
        for (int64_t r = r0; r < r1; ++r) seen[r].fetch_add(1);
        std::lock_guard<std::mutex> lock(m);
        ranges.emplace_back(r0, r1);
      });
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(seen[r].load(), 1) << "row " << r << " of " << rows << ", " << threads;
      std::sort(ranges.begin(), ranges.end());
      for (size_t i = 1; i < ranges.size(); ++i) ASSERT_EQ(ranges[i].first, ranges[i - 1].second);
    }
  }
}

TEST(ParallelRows, RangesShrinkTowardsTheEnd) {
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  constexpr int64_t rows = 100000;
  parallel_rows(2, rows, int64_t{1} << 16, [&](int64_t r0, int64_t r1) {
    std::lock_guard<std::mutex> lock(m);
    ranges.emplace_back(r0, r1);
  });
  std::sort(ranges.begin(), ranges.end());
  ASSERT_GE(ranges.size(), 4u);
  const int64_t first = ranges.front().second - ranges.front().first;
  const int64_t last = ranges.back().second - ranges.back().first;
  EXPECT_GE(first, 4 * last) << "first range " << first << " rows, last " << last;
}

TEST(ParallelRows, AlignedRangesStartAtMultiplesAndCoverEveryRowOnce) {
  for (int threads : {1, 2, 3}) {
    for (int64_t rows : {1, 15, 16, 17, 1000, 8224, 100003}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(rows));
      parallel_rows_aligned(threads, rows, 16, int64_t{1} << 12, [&](int64_t r0, int64_t r1) {
        ASSERT_LT(r0, r1);
        ASSERT_EQ(r0 % 16, 0) << r0;
        ASSERT_TRUE(r1 % 16 == 0 || r1 == rows) << r1 << " of " << rows;
        for (int64_t r = r0; r < r1; ++r) seen[r].fetch_add(1);
      });
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(seen[r].load(), 1) << "row " << r << " of " << rows << ", " << threads;
    }
  }
}

}  // namespace
}  // namespace hanpu
