// libFuzzer target for tokenizer.json, which comes with untrusted checkpoints: any bytes must
// load into a tokenizer or fail with a Status — never crash, hang or read out of bounds (run
// under ASan + UBSan) — and a tokenizer that loads must turn text into ids it owns, and ASCII
// (which NFC leaves alone) back into the same bytes. The split regex comes from the file too,
// so the probe texts include runs that make a careless pattern backtrack. Seeded with the
// fixtures' tokenizer.json files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/tokenizer.h"

namespace {

bool is_ascii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file(reinterpret_cast<const char*>(data), size);
  hanpu::model::Tokenizer tok;
  if (!hanpu::model::Tokenizer::parse(file, "fuzz/tokenizer.json", &tok).ok()) return 0;
  static const std::vector<std::string> kProbes = {
      "Hello, world! It's 2026: 3.14159 apples.",
      "  two spaces\n\n\ttab\r\nend   ",
      "caf\xC3\xA9 cafe\xCC\x81 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80",
      "<|im_start|>user\nhi<|im_end|><|endoftext|>",
      std::string(3000, 'a') + std::string(3000, ' ') + "!",
      std::string("\x00\x01\x7f", 3),
  };
  std::vector<std::string> texts = kProbes;
  if (size <= 4096) texts.push_back(file);  // the input itself as text, if it is valid UTF-8
  for (const std::string& text : texts) {
    std::vector<int> ids;
    if (!tok.encode(text, &ids).ok()) continue;  // invalid UTF-8, or the regex hit a limit
    for (int id : ids) {
      if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
    }
    if (is_ascii(text) && tok.decode(ids) != text) __builtin_trap();
  }
  return 0;
}
