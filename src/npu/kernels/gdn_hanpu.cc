// HA-NPU's fused GDN kernel on the simulated Ascend core (see gdn_kernels.h).
#include <algorithm>
#include <cmath>

#include "npu/kernels/gdn_kernels.h"

namespace hanpu::npu {

namespace {

// The state S [K x V] fp32 stays in UB for the whole sequence; S1 is its fp16 NZ copy in L1
// that the cube reads. Both are updated in place after the chunk's outputs (chunk-first).
Status chunk(CoreOps& op, const GdnGm& gm, int h, int64_t t0, int c, Tile* S, Tile** S1) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile *Kc, *Qc, *vt, *beta, *gam, *egam;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", &Kc));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "q", &Qc));
  HANPU_RETURN_IF_ERROR(sim.load(Kc, {gm.k, t0, c, static_cast<int64_t>(h) * K, K}));
  HANPU_RETURN_IF_ERROR(sim.load(Qc, {gm.q, t0, c, static_cast<int64_t>(h) * K, K}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "v", &vt));
  HANPU_RETURN_IF_ERROR(sim.load(vt, {gm.v, t0, c, static_cast<int64_t>(h) * V, V}));
  HANPU_RETURN_IF_ERROR(op.gates(gm, t0, c, h, &beta, &gam, &egam));

  // GEMM-first group: K and Q go to L0A once and serve both K S0 / Q S0 and K K^T / Q K^T.
  Tile *Ka, *Qa, *Sb, *KTb, *KS, *QS, *KK, *QK;
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Kc, false, "K", &Ka));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Qc, false, "Q", &Qa));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, *S1, false, "S0", &Sb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "KS0", &KS));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "QS0", &QS));
  HANPU_RETURN_IF_ERROR(sim.mmad(KS, Ka, Sb, false));
  HANPU_RETURN_IF_ERROR(sim.mmad(QS, Qa, Sb, false));
  op.free({Sb});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, Kc, true, "KT", &KTb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, c, false, Layout::kNZ, "KKT", &KK));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, c, false, Layout::kNZ, "QKT", &QK));
  HANPU_RETURN_IF_ERROR(sim.mmad(KK, Ka, KTb, false));
  HANPU_RETURN_IF_ERROR(sim.mmad(QK, Qa, KTb, false));
  op.free({KTb, Ka, Qa, Qc});
  Tile *KSu, *QSu, *L, *Qm;
  HANPU_RETURN_IF_ERROR(op.from_l0c(KS, "KS0", &KSu));
  HANPU_RETURN_IF_ERROR(op.from_l0c(QS, "QS0", &QSu));
  HANPU_RETURN_IF_ERROR(op.from_l0c(KK, "L", &L));
  HANPU_RETURN_IF_ERROR(op.from_l0c(QK, "Qm", &Qm));
  HANPU_RETURN_IF_ERROR(op.decay_masks(L, Qm, beta, gam, gm.scale));

  // GEMM-first rewrite: Vn = (I + L)^-1 [diag(beta) (V - exp(gam) K S0)] — the inverse is
  // applied to one right-hand side instead of forming W = A K and U = A V.
  Tile* R;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, false, Layout::kND, "rhs", &R));
  HANPU_RETURN_IF_ERROR(sim.vector({vt, KSu, beta, egam}, {R}, 3 * matrix_bytes(c, V, false), true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < V; ++j) R->at(i, j) = beta->v[i] * (vt->at(i, j) - egam->v[i] * KSu->at(i, j));
    }
  }));
  op.free({vt, KSu});
  Tile *Ainv, *A1, *R1, *Aa, *Rb, *Vn, *Vnu, *Vn1;
  HANPU_RETURN_IF_ERROR(op.unit_lower_inverse(L, "Ainv", &Ainv));
  op.free({L});
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Ainv, "Ainv", &A1));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(R, "rhs", &R1));
  op.free({Ainv, R});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, A1, false, "Ainv", &Aa));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, R1, false, "rhs", &Rb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "Vn", &Vn));
  HANPU_RETURN_IF_ERROR(sim.mmad(Vn, Aa, Rb, false));
  op.free({Aa, Rb, A1, R1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(Vn, "Vn", &Vnu));
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Vnu, "Vn", &Vn1));
  op.free({Vnu});

  // Outputs: o = scale exp(gam) Q S0 + Qm Vn, while S0 is still the chunk's input state.
  Tile *Qm1, *Qma, *Vnb, *O, *Ou, *o16;
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(Qm, "Qm", &Qm1));
  op.free({Qm});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Qm1, false, "Qm", &Qma));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, Vn1, false, "Vn", &Vnb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, V, false, Layout::kNZ, "O", &O));
  HANPU_RETURN_IF_ERROR(sim.mmad(O, Qma, Vnb, false));
  op.free({Qma, Qm1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(O, "O", &Ou));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, V, true, Layout::kND, "o", &o16));
  const float scale = gm.scale;
  HANPU_RETURN_IF_ERROR(sim.vector({Ou, QSu, egam}, {o16}, 3 * matrix_bytes(c, V, false), true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < V; ++j) o16->at(i, j) = Ou->at(i, j) + scale * egam->v[i] * QSu->at(i, j);
    }
  }));
  op.free({Ou, QSu});
  HANPU_RETURN_IF_ERROR(sim.store({gm.o, t0, c, static_cast<int64_t>(h) * V, V}, o16));
  op.free({o16});

  // Chunk-first state update in place: S = exp(gam_last) S + (exp(gam_last - gam) o K)^T Vn.
  Tile *Kub, *Kd1, *KdT, *U, *Uu;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kNZ, "kd", &Kub));
  HANPU_RETURN_IF_ERROR(sim.move(Kub, Kc));
  op.free({Kc});
  const float glast = gam->v[c - 1];
  HANPU_RETURN_IF_ERROR(sim.vector({Kub, gam}, {Kub}, 2 * matrix_bytes(c, K, true), true, [&] {
    for (int i = 0; i < c; ++i) {
      const float f = std::exp(glast - gam->v[i]);
      for (int j = 0; j < K; ++j) Kub->at(i, j) *= f;
    }
  }));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "kd", &Kd1));
  HANPU_RETURN_IF_ERROR(sim.move(Kd1, Kub));
  op.free({Kub});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Kd1, true, "kdT", &KdT));
  op.free({Kd1});
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, K, V, false, Layout::kNZ, "dS", &U));
  HANPU_RETURN_IF_ERROR(sim.mmad(U, KdT, Vnb, false));
  op.free({KdT, Vnb, Vn1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(U, "dS", &Uu));
  const float decay = std::exp(glast);
  HANPU_RETURN_IF_ERROR(sim.vector({S, Uu}, {S}, 3 * matrix_bytes(K, V, false), false, [&] {
    for (size_t i = 0; i < S->v.size(); ++i) S->v[i] = decay * S->v[i] + Uu->v[i];
  }));
  op.free({Uu, *S1, beta, gam, egam});
  return op.stage_to_l1(S, "S16", S1);
}

