// wy_advance (see wy_walk.h).
#include "npu/kernels/wy_walk.h"

#include <cmath>

#include <fmt/format.h>

namespace hanpu::npu {

namespace {

// FlashQLA's fused kernels: W and U of one (chunk, head) rebuilt on the core from A (GM,
// straight into L1 as the cube's operand), beta, v and the caller's gam and K rows (UB, kept):
// W = A diag(beta exp(gam)) K (KDA: A diag(beta) (K o exp(gam))), U = A diag(beta) V. W comes
// back as the cube's fp16 operand in L1, U as dense fp32 rows in UB.
Status wy_rebuild(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c, Tile* gam,
                  Tile* kraw, Tile** W1, Tile** U) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile *A1, *beta, *kb, *vt, *vb, *Wu;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, c, true, Layout::kNZ, "A", &A1));
  HANPU_RETURN_IF_ERROR(sim.load(A1, {x.a, t0, c, x.at(h) * gm.chunk, c}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, 1, false, Layout::kND, "beta", &beta));
  HANPU_RETURN_IF_ERROR(sim.load(beta, {gm.beta, t0, c, h, 1}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kND, "kb", &kb));
  const bool kda = gm.kda;
  HANPU_RETURN_IF_ERROR(
      sim.vector({kraw, beta, gam}, {kb}, 2 * matrix_bytes(c, K, true), true, [&] {
        for (int i = 0; i < c; ++i) {
          for (int d = 0; d < K; ++d) {
            const float e = std::exp(kda ? gam->at(i, d) : gam->v[i]);
            kb->at(i, d) = beta->v[i] * e * kraw->at(i, d);
          }
        }
      }));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "v", &vt));
  HANPU_RETURN_IF_ERROR(sim.load(vt, {gm.v, t0, c, static_cast<int64_t>(h) * V, V}));
  HANPU_RETURN_IF_ERROR(beta_rows(op, vt, beta, &vb));
  op.free({vt, beta});
  HANPU_RETURN_IF_ERROR(wy_products(op, gm, c, A1, kb, vb, &Wu, U));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Wu, "w", W1));
  op.free({Wu});
  return Status::Ok();
}

}  // namespace

