// Full attention's prefill on the simulated Ascend cores, as a fused FlashAttention kernel
// (the form Ascend's fused attention operators take): per unit (a block of query rows of the
// query heads that share one kv head, stacked so each K / V block is loaded once for all of
// them) on one core, S = Q K^T on the cube, the online softmax on the vector unit, O += P V on
// the cube, the running O in UB until the unit is done; the next key block's Q K^T is issued
// before this block's P V, so the cube works while the vector unit does the softmax. The
// other half of a hybrid model's attention next to the LA kernels, for the whole prefill.
#pragma once

#include <cstdint>

#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

// q, o [T, Hq * D], k, v [Tk, Hkv * D], fp16, row-major, each from its column `*_col` of a
// tensor that may be wider (k and v as columns of one projection's output, say); query head h
// reads kv head h / (Hq / Hkv) (grouped-query attention).
struct AscendAttnGm {
  int64_t T = 0;
  // Key rows (0: T). With more keys than queries (a decode step over a cache) the queries are
  // the last T positions: query i sits at Tk - T + i.
  int64_t Tk = 0;
  int Hq = 0, Hkv = 0, D = 0;
  bool causal = true;
  float scale = 1.0f;
  GmTensor *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  int64_t q_col = 0, k_col = 0, v_col = 0, o_col = 0;
};

// Stacked query rows per unit (at most; D above 256 takes fewer so the running O fits UB)
// and key rows per step; `skip_masked`: key blocks wholly above the causal diagonal are not
// computed (else they are, and masked).
struct AscendAttnTiling {
  int rows = 128, bkv = 64;
  bool skip_masked = true;
};

// About how many instructions the kernel records for `gm` (an upper estimate): the
// simulator keeps every one (~135 bytes) until its replay, so callers bound a run with it.
double ascend_attention_events(const AscendAttnGm& gm, const AscendAttnTiling& tiling = {});
inline constexpr double kMaxAttentionEvents = 64e6;

// Inside the current launch (the caller calls launch()). Units are dealt to the cores in
// round robin, the last query blocks (the most key blocks under a causal mask) first.
// Outputs of padding rows (a short last block) are never stored.
Status ascend_flash_attention(NpuSim& sim, const AscendAttnGm& gm,
                              const AscendAttnTiling& tiling = {});

}  // namespace hanpu::npu
