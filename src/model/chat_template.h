// A checkpoint's chat template: the Jinja program Hugging Face's apply_chat_template runs
// (tokenizer_config.json's "chat_template", or chat_template.jinja beside it, or a GGUF's
// tokenizer.chat_template), executed by llama.cpp's Jinja engine (third_party/llama_jinja)
// so Qwen3.5's template — namespaces, loop.previtem, filters, raise_exception — renders
// exactly as transformers renders it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "hanpu/engine.h"
#include "hanpu/status.h"

namespace hanpu::model {

class ChatTemplate {
 public:
  ChatTemplate();
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Compiles Jinja `source`; `origin` (a file, a file and key) names it in errors, which
  // give the line and column of a syntax error.
  static Status parse(const std::string& source, const std::string& origin, ChatTemplate* out);
  // ChatML as Qwen models use it, for checkpoints that carry no template.
  static ChatTemplate chatml();

  // The template's text with `messages` (role and content each), add_generation_prompt and
  // enable_thinking (left undefined when unset, as transformers does), bos_token and
  // eos_token in its context. A template's raise_exception becomes an error.
  Status render(const std::vector<ChatMessage>& messages, const ChatOptions& options,
                std::string* out) const;

  void set_special_tokens(std::string bos, std::string eos);
  const std::string& origin() const { return origin_; }
  const std::string& bos_token() const { return bos_; }
  const std::string& eos_token() const { return eos_; }

 private:
  struct Program;
  std::shared_ptr<const Program> program_;
  std::string origin_;
  std::string bos_, eos_;
};

// The template of a Hugging Face checkpoint folder: chat_template.jinja if present (what
// transformers >= 4.43 writes), else tokenizer_config.json's "chat_template" (a string, or a
// list of {name, template} of which "default" is taken). Also reads bos_token / eos_token
// from tokenizer_config.json. Unset `out` when the folder has neither.
Status load_hf_chat_template(const std::string& dir, std::optional<ChatTemplate>* out);
// The source of that template and where it came from (the file, or the file and key); both
// empty when the folder has none.
Status read_hf_chat_template(const std::string& dir, std::string* source, std::string* origin);
// dir/tokenizer_config.json as a JSON object (an empty one if the folder has none).
Status read_hf_tokenizer_config(const std::string& dir, nlohmann::json* config);
// A special token of tokenizer_config.json ("bos_token", "eos_token", ...): a string, an
// {"content": ...} object, or "" (null or missing).
std::string hf_special_token(const nlohmann::json& config, const char* key);
// tokenizer_config.json's eos_token in a checkpoint folder ("" if it has none).
Status load_hf_eos_token(const std::string& dir, std::string* eos);

}  // namespace hanpu::model
