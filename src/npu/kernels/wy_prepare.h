// FLA's first phase for one (chunk, head) on a simulated core, shared by the flows that
// materialise the WY form in GM (fla, fla-mega, flashqla): gam = cumsum(g) to GM,
// A = (I + L)^-1, W = A diag(beta exp(gam)) K and U = A diag(beta) V to GM (fp16).
// FlashQLA keeps less: its kkt_solve writes only A ([T, H, 64] in k's dtype) and its fused
// kernels rebuild W and U on the core from A, k, v, g and beta for every chunk they walk
// (WyForm::kA; wy_walk.h).
// KDA (FLA's chunk_kda): gam per key channel, W = A diag(beta) (K o exp(gam)), and the
// decayed intra-chunk Q K^T (Aqk, its decay inside the sum) computed here and kept in GM
// for the output phase, as FLA's intra kernel does.
#pragma once

#include <string>
#include <vector>

#include "npu/kernels/chunk_ops.h"

namespace hanpu::npu {

enum class WyForm { kWU, kA };  // what the first phase leaves in GM: W and U, or only A

struct WyGm {
  GmTensor *w = nullptr, *u = nullptr;  // [T, S*K] fp16, [T, S*V] fp16 (WyForm::kWU)
  GmTensor* a = nullptr;                // [T, S*C] fp16, A = (I + L)^-1 (WyForm::kA)
  GmTensor* gam = nullptr;              // [T, S] fp32 (KDA: [T, S*K])
  GmTensor* aqk = nullptr;              // KDA: scale Tril(decayed Q K^T) [T, S*C] fp16
  std::vector<int> slot;  // head -> its slot of the S in the tensors above (empty: the head)
  int64_t at(int h) const { return slot.empty() ? h : slot[static_cast<size_t>(h)]; }
};
// The WY intermediates of a flow in GM, named `prefix`.w etc. (counted as workspace), for
// `heads` (empty: all of gm's heads; otherwise only those get a slot), in `form`.
WyGm wy_workspace(NpuSim& sim, const GdnGm& gm, const std::string& prefix,
                  const std::vector<int>& heads = {}, WyForm form = WyForm::kWU);
Status wy_prepare(CoreOps& op, const GdnGm& gm, const WyGm& x, int h, int64_t t0, int c);
// W = A kb and U = A vb on the cube from A (UB, or already the cube's fp16 NZ operand in
// L1), kb and vb (UB), all freed; W and U returned in UB as dense fp32 rows.
Status wy_products(CoreOps& op, const GdnGm& gm, int c, Tile* Ainv, Tile* kb, Tile* vb, Tile** W,
                   Tile** U);
// vb = diag(beta) V into a new UB tile.
Status beta_rows(CoreOps& op, Tile* vt, Tile* beta, Tile** vb);

}  // namespace hanpu::npu
