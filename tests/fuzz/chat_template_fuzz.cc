// libFuzzer target for chat templates, which come from untrusted checkpoints: any bytes must
// compile and render, or fail with a Status — never crash or read out of bounds (run under
// ASan + UBSan). Seeded with the fixtures' real Qwen3 / Qwen3.5 templates.
#include <cstddef>
#include <cstdint>
#include <string>

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
  return 0;
}
