// One chunk of the GDN recurrence in FLA's WY form on a simulated core, shared by the flows
// that walk chunks from the WY form (fla's recurrence launch, from W and U in GM; flashqla's
// segment walks, which rebuild W and U from A): Vn = U - W S, then
// S = exp(gam_last) S + (exp(gam_last - gam) o K)^T Vn in place (KDA: the decays per key
// channel, diag(exp(gam_last)) S).
#pragma once

#include "npu/kernels/chunk_ops.h"
#include "npu/kernels/wy_prepare.h"

namespace hanpu::npu {

// What a caller may keep of a step for more products: Vn (fp16, L1), Kd^T (L0A), W (L1),
// the state before the step (fp16, L1), gam (UB) and, from a step that rebuilt W and U from
// A, the chunk's K as the cube's operand (L1; else null).
struct WyStep {
  Tile *vn1 = nullptr, *kdt = nullptr, *w1 = nullptr, *s16 = nullptr, *gam = nullptr, *k1 = nullptr;
};

// h_out / vn_out (may be null): GM blocks that receive the state before the step (fp16) and
// Vn. With `keep` the step's tiles are handed over in *out (the caller frees them). S may
// hold only the value columns [v0, v0 + S->cols) of the head's state (FLA's value blocks:
// a block's columns evolve on their own; W and K are read whole for each), from W and U in
// GM; a step that rebuilds W and U from A (WyForm::kA) takes whole heads.
Status wy_advance(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c, Tile* S,
                  const GmBlock* h_out, const GmBlock* vn_out, bool keep, WyStep* out, int v0 = 0);

// A head's fp32 state [K x V] in UB, dense: gm.state0's rows for head h, or zeros; with
// `width` > 0 only its value columns [v0, v0 + width).
Status wy_initial_state(CoreOps& op, const GdnGm& gm, int h, Tile** S, int v0 = 0, int width = 0);

// The operands wy_output reads from gm.q / gm.k: GDN, q and k in L1 (fp16 NZ); KDA, q as
// dense UB rows (scaled per channel before the cube sees it) and no k (Aqk comes from GM).
// k_held (may be null): the chunk's K already in L1 (WyStep::k1), taken instead of a load
// (KDA's output, which reads no K, frees it).
Status wy_output_operands(CoreOps& op, const GdnGm& gm, int h, int64_t t0, int c, Tile** q,
                          Tile** k, Tile* k_held = nullptr);

// o = scale exp(gam) Q S + Qm Vn for one (chunk, head) and stored to gm.o: Q K^T masked into
// Qm, Q S against the chunk's input state (KDA: (Q o exp(gam)) S and Qm = Aqk from x.aqk).
// Takes q, k (from wy_output_operands), the state s16 (fp16, L1), Vn (fp16, L1) and gam (UB)
// and frees them.
Status wy_output(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c, Tile* q,
                 Tile* k, Tile* s16, Tile* vn1, Tile* gam);
// gam of one (chunk, head) from the WY form into UB ([c x 1], KDA [c x K]).
Status wy_load_gam(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c,
                   Tile** gam);

}  // namespace hanpu::npu
