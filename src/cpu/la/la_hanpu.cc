// hanpu's LA prefill: HA-NPU's head-level mapping with cross-operator fusion on CPU cores.
// A worker owns whole units of the schedule — a q/k head with the value heads of its GVA
// group (tail units split by value columns) — and walks their chunks with those heads' states
// resident in its cache (several units in lockstep, chunk by chunk, within a state budget;
// units are re-dealt between phases only when the cores run at different speeds, la_walk.h);
// the six chunk operators run back to back on per-core buffers, nothing intermediate reaches
// DRAM, and only one version of each state is ever live.
#include <algorithm>
#include <utility>

#include "cpu/la/la_strategy.h"
#include "cpu/la/la_walk.h"
#include "parallel/head_schedule.h"
#include "simd/gemm.h"
#include "simd/vec_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

namespace {

// Extra per-core buffers only the FLA operator order needs (ablation step "fused"):
// the explicit inverse A, W = A diag(beta exp(Gam)) K, and a second state version.
struct FlaOrderBuffers {
  FlaOrderBuffers(int C, int K, int V, ScratchMeter* m)
      : A(C * C, m), kb(C * K, m), W(C * K, m), S_next(K * (V + kStateRowPad), m) {}
  ScratchBuffer<float> A, kb, W, S_next;
};

// One chunk, HA-NPU order (§5): K S0, Q S0, K K^T, Q K^T (GEMM-first group, shared inputs
// resident) -> solve -> Vn -> O -> S updated in place (chunk-first: one state version).
void chunk_reordered(const LaProblem& p, ChunkWorkspace& ws, float* S, int lds, int w, GemmFn gemm,
                     bool raw_ready) {
  const int c = ws.c;
  state_products(p, ws, S, lds, 0, w, gemm, 0, 2 * c);
  decayed_kk_qk(p, ws, gemm, raw_ready);
  gemm_first_rhs(p, ws, w);
  solve_unit_lower(ws.kkqk.data(), ws.C, c, ws.vn.data(), ws.ldvn, w, gemm);
  chunk_outputs(p, ws, w, gemm);
  update_state(p, ws, S, lds, 0, w, ws.vn.data(), ws.ldvn, gemm);
}

// One chunk, FLA's operator order fused on one core: explicit A, W and U, Vn = U - W S0,
// state-first update into a second buffer while S0 is still needed by the output.
void chunk_fla_order(const LaProblem& p, ChunkWorkspace& ws, FlaOrderBuffers& fb, float* S, int lds,
                     int w, GemmFn gemm, bool raw_ready) {
  const int c = ws.c, C = ws.C, K = p.K;
  decayed_kk_qk(p, ws, gemm, raw_ready);
  // A = (I + L)^-1; W = A diag(beta exp(Gam)) K ; U = A diag(beta) V (into vn)
  explicit_inverse_and_wy_operands(p, ws, fb.A.data(), fb.kb.data(), w, gemm);
  gemm(c, K, c, simd::row_major(fb.A.data(), C), fb.kb.data(), K, fb.W.data(), K, 1.0f, 0.0f);
  gemm(c, w, c, simd::row_major(fb.A.data(), C), ws.out.data(), w, ws.vn.data(), ws.ldvn, 1.0f,
       0.0f);
  gemm(c, w, K, simd::row_major(fb.W.data(), K), S, lds, ws.vn.data(), ws.ldvn, -1.0f, 1.0f);  // Vn
  // State-first: S_next = decay S + Kd^T Vn, while S (old) stays live for the output.
  std::copy_n(S, static_cast<size_t>(K) * lds, fb.S_next.data());
  update_state(p, ws, fb.S_next.data(), lds, 0, w, ws.vn.data(), ws.ldvn, gemm);
  state_products(p, ws, S, lds, 0, w, gemm, c, 2 * c);  // Q S0 (old state)
  chunk_outputs(p, ws, w, gemm);
  std::copy_n(fb.S_next.data(), static_cast<size_t>(K) * lds, S);
}

}  // namespace

void run_hanpu(const LaProblem& p, LaRunContext& ctx, HanpuTechniques tech) {
  // The unit of work is a q/k head with its GVA group of HV/H value heads: the group's
  // states stay resident together, q/k rows are read once per chunk, and GDN's raw K K^T and
  // Q K^T are computed once and gated per value head.
  const int group = p.HV / p.H;
  const std::vector<HeadWork> items = walk_order(p, schedule_groups_for(p, ctx.threads));
  const GemmFn gemm = gemm_for(tech.gemm_mode);
  const int lds = p.V + kStateRowPad;
  const int64_t unit_state = static_cast<int64_t>(group) * p.K * lds;  // floats
  // Every item's states; each lives in the cache of the core walking its item in a phase.
  ScratchBuffer<float> states(items.size() * unit_state, ctx.meter);
  // S of item b, value head hv0 + i: [K x w], leading dim lds.
  auto S = [&](size_t b, int i) {
    return states.data() + (b * group + i) * static_cast<size_t>(p.K) * lds;
  };
  ctx.busy_ms =
      walk_in_phases(p, ctx.threads, items, 4 * unit_state, p.chunk, [&](int, LaWalker& walker) {
        simd::ensure_flush_denormals();
        ChunkWorkspace ws(p.chunk, p.K, p.V, ctx.meter);
        std::optional<FlaOrderBuffers> fb;
        if (!tech.reorder) fb.emplace(p.chunk, p.K, p.V, ctx.meter);
        while (const std::optional<LaBatch> batch = walker.next()) {
          const int n = batch->seq;
          for (size_t b = batch->b0; b < batch->b1 && batch->first; ++b) {
            for (int i = 0; i < group; ++i) {
              read_initial_state(p, n, items[b].head * group + i, items[b].col_begin,
                                 items[b].col_end, S(b, i), lds);
            }
          }
          // The batch's items in lockstep, chunk by chunk: neighbouring heads' rows arrive
          // together.
          for (int64_t t0 = batch->t_begin; t0 < batch->t_end; t0 += p.chunk) {
            const int c = static_cast<int>(std::min<int64_t>(p.chunk, batch->t_end - t0));
            for (size_t b = batch->b0; b < batch->b1; ++b) {
              const HeadWork& work = items[b];
              const int c0 = work.col_begin, c1 = work.col_end, w = c1 - c0;
              const int hv0 = work.head * group;
              load_chunk_rows(p, t0, c, hv0, ws);
              const bool raw_ready = !p.kda();
              if (raw_ready) raw_kk_qk(p, ws, gemm);
              for (int i = 0; i < group; ++i) {
                load_chunk_gates(p, t0, hv0 + i, ws);
                bind_chunk_v_and_out(p, t0, hv0 + i, c0, c1, ws);
                if (tech.reorder) {
                  chunk_reordered(p, ws, S(b, i), lds, w, gemm, raw_ready);
                } else {
                  chunk_fla_order(p, ws, *fb, S(b, i), lds, w, gemm, raw_ready);
                }
                store_chunk_out(p, t0, hv0 + i, c0, c1, ws);
              }
            }
          }
          for (size_t b = batch->b0; b < batch->b1 && batch->last; ++b) {
            for (int i = 0; i < group; ++i) {
              write_final_state(p, n, items[b].head * group + i, items[b].col_begin,
                                items[b].col_end, S(b, i), lds);
            }
          }
        }
      });
}

}  // namespace hanpu::cpu
