// A Kimi Linear config from the metadata llama.cpp's converter writes (`kimi-linear.*`,
// conversion/kimi_linear.py): which layers are KDA (head_count_kv 0) and which MLA, the KDA
// and MLA dims, the MoE (its router's groups where the file names them, else one group).
#pragma once

#include "hanpu/status.h"
#include "model/gguf_fields.h"
#include "model/model_config.h"

namespace hanpu::model {

// The architecture's fields of `c` (the caller adds the vocabulary and end tokens, then
// validates the whole config).
Status kimi_linear_gguf_fields(const GgufFields& f, ModelConfig* c);

}  // namespace hanpu::model
