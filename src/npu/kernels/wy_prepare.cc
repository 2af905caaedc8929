// The WY preparation of one (chunk, head), shared by FLA's flow and FlashQLA's (see wy_prepare.h).
#include "npu/kernels/wy_prepare.h"

#include <cmath>

namespace hanpu::npu {

WyGm wy_workspace(NpuSim& sim, const GdnGm& gm, const std::string& prefix,
                  const std::vector<int>& heads, WyForm form) {
  WyGm x;
  int64_t S = gm.H;
  if (!heads.empty()) {
    S = static_cast<int64_t>(heads.size());
    x.slot.assign(static_cast<size_t>(gm.H), -1);
    for (size_t i = 0; i < heads.size(); ++i)
      x.slot[static_cast<size_t>(heads[i])] = static_cast<int>(i);
  }
  if (form == WyForm::kA) {
    x.a = sim.gm(prefix + ".A", gm.T, S * gm.chunk, true, true);
  } else {
    x.w = sim.gm(prefix + ".w", gm.T, S * gm.K, true, true);
    x.u = sim.gm(prefix + ".u", gm.T, S * gm.V, true, true);
  }
  x.gam = sim.gm(prefix + ".g_cumsum", gm.T, gm.kda ? S * gm.K : S, false, true);
  if (gm.kda) x.aqk = sim.gm(prefix + ".Aqk", gm.T, S * gm.chunk, true, true);
  return x;
}

namespace {

// A (fp32, UB) stored as fp16 rows: FlashQLA's kkt_solve output.
Status store_a(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c, Tile* Ainv) {
  NpuSim& sim = op.sim();
  Tile* a16;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, c, true, Layout::kND, "A", &a16));
  HANPU_RETURN_IF_ERROR(
      sim.vector({Ainv}, {a16}, matrix_bytes(c, c, false), false, [&] { a16->v = Ainv->v; }));
  op.free({Ainv});
  HANPU_RETURN_IF_ERROR(sim.store({x.a, t0, c, x.at(h) * gm.chunk, c}, a16));
  op.free({a16});
  return Status::Ok();
}

// W and U from the products to GM as dense fp16 rows.
Status store_wu(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c, Tile* Ainv,
                Tile* kb, Tile* vb) {
  Tile *Wu, *Uu;
  HANPU_RETURN_IF_ERROR(wy_products(op, gm, c, Ainv, kb, vb, &Wu, &Uu));
  HANPU_RETURN_IF_ERROR(op.sim().store({x.w, t0, c, x.at(h) * gm.K, gm.K}, Wu));
  HANPU_RETURN_IF_ERROR(op.sim().store({x.u, t0, c, x.at(h) * gm.V, gm.V}, Uu));
  op.free({Wu, Uu});
  return Status::Ok();
}

// KDA: K and Q come to UB as dense rows (the decayed products are formed from scaled rows),
// the per-channel gates' cumsum goes to GM, and so does Aqk.
Status wy_prepare_kda(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile *Ku, *Qu, *vt, *beta, *gam, *elast, *L, *Qm, *Ainv;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kND, "k", &Ku));
  HANPU_RETURN_IF_ERROR(sim.load(Ku, {gm.k, t0, c, gm.qk_col(h), K}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kND, "q", &Qu));
  HANPU_RETURN_IF_ERROR(sim.load(Qu, {gm.q, t0, c, gm.qk_col(h), K}));
  HANPU_RETURN_IF_ERROR(op.kda_gates(gm, t0, c, h, &beta, &gam, &elast));
  op.free({elast});
  HANPU_RETURN_IF_ERROR(sim.store({x.gam, t0, c, x.at(h) * K, K}, gam));
  HANPU_RETURN_IF_ERROR(op.kda_intra(Ku, Qu, gam, &L, &Qm));
  op.free({Qu});
  HANPU_RETURN_IF_ERROR(op.kda_masks(L, Qm, beta, gm.scale));
  Tile* qm16;  // Aqk in q's dtype, as FLA keeps it
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, c, true, Layout::kND, "Aqk", &qm16));
  HANPU_RETURN_IF_ERROR(
      sim.vector({Qm}, {qm16}, matrix_bytes(c, c, false), false, [&] { qm16->v = Qm->v; }));
  HANPU_RETURN_IF_ERROR(sim.store({x.aqk, t0, c, x.at(h) * gm.chunk, c}, qm16));
  op.free({Qm, qm16});
  HANPU_RETURN_IF_ERROR(op.unit_lower_inverse(L, "Ainv", &Ainv));
  op.free({L});
  if (x.a != nullptr) {
    op.free({Ku, beta, gam});
    return store_a(op, gm, x, h, t0, c, Ainv);
  }
  // kb = diag(beta) (K o exp(gam)) over K's rows, vb = diag(beta) V.
  HANPU_RETURN_IF_ERROR(sim.vector({Ku, beta, gam}, {Ku}, 3 * matrix_bytes(c, K, true), true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int d = 0; d < K; ++d) Ku->at(i, d) *= beta->v[i] * std::exp(gam->at(i, d));
    }
  }));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "v", &vt));
  HANPU_RETURN_IF_ERROR(sim.load(vt, {gm.v, t0, c, static_cast<int64_t>(h) * V, V}));
  Tile* vb;
  HANPU_RETURN_IF_ERROR(beta_rows(op, vt, beta, &vb));
  op.free({vt, beta, gam});
  return store_wu(op, gm, x, h, t0, c, Ainv, Ku, vb);
}

}  // namespace

