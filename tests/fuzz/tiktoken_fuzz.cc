// libFuzzer target for Kimi's tiktoken.model (and the tokenizer_config.json beside it, after
// the input's first NUL byte), which come with untrusted checkpoint folders: any bytes must
// give tokenizer parts or fail with a Status — never crash, hang or read out of bounds (run
// under ASan + UBSan) — and a tokenizer built from them must turn text into ids it owns, and
// ASCII back into the same bytes. Seeded with the fixture folder's files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/tiktoken_vocab.h"
#include "model/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string model = input.substr(0, nul);
  const std::string config = nul == std::string::npos ? std::string() : input.substr(nul + 1);
  hanpu::model::Tokenizer::Parts parts;
  if (!hanpu::model::tiktoken_parts_from_text(model, config, "fuzz", &parts).ok()) return 0;
  hanpu::model::Tokenizer tok;
  if (!hanpu::model::Tokenizer::build(std::move(parts), "fuzz", &tok).ok()) return 0;
  static const std::vector<std::string> kProbes = {
      "Hello, world! It's 2026: 3.14159 apples.",
      "  two spaces\n\n\ttab\r\nend   ",
      "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80",
      "[BOS]<|im_user|>user<|im_middle|>hi<|im_end|>",
      std::string(3000, 'a') + "!",
  };
  for (const std::string& text : kProbes) {
    std::vector<int> ids;
    if (!tok.encode(text, &ids).ok()) continue;
    for (int id : ids) {
      if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
    }
    bool ascii = true;
    for (unsigned char c : text) ascii = ascii && c < 0x80;
    if (ascii && tok.decode(ids) != text) __builtin_trap();
  }
  return 0;
}
