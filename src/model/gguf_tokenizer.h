// The tokenizer and chat template stored in a GGUF written by llama.cpp's converter
// (tokenizer.ggml.* arrays, tokenizer.chat_template). Apart from gguf_model.h, so the GGUF
// fuzzer can build tokenizers from fuzzed headers without the model's kernels.
#pragma once

#include <string>

#include "hanpu/status.h"
#include "model/gguf.h"
#include "model/tokenizer.h"

namespace hanpu::model {

// The tokenizer stored in the GGUF (model "gpt2" byte-level BPE with a known pre-tokenizer).
Status gguf_tokenizer(const GgufMetadata& meta, const std::string& file, Tokenizer* out);
// tokenizer.chat_template and the text of tokenizer.ggml.bos_token_id / eos_token_id (each
// empty where the file has none).
void gguf_chat_template(const GgufMetadata& meta, const Tokenizer& tokenizer,
                        std::string* chat_template, std::string* bos_token, std::string* eos_token);

}  // namespace hanpu::model
