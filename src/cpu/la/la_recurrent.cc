// The recurrent strategy: token by token, as llama.cpp runs GDN on CPU, but as fast as a token
// loop gets: SIMD over state columns, both passes over the state fused, each L1-sized column
// block of a head's state kept resident while a block of tokens runs over it, and a core's
// heads walked in lockstep (like hanpu's) so their input rows stream. Heads (and
// column-split tail heads) are dealt to cores by the same schedule and walked in the same
// speed-balanced phases (la_walk.h).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/la/la_strategy.h"
#include "cpu/la/la_walk.h"
#include "parallel/head_schedule.h"
#include "simd/delta_rule_tokens.h"
#include "simd/gemm.h"
#include "simd/vec_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

namespace {
constexpr int kTokenBlock = 64;  // tokens converted to fp32 rows at a time
}

void run_recurrent(const LaProblem& p, LaRunContext& ctx) {
  const std::vector<HeadWork> items = walk_order(p, schedule_for(p, ctx.threads));
  const int K = p.K;
  const size_t es = dtype_size(p.dtype);
  const int64_t unit_state = static_cast<int64_t>(K) * p.V;  // floats
  // A whole head's state is updated in place in final_state when the caller asks for one and
  // it starts on a cache line (decode: no copy of every head's K x V state in and out per
  // token). Column pieces of a split head, calls without final_state, and states that are
  // not line-aligned (every vector access of the token loop would straddle two lines: 1.4x
  // slower at T = 4096) use a buffer.
  auto in_place = [&](size_t b) {
    if (p.final_state == nullptr || items[b].col_begin != 0 || items[b].col_end != p.V)
      return false;
    return reinterpret_cast<uintptr_t>(p.final_state +
                                       p.state_offset(items[b].seq, items[b].head)) %
               64 ==
           0;
  };
  size_t buffered = 0;
  std::vector<size_t> slot(items.size(), 0);
  for (size_t b = 0; b < items.size(); ++b) {
    if (!in_place(b)) slot[b] = buffered++;
  }
  ScratchBuffer<float> states(buffered * unit_state, ctx.meter);
  auto S = [&](size_t b) {
    return in_place(b) ? p.final_state + p.state_offset(items[b].seq, items[b].head)
                       : states.data() + slot[b] * static_cast<size_t>(unit_state);
  };
  ctx.busy_ms = walk_in_phases(
      p, ctx.threads, items, 4 * unit_state, kTokenBlock, [&](int, LaWalker& walker) {
        simd::ensure_flush_denormals();
        ScratchBuffer<float> q(kTokenBlock * K, ctx.meter), k(kTokenBlock * K, ctx.meter);
        ScratchBuffer<float> v(kTokenBlock * p.V, ctx.meter), o(kTokenBlock * p.V, ctx.meter);
        ScratchBuffer<float> decay(kTokenBlock * (p.kda() ? K : 1), ctx.meter);
        ScratchBuffer<float> beta(kTokenBlock, ctx.meter);
        while (const std::optional<LaBatch> batch = walker.next()) {
          const int sn = batch->seq;
          for (size_t b = batch->b0; b < batch->b1 && batch->first; ++b) {
            if (!in_place(b) || p.initial_state != p.final_state) {  // aliased: already in place
              read_initial_state(p, sn, items[b].head, items[b].col_begin, items[b].col_end, S(b));
            }
          }
          for (int64_t t0 = batch->t_begin; t0 < batch->t_end; t0 += kTokenBlock) {
            const int n = static_cast<int>(std::min<int64_t>(kTokenBlock, batch->t_end - t0));
            for (size_t b = batch->b0; b < batch->b1;
                 ++b) {  // the batch's heads in lockstep, token block by block
              const int c0 = items[b].col_begin, w = items[b].col_end - c0, hv = items[b].head;
              for (int i = 0; i < n; ++i) {
                const int64_t t = t0 + i;
                float* kr = k.data() + i * K;
                float* qr = q.data() + i * K;
                simd::load_f32(kr, static_cast<const char*>(p.k) + p.qk_offset(t, hv) * es, p.dtype,
                               K);
                simd::load_f32(qr, static_cast<const char*>(p.q) + p.qk_offset(t, hv) * es, p.dtype,
                               K);
                if (p.qk_l2norm) {
                  simd::scale_copy(kr, kr, 1.0f / std::sqrt(simd::sum_squares(kr, K) + 1e-6f), K);
                  simd::scale_copy(qr, qr, 1.0f / std::sqrt(simd::sum_squares(qr, K) + 1e-6f), K);
                }
                simd::load_f32(v.data() + i * w,
                               static_cast<const char*>(p.v) + (p.v_offset(t, hv) + c0) * es,
                               p.dtype, w);
                beta[i] = p.beta[t * p.HV + hv];
                if (p.kda()) {
                  std::copy_n(p.g + (t * p.HV + hv) * K, K, decay.data() + i * K);
                } else {
                  decay[i] = p.g[t * p.HV + hv];
                }
              }
              simd::exp_inplace(decay.data(), static_cast<size_t>(n) * (p.kda() ? K : 1));
              simd::delta_rule_tokens(n, K, w, S(b), w, q.data(), k.data(), K, v.data(), w,
                                      decay.data(), p.kda(), beta.data(), p.scale, o.data(), w);
              for (int i = 0; i < n; ++i) {
                simd::store_f32(static_cast<char*>(p.o) + (p.v_offset(t0 + i, hv) + c0) * es,
                                p.dtype, o.data() + i * w, w);
              }
            }
          }
          for (size_t b = batch->b0; b < batch->b1 && batch->last; ++b) {
            if (!in_place(b))
              write_final_state(p, sn, items[b].head, items[b].col_begin, items[b].col_end, S(b));
          }
        }
      });
}

}  // namespace hanpu::cpu
