// libFuzzer target for tokenizer_config.json, which carries a checkpoint's chat template and
// its special tokens: any bytes must give a template (rendered under the engine's bounds) and
// an eos token, or fail with a Status — never crash, hang or overflow the stack (run under
// ASan + UBSan). Seeded with the fixtures' tokenizer_config.json files.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_scratch.h"
#include "model/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hanpu::fuzz::write_scratch("tokenizer_config.json", data, size);
  const std::string& dir = hanpu::fuzz::scratch_dir();
  std::string eos;
  (void)hanpu::model::load_hf_eos_token(dir, &eos);
  std::optional<hanpu::model::ChatTemplate> t;
  if (!hanpu::model::load_hf_chat_template(dir, &t).ok() || !t.has_value()) return 0;
  std::string out;
  (void)t->render({{"system", "s"}, {"user", "u"}, {"assistant", "a"}, {"user", "v"}}, {}, &out);
  return 0;
}
