// Threaded dense projection on the micro-kernel (see linear.h).
#include "cpu/nn/linear.h"

#include <algorithm>

#include "parallel/thread_pool.h"
#include "simd/gemm.h"

namespace hanpu::cpu {

PackedLinear PackedLinear::from_rows(const float* w, int in, const std::vector<int>& rows) {
  PackedLinear l;
  l.in = in;
  l.out = static_cast<int>(rows.size());
  l.data.resize(static_cast<size_t>(in) * l.out);
  for (int p = 0; p < l.panels(); ++p) {
    const int n = l.panel_cols(p);
    float* dst = l.data.data() + static_cast<size_t>(p) * kLinearPanel * in;
    for (int c = 0; c < n; ++c) {
      const float* src = w + static_cast<size_t>(rows[p * kLinearPanel + c]) * in;
      for (int i = 0; i < in; ++i) dst[static_cast<size_t>(i) * n + c] = src[i];
    }
  }
  return l;
}

float PackedLinear::at(int i, int o) const {
  const int p = o / kLinearPanel;
  return panel(p)[static_cast<size_t>(i) * panel_cols(p) + (o - p * kLinearPanel)];
}

void linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y, int64_t ldy, int threads) {
  if (T <= 0 || w.out <= 0) return;
  ThreadPool& pool = ThreadPool::shared(threads);
  const int P = pool.size(), panels = w.panels(), in = w.in;
  constexpr int64_t kRowSlab = 192;
  pool.run_on_all([&](int core) {
    for (int p = core; p < panels; p += P) {
      const int n = w.panel_cols(p);
      const float* b = w.panel(p);
      for (int64_t r0 = 0; r0 < T; r0 += kRowSlab) {
        const int rows = static_cast<int>(std::min(kRowSlab, T - r0));
        for (int k0 = 0; k0 < in; k0 += kLinearDepth) {
          const int kd = std::min(kLinearDepth, in - k0);
          simd::gemm(rows, n, kd, simd::row_major(x + r0 * ldx + k0, ldx), b + static_cast<size_t>(k0) * n, n,
                     y + r0 * ldy + p * kLinearPanel, ldy, 1.0f, k0 == 0 ? 0.0f : 1.0f);
        }
      }
    }
  });
}

}  // namespace hanpu::cpu
