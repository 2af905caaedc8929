// The tensors of a Hugging Face Qwen3.5 / Qwen3-Next / Kimi Linear checkpoint under the names
// and layouts llama.cpp's convert_hf_to_gguf.py gives them (Qwen3NextModel, for Qwen3.5
// _LinearAttentionVReorderBase, for Kimi Linear KimiLinearModel: its norms as stored, its
// convs as [1, HK, 1, kernel], kv_b split into attn_k_b / attn_v_b): blk.N.* names; zero-centred
// RMSNorm weights stored as 1 + w (not the gated linear-attention norm); A_log as ssm_a =
// -exp(A_log); dt_bias as ssm_dt.bias; conv weights squeezed to [channels, kernel]; Qwen3-Next's
// per-key-head qkvz split into attn_qkv / attn_gate; Qwen3.5's value heads in tiled order (GGUF
// head r Hk + k holds HF head k g + r) wherever value heads appear; experts stacked into [E, out,
// in]. The multi-token-prediction head and the vision tower are left out (llama.cpp loads a text
// model without them).
#pragma once

#include <vector>

#include "hanpu/status.h"
#include "model/gathered_tensor.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace hanpu::model {

// Which stored tensors make each GGUF tensor (they point into `store`, which must outlive
// them). Every tensor the model needs must be in `store` with the shape `config` implies;
// errors name it. Kept (not quantized) tensors get the type the converter writes: F32 for
// norms, 1-D tensors, ssm_conv1d and the routers; otherwise the checkpoint's own.
Status hf_gguf_tensors(const ModelConfig& config, const WeightStore& store,
                       std::vector<GatheredTensor>* out);

}  // namespace hanpu::model
