// hanpu's LA prefill: HA-NPU's head-level mapping with cross-operator fusion on CPU cores.
// A worker owns whole (sequence, value head) units from the schedule (tail heads split by
// value columns) and walks all chunks with that head's state resident in its cache; the six
// chunk operators run back to back on per-core buffers, nothing intermediate reaches DRAM.
#include <algorithm>
#include <utility>

#include "cpu/la/la_strategy.h"
#include "parallel/head_schedule.h"
#include "parallel/thread_pool.h"
#include "simd/gemm.h"
#include "simd/vec_ops.h"

namespace hanpu::cpu {

namespace {

// Extra per-core buffers only the FLA operator order needs (ablation step "fused"):
// the explicit inverse A, W = A diag(beta exp(Gam)) K, and a second state version.
struct FlaOrderBuffers {
  FlaOrderBuffers(int C, int K, int V, ScratchMeter* m)
      : A(C * C, m), kb(C * K, m), W(C * K, m), S_next(K * V, m) {}
  ScratchBuffer<float> A, kb, W, S_next;
};

// One chunk, HA-NPU order (§5): K S0, Q S0, K K^T, Q K^T (GEMM-first group, shared inputs
// resident) -> solve -> Vn -> O -> S updated in place (chunk-first: one state version).
void chunk_reordered(const LaProblem& p, ChunkWorkspace& ws, float* S, int w, GemmFn gemm) {
  const int c = ws.c;
  state_products(p, ws, S, w, 0, w, gemm, 0, 2 * c);
  decayed_kk_qk(p, ws, gemm);
  gemm_first_rhs(p, ws, w);
  solve_unit_lower(ws.kkqk.data(), ws.C, c, ws.vn.data(), w, w, gemm);
  chunk_outputs(p, ws, w, gemm);
  update_state(p, ws, S, w, 0, w, ws.vn.data(), w, gemm);
}

// One chunk, FLA's operator order fused on one core: explicit A, W and U, Vn = U - W S0,
// state-first update into a second buffer while S0 is still needed by the output.
void chunk_fla_order(const LaProblem& p, ChunkWorkspace& ws, FlaOrderBuffers& fb, float*& S,
                     int w, GemmFn gemm) {
  const int c = ws.c, C = ws.C, K = p.K;
  decayed_kk_qk(p, ws, gemm);
  // A = (I + L)^-1 by solving against the identity.
  std::fill_n(fb.A.data(), static_cast<size_t>(c) * C, 0.0f);
  for (int i = 0; i < c; ++i) fb.A[i * C + i] = 1.0f;
  solve_unit_lower(ws.kkqk.data(), C, c, fb.A.data(), C, c, gemm);
  // W = A diag(beta exp(Gam)) K ; U = A diag(beta) V (into vn)
  for (int i = 0; i < c; ++i) {
    const float* kr = ws.k + i * ws.ldqk;
    if (p.kda()) {
      simd::mul(fb.kb.data() + i * K, kr, ws.egam.data() + i * K, K);
      simd::scale_copy(fb.kb.data() + i * K, fb.kb.data() + i * K, ws.beta[i], K);
    } else {
      simd::scale_copy(fb.kb.data() + i * K, kr, ws.beta[i] * ws.egam[i], K);
    }
    simd::scale_copy(ws.out.data() + i * w, ws.v + i * ws.ldv, ws.beta[i], w);  // diag(beta) V
  }
  gemm(c, K, c, simd::row_major(fb.A.data(), C), fb.kb.data(), K, fb.W.data(), K, 1.0f, 0.0f);
  gemm(c, w, c, simd::row_major(fb.A.data(), C), ws.out.data(), w, ws.vn.data(), w, 1.0f, 0.0f);
  gemm(c, w, K, simd::row_major(fb.W.data(), K), S, w, ws.vn.data(), w, -1.0f, 1.0f);  // Vn
  // State-first: S_next = decay S + Kd^T Vn, while S (old) stays live for the output.
  std::copy_n(S, static_cast<size_t>(K) * w, fb.S_next.data());
  update_state(p, ws, fb.S_next.data(), w, 0, w, ws.vn.data(), w, gemm);
  state_products(p, ws, S, w, 0, w, gemm, c, 2 * c);  // Q S0 (old state)
  chunk_outputs(p, ws, w, gemm);
  std::copy_n(fb.S_next.data(), static_cast<size_t>(K) * w, S);
}

}  // namespace

void run_hanpu(const LaProblem& p, LaRunContext& ctx, HanpuTechniques tech) {
  const int P = ctx.threads;
  const HeadSchedule sched =
      schedule_for(p, P);
  const GemmFn gemm = gemm_for(tech.gemm_mode);
  ThreadPool& pool = ThreadPool::shared(P);
  ctx.busy_ms = pool.run_on_all([&](int core) {
    if (core >= P) return;
    ChunkWorkspace ws(p.chunk, p.K, p.V, ctx.meter);
    ScratchBuffer<float> state(static_cast<size_t>(p.K) * p.V, ctx.meter);
    std::optional<FlaOrderBuffers> fb;
    if (!tech.reorder) fb.emplace(p.chunk, p.K, p.V, ctx.meter);
    for (const HeadWork& work : sched.per_core[core]) {
      const int w = work.col_end - work.col_begin;
      float* S = state.data();  // [K x w], the head's state, resident for the whole sequence
      read_initial_state(p, work.seq, work.head, work.col_begin, work.col_end, S);
      for (int64_t t0 = p.cu[work.seq]; t0 < p.cu[work.seq + 1]; t0 += p.chunk) {
        const int c = static_cast<int>(std::min<int64_t>(p.chunk, p.cu[work.seq + 1] - t0));
        load_chunk(p, t0, c, work.head, ws);
        bind_chunk_v_and_out(p, t0, work.head, work.col_begin, work.col_end, ws);
        if (tech.reorder) {
          chunk_reordered(p, ws, S, w, gemm);
        } else {
          chunk_fla_order(p, ws, *fb, S, w, gemm);
        }
        store_chunk_out(p, t0, work.head, work.col_begin, work.col_end, ws);
      }
      write_final_state(p, work.seq, work.head, work.col_begin, work.col_end, S);
    }
  });
}

}  // namespace hanpu::cpu
