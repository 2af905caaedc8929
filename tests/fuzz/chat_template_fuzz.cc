// libFuzzer target for chat templates, which come from untrusted checkpoints: any bytes must
// compile and render, or fail with a Status — never crash or read out of bounds (run under
// ASan + UBSan); a chat continued after a saved reply (chat_continuation.h) likewise, its
// text a tail of what the template rendered. Seeded with the fixtures' real Qwen3 / Qwen3.5
// templates.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/chat_continuation.h"
#include "model/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hanpu::model::ChatTemplate t;
  const std::string source(reinterpret_cast<const char*>(data), size);
  if (!hanpu::model::ChatTemplate::parse(source, "fuzz.jinja", &t).ok()) return 0;
  t.set_special_tokens("<|endoftext|>", "<|im_end|>");
  std::string out;
  hanpu::ChatOptions o;
  o.enable_thinking = false;
  (void)t.render({{"system", "s"}, {"user", "u"}, {"assistant", "a"}, {"user", "v"}}, o, &out);
  std::string next;
  if (hanpu::model::chat_continuation(t, "a reply<|im_end|>", {{"user", "v"}}, o, &next).ok()) {
    std::string whole;
    if (!t.render(
              {{"user", "?"}, {"assistant", hanpu::model::kSavedReplyPlaceholder}, {"user", "v"}},
              o, &whole)
             .ok() ||
        whole.size() < next.size() ||
        whole.compare(whole.size() - next.size(), next.size(), next) != 0) {
      __builtin_trap();  // the continuation is the end of the template's own text
    }
  }
  return 0;
}
