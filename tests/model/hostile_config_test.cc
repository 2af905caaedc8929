// Hostile model configurations (issue classes 1-3): GGUF metadata passes the validator a
// config.json passes; sizes are multiplied in int64 and errors print them unwrapped; deeply
// nested JSON is refused in every JSON file a checkpoint holds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures.h"
#include "model/chat_template.h"
#include "model/generation_config.h"
#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"
#include "model/weight_table.h"

namespace hanpu::model {
namespace {

void expect_error(const Status& st, const std::string& want) {
  ASSERT_FALSE(st.ok()) << "wanted an error naming: " << want;
  EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
}

using MetadataEdits = std::vector<std::pair<std::string, GgufValue>>;
using MetadataCases = std::vector<std::tuple<const char*, MetadataEdits, std::string>>;

// Each case's edits of `meta` (keys under `prefix`) refused naming the file and `want`, the
// config left untouched.
void expect_each_refused(const GgufMetadata& meta, const WeightStore& store,
                         const std::string& prefix, const MetadataCases& cases) {
  for (const auto& [what, edits, want] : cases) {
    GgufMetadata bad = meta;
    for (const auto& [key, value] : edits) bad[prefix + key] = value;
    ModelConfig c;
    c.layers = -7;  // untouched on error
    SCOPED_TRACE(what);
    expect_error(gguf_model_config(bad, store, "m.gguf", &c), "m.gguf");
    expect_error(gguf_model_config(bad, store, "m.gguf", &c), want);
    EXPECT_EQ(c.layers, -7);
  }
}

// Each edit of the fixture GGUF's metadata found by the attack, refused by name before a
// tensor is read or a layer list is built.
TEST(HostileConfig, GgufMetadataPassesTheConfigValidator) {
  GgufMetadata meta;
  WeightStore store;
  ASSERT_TRUE(load_gguf(testing::fixture_dir("qwen35-tiny") + "/model.gguf", &meta, &store).ok());
  ModelConfig good;
  ASSERT_TRUE(gguf_model_config(meta, store, "m.gguf", &good).ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const MetadataCases cases = {
      {"rope dims past the head",
       {{"rope.dimension_count", GgufValue{uint64_t{1000}}}},
       "rotary dims 1000"},
      {"no kv heads",
       {{"attention.head_count_kv", GgufValue{uint64_t{0}}}},
       "num_key_value_heads is 0"},
      {"no key groups", {{"ssm.group_count", GgufValue{uint64_t{0}}}}, "linear_num_key_heads is 0"},
      {"2^30 blocks",
       {{"block_count", GgufValue{uint64_t{1} << 30}}},
       "block_count' = 1073741824 is more than 4096"},
      {"2^31 blocks",
       {{"block_count", GgufValue{uint64_t{1} << 31}}},
       "block_count' = 2147483648 is out of range"},
      {"huge FFN, no embedding",
       {{"feed_forward_length", GgufValue{uint64_t{1} << 29}},
        {"embedding_length", GgufValue{uint64_t{0}}}},
       "hidden_size is 0"},
      {"huge FFN",
       {{"feed_forward_length", GgufValue{uint64_t{1} << 29}}},
       "intermediate_size is 536870912"},
      {"no embedding", {{"embedding_length", GgufValue{uint64_t{0}}}}, "hidden_size is 0"},
      {"no blocks", {{"block_count", GgufValue{uint64_t{0}}}}, "layers is 0"},
      {"NaN RoPE base",
       {{"rope.freq_base", GgufValue{nan}}},
       "rope_theta nan must be finite and positive"},
      {"zero RoPE base", {{"rope.freq_base", GgufValue{0.0}}}, "rope_theta 0 must be"},
      {"negative RoPE base", {{"rope.freq_base", GgufValue{-1e4}}}, "rope_theta -10000 must be"},
      {"NaN epsilon", {{"attention.layer_norm_rms_epsilon", GgufValue{nan}}}, "rms_norm_eps nan"},
      {"heads overflowing int",
       {{"attention.head_count", GgufValue{uint64_t{1} << 30}}},
       "num_attention_heads is 1073741824"},
  };
  expect_each_refused(meta, store, "qwen35.", cases);
}

// The same for Kimi Linear's metadata (gguf_kda_config.h): per-layer lists of the wrong
// length or type, MLA dims that do not add up, a router the model's code does not have.
TEST(HostileConfig, KimiLinearGgufMetadataIsRefusedByKey) {
  GgufMetadata meta;
  WeightStore store;
  ASSERT_TRUE(
      load_gguf(testing::fixture_dir("kimi-linear-tiny") + "/model.gguf", &meta, &store).ok());
  ModelConfig good;
  ASSERT_TRUE(gguf_model_config(meta, store, "m.gguf", &good).ok());
  EXPECT_EQ(good.arch, Arch::kKimiLinear);
  const auto list = [](std::vector<int64_t> v) {
    std::vector<GgufValue> items;
    for (int64_t x : v) items.push_back(GgufValue{x});
    return GgufValue{items};
  };
  const MetadataCases cases = {
      {"kv heads for 3 of 4 layers",
       {{"attention.head_count_kv", list({0, 0, 1})}},
       "'kimi-linear.attention.head_count_kv' is not an integer or a list of 4"},
      {"a string among the kv heads",
       {{"attention.head_count_kv",
         GgufValue{std::vector<GgufValue>{GgufValue{int64_t{0}}, GgufValue{std::string("x")},
                                          GgufValue{int64_t{1}}, GgufValue{int64_t{0}}}}}},
       "'kimi-linear.attention.head_count_kv'[1] is not an integer"},
      {"a negative kv head count",
       {{"attention.head_count_kv", list({0, -1, 1, 0})}},
       "'kimi-linear.attention.head_count_kv' = -1 is out of range"},
      {"key dims shorter than the rope dims",
       {{"attention.key_length_mla", GgufValue{uint64_t{4}}}},
       "'kimi-linear.attention.key_length_mla' = 4 is less than "
       "'kimi-linear.rope.dimension_count'"},
      {"no KDA head dim", {{"kda.head_dim", GgufValue{uint64_t{0}}}}, "linear_key_head_dim is 0"},
      {"softmax gating",
       {{"expert_gating_func", GgufValue{uint64_t{1}}}},
       "'kimi-linear.expert_gating_func' = 1 is not supported"},
      {"more dense layers than layers",
       {{"leading_dense_block_count", GgufValue{uint64_t{9}}}},
       "'kimi-linear.leading_dense_block_count' = 9 is more than the 4 layers"},
      {"expert sizes differing between sparse layers",
       {{"expert_feed_forward_length", list({0, 32, 16, 32})}},
       "'kimi-linear.expert_feed_forward_length' differs between sparse layers (32, 16)"},
      {"groups that do not divide the experts",
       {{"expert_group_count", GgufValue{uint64_t{3}}}},
       "num_expert_group 3 does not divide num_experts 8"},
      {"a flag that is a number",
       {{"expert_weights_norm", GgufValue{uint64_t{1}}}},
       "'kimi-linear.expert_weights_norm' is not a bool"},
      {"an MLA latent past the attention kernel",
       {{"attention.kv_lora_rank", GgufValue{uint64_t{1000}}}},
       "kv_lora_rank + qk_rope_head_dim is 1008"},
  };
  expect_each_refused(meta, store, "kimi-linear.", cases);
}

nlohmann::json qwen35_text_config() {
  return nlohmann::json{{"model_type", "qwen3_5_text"},
                        {"vocab_size", 100},
                        {"hidden_size", 32},
                        {"intermediate_size", 64},
                        {"num_hidden_layers", 4},
                        {"num_attention_heads", 4},
                        {"num_key_value_heads", 2},
                        {"head_dim", 16},
                        {"linear_num_key_heads", 2},
                        {"linear_num_value_heads", 4},
                        {"linear_key_head_dim", 16},
                        {"linear_value_head_dim", 16}};
}

// Sizes whose products overflow int: each is refused with the product as int64 arithmetic
// gives it, never a wrapped value.
TEST(HostileConfig, ConfigProductsAreCheckedInInt64) {
  const std::vector<std::tuple<nlohmann::json, std::string>> cases = {
      {{{"num_attention_heads", 4096}, {"num_key_value_heads", 4096}, {"head_dim", 4096}},
       "num_attention_heads x 2 x head_dim is 33554432, not in [1, 16777216]"},
      {{{"linear_num_key_heads", 4096},
        {"linear_num_value_heads", 4096},
        {"linear_key_head_dim", 4096},
        {"linear_value_head_dim", 4096}},
       "linear q|k|v channels (2 x key heads x key dim + value heads x value dim) is 50331648, not "
       "in [1, 16777216]"},
      {{{"hidden_size", 2147483647}}, "hidden_size is 2147483647, not in [1, 65536]"},
      {{{"intermediate_size", 2147483647}},
       "intermediate_size is 2147483647, not in [1, 16777216]"},
      {{{"vocab_size", 2147483647}}, "vocab_size is 2147483647"},
      {{{"linear_conv_kernel_dim", 100000}}, "linear_conv_kernel_dim is 100000"},
      {{{"rms_norm_eps", 0}}, "rms_norm_eps 0 must be in (0, 1)"},
      {{{"partial_rotary_factor", 0.001}}, "rotary dims 0"},
  };
  for (const auto& [edit, want] : cases) {
    nlohmann::json j = qwen35_text_config();
    j.update(edit);
    ModelConfig c;
    SCOPED_TRACE(want);
    expect_error(parse_model_config(j.dump(), "c.json", &c), "c.json: " + want);
  }
  ModelConfig c;
  ASSERT_TRUE(parse_model_config(qwen35_text_config().dump(), "c.json", &c).ok());
  // A MoE config whose every-n-th-layer step is 0 (found by model_config_fuzz: a division by
  // zero while the validator asked which layers are dense).
  nlohmann::json next = nlohmann::json::parse(
      testing::read_text(testing::fixture_dir("qwen3next-tiny") + "/config.json"));
  ASSERT_TRUE(parse_model_config(next.dump(), "n.json", &c).ok());
  next["decoder_sparse_step"] = 0;
  expect_error(parse_model_config(next.dump(), "n.json", &c), "decoder_sparse_step 0");
}

std::set<std::string> names_of(const std::vector<ExpectedTensor>& table) {
  std::set<std::string> out;
  for (const auto& e : table) out.insert(e.name);
  return out;
}

// The weight table of each fixture names exactly the checkpoint's tensors, in both formats;
// a config whose sizes the tensors do not back is refused by the table, before conversion.
TEST(HostileConfig, TheWeightTableIsWhatTheCheckpointHolds) {
  for (const char* name : {"qwen35-tiny", "qwen3next-tiny"}) {
    SCOPED_TRACE(name);
    const std::string dir = testing::fixture_dir(name);
    ModelConfig hf;
    ASSERT_TRUE(load_model_config(dir + "/config.json", &hf).ok());
    WeightStore hf_store;
    ASSERT_TRUE(load_safetensors(dir, &hf_store).ok());
    std::set<std::string> stored;
    for (const auto& [n, t] : hf_store.tensors()) stored.insert(n);
    const auto hf_table = hf_weight_table(hf, hf_store);
    EXPECT_EQ(names_of(hf_table), stored);
    EXPECT_TRUE(check_weight_table(hf_table, hf_store).ok());
    GgufMetadata meta;
    WeightStore gguf_store;
    ASSERT_TRUE(load_gguf(dir + "/model.gguf", &meta, &gguf_store).ok());
    ModelConfig g;
    ASSERT_TRUE(gguf_model_config(meta, gguf_store, "m.gguf", &g).ok());
    stored.clear();
    for (const auto& [n, t] : gguf_store.tensors()) stored.insert(n);
    EXPECT_EQ(names_of(gguf_weight_table(g)), stored);
    // Sizes the tensors do not back: refused naming the first tensor and both shapes.
    ModelConfig wider = g;
    wider.intermediate *= 2;
    wider.moe_intermediate *= 2;
    const Status st = check_weight_table(gguf_weight_table(wider), gguf_store);
    EXPECT_NE(st.message().find("ffn_"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("the config implies"), std::string::npos) << st.message();
  }
}

std::string deep_json(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// 100k levels of nesting in every JSON a checkpoint holds: refused naming the file and the
// byte, with no recursion over the value (the stack would overflow under ASan first).
TEST(HostileConfig, DeepJsonIsRefusedInEveryFile) {
  const std::string deep = deep_json(100000);
  const std::string want = "nests deeper than 128 levels at byte 128";
  const std::string nested_field =
      "{\"model_type\": \"qwen3_5_text\", \"vocab_size\": " + deep + "}";
  ModelConfig c;
  expect_error(parse_model_config(deep, "config.json", &c), "config.json: JSON " + want);
  expect_error(parse_model_config(nested_field, "config.json", &c), "nests deeper than 128");
  GenerationConfig g;
  expect_error(parse_generation_config(deep, "generation_config.json", 100, &g),
               "generation_config.json: JSON " + want);
  Tokenizer t;
  expect_error(Tokenizer::parse(deep, "tokenizer.json", &t), "tokenizer.json: JSON " + want);
  // A safetensors header: the 8-byte length, then the nested JSON.
  std::vector<uint8_t> st(8 + deep.size());
  const uint64_t n = deep.size();
  std::memcpy(st.data(), &n, 8);
  std::memcpy(st.data() + 8, deep.data(), deep.size());
  WeightStore store;
  expect_error(parse_safetensors(st.data(), st.size(), "m.safetensors", &store),
               "m.safetensors header (from byte 8): JSON " + want);
  // tokenizer_config.json and generation_config.json beside a checkpoint.
  const std::string dir = testing::scratch_checkpoint(
      "hanpu_deep_json", {{"tokenizer_config.json", deep}, {"generation_config.json", deep}});
  std::optional<ChatTemplate> tmpl;
  expect_error(load_hf_chat_template(dir, &tmpl), "tokenizer_config.json: JSON " + want);
  std::optional<GenerationConfig> gen;
  expect_error(load_generation_config(dir, 100, &gen), "generation_config.json: JSON " + want);
}

}  // namespace
}  // namespace hanpu::model
