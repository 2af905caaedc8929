// Row-parallel loops for the element-wise work of a model layer (norms, gates, residuals)
// and the decode's quantized projections: each of the pool's workers runs a fixed share of
// the rows and claims the rest from a shared counter, so a core slowed by other load simply
// takes less of the tail; small jobs run on the caller, where waking the pool would cost more
// than the work.
#pragma once

#include <cstdint>
#include <functional>

namespace hanpu {

// Runs fn(r0, r1) over consecutive row ranges covering [0, rows) exactly once. row_cost: a
// rough count of operations per row, to decide whether to use the pool at all (below about
// 64 K operations in all, or with threads == 1, fn(0, rows) runs on the caller).
// threads: as ThreadPool::shared (0: the default pool).
void parallel_rows(int threads, int64_t rows, int64_t row_cost,
                   const std::function<void(int64_t, int64_t)>& fn);
// The same with every range but the last starting and ending at a multiple of `align` rows
// (a kernel that multiplies rows in groups then splits none between cores).
void parallel_rows_aligned(int threads, int64_t rows, int64_t align, int64_t row_cost,
                           const std::function<void(int64_t, int64_t)>& fn);

}  // namespace hanpu
