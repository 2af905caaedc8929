// libFuzzer target for sequence state files (--resume-state), which a user may carry between
// machines and versions: any bytes must read into a state that fits the tiny fixture model
// (position = ids = every KV length, ids inside the vocabulary, sizes per layer, finite
// values; the ids read alone from the file, as a --chat resume reads them, the same), or fail with
// a Status — never crash or read out of bounds (run under ASan + UBSan). Seeded with a state the
// release build's `hanpu run` saved (scripts/fuzz_loaders).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_scratch.h"
#include "model/model_config.h"
#include "model/state_file_format.h"

namespace {

const hanpu::model::ModelConfig& fixture_config() {
  static const hanpu::model::ModelConfig c = [] {
    hanpu::model::ModelConfig loaded;
    if (!hanpu::model::load_model_config(
             std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny/config.json", &loaded)
             .ok()) {
      __builtin_trap();
    }
    return loaded;
  }();
  return c;
}

bool all_finite(const std::vector<float>& v) {
  for (float x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& c = fixture_config();
  // The token ids alone, as a --chat resume reads them from the file: when they read, they
  // must be ids of the vocabulary, and the ids of the whole state when that reads too.
  const std::string path = hanpu::fuzz::write_scratch("state", data, size);
  std::vector<int> ids;
  const bool ids_ok = hanpu::model::read_state_tokens(c, path, &ids).ok();
  for (int id : ids) {
    if (id < 0 || id >= c.vocab) __builtin_trap();
  }
  hanpu::model::SavedSequence s;
  if (!hanpu::model::parse_state_file(c, std::vector<char>(data, data + size), "fuzz.state", &s)
           .ok())
    return 0;
  if (!ids_ok || ids != s.tokens) __builtin_trap();
  if (s.position < 0 || static_cast<int64_t>(s.tokens.size()) != s.position) __builtin_trap();
  for (int id : s.tokens) {
    if (id < 0 || id >= c.vocab) __builtin_trap();
  }
  const size_t kv_floats = static_cast<size_t>(s.position) * c.kv_heads * c.head_dim;
  for (int i = 0; i < c.layers; ++i) {
    const bool la = c.layer_kinds[i] == hanpu::model::LayerKind::kLinearAttention;
    if (s.conv[i].size() != (la ? static_cast<size_t>(c.la_conv_state_floats()) : 0) ||
        s.recurrent[i].size() != (la ? static_cast<size_t>(c.la_recurrent_floats()) : 0) ||
        s.keys[i].size() != (la ? 0 : kv_floats) || s.values[i].size() != s.keys[i].size() ||
        !all_finite(s.conv[i]) || !all_finite(s.recurrent[i]) || !all_finite(s.keys[i]) ||
        !all_finite(s.values[i])) {
      __builtin_trap();
    }
  }
  return 0;
}
