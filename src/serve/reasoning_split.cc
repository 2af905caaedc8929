#include "serve/reasoning_split.h"

#include <algorithm>

namespace hanpu::serve {

namespace {
constexpr std::string_view kOpen = "<think>", kClose = "</think>";

// Length of the longest suffix of `s` that is a proper prefix of `tag`.
size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}
}  // namespace

bool prompt_opens_thinking(std::string_view prompt) {
  while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == ' '))
    prompt.remove_suffix(1);
  return prompt.size() >= kOpen.size() && prompt.substr(prompt.size() - kOpen.size()) == kOpen;
}

void ReasoningSplit::feed(std::string_view text, std::string* reasoning, std::string* content) {
  held_.append(text);
  if (!started_) {
    // A leading <think> (or what may still become one) opens reasoning.
    if (held_.size() < kOpen.size() && kOpen.substr(0, held_.size()) == held_) return;
    started_ = true;
    if (held_.compare(0, kOpen.size(), kOpen) == 0) {
      held_.erase(0, kOpen.size());
      reasoning_ = true;
    }
  }
  if (!reasoning_) {
    content->append(held_);
    held_.clear();
    return;
  }
  const size_t end = held_.find(kClose);
  if (end != std::string::npos) {
    reasoning->append(held_, 0, end);
    content->append(held_, end + kClose.size());
    held_.clear();
    reasoning_ = false;
    return;
  }
  const size_t keep = partial_tag_suffix(held_, kClose);
  reasoning->append(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
}

void ReasoningSplit::finish(std::string* reasoning, std::string* content) {
  (reasoning_ ? reasoning : content)->append(held_);
  held_.clear();
}

}  // namespace hanpu::serve
