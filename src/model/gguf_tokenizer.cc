// A GGUF's tokenizer (see gguf_tokenizer.h): llama.cpp's converter stores the byte-level BPE
// as tokenizer.ggml.* arrays and names the pre-tokenizer instead of storing its regex.
#include "model/gguf_tokenizer.h"

#include <fmt/format.h>

namespace hanpu::model {

Status gguf_tokenizer(const GgufMetadata& meta, const std::string& file, Tokenizer* out) {
  const std::string* model = gguf_string(meta, "tokenizer.ggml.model");
  if (model == nullptr || *model != "gpt2") {
    return Status::Error(
        fmt::format("{}: tokenizer.ggml.model is {}, hanpu reads byte-level BPE (\"gpt2\")", file,
                    model ? *model : std::string("missing")));
  }
  const std::string* pre = gguf_string(meta, "tokenizer.ggml.pre");
  Tokenizer::Parts parts;
  parts.pattern = Tokenizer::pattern_for_pre(pre ? *pre : "");
  if (parts.pattern.empty()) {
    return Status::Error(
        fmt::format("{}: tokenizer.ggml.pre '{}' is not one hanpu knows (qwen2, qwen35, kimi-k2)",
                    file, pre ? *pre : std::string("missing")));
  }
  // transformers' Qwen2/3 and Qwen3.5 tokenizers both normalise to NFC (llama.cpp normalises
  // neither; the ids differ only for text not already in NFC): hanpu gives the model's own.
  // Kimi's tiktoken tokenizer does not normalise.
  parts.nfc = *pre != "kimi-k2";
  const auto array = [&](const char* key) -> const std::vector<GgufValue>* {
    const auto it = meta.find(key);
    return it == meta.end() ? nullptr : std::get_if<std::vector<GgufValue>>(&it->second.v);
  };
  const auto* tokens = array("tokenizer.ggml.tokens");
  const auto* types = array("tokenizer.ggml.token_type");
  const auto* merges = array("tokenizer.ggml.merges");
  if (tokens == nullptr || merges == nullptr)
    return Status::Error(fmt::format("{}: tokenizer.ggml.tokens or merges missing", file));
  for (size_t i = 0; i < tokens->size(); ++i) {
    const auto* s = std::get_if<std::string>(&(*tokens)[i].v);
    if (s == nullptr)
      return Status::Error(fmt::format("{}: tokenizer.ggml.tokens[{}] is not a string", file, i));
    parts.tokens.push_back(*s);
    // Control (3) and user-defined (4) tokens are matched in raw text, as added tokens are.
    const int64_t type =
        types != nullptr && i < types->size() && (*types)[i].is_int() ? (*types)[i].as_int() : 1;
    parts.added.push_back(type == 3 || type == 4);
  }
  for (size_t i = 0; i < merges->size(); ++i) {
    const auto* s = std::get_if<std::string>(&(*merges)[i].v);
    const size_t sp = s == nullptr ? std::string::npos : s->find(' ', 1);
    if (sp == std::string::npos)
      return Status::Error(fmt::format("{}: tokenizer.ggml.merges[{}] is not \"a b\"", file, i));
    parts.merges.emplace_back(s->substr(0, sp), s->substr(sp + 1));
  }
  return Tokenizer::build(std::move(parts), file, out);
}

void gguf_chat_template(const GgufMetadata& meta, const Tokenizer& tokenizer,
                        std::string* chat_template, std::string* bos_token,
                        std::string* eos_token) {
  const std::string* t = gguf_string(meta, "tokenizer.chat_template");
  *chat_template = t != nullptr ? *t : std::string();
  const auto token_text = [&](const char* key) {
    const auto it = meta.find(key);
    if (it == meta.end() || !it->second.is_int()) return std::string();
    const int64_t id = it->second.as_int();
    return id >= 0 && id < tokenizer.vocab_size() ? tokenizer.token_bytes(static_cast<int>(id))
                                                  : std::string();
  };
  *bos_token = token_text("tokenizer.ggml.bos_token_id");
  *eos_token = token_text("tokenizer.ggml.eos_token_id");
}

}  // namespace hanpu::model
