// Reasoning text separated from the reply, as vLLM's qwen3 reasoning parser does: what the
// model writes before </think> is reasoning (without a leading <think>), the rest content.
// Fed piece by piece for streaming; a piece that might be the start of </think> is held
// until the next one tells.
#pragma once

#include <string>
#include <string_view>

namespace hanpu::serve {

class ReasoningSplit {
 public:
  // `reasoning_first`: the prompt opened the thinking block already (a Qwen3.5 template
  // with thinking on ends its prompt with "<think>\n"), so the reply starts as reasoning.
  explicit ReasoningSplit(bool reasoning_first) : reasoning_(reasoning_first) {}
  // Adds generated text; appends what is now known to be reasoning or content.
  void feed(std::string_view text, std::string* reasoning, std::string* content);
  // The end of the reply: gives out whatever is held.
  void finish(std::string* reasoning, std::string* content);

 private:
  bool reasoning_;
  bool started_ = false;  // any text seen (a leading <think> opens reasoning)
  std::string held_;
};

// True when a rendered chat prompt leaves the model inside a thinking block.
bool prompt_opens_thinking(std::string_view prompt);

}  // namespace hanpu::serve
