// The recurrent strategy: token by token, as llama.cpp runs GDN on CPU, but as fast as a token
// loop gets: SIMD over state columns, both passes over the state fused, each L1-sized column
// block of a head's state kept resident while a block of tokens runs over it, and a core's
// heads walked in lockstep (like hanpu's) so their input rows stream. Heads (and
// column-split tail heads) are dealt to cores by the same schedule.
#include <algorithm>
#include <cmath>

#include "cpu/la/la_strategy.h"
#include "parallel/head_schedule.h"
#include "parallel/thread_pool.h"
#include "simd/delta_rule_tokens.h"
#include "simd/gemm.h"
#include "simd/vec_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

namespace {
constexpr int kTokenBlock = 64;  // tokens converted to fp32 rows at a time
}

void run_recurrent(const LaProblem& p, LaRunContext& ctx) {
  const int P = ctx.threads;
  const HeadSchedule sched = schedule_for(p, P);
  ThreadPool& pool = ThreadPool::shared(P);
  const int K = p.K;
  const size_t es = dtype_size(p.dtype);
  const int64_t unit_state = static_cast<int64_t>(K) * p.V;  // floats
  ctx.busy_ms = pool.run_on_all([&](int core) {
    simd::ensure_flush_denormals();
    if (core >= P) return;
    const std::vector<HeadWork>& items = sched.per_core[core];
    const auto batches = lockstep_batches(items, 4 * unit_state);
    size_t widest = 0;
    for (const auto& [b0, b1] : batches) widest = std::max(widest, b1 - b0);
    ScratchBuffer<float> states(widest * unit_state, ctx.meter);
    ScratchBuffer<float> q(kTokenBlock * K, ctx.meter), k(kTokenBlock * K, ctx.meter);
    ScratchBuffer<float> v(kTokenBlock * p.V, ctx.meter), o(kTokenBlock * p.V, ctx.meter);
    ScratchBuffer<float> decay(kTokenBlock * (p.kda() ? K : 1), ctx.meter);
    ScratchBuffer<float> beta(kTokenBlock, ctx.meter);
    for (const auto& [b0, b1] : batches) {
      const int sn = items[b0].seq;
      auto S = [&](size_t b) { return states.data() + (b - b0) * static_cast<size_t>(unit_state); };
      for (size_t b = b0; b < b1; ++b) {
        read_initial_state(p, sn, items[b].head, items[b].col_begin, items[b].col_end, S(b));
      }
      for (int64_t t0 = p.cu[sn]; t0 < p.cu[sn + 1]; t0 += kTokenBlock) {
        const int n = static_cast<int>(std::min<int64_t>(kTokenBlock, p.cu[sn + 1] - t0));
        for (size_t b = b0; b < b1; ++b) {  // the batch's heads in lockstep, token block by block
          const int c0 = items[b].col_begin, w = items[b].col_end - c0, hv = items[b].head;
          for (int i = 0; i < n; ++i) {
            const int64_t t = t0 + i;
            float* kr = k.data() + i * K;
            float* qr = q.data() + i * K;
            simd::load_f32(kr, static_cast<const char*>(p.k) + p.qk_offset(t, hv) * es, p.dtype, K);
            simd::load_f32(qr, static_cast<const char*>(p.q) + p.qk_offset(t, hv) * es, p.dtype, K);
            if (p.qk_l2norm) {
              simd::scale_copy(kr, kr, 1.0f / std::sqrt(simd::sum_squares(kr, K) + 1e-6f), K);
              simd::scale_copy(qr, qr, 1.0f / std::sqrt(simd::sum_squares(qr, K) + 1e-6f), K);
            }
            simd::load_f32(v.data() + i * w, static_cast<const char*>(p.v) + (p.v_offset(t, hv) + c0) * es,
                           p.dtype, w);
            beta[i] = p.beta[t * p.HV + hv];
            if (p.kda()) {
              std::copy_n(p.g + (t * p.HV + hv) * K, K, decay.data() + i * K);
            } else {
              decay[i] = p.g[t * p.HV + hv];
            }
          }
          simd::exp_inplace(decay.data(), static_cast<size_t>(n) * (p.kda() ? K : 1));
          simd::delta_rule_tokens(n, K, w, S(b), w, q.data(), k.data(), K, v.data(), w, decay.data(),
                                  p.kda(), beta.data(), p.scale, o.data(), w);
          for (int i = 0; i < n; ++i) {
            simd::store_f32(static_cast<char*>(p.o) + (p.v_offset(t0 + i, hv) + c0) * es, p.dtype,
                            o.data() + i * w, w);
          }
        }
      }
      for (size_t b = b0; b < b1; ++b) {
        write_final_state(p, sn, items[b].head, items[b].col_begin, items[b].col_end, S(b));
      }
    }
  });
}

}  // namespace hanpu::cpu
