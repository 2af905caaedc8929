// A Qwen3.5 (`qwen35`), Qwen3-Next (`qwen3next`) or Kimi Linear (`kimi-linear`) model from a
// GGUF written by llama.cpp's converter: the config from its metadata, the weights with the
// converter's conventions undone (Qwen's norms stored as 1 + w, Qwen3.5's value heads in tiled
// order, Kimi's kv_b split and transposed: gguf_kda_weights.cc); the tokenizer from its
// tokenizer.ggml.* arrays is in gguf_tokenizer.h.
#pragma once

#include <optional>
#include <string>

#include "hanpu/status.h"
#include "model/gguf_config.h"
#include "model/model_weights.h"

namespace hanpu::model {

// Quantized projections keep their blocks unless `widen` (then they are decoded into
// `weights` like plain ones: the reference a quantized run is compared with); plain ones are
// quantized to `quantize` where set.
Status convert_gguf_weights(const ModelConfig& config, const WeightStore& store, DType weights,
                            bool widen, ModelWeights* out, const LoadProgress& progress = nullptr,
                            std::optional<QuantType> quantize = std::nullopt);

}  // namespace hanpu::model
