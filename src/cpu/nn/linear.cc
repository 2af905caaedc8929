// Threaded dense projection on the micro-kernel (see linear.h).
#include "cpu/nn/linear.h"

#include <algorithm>

#include "parallel/thread_pool.h"
#include "simd/gemm.h"

namespace hanpu::cpu {

void linear(const float* x, int64_t ldx, int64_t T, int in, const float* wt, int out, float* y, int64_t ldy,
            int threads) {
  if (T <= 0 || out <= 0) return;
  ThreadPool& pool = ThreadPool::shared(threads);
  const int P = pool.size();
  // Column blocks dealt round-robin: every core gets about out / P columns, each block a
  // contiguous W^T panel [in x 256] (1 MB at in = 1024) that stays in L2 across row panels.
  const int blocks = (out + kLinearColumnBlock - 1) / kLinearColumnBlock;
  // Rows in slabs so x's slab and the output tile stay cached for a whole column block.
  constexpr int64_t kRowSlab = 192;
  pool.run_on_all([&](int core) {
    for (int b = core; b < blocks; b += P) {
      const int n0 = b * kLinearColumnBlock, n = std::min(kLinearColumnBlock, out - n0);
      for (int64_t r0 = 0; r0 < T; r0 += kRowSlab) {
        const int rows = static_cast<int>(std::min(kRowSlab, T - r0));
        simd::gemm(rows, n, in, simd::row_major(x + r0 * ldx, ldx), wt + n0, out, y + r0 * ldy + n0, ldy, 1.0f,
                   0.0f);
      }
    }
  });
}

}  // namespace hanpu::cpu
