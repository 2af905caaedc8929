// FLA's first phase for one (chunk, head) on a simulated core, shared by the flows that
// materialise the WY form in GM (fla, fla-mega, flashqla): gam = cumsum(g) to GM,
// A = (I + L)^-1, W = A diag(beta exp(gam)) K and U = A diag(beta) V to GM (fp16).
// KDA (FLA's chunk_kda): gam per key channel, W = A diag(beta) (K o exp(gam)), and the
// decayed intra-chunk Q K^T (Aqk, its decay inside the sum) computed here and kept in GM
// for the output phase, as FLA's intra kernel does.
#pragma once

#include <string>
#include <vector>

#include "npu/kernels/chunk_ops.h"

namespace hanpu::npu {

struct WyGm {
  GmTensor *w, *u, *gam;    // [T, S*K] fp16, [T, S*V] fp16, [T, S] fp32 (KDA: [T, S*K])
  GmTensor* aqk = nullptr;  // KDA: scale Tril(decayed Q K^T) [T, S*C] fp16
  std::vector<int> slot;    // head -> its slot of the S in the tensors above (empty: the head)
  int64_t at(int h) const { return slot.empty() ? h : slot[static_cast<size_t>(h)]; }
};
// The WY intermediates of a flow in GM, named `prefix`.w etc. (counted as workspace), for
// `heads` (empty: all of gm's heads; otherwise only those get a slot).
WyGm wy_workspace(NpuSim& sim, const GdnGm& gm, const std::string& prefix,
                  const std::vector<int>& heads = {});
Status wy_prepare(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c);

}  // namespace hanpu::npu
