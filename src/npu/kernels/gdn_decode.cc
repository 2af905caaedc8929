// gdn_decode_step (see gdn_decode.h): S = exp(g) S; S += k (beta (v - S^T k))^T; o = scale S^T q.
#include "npu/kernels/gdn_decode.h"

#include <cmath>

#include <fmt/format.h>

namespace hanpu::npu {

Status gdn_decode_step(NpuSim& sim, const GdnGm& gm) {
  if (gm.T != 1 || gm.kda || gm.state0 == nullptr) {
    return Status::Error(fmt::format("gdn decode: one GDN token with a state (T {}, {})", gm.T,
                                     gm.kda ? "KDA" : "GDN"));
  }
  const int K = gm.K, V = gm.V, P = sim.machine().cores;
  for (int h = 0; h < gm.H; ++h) {
    CoreOps op(sim, h % P);
    Tile *S, *q, *k, *v, *g, *beta, *o;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, K, V, false, Layout::kND, "state", &S));
    HANPU_RETURN_IF_ERROR(sim.load(S, {gm.state0, static_cast<int64_t>(h) * K, K, 0, V}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, K, true, Layout::kND, "q", &q));
    HANPU_RETURN_IF_ERROR(sim.load(q, {gm.q, 0, 1, gm.qk_col(h), K}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, K, true, Layout::kND, "k", &k));
    HANPU_RETURN_IF_ERROR(sim.load(k, {gm.k, 0, 1, gm.qk_col(h), K}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, V, true, Layout::kND, "v", &v));
    HANPU_RETURN_IF_ERROR(sim.load(v, {gm.v, 0, 1, static_cast<int64_t>(h) * V, V}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, 1, false, Layout::kND, "g", &g));
    HANPU_RETURN_IF_ERROR(sim.load(g, {gm.g, 0, 1, h, 1}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, 1, false, Layout::kND, "beta", &beta));
    HANPU_RETURN_IF_ERROR(sim.load(beta, {gm.beta, 0, 1, h, 1}));
    if (gm.qk_l2norm) {
      HANPU_RETURN_IF_ERROR(op.l2norm_rows(q));
      HANPU_RETURN_IF_ERROR(op.l2norm_rows(k));
    }
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, V, false, Layout::kND, "o", &o));
    // The decay (a read and a write of S), S^T k (a read), the rank-one update (a read and a
    // write), S^T q (a read).
    const int64_t bytes = 6 * matrix_bytes(K, V, false);
    HANPU_RETURN_IF_ERROR(sim.vector({S, q, k, v, g, beta}, {S, o}, bytes, false, [&] {
      const float decay = std::exp(g->v[0]);
      for (float& x : S->v) x *= decay;
      for (int j = 0; j < V; ++j) {
        float kv = 0;
        for (int i = 0; i < K; ++i) kv += S->at(i, j) * k->v[i];
        const float delta = beta->v[0] * (v->v[j] - kv);
        float out = 0;
        for (int i = 0; i < K; ++i) {
          S->at(i, j) += k->v[i] * delta;
          out += S->at(i, j) * q->v[i];
        }
        o->v[j] = gm.scale * out;
      }
    }));
    HANPU_RETURN_IF_ERROR(sim.store({gm.state0, static_cast<int64_t>(h) * K, K, 0, V}, S));
    Tile* o16;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, V, true, Layout::kND, "o_f16", &o16));
    HANPU_RETURN_IF_ERROR(
        sim.vector({o}, {o16}, matrix_bytes(1, V, false), false, [&] { o16->v = o->v; }));
    HANPU_RETURN_IF_ERROR(sim.store({gm.o, 0, 1, static_cast<int64_t>(h) * V, V}, o16));
    op.free({S, q, k, v, g, beta, o, o16});
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
