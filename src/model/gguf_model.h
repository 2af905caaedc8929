// A Qwen3.5 (`qwen35`) or Qwen3-Next (`qwen3next`) model from a GGUF written by llama.cpp's
// converter: the config from its metadata, the weights with the converter's conventions
// undone (norms stored as 1 + w, Qwen3.5's value heads in tiled order); the tokenizer from
// its tokenizer.ggml.* arrays is in gguf_tokenizer.h.
#pragma once

#include <optional>
#include <string>

#include "hanpu/status.h"
#include "model/generation_config.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace hanpu::model {

Status gguf_model_config(const GgufMetadata& meta, const WeightStore& store, const std::string& file, ModelConfig* out);
// The sampling llama.cpp takes from a GGUF as its defaults (general.sampling.temp, top_k,
// top_p, min_p), as a GenerationConfig: sampling when temp > 0, top-k / top-p / min-p off
// where absent (llama.cpp's repeat penalty counts only the last n tokens, so it is not read).
// nullopt when the GGUF has none of them; a value of the wrong type or range is an error
// naming the key.
Status gguf_generation_config(const GgufMetadata& meta, const std::string& file, std::optional<GenerationConfig>* out);
Status convert_gguf_weights(const ModelConfig& config, const WeightStore& store, DType weights, ModelWeights* out,
                            const LoadProgress& progress = nullptr);

}  // namespace hanpu::model