Status wy_advance(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c, Tile* S,
                  const GmBlock* h_out, const GmBlock* vn_out, bool keep, WyStep* out, int v0) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = S->cols;  // S holds the head's value columns [v0, v0 + V)
  if (v0 + V > gm.V || (x.a != nullptr && V != gm.V)) {
    return Status::Error(fmt::format("wy_advance: value columns [{}, {}) of {}", v0, v0 + V, gm.V));
  }
  // The state the step starts from, as the cube's fp16 operand (and to GM when asked).
  Tile* S16;
  if (h_out != nullptr) {
    Tile* h16;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, K, V, true, Layout::kND, "h", &h16));
    HANPU_RETURN_IF_ERROR(
        sim.vector({S}, {h16}, matrix_bytes(K, V, false), false, [&] { h16->v = S->v; }));
    HANPU_RETURN_IF_ERROR(sim.store(*h_out, h16));
    HANPU_RETURN_IF_ERROR(sim.relayout(h16, Layout::kNZ));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, K, V, true, Layout::kNZ, "h", &S16));
    HANPU_RETURN_IF_ERROR(sim.move(S16, h16));
    op.free({h16});
  } else {
    HANPU_RETURN_IF_ERROR(op.stage_to_l1(S, "S16", &S16));
  }
  Tile *W1, *U, *gam, *K1 = nullptr, *Kub = nullptr, *Wa, *Sb, *WSc, *WS, *vn16;
  if (x.a != nullptr) {
    // K comes from GM once: the cube's operand in L1 (kept for Q K^T when the caller keeps
    // the step) and its dense rows in UB, W's right factor and, decayed, the state update's.
    HANPU_RETURN_IF_ERROR(wy_load_gam(op, gm, x, h, t0, c, &gam));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", &K1));
    HANPU_RETURN_IF_ERROR(sim.load(K1, {gm.k, t0, c, gm.qk_col(h), K}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kNZ, "kd", &Kub));
    HANPU_RETURN_IF_ERROR(sim.move(Kub, K1));
    HANPU_RETURN_IF_ERROR(op.to_layout(Kub, Layout::kND));
    HANPU_RETURN_IF_ERROR(wy_rebuild(op, gm, x, h, t0, c, gam, Kub, &W1, &U));
  } else {
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "w", &W1));
    HANPU_RETURN_IF_ERROR(sim.load(W1, {x.w, t0, c, x.at(h) * K, K}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "u", &U));
    HANPU_RETURN_IF_ERROR(sim.load(U, {x.u, t0, c, x.at(h) * gm.V + v0, V}));
    HANPU_RETURN_IF_ERROR(wy_load_gam(op, gm, x, h, t0, c, &gam));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", &K1));
    HANPU_RETURN_IF_ERROR(sim.load(K1, {gm.k, t0, c, gm.qk_col(h), K}));
  }
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, W1, false, "w", &Wa));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, S16, false, "S", &Sb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "WS", &WSc));
  HANPU_RETURN_IF_ERROR(sim.mmad(WSc, Wa, Sb, false));
  op.free({Wa, Sb});
  HANPU_RETURN_IF_ERROR(op.from_l0c(WSc, "WS", &WS));
  HANPU_RETURN_IF_ERROR(op.to_layout(WS, Layout::kND));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "vn", &vn16));
  HANPU_RETURN_IF_ERROR(sim.vector({U, WS}, {vn16}, 3 * matrix_bytes(c, V, false), false, [&] {
    for (size_t i = 0; i < vn16->v.size(); ++i) vn16->v[i] = U->v[i] - WS->v[i];
  }));
  op.free({U, WS});
  if (vn_out != nullptr) HANPU_RETURN_IF_ERROR(sim.store(*vn_out, vn16));
  // Kd = exp(gam_last - gam) o K, transposed into L0A.
  Tile *Kd1, *KdT, *Vn1, *Vnb, *dSc, *dS;
  if (Kub == nullptr) {
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kNZ, "kd", &Kub));
    HANPU_RETURN_IF_ERROR(sim.move(Kub, K1));
    op.free({K1});
    K1 = nullptr;
    HANPU_RETURN_IF_ERROR(op.to_layout(Kub, Layout::kND));
  }
  HANPU_RETURN_IF_ERROR(op.decay_to_chunk_end(Kub, gam, gm.kda));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Kub, "kd", &Kd1));
  op.free({Kub});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Kd1, true, "kdT", &KdT));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(vn16, "vn", &Vn1));
  op.free({vn16, Kd1});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, Vn1, false, "vn", &Vnb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, K, V, false, Layout::kNZ, "dS", &dSc));
  HANPU_RETURN_IF_ERROR(sim.mmad(dSc, KdT, Vnb, false));
  op.free({Vnb});
  HANPU_RETURN_IF_ERROR(op.from_l0c(dSc, "dS", &dS));
  HANPU_RETURN_IF_ERROR(op.to_layout(dS, Layout::kND));
  if (gm.kda) {  // a decay per state row
    HANPU_RETURN_IF_ERROR(sim.vector({S, dS, gam}, {S}, 3 * matrix_bytes(K, V, false), true, [&] {
      for (int d = 0; d < K; ++d) {
        const float decay = std::exp(gam->at(c - 1, d));
        for (int j = 0; j < V; ++j) S->at(d, j) = decay * S->at(d, j) + dS->at(d, j);
      }
    }));
  } else {
    const float decay = std::exp(gam->v[c - 1]);
    HANPU_RETURN_IF_ERROR(sim.vector({S, dS}, {S}, 3 * matrix_bytes(K, V, false), false, [&] {
      for (size_t i = 0; i < S->v.size(); ++i) S->v[i] = decay * S->v[i] + dS->v[i];
    }));
  }
  op.free({dS});
  if (keep) {
    *out = {Vn1, KdT, W1, S16, gam, K1};
  } else {
    op.free({Vn1, KdT, W1, S16, gam});
    if (K1 != nullptr) op.free({K1});
  }
  return Status::Ok();
}

Status wy_initial_state(CoreOps& op, const GdnGm& gm, int h, Tile** S, int v0, int width) {
  const int K = gm.K, V = width > 0 ? width : gm.V;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, K, V, false, Layout::kND, "S", S));
  if (gm.state0 != nullptr)
    return op.sim().load(*S, {gm.state0, static_cast<int64_t>(h) * K, K, v0, V});
  return op.sim().vector({}, {*S}, matrix_bytes(K, V, false), false, [] {});
}

Status wy_load_gam(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c,
                   Tile** gam) {
  const int w = gm.kda ? gm.K : 1;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, w, false, Layout::kND, "gam", gam));
  return op.sim().load(*gam, {x.gam, t0, c, x.at(h) * w, w});
}

Status wy_output_operands(CoreOps& op, const GdnGm& gm, int h, int64_t t0, int c, Tile** q,
                          Tile** k, Tile* k_held) {
  NpuSim& sim = op.sim();
  const int K = gm.K;
  if (gm.kda) {
    if (k_held != nullptr) op.free({k_held});
    *k = nullptr;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kND, "q", q));
    return sim.load(*q, {gm.q, t0, c, gm.qk_col(h), K});
  }
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "q", q));
  HANPU_RETURN_IF_ERROR(sim.load(*q, {gm.q, t0, c, gm.qk_col(h), K}));
  if (k_held != nullptr) {
    *k = k_held;
    return Status::Ok();
  }
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", k));
  return sim.load(*k, {gm.k, t0, c, gm.qk_col(h), K});
}

