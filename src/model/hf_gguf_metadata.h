// The GGUF metadata llama.cpp's convert_hf_to_gguf.py writes for a Qwen3.5 (`qwen35`) or
// Qwen3-Next (`qwen3next`) checkpoint folder: the model's shape under {arch}.* keys (with
// Qwen3.5's rope.dimension_sections, [11, 11, 10, 0] where config.json has none, as the
// converter writes it) and the tokenizer as tokenizer.ggml.* arrays — tokens by id (ids the
// tokenizer lacks up to the config's vocab_size as "[PADn]", unused), their types (control
// for special added tokens and those that look special, user-defined for other added ones),
// merges "a b", the pre-tokenizer named after its regex (qwen2, qwen35), the special token ids
// (tokenizer_config.json first, then config.json), add_bos/add_eos, the chat template. A Kimi
// folder without tokenizer.json gives its tiktoken.model (tiktoken_vocab.h) as pre "kimi-k2",
// its specials control, as conversion/kimi_linear.py writes it.
#pragma once

#include <string>

#include "hanpu/status.h"
#include "model/gguf.h"
#include "model/model_config.h"

namespace hanpu::model {

// `config` is the folder's config.json as load_model_config read it. Errors name the file
// and field: no tokenizer file, a tokenizer whose regex llama.cpp has no name for, more tokens
// than vocab_size, a special token id outside the vocabulary.
Status hf_gguf_metadata(const std::string& folder, const ModelConfig& config, GgufMetadata* meta);

}  // namespace hanpu::model
