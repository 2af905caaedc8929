// The recurrent strategy: token by token, as llama.cpp runs GDN on CPU, but as fast as a token
// loop gets: SIMD over state columns, both passes over the state fused, and each L1-sized
// column block of a head's state kept resident while every token of the sequence runs
// over it. Heads (and column-split tail heads) are dealt to cores by the same schedule.
#include <algorithm>
#include <cmath>

#include "cpu/la/la_strategy.h"
#include "parallel/head_schedule.h"
#include "parallel/thread_pool.h"
#include "simd/delta_rule_tokens.h"
#include "simd/gemm.h"
#include "simd/vec_ops.h"

namespace hanpu::cpu {

namespace {
constexpr int kTokenBlock = 64;  // tokens converted to fp32 rows at a time
}

void run_recurrent(const LaProblem& p, LaRunContext& ctx) {
  const int P = ctx.threads;
  const HeadSchedule sched =
      schedule_for(p, P);
  ThreadPool& pool = ThreadPool::shared(P);
  const int K = p.K;
  ctx.busy_ms = pool.run_on_all([&](int core) {
    if (core >= P) return;
    ScratchBuffer<float> state(static_cast<size_t>(K) * p.V, ctx.meter);
    ScratchBuffer<float> q(kTokenBlock * K, ctx.meter), k(kTokenBlock * K, ctx.meter);
    ScratchBuffer<float> v(kTokenBlock * p.V, ctx.meter), o(kTokenBlock * p.V, ctx.meter);
    ScratchBuffer<float> decay(kTokenBlock * (p.kda() ? K : 1), ctx.meter);
    ScratchBuffer<float> beta(kTokenBlock, ctx.meter);
    for (const HeadWork& work : sched.per_core[core]) {
      const int c0 = work.col_begin, w = work.col_end - work.col_begin, hv = work.head;
      read_initial_state(p, work.seq, hv, c0, work.col_end, state.data());
      for (int64_t t0 = p.cu[work.seq]; t0 < p.cu[work.seq + 1]; t0 += kTokenBlock) {
        const int n = static_cast<int>(std::min<int64_t>(kTokenBlock, p.cu[work.seq + 1] - t0));
        const size_t es = dtype_size(p.dtype);
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
        simd::delta_rule_tokens(n, K, w, state.data(), w, q.data(), k.data(), K, v.data(), w,
                                decay.data(), p.kda(), beta.data(), p.scale, o.data(), w);
        for (int i = 0; i < n; ++i) {
          simd::store_f32(static_cast<char*>(p.o) + (p.v_offset(t0 + i, hv) + c0) * es, p.dtype,
                          o.data() + i * w, w);
        }
      }
      write_final_state(p, work.seq, hv, c0, work.col_end, state.data());
    }
  });
}

}  // namespace hanpu::cpu
