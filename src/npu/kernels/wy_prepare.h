// FLA's first phase for one (chunk, head) on a simulated core, shared by the flows that
// materialise the WY form in GM (fla, fla-mega, flashqla): gam = cumsum(g) to GM,
// A = (I + L)^-1, W = A diag(beta exp(gam)) K and U = A diag(beta) V to GM (fp16).
#pragma once

#include "npu/kernels/chunk_ops.h"

namespace hanpu::npu {

struct WyGm {
  GmTensor *w, *u, *gam;  // [T, H*K] fp16, [T, H*V] fp16, [T, H] fp32
};
Status wy_prepare(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c);

}  // namespace hanpu::npu
