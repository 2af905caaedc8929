// The WY preparation of one (chunk, head), shared by FLA's flow and FlashQLA's (see wy_prepare.h).
#include "npu/kernels/wy_prepare.h"

#include <cmath>

namespace hanpu::npu {

Status wy_prepare(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile *Kc, *vt, *beta, *gam, *egam, *Ka, *KTb, *KK, *L, *Ainv;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", &Kc));
  HANPU_RETURN_IF_ERROR(sim.load(Kc, {gm.k, t0, c, static_cast<int64_t>(h) * K, K}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "v", &vt));
  HANPU_RETURN_IF_ERROR(sim.load(vt, {gm.v, t0, c, static_cast<int64_t>(h) * V, V}));
  HANPU_RETURN_IF_ERROR(op.gates(gm, t0, c, h, &beta, &gam, &egam));
  HANPU_RETURN_IF_ERROR(sim.store({x.gam, t0, c, h, 1}, gam));
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
  // kb = diag(beta exp(gam)) K (rows of the NZ tile: the slower row op), vb = diag(beta) V.
  Tile *kb, *vb, *A1, *kb1, *vb1, *Aa, *kbB, *vbB, *W, *U, *Wu, *Uu;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kNZ, "kb", &kb));
  HANPU_RETURN_IF_ERROR(sim.move(kb, Kc));
  op.free({Kc});
  HANPU_RETURN_IF_ERROR(op.to_layout(kb, Layout::kND));
  HANPU_RETURN_IF_ERROR(sim.vector({kb, beta, egam}, {kb}, 2 * matrix_bytes(c, K, true), true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < K; ++j) kb->at(i, j) *= beta->v[i] * egam->v[i];
    }
  }));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "vb", &vb));
  HANPU_RETURN_IF_ERROR(sim.vector({vt, beta}, {vb}, 2 * matrix_bytes(c, V, true), true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < V; ++j) vb->at(i, j) = beta->v[i] * vt->at(i, j);
    }
  }));
  op.free({vt, beta, gam, egam});
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Ainv, "Ainv", &A1));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(kb, "kb", &kb1));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(vb, "vb", &vb1));
  op.free({Ainv, kb, vb});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, A1, false, "A", &Aa));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, kb1, false, "kb", &kbB));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, K, false, Layout::kNZ, "W", &W));
  HANPU_RETURN_IF_ERROR(sim.mmad(W, Aa, kbB, false));
  op.free({kbB, kb1});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, vb1, false, "vb", &vbB));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "U", &U));
  HANPU_RETURN_IF_ERROR(sim.mmad(U, Aa, vbB, false));
  op.free({vbB, vb1, Aa, A1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(W, "W", &Wu));
  HANPU_RETURN_IF_ERROR(op.from_l0c(U, "U", &Uu));
  HANPU_RETURN_IF_ERROR(op.to_layout(Wu, Layout::kND));  // GM takes dense rows
  HANPU_RETURN_IF_ERROR(op.to_layout(Uu, Layout::kND));
  HANPU_RETURN_IF_ERROR(sim.store({x.w, t0, c, static_cast<int64_t>(h) * K, K}, Wu));
  HANPU_RETURN_IF_ERROR(sim.store({x.u, t0, c, static_cast<int64_t>(h) * V, V}, Uu));
  op.free({Wu, Uu});
  return Status::Ok();
}

}  // namespace hanpu::npu
