// A Qwen3.5 (`qwen35`) or Qwen3-Next (`qwen3next`) model from a GGUF written by llama.cpp's
// converter: the config from its metadata, the weights with the converter's conventions
// undone (norms stored as 1 + w, Qwen3.5's value heads in tiled order), the tokenizer from
// its tokenizer.ggml.* arrays.
#pragma once

#include <string>

#include "hanpu/status.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/tokenizer.h"

namespace hanpu::model {

Status gguf_model_config(const GgufMetadata& meta, const WeightStore& store, const std::string& file, ModelConfig* out);
Status convert_gguf_weights(const ModelConfig& config, const WeightStore& store, DType weights, ModelWeights* out,
                            const LoadProgress& progress = nullptr);
// The tokenizer stored in the GGUF (model "gpt2" byte-level BPE with a known pre-tokenizer).
Status gguf_tokenizer(const GgufMetadata& meta, const std::string& file, Tokenizer* out);
// tokenizer.chat_template and the text of tokenizer.ggml.bos_token_id / eos_token_id (each
// empty where the file has none).
void gguf_chat_template(const GgufMetadata& meta, const Tokenizer& tokenizer, std::string* chat_template,
                        std::string* bos_token, std::string* eos_token);

}  // namespace hanpu::model
