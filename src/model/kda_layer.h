// The KDA token mixer of the KDA hybrids (transformers' KimiLinearDeltaAttention and
// BailingHybridDeltaAttention forward) on hanpu's kernels: q/k/v projections, the short
// convolution with SiLU over q|k|v, the per-channel forget gate (kda_gates.h), beta, the KDA
// chunk kernel (one token: its recurrent step), the sigmoid-gated RMSNorm per head, the
// output projection.
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_vector.h"
#include "hanpu/status.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/workspace.h"

namespace hanpu::model {

// x [T, hidden] -> out [out_rows, hidden] (layers.h's convention); conv [kernel - 1, 3 H K]
// and recurrent [H, K, K] are the sequence's states, updated in place. H = c.la_key_heads,
// K = c.la_key_dim (KDA's value heads and dims equal its key heads and dims).
Status kda_layer(const ModelConfig& c, const KdaWeights& w, const float* x, int64_t T,
                 std::vector<float>* conv, AlignedFloats* recurrent, const ForwardOptions& opt,
                 int64_t out_rows, float* out, double* kernel_ms, Workspace& ws);

}  // namespace hanpu::model
