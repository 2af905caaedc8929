// Continuing a saved chat (see chat_continuation.h).
#include "model/chat_continuation.h"

#include <algorithm>

#include <fmt/format.h>

namespace hanpu::model {

Status chat_continuation(const ChatTemplate& t, const std::string& saved_tail,
                         const std::vector<ChatMessage>& messages, const ChatOptions& options,
                         std::string* out) {
  if (messages.empty()) return Status::Error("chat: no messages to render");
  const std::string reply = kSavedReplyPlaceholder;
  std::vector<ChatMessage> conversation = {{"user", "?"}, {"assistant", reply}};
  conversation.insert(conversation.end(), messages.begin(), messages.end());
  std::string text;
  HANPU_RETURN_IF_ERROR(t.render(conversation, options, &text));
  const size_t at = text.find(reply);
  if (at == std::string::npos) {
    return Status::Error(
        fmt::format("chat template {}: an assistant reply is not in its text, so a saved chat "
                    "cannot be continued with it",
                    t.origin()));
  }
  const std::string after = text.substr(at + reply.size());
  // The longest start of `after` that the saved text already ends with.
  size_t done = std::min(after.size(), saved_tail.size());
  while (done > 0 && saved_tail.compare(saved_tail.size() - done, done, after, 0, done) != 0)
    --done;
  *out = after.substr(done);
  return Status::Ok();
}

}  // namespace hanpu::model
