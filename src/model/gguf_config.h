// A Qwen3.5 (`qwen35`), Qwen3-Next (`qwen3next`) or Kimi Linear (`kimi-linear`,
// gguf_kda_config.h) config from a GGUF's metadata, checked by the validator a config.json
// passes (model_config.h), and llama.cpp's sampling defaults.
#pragma once

#include <optional>
#include <string>

#include "hanpu/status.h"
#include "model/generation_config.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace hanpu::model {

Status gguf_model_config(const GgufMetadata& meta, const WeightStore& store,
                         const std::string& file, ModelConfig* out);
// The sampling llama.cpp takes from a GGUF as its defaults (general.sampling.temp, top_k,
// top_p, min_p), as a GenerationConfig: sampling when temp > 0, top-k / top-p / min-p off
// where absent (llama.cpp's repeat penalty counts only the last n tokens, so it is not read).
// nullopt when the GGUF has none of them; a value of the wrong type or range is an error
// naming the key.
Status gguf_generation_config(const GgufMetadata& meta, const std::string& file,
                              std::optional<GenerationConfig>* out);
}  // namespace hanpu::model
