// STEEL's fused attention dataflow on the spatial (XDNA-class) model: one three-stage
// pipeline per column (QK + scale/mask on row 2, exp2 softmax on row 3, rescale + P V on
// row 4), Q split and O joined through mem tiles, K and V broadcast to every pipeline, P
// swizzled through the pipeline's mem tile, causal tiles above the diagonal skipped in
// compute while K/V still stream (as the public code does). Placement of query blocks on
// pipelines: "uniform" (contiguous) or "sparsity-aware" (round-robin, STEEL's).
#pragma once

#include <string>

#include "hanpu/status.h"
#include "npu/sim/spatial_sim.h"

namespace hanpu::npu {

struct AttnShape {
  int64_t T = 0;  // queries = keys
  int H = 0;      // heads (q = kv)
  int D = 64;
  bool causal = true;
  float scale = 0.125f;
};

inline constexpr int kSteelTile = 64;  // B_q = B_kv = 64 (IRON's mha design)

// q, k, v, o: [T, H, D] fp32 holding bf16-rounded values (o written in fp32). Records the
// dataflow on `sim` and computes o with its arithmetic (bf16 operands, fp32 accumulation,
// exp2 with the scale folded in, P passed as bf16).
Status steel_attention(SpatialSim& sim, const AttnShape& s, const std::string& placement,
                       const float* q, const float* k, const float* v, float* o);
// The layer-by-layer baseline (STEEL's "layer" comparison, IRON's separate GEMM, softmax and
// scale kernels): S and P round-trip through DRAM, three launches (attn_layer_npu.cc).
// DATO's task-based pipeline (QK, softmax, P V, accumulate; chunks of 32; four columns; a
// launch per head; nothing skipped), the prior work STEEL compares against (attn_dato.cc).
Status dato_attention(SpatialSim& sim, const AttnShape& s, const float* q, const float* k,
                      const float* v, float* o);
Status layer_attention(SpatialSim& sim, const AttnShape& s, const float* q, const float* k,
                       const float* v, float* o);

}  // namespace hanpu::npu
