// Continuing a saved chat (--chat with --resume-state): the saved sequence already holds the
// earlier turns as tokens, so only the new messages are rendered — as the template renders
// them after an assistant reply, and preceded by what the reply's ending still lacks.
#pragma once

#include <string>
#include <vector>

#include "hanpu/engine.h"
#include "hanpu/status.h"
#include "model/chat_template.h"

namespace hanpu::model {

// The text to append to a saved chat whose text ends with `saved_tail` (the last few tokens'
// bytes). The template renders [user, assistant reply, ...messages]; what follows the reply is
// the reply's ending (ChatML: "<|im_end|>\n") and then the new turns. The part of that ending
// the saved text already ends with is left out: after a reply that stopped at <|im_end|> the
// continuation opens with "\n", after one cut off by --max-tokens with "<|im_end|>\n".
// The reply rendered in its place: text no message can hold, so its end is unambiguous.
inline constexpr char kSavedReplyPlaceholder[] = "\x01hanpu-saved-reply\x01";

Status chat_continuation(const ChatTemplate& t, const std::string& saved_tail,
                         const std::vector<ChatMessage>& messages, const ChatOptions& options,
                         std::string* out);

}  // namespace hanpu::model
