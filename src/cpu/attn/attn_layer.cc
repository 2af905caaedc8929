// Layer-by-layer baseline: the three stages as separate passes through memory, per head:
// S = scale Q K^T for the whole T x Tk matrix (masked entries computed too), a softmax pass
// over S, then O = P V. It materialises T x Tk floats per head, which is what the fused
// kernel exists to avoid. Rows are split over the cores in every pass.
#include <cmath>
#include <limits>

#include "cpu/attn/attn_kernels.h"
#include "parallel/speed_balance.h"
#include "parallel/thread_pool.h"
#include "simd/gemm.h"
#include "simd/softmax_ops.h"
#include "simd/vec_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

void attn_layer(const AttnProblem& p, AttnRunContext& ctx) {
  ThreadPool& pool = ThreadPool::shared(ctx.threads);
  const int P = pool.size(), D = p.D, G = p.group();
  const ptrdiff_t ldk = static_cast<ptrdiff_t>(p.kv_ld), ldq = static_cast<ptrdiff_t>(p.Hq) * D;
  ScratchBuffer<float> kt(static_cast<size_t>(D) * p.Tk, ctx.meter);
  ScratchBuffer<float> s(static_cast<size_t>(p.T) * p.Tk, ctx.meter);
  ctx.busy_ms.assign(P, 0.0);
  // Rows and keys are cut in proportion to the cores' measured speeds (equal on an idle
  // machine), as the fused kernel's placements are.
  SpeedBalancer speeds(pool);
  const std::vector<size_t> row_cut =
      proportional_cuts(std::vector<int64_t>(p.T, 1), speeds.speeds());
  const std::vector<size_t> key_cut =
      proportional_cuts(std::vector<int64_t>(p.Tk, 1), speeds.speeds());
  auto rows_of = [&](int w) {
    return std::pair<int64_t, int64_t>{static_cast<int64_t>(row_cut[w]),
                                       static_cast<int64_t>(row_cut[w + 1])};
  };
  auto add_busy = [&](const std::vector<double>& b) {
    for (int w = 0; w < P; ++w) ctx.busy_ms[w] += b[w];
  };
  for (int h = 0; h < p.Hq; ++h) {
    const int hk = h / G;
    if (h % G == 0) {
      add_busy(pool.run_on_all([&](int w) {
        simd::ensure_flush_denormals();
        const int64_t j0 = static_cast<int64_t>(key_cut[w]),
                      j1 = static_cast<int64_t>(key_cut[w + 1]);
        simd::transpose(static_cast<const float*>(p.k) + p.kv_row(j0, hk), ldk, kt.data() + j0,
                        p.Tk, static_cast<int>(j1 - j0), D);
      }));
    }
    add_busy(pool.run_on_all([&](int w) {  // pass 1: scores (log2 units)
      simd::ensure_flush_denormals();
      const auto [i0, i1] = rows_of(w);
      simd::gemm(static_cast<int>(i1 - i0), static_cast<int>(p.Tk), D,
                 simd::row_major(p.q + p.q_row(i0, h), ldq), kt.data(), p.Tk, s.data() + i0 * p.Tk,
                 p.Tk, p.scale * kLog2E, 0.0f);
    }));
    add_busy(pool.run_on_all([&](int w) {  // pass 2: masked softmax rows
      simd::ensure_flush_denormals();
      const auto [i0, i1] = rows_of(w);
      for (int64_t i = i0; i < i1; ++i) {
        float* row = s.data() + i * p.Tk;
        const int64_t b = p.key_begin(i), e = p.key_end(i);
        std::fill(row, row + b, -std::numeric_limits<float>::infinity());
        std::fill(row + e, row + p.Tk, -std::numeric_limits<float>::infinity());
        const float lse2 = simd::softmax_row(row, static_cast<size_t>(p.Tk));
        if (p.lse) p.lse[static_cast<size_t>(h) * p.T + i] = lse2 * kLn2;
      }
    }));
    add_busy(pool.run_on_all([&](int w) {  // pass 3: O = P V
      simd::ensure_flush_denormals();
      const auto [i0, i1] = rows_of(w);
      simd::gemm(static_cast<int>(i1 - i0), p.Dv, static_cast<int>(p.Tk),
                 simd::row_major(s.data() + i0 * p.Tk, p.Tk),
                 static_cast<const float*>(p.v) + p.v_row(0, hk), static_cast<ptrdiff_t>(p.v_ld),
                 p.o + p.o_row(i0, h), static_cast<ptrdiff_t>(p.Hq) * p.Dv, 1.0f, 0.0f);
    }));
  }
  std::vector<int64_t> rows(P);
  for (int w = 0; w < P; ++w) rows[w] = static_cast<int64_t>(row_cut[w + 1] - row_cut[w]);
  speeds.record(rows, ctx.busy_ms);
}

}  // namespace hanpu::cpu