namespace {

// KDA's output: Qg = Q o exp(gam) against S, Aqk (already decayed, masked and scaled) from
// GM against Vn; o = Aqk Vn + scale Qg S.
Status wy_output_kda(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c,
                     Tile* qu, Tile* s16, Tile* vn1, Tile* gam) {
  NpuSim& sim = op.sim();
  const int V = gm.V;
  Tile *Qg, *Qg1, *Qa, *Sb, *QS, *QSu, *Am, *Am1, *Ama, *Vnb, *O, *Ou, *o16;
  HANPU_RETURN_IF_ERROR(op.channel_scaled(
      qu, gam, 0, c, "qg", [&](int i, int d) { return std::exp(gam->at(i, d)); }, &Qg));
  op.free({qu, gam});
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Qg, "qg", &Qg1));
  op.free({Qg});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Qg1, false, "Qg", &Qa));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, s16, false, "h", &Sb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "QH", &QS));
  HANPU_RETURN_IF_ERROR(sim.mmad(QS, Qa, Sb, false));
  op.free({Qa, Sb, s16, Qg1});
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, c, true, Layout::kND, "Aqk", &Am));
  HANPU_RETURN_IF_ERROR(sim.load(Am, {x.aqk, t0, c, x.at(h) * gm.chunk, c}));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Am, "Aqk", &Am1));
  op.free({Am});
  HANPU_RETURN_IF_ERROR(op.from_l0c(QS, "QH", &QSu));
  HANPU_RETURN_IF_ERROR(op.to_layout(QSu, Layout::kND));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Am1, false, "Aqk", &Ama));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, vn1, false, "vn", &Vnb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "O", &O));
  HANPU_RETURN_IF_ERROR(sim.mmad(O, Ama, Vnb, false));
  op.free({Ama, Am1, Vnb, vn1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(O, "O", &Ou));
  HANPU_RETURN_IF_ERROR(op.to_layout(Ou, Layout::kND));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "o", &o16));
  const float scale = gm.scale;
  HANPU_RETURN_IF_ERROR(sim.vector({Ou, QSu}, {o16}, 3 * matrix_bytes(c, V, false), false, [&] {
    for (size_t i = 0; i < o16->v.size(); ++i) o16->v[i] = Ou->v[i] + scale * QSu->v[i];
  }));
  op.free({Ou, QSu});
  HANPU_RETURN_IF_ERROR(sim.store({gm.o, t0, c, static_cast<int64_t>(h) * V, V}, o16));
  op.free({o16});
  return Status::Ok();
}

}  // namespace

Status wy_output(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c, Tile* q1,
                 Tile* k1, Tile* s16, Tile* vn1, Tile* gam) {
  if (gm.kda) return wy_output_kda(op, gm, x, h, t0, c, q1, s16, vn1, gam);
  NpuSim& sim = op.sim();
  const int V = gm.V;
  Tile *Qa, *KTb, *Sb, *QK, *QS, *Qm, *QSu;
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, q1, false, "Q", &Qa));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, k1, true, "KT", &KTb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, c, false, Layout::kNZ, "QKT", &QK));
  HANPU_RETURN_IF_ERROR(sim.mmad(QK, Qa, KTb, false));
  op.free({KTb, k1});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, s16, false, "h", &Sb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "QH", &QS));
  HANPU_RETURN_IF_ERROR(sim.mmad(QS, Qa, Sb, false));
  op.free({Qa, Sb, s16, q1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(QK, "Qm", &Qm));
  HANPU_RETURN_IF_ERROR(op.to_layout(Qm, Layout::kND));
  HANPU_RETURN_IF_ERROR(op.decay_masks(nullptr, Qm, nullptr, gam, gm.scale));
  HANPU_RETURN_IF_ERROR(op.from_l0c(QS, "QH", &QSu));
  HANPU_RETURN_IF_ERROR(op.to_layout(QSu, Layout::kND));
  Tile *Qm1, *Qma, *Vnb, *O, *Ou, *o16;
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Qm, "Qm", &Qm1));
  op.free({Qm});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Qm1, false, "Qm", &Qma));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, vn1, false, "vn", &Vnb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "O", &O));
  HANPU_RETURN_IF_ERROR(sim.mmad(O, Qma, Vnb, false));
  op.free({Qma, Qm1, Vnb, vn1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(O, "O", &Ou));
  HANPU_RETURN_IF_ERROR(op.to_layout(Ou, Layout::kND));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "o", &o16));
  const float scale = gm.scale;
  HANPU_RETURN_IF_ERROR(sim.vector({Ou, QSu, gam}, {o16}, 3 * matrix_bytes(c, V, false), true, [&] {
    for (int i = 0; i < c; ++i) {
      const float e = scale * std::exp(gam->v[i]);
      for (int j = 0; j < V; ++j) o16->at(i, j) = Ou->at(i, j) + e * QSu->at(i, j);
    }
  }));
  op.free({Ou, QSu, gam});
  HANPU_RETURN_IF_ERROR(sim.store({gm.o, t0, c, static_cast<int64_t>(h) * V, V}, o16));
  op.free({o16});
  return Status::Ok();
}

}  // namespace hanpu::npu
