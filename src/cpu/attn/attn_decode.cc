// Decode: a few query rows against a long cache. One sequence has too few query rows to
// share between cores, so the keys are split instead: core c attends every query row to its
// slice of the visible keys (the same fused unit as prefill), writing a normalised partial
// output and its log-sum-exp; the partials are merged exactly:
//   lse = log sum_c exp(lse_c),   o = sum_c exp(lse_c - lse) o_c.
#include <cmath>
#include <limits>

#include "cpu/attn/attn_kernels.h"
#include "cpu/attn/attn_tile_kernel.h"
#include "parallel/thread_pool.h"

namespace hanpu::cpu {

void attn_split_keys(const AttnProblem& p, AttnRunContext& ctx) {
  ThreadPool& pool = ThreadPool::shared(ctx.threads);
  const int P = pool.size(), G = p.group(), BQ = ctx.tiles.q_rows;
  // Split only the keys some row can see (a sliding window sees the last `window` keys).
  const int64_t lo = p.key_begin(0), hi = p.key_end(p.T - 1), span = hi - lo;
  const size_t rows = static_cast<size_t>(p.T) * p.Hq;
  ScratchBuffer<float> part_o(static_cast<size_t>(P) * rows * p.D, ctx.meter);
  ScratchBuffer<float> part_lse(static_cast<size_t>(P) * rows, ctx.meter);
  ctx.busy_ms = pool.run_on_all([&](int w) {
    const int64_t kb = lo + span * w / P, ke = lo + span * (w + 1) / P;
    float* o = part_o.data() + static_cast<size_t>(w) * rows * p.D;
    float* lse = part_lse.data() + static_cast<size_t>(w) * rows;  // [Hq, T]
    AttnWorkspace ws(p, ctx.tiles, ctx.meter);
    for (int hk = 0; hk < p.Hkv; ++hk) {
      for (int64_t t0 = 0; t0 < p.T; t0 += BQ) {
        const int r = static_cast<int>(std::min<int64_t>(BQ, p.T - t0));
        const int h0 = hk * G;
        TileOut out{o + p.q_row(t0, h0), static_cast<ptrdiff_t>(p.Hq) * p.D, p.D,
                    lse + static_cast<size_t>(h0) * p.T + t0, p.T};
        attend_query_tile(p, ws, hk, kv_rows_in_place(p, hk), t0, r, kb, ke, out);
      }
    }
  });
  // Merge (T x Hq x D x P multiply-adds: small next to the attention itself).
  for (int h = 0; h < p.Hq; ++h) {
    for (int64_t t = 0; t < p.T; ++t) {
      const size_t li = static_cast<size_t>(h) * p.T + t;
      float mx = -std::numeric_limits<float>::infinity();
      for (int w = 0; w < P; ++w) mx = std::max(mx, part_lse[w * rows + li]);
      float* dst = p.o + p.q_row(t, h);
      std::fill_n(dst, p.D, 0.0f);
      double total = 0;
      for (int w = 0; w < P; ++w) {
        const float lw = part_lse[w * rows + li];
        if (lw == -std::numeric_limits<float>::infinity()) continue;
        const float wt = std::exp(lw - mx);
        total += wt;
        const float* src = part_o.data() + static_cast<size_t>(w) * rows * p.D + p.q_row(t, h);
        for (int d = 0; d < p.D; ++d) dst[d] += wt * src[d];
      }
      const float inv = static_cast<float>(1.0 / total);
      for (int d = 0; d < p.D; ++d) dst[d] *= inv;
      if (p.lse) p.lse[li] = mx + static_cast<float>(std::log(total));
    }
  }
}

}  // namespace hanpu::cpu
