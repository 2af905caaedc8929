// One chunk of the GDN recurrence in FLA's WY form on a simulated core, shared by the flows
// that walk chunks from W and U in GM (fla's recurrence launch, flashqla's segment walks):
// Vn = U - W S, then S = exp(gam_last) S + (exp(gam_last - gam) o K)^T Vn in place.
#pragma once

#include "npu/kernels/chunk_ops.h"
#include "npu/kernels/wy_prepare.h"

namespace hanpu::npu {

// What a caller may keep of a step for more products: Vn (fp16, L1), Kd^T (L0A), W (L1),
// the state before the step (fp16, L1) and gam (UB).
struct WyStep {
  Tile *vn1 = nullptr, *kdt = nullptr, *w1 = nullptr, *s16 = nullptr, *gam = nullptr;
};

// h_out / vn_out (may be null): GM blocks that receive the state before the step (fp16) and
// Vn. With `keep` the step's tiles are handed over in *out (the caller frees them).
Status wy_advance(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c, Tile* S,
                  const GmBlock* h_out, const GmBlock* vn_out, bool keep, WyStep* out);

// o = scale exp(gam) Q S + Qm Vn for one (chunk, head) and stored to gm.o: Q K^T masked into
// Qm, Q S against the chunk's input state. Takes q, k, the state s16 (fp16, L1), Vn (fp16,
// L1) and gam (UB) and frees them.
Status wy_output(CoreOps& op, const GdnGm& gm, int h, int64_t t0, int c, Tile* q1, Tile* k1, Tile* s16, Tile* vn1,
                 Tile* gam);

}  // namespace hanpu::npu
