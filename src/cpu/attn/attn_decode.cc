// Decode: a few query rows against a long cache. One sequence has too few query rows to
// share between cores, so the keys are split instead: core c attends every query row to its
// slice of the visible keys (the same fused unit as prefill) and the slices' normalised
// partial outputs are merged exactly by their log-sum-exps:
//   lse = log sum_c exp(lse_c),   o = sum_c exp(lse_c - lse) o_c.
// Within its slice a core walks blocks of keys with every kv head inside, merging each
// block the same way: in the [L, Hkv, D] cache a block's rows of all heads are one
// contiguous range, so the cache streams in order instead of head by head at a stride of
// Hkv x D floats (which no hardware prefetcher follows).
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/attn/attn_kernels.h"
#include "cpu/attn/attn_tile_kernel.h"
#include "parallel/thread_pool.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kKeyBlock = 256;  // keys per block: 2 MiB of K and V at 32 heads x 64 (f32)

}  // namespace

void attn_split_keys(const AttnProblem& p, AttnRunContext& ctx) {
  ThreadPool& pool = ThreadPool::shared(ctx.threads);
  const int P = pool.size(), G = p.group(), BQ = ctx.tiles.q_rows;
  // Split only the keys some row can see (a sliding window sees the last `window` keys).
  const int64_t lo = p.key_begin(0), hi = p.key_end(p.T - 1), span = hi - lo;
  const size_t rows = static_cast<size_t>(p.T) * p.Hq;
  // Per core: its slice's running result and one block's partial.
  ScratchBuffer<float> part_o(static_cast<size_t>(2 * P) * rows * p.Dv, ctx.meter);
  ScratchBuffer<float> part_lse(static_cast<size_t>(2 * P) * rows, ctx.meter);
  ctx.busy_ms = pool.run_on_all([&](int w) {
    simd::ensure_flush_denormals();
    const int64_t kb = lo + span * w / P, ke = lo + span * (w + 1) / P;
    float* acc_o = part_o.data() + static_cast<size_t>(2 * w) * rows * p.Dv;
    float* acc_lse = part_lse.data() + static_cast<size_t>(2 * w) * rows;  // [Hq, T]
    float* blk_o = acc_o + rows * p.Dv;
    float* blk_lse = acc_lse + rows;
    std::fill_n(acc_o, rows * p.Dv, 0.0f);
    std::fill_n(acc_lse, rows, kNegInf);
    AttnWorkspace ws(p, ctx.tiles, ctx.meter);
    for (int64_t b0 = kb; b0 < ke; b0 += kKeyBlock) {
      const int64_t b1 = std::min(ke, b0 + kKeyBlock);
      for (int hk = 0; hk < p.Hkv; ++hk) {
        for (int64_t t0 = 0; t0 < p.T; t0 += BQ) {
          const int r = static_cast<int>(std::min<int64_t>(BQ, p.T - t0));
          const int h0 = hk * G;
          TileOut out{blk_o + p.o_row(t0, h0), static_cast<ptrdiff_t>(p.Hq) * p.Dv, p.Dv,
                      blk_lse + static_cast<size_t>(h0) * p.T + t0, p.T};
          attend_query_tile(p, ws, hk, kv_rows_in_place(p, hk), t0, r, b0, b1, out);
        }
      }
      attn_merge_splits(p.T, p.Hq, p.Dv, acc_o, acc_lse, blk_o, blk_lse);
    }
  });
  // Merge the cores' slices (T x Hq x D x P multiply-adds: small next to the attention).
  float* o0 = part_o.data();
  float* lse0 = part_lse.data();
  for (int w = 1; w < P; ++w) {
    attn_merge_splits(p.T, p.Hq, p.Dv, o0, lse0,
                      part_o.data() + static_cast<size_t>(2 * w) * rows * p.Dv,
                      part_lse.data() + static_cast<size_t>(2 * w) * rows);
  }
  for (int h = 0; h < p.Hq; ++h) {
    for (int64_t t = 0; t < p.T; ++t) {
      std::memcpy(p.o + p.o_row(t, h), o0 + p.o_row(t, h), sizeof(float) * p.Dv);
      if (p.lse) p.lse[static_cast<size_t>(h) * p.T + t] = lse0[static_cast<size_t>(h) * p.T + t];
    }
  }
}

}  // namespace hanpu::cpu

namespace hanpu {

void attn_merge_splits(int64_t T, int Hq, int D, float* o, float* lse, const float* o2,
                       const float* lse2) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int h = 0; h < Hq; ++h) {
    for (int64_t t = 0; t < T; ++t) {
      const size_t li = static_cast<size_t>(h) * T + t;
      const float a = lse[li], b = lse2[li];
      if (b == kNegInf) continue;
      float* dst = o + (static_cast<size_t>(t) * Hq + h) * D;
      const float* src = o2 + (static_cast<size_t>(t) * Hq + h) * D;
      if (a == kNegInf) {
        std::memcpy(dst, src, sizeof(float) * D);
        lse[li] = b;
        continue;
      }
      const float mx = std::max(a, b);
      const float wa = std::exp(a - mx), wb = std::exp(b - mx), inv = 1.0f / (wa + wb);
      for (int d = 0; d < D; ++d) dst[d] = (wa * dst[d] + wb * src[d]) * inv;
      lse[li] = mx + std::log(wa + wb);
    }
  }
}

}  // namespace hanpu