Status wy_products(CoreOps& op, const GdnGm& gm, int c, Tile* Ainv, Tile* kb, Tile* vb, Tile** Wu,
                   Tile** Uu) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile *A1 = Ainv, *kb1, *vb1, *Aa, *kbB, *vbB, *W, *U;
  const bool staged = Ainv->buf != Buf::kL1;
  if (staged) HANPU_RETURN_IF_ERROR(op.stage_to_l1(Ainv, "Ainv", &A1));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(kb, "kb", &kb1));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(vb, "vb", &vb1));
  if (staged) {
    op.free({Ainv, kb, vb});
  } else {
    op.free({kb, vb});
  }
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, A1, false, "A", &Aa));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, kb1, false, "kb", &kbB));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, K, false, Layout::kNZ, "W", &W));
  HANPU_RETURN_IF_ERROR(sim.mmad(W, Aa, kbB, false));
  op.free({kbB, kb1});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, vb1, false, "vb", &vbB));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "U", &U));
  HANPU_RETURN_IF_ERROR(sim.mmad(U, Aa, vbB, false));
  op.free({vbB, vb1, Aa, A1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(W, "W", Wu));
  HANPU_RETURN_IF_ERROR(op.from_l0c(U, "U", Uu));
  HANPU_RETURN_IF_ERROR(op.to_layout(*Wu, Layout::kND));  // GM and the vector unit take dense rows
  return op.to_layout(*Uu, Layout::kND);
}

Status beta_rows(CoreOps& op, Tile* vt, Tile* beta, Tile** vb) {
  const int c = vt->rows, V = vt->cols;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "vb", vb));
  Tile* o = *vb;
  return op.sim().vector({vt, beta}, {o}, 2 * matrix_bytes(c, V, true), true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < V; ++j) o->at(i, j) = beta->v[i] * vt->at(i, j);
    }
  });
}

Status wy_prepare(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c) {
  if (gm.kda) return wy_prepare_kda(op, gm, x, h, t0, c);
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile *Kc, *vt = nullptr, *beta, *gam, *egam, *Ka, *KTb, *KK, *L, *Ainv;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", &Kc));
  HANPU_RETURN_IF_ERROR(sim.load(Kc, {gm.k, t0, c, gm.qk_col(h), K}));
  if (x.a == nullptr) {  // A alone needs no V
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "v", &vt));
    HANPU_RETURN_IF_ERROR(sim.load(vt, {gm.v, t0, c, static_cast<int64_t>(h) * V, V}));
  }
  HANPU_RETURN_IF_ERROR(op.gates(gm, t0, c, h, &beta, &gam, &egam));
  HANPU_RETURN_IF_ERROR(sim.store({x.gam, t0, c, x.at(h), 1}, gam));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Kc, false, "K", &Ka));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, Kc, true, "KT", &KTb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, c, false, Layout::kNZ, "KKT", &KK));
  HANPU_RETURN_IF_ERROR(sim.mmad(KK, Ka, KTb, false));
  op.free({Ka, KTb});
  HANPU_RETURN_IF_ERROR(op.from_l0c(KK, "L", &L));
  HANPU_RETURN_IF_ERROR(op.to_layout(L, Layout::kND));  // no layout plan: vector work on dense rows
  HANPU_RETURN_IF_ERROR(op.decay_masks(L, nullptr, beta, gam, gm.scale));
  HANPU_RETURN_IF_ERROR(op.unit_lower_inverse(L, "Ainv", &Ainv));
  op.free({L});
  if (x.a != nullptr) {
    op.free({Kc, beta, gam, egam});
    return store_a(op, gm, x, h, t0, c, Ainv);
  }
  // kb = diag(beta exp(gam)) K (rows of the NZ tile: the slower row op), vb = diag(beta) V.
  Tile *kb, *vb;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kNZ, "kb", &kb));
  HANPU_RETURN_IF_ERROR(sim.move(kb, Kc));
  op.free({Kc});
  HANPU_RETURN_IF_ERROR(op.to_layout(kb, Layout::kND));
  HANPU_RETURN_IF_ERROR(sim.vector({kb, beta, egam}, {kb}, 2 * matrix_bytes(c, K, true), true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < K; ++j) kb->at(i, j) *= beta->v[i] * egam->v[i];
    }
  }));
  HANPU_RETURN_IF_ERROR(beta_rows(op, vt, beta, &vb));
  op.free({vt, beta, gam, egam});
  return store_wu(op, gm, x, h, t0, c, Ainv, kb, vb);
}

}  // namespace hanpu::npu
