// libFuzzer target for config.json, which comes with untrusted checkpoints: any bytes must
// parse into a config whose sizes are usable, or fail with a Status — never crash, throw or
// convert out of range (run under ASan + UBSan). Seeded with the fixtures' configs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hanpu::model::ModelConfig c;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!hanpu::model::parse_model_config(text, "fuzz/config.json", &c).ok()) return 0;
  if (c.hidden <= 0 || c.layers <= 0 || c.attn_heads <= 0 || c.kv_heads <= 0 || c.attn_heads % c.kv_heads != 0 ||
      c.la_key_heads <= 0 || c.la_value_heads % c.la_key_heads != 0 ||
      c.layer_kinds.size() != static_cast<size_t>(c.layers)) {
    __builtin_trap();
  }
  return 0;
}
