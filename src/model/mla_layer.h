// Multi-head latent attention, the full-attention layers of the KDA hybrids (transformers'
// KimiLinearAttention and BailingHybridAttention forward) on hanpu's kernels: queries (full
// rank, or q_a -> RMSNorm -> q_b), each token's latent (kv_a -> RMSNorm) and shared rope key,
// the latent up-projected to per-head keys and values (kv_b), DeepSeek's interleaved RoPE on
// the rope dims where the model has it (Ling; Kimi Linear uses none), the fused causal
// attention kernel at scale (nope + rope)^-1/2, Ling's per-head sigmoid output gate, the
// output projection.
//
// The fused kernel takes one head dim for queries, keys and values, a multiple of 16: keys
// [nope | rope] and values are zero-padded to mla_kernel_head_dim (zeros add nothing to
// q.k, and the values' padding columns of the output are dropped). The cache holds those
// padded per-head keys and values.
#pragma once

#include <cstdint>

#include "hanpu/status.h"
#include "model/layer_kv.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/workspace.h"

namespace hanpu::model {

// The head dim the cache and the kernel use: max(nope + rope, v) rounded up to 16.
int mla_kernel_head_dim(const MlaShape& m);

// x [T, hidden] -> out [out_rows, hidden] (layers.h's convention); this call's keys and
// values (positions pos0 ...) are appended to kv [*, H, mla_kernel_head_dim].
Status mla_layer(const ModelConfig& c, const MlaWeights& w, const float* x, int64_t T, int64_t pos0,
                 LayerKv* kv, const ForwardOptions& opt, int64_t out_rows, float* out,
                 double* kernel_ms, Workspace& ws);

}  // namespace hanpu::model
