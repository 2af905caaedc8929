// libFuzzer target for config.json and generation_config.json, which come with untrusted
// checkpoints: any bytes must parse into values that are usable (sizes, sampling settings in
// range, stop ids inside the vocabulary), or fail with a Status — never crash, throw or
// convert out of range (run under ASan + UBSan). Each input is read as both files; a config
// that passes gives a weight table of bounded shapes. Seeded
// with the fixtures' config.json and generation_config.json files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/generation_config.h"
#include "model/model_config.h"
#include "model/weight_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hanpu::model::GenerationConfig g;
  constexpr int kVocab = 1000;
  if (hanpu::model::parse_generation_config(text, "fuzz/generation_config.json", kVocab, &g).ok()) {
    if (!(g.temperature >= 0.0f) || g.top_k < 0 || !(g.top_p > 0.0f && g.top_p <= 1.0f) ||
        !(g.repetition_penalty > 0.0f)) {
      __builtin_trap();
    }
    for (int id : g.eos_token_ids) {
      if (id < 0 || id >= kVocab) __builtin_trap();
    }
  }
  hanpu::model::ModelConfig c;
  if (!hanpu::model::parse_model_config(text, "fuzz/config.json", &c).ok()) return 0;
  if (c.hidden <= 0 || c.layers <= 0 || c.attn_heads <= 0 || c.kv_heads <= 0 ||
      c.attn_heads % c.kv_heads != 0 || c.la_key_heads <= 0 ||
      c.la_value_heads % c.la_key_heads != 0 ||
      c.layer_kinds.size() != static_cast<size_t>(c.layers) || c.rotary_dims() > c.head_dim) {
    __builtin_trap();
  }
  // The weight table a passing config implies: every shape positive and small enough that
  // its element count is exact (the validator's bounds), with no store to check against.
  const hanpu::model::WeightStore empty;
  for (const auto& e : hanpu::model::hf_weight_table(c, empty)) {
    int64_t n = 1;
    for (int64_t d : e.shape) {
      if (d <= 0 || d > (int64_t{1} << 24)) __builtin_trap();
      n *= d;
    }
    if (n <= 0 || n > (int64_t{1} << 48)) __builtin_trap();
  }
  if (hanpu::model::check_weight_table(hanpu::model::hf_weight_table(c, empty), empty).ok())
    __builtin_trap();
  return 0;
}
