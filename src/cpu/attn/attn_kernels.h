// The attention kernels behind attn_prefill / attn_decode (fp32 rows; see attn_api.cc).
#pragma once

#include "cpu/attn/attn_problem.h"

namespace hanpu::cpu {

// Fused prefill with STEEL's placements: balanced = true deals query tiles so every core
// gets the same unmasked work; false gives each core contiguous query blocks (uniform).
void attn_fused(const AttnProblem& p, AttnRunContext& ctx, bool balanced);

// The layer-by-layer baseline: per head, scores for the whole T x Tk matrix through
// memory, a softmax pass, then P V (the naive NPU path STEEL compares against). Needs fp32
// keys and values (kv_dtype kF32: attn_api.cc converts 16-bit ones for it).
void attn_layer(const AttnProblem& p, AttnRunContext& ctx);

// Decode: keys split over the cores, partial results merged by log-sum-exp.
void attn_split_keys(const AttnProblem& p, AttnRunContext& ctx);

}  // namespace hanpu::cpu
