// The FLA baseline on CPU cores: chunk-head-chunk mapping (HA-NPU Fig. 7a), three passes with
// every intermediate through memory, as FLA's chunk_gated_delta_rule / chunk_kda run them:
//   1. parallel over (chunk, head): decayed K K^T, explicit inverse A, W = A diag(beta e^Gam) K,
//      U = A diag(beta) V  -> W, U in memory            (FLA: kkt + solve_tril + recompute_w_u)
//   2. parallel over heads: walk chunks, store each chunk's input state h, Vn = U - W h,
//      update the state                                  (FLA: chunk_gated_delta_rule_fwd_h)
//   3. parallel over (chunk, head): O = scale e^Gam Q h + Tril(Q K^T o D) Vn   (FLA: chunk_fwd_o)
// Intermediates are kept in fp32 (FLA stores A and h in the input dtype on GPU).
#include <algorithm>

#include "cpu/la/la_strategy.h"
#include "parallel/head_schedule.h"
#include "parallel/thread_pool.h"
#include "simd/gemm.h"
#include "simd/vec_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

namespace {

struct ChunkRef {
  int seq;
  int64_t t0;
  int c;
  int64_t index;  // global chunk number, indexes h
};

std::vector<ChunkRef> list_chunks(const LaProblem& p) {
  std::vector<ChunkRef> out;
  for (int n = 0; n < p.N; ++n) {
    for (int64_t t0 = p.cu[n]; t0 < p.cu[n + 1]; t0 += p.chunk) {
      const int c = static_cast<int>(std::min<int64_t>(p.chunk, p.cu[n + 1] - t0));
      out.push_back(ChunkRef{n, t0, c, static_cast<int64_t>(out.size())});
    }
  }
  return out;
}

void add_busy(std::vector<double>& total, const std::vector<double>& pass) {
  total.resize(pass.size(), 0.0);
  for (size_t i = 0; i < pass.size(); ++i) total[i] += pass[i];
}

}  // namespace

void run_fla(const LaProblem& p, LaRunContext& ctx) {
  const int P = ctx.threads, K = p.K, V = p.V, HV = p.HV, C = p.chunk;
  const GemmFn gemm = gemm_for(GemmMode::kRepacking);
  ThreadPool& pool = ThreadPool::shared(P);
  const std::vector<ChunkRef> chunks = list_chunks(p);
  const int64_t items = static_cast<int64_t>(chunks.size()) * HV;
  // Global intermediates, as FLA materialises them: W [T, HV, K], U and Vn [T, HV, V],
  // h [chunks, HV, K, V].
  ScratchBuffer<float> W(static_cast<size_t>(p.T) * HV * K, ctx.meter);
  ScratchBuffer<float> U(static_cast<size_t>(p.T) * HV * V, ctx.meter);
  ScratchBuffer<float> Vn(static_cast<size_t>(p.T) * HV * V, ctx.meter);
  ScratchBuffer<float> h(static_cast<size_t>(chunks.size()) * HV * K * V, ctx.meter);
  auto row = [&](ScratchBuffer<float>& buf, int64_t t, int hv, int width) {
    return buf.data() + (static_cast<size_t>(t) * HV + hv) * width;
  };

  // Pass 1: A, W, U per (chunk, head).
  add_busy(ctx.busy_ms, pool.run_on_all([&](int core) {
    simd::ensure_flush_denormals();
    ChunkWorkspace ws(C, K, V, ctx.meter);
    ScratchBuffer<float> A(static_cast<size_t>(C) * C, ctx.meter),
        kb(static_cast<size_t>(C) * K, ctx.meter);
    for (int64_t it = core; it < items; it += P) {
      const ChunkRef& ch = chunks[it / HV];
      const int hv = static_cast<int>(it % HV), c = ch.c;
      load_chunk(p, ch.t0, c, hv, ws);
      bind_chunk_v_and_out(p, ch.t0, hv, 0, V, ws);
      decayed_kk_qk(p, ws, gemm);
      explicit_inverse_and_wy_operands(p, ws, A.data(), kb.data(), V, gemm);
      gemm(c, K, c, simd::row_major(A.data(), C), kb.data(), K, row(W, ch.t0, hv, K), HV * K, 1.0f,
           0.0f);
      gemm(c, V, c, simd::row_major(A.data(), C), ws.out.data(), V, row(U, ch.t0, hv, V), HV * V,
           1.0f, 0.0f);
    }
  }));

  // Pass 2: the sequential state walk per (sequence, head).
  const HeadSchedule sched = schedule_for(p, P);
  std::vector<int64_t> first_chunk(p.N + 1, 0);
  for (const ChunkRef& ch : chunks) first_chunk[ch.seq + 1] = ch.index + 1;
  for (int n = 1; n <= p.N; ++n) first_chunk[n] = std::max(first_chunk[n], first_chunk[n - 1]);
  add_busy(ctx.busy_ms, pool.run_on_all([&](int core) {
    simd::ensure_flush_denormals();
    ChunkWorkspace ws(C, K, V, ctx.meter);
    ScratchBuffer<float> S(static_cast<size_t>(K) * V, ctx.meter);
    for (const HeadWork& work : sched.per_core[core]) {
      const int c0 = work.col_begin, w = work.col_end - c0, hv = work.head;
      read_initial_state(p, work.seq, hv, c0, work.col_end, S.data());
      for (int64_t ci = first_chunk[work.seq]; ci < first_chunk[work.seq + 1]; ++ci) {
        const ChunkRef& ch = chunks[ci];
        float* hs = h.data() + (static_cast<size_t>(ch.index) * HV + hv) * K * V;
        for (int d = 0; d < K; ++d) std::copy_n(S.data() + d * w, w, hs + d * V + c0);
        load_chunk(p, ch.t0, ch.c, hv, ws);
        float* vn = row(Vn, ch.t0, hv, V) + c0;
        for (int i = 0; i < ch.c; ++i) {
          std::copy_n(row(U, ch.t0 + i, hv, V) + c0, w, vn + static_cast<size_t>(i) * HV * V);
        }
        gemm(ch.c, w, K, simd::row_major(row(W, ch.t0, hv, K), HV * K), S.data(), w, vn, HV * V,
             -1.0f, 1.0f);
        update_state(p, ws, S.data(), w, 0, w, vn, HV * V, gemm);
      }
      write_final_state(p, work.seq, hv, c0, work.col_end, S.data());
    }
  }));

  // Pass 3: outputs per (chunk, head).
  add_busy(ctx.busy_ms, pool.run_on_all([&](int core) {
    simd::ensure_flush_denormals();
    ChunkWorkspace ws(C, K, V, ctx.meter);
    for (int64_t it = core; it < items; it += P) {
      const ChunkRef& ch = chunks[it / HV];
      const int hv = static_cast<int>(it % HV), c = ch.c;
      load_chunk(p, ch.t0, c, hv, ws);
      bind_chunk_v_and_out(p, ch.t0, hv, 0, V, ws);
      decayed_kk_qk(p, ws, gemm);
      const float* hs = h.data() + (static_cast<size_t>(ch.index) * HV + hv) * K * V;
      state_products(p, ws, hs, V, 0, V, gemm, c, 2 * c);
      for (int i = 0; i < c; ++i)
        std::copy_n(row(Vn, ch.t0 + i, hv, V), V, ws.vn.data() + i * ws.ldvn);
      chunk_outputs(p, ws, V, gemm);
      store_chunk_out(p, ch.t0, hv, 0, V, ws);
    }
  }));
}

}  // namespace hanpu::cpu