Status head(CoreOps& op, const GdnGm& gm, int h) {
  NpuSim& sim = op.sim();
  Tile *S, *S1;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, gm.K, gm.V, false, Layout::kND, "S", &S));
  if (gm.state0 != nullptr) {
    HANPU_RETURN_IF_ERROR(sim.load(S, {gm.state0, static_cast<int64_t>(h) * gm.K, gm.K, 0, gm.V}));
  } else {
    HANPU_RETURN_IF_ERROR(sim.vector({}, {S}, matrix_bytes(gm.K, gm.V, false), false, [] {}));
  }
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(S, "S16", &S1));
  for (int64_t t0 = 0; t0 < gm.T; t0 += gm.chunk) {
    const int c = static_cast<int>(std::min<int64_t>(gm.chunk, gm.T - t0));
    HANPU_RETURN_IF_ERROR(chunk(op, gm, h, t0, c, S, &S1));
  }
  if (gm.state1 != nullptr) {
    HANPU_RETURN_IF_ERROR(sim.store({gm.state1, static_cast<int64_t>(h) * gm.K, gm.K, 0, gm.V}, S));
  }
  op.free({S, S1});
  return Status::Ok();
}

}  // namespace

Status gdn_hanpu(NpuSim& sim, const GdnGm& gm) {
  sim.launch();
  for (int h = 0; h < gm.H; ++h) {
    CoreOps op(sim, h % sim.machine().cores);  // whole heads, round robin over the cores
    HANPU_RETURN_IF_ERROR(head(op, gm, h));
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
