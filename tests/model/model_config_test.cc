// config.json: the fixtures parse to the shapes they were built with; the image-text Qwen3.5
// layout and old-style top-level rope fields are understood; bad configs are named.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace hanpu::model {
namespace {

using nlohmann::json;

TEST(ModelConfig, Qwen35FixtureParses) {
  ModelConfig c;
  const Status st =
      load_model_config(std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny/config.json", &c);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(c.arch, Arch::kQwen35);
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.layers, 4);
  EXPECT_EQ(c.layer_kinds[3], LayerKind::kFullAttention);
  EXPECT_EQ(c.layer_kinds[0], LayerKind::kLinearAttention);
  EXPECT_EQ(c.rotary_dims(), 8);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e7);
  EXPECT_EQ(c.max_positions, 4096);
  EXPECT_EQ(c.la_conv_channels(), 2 * 2 * 16 + 4 * 16);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.weight_prefix, "model.");
}

TEST(ModelConfig, Qwen3NextFixtureParsesItsMoe) {
  ModelConfig c;
  const Status st =
      load_model_config(std::string(HANPU_FIXTURES_DIR) + "/models/qwen3next-tiny/config.json", &c);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(c.arch, Arch::kQwen3Next);
  EXPECT_EQ(c.num_experts, 4);
  EXPECT_EQ(c.experts_per_token, 2);
  EXPECT_TRUE(c.layer_has_moe(0));
  EXPECT_FALSE(c.layer_has_moe(3));  // mlp_only_layers
}

json minimal_text() {
  return json{{"vocab_size", 100},
              {"hidden_size", 32},
              {"intermediate_size", 64},
              {"num_hidden_layers", 8},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"head_dim", 16},
              {"linear_num_key_heads", 2},
              {"linear_num_value_heads", 4},
              {"linear_key_head_dim", 16},
              {"linear_value_head_dim", 16},
              {"rope_theta", 5e6},
              {"partial_rotary_factor", 0.5}};
}

TEST(ModelConfig, ImageTextLayoutAndDefaults) {
  json j{{"model_type", "qwen3_5"}, {"text_config", minimal_text()}};
  ModelConfig c;
  ASSERT_TRUE(parse_model_config(j.dump(), "c.json", &c).ok());
  EXPECT_EQ(c.weight_prefix, "model.language_model.");
  EXPECT_DOUBLE_EQ(c.rope_theta, 5e6);
  EXPECT_EQ(c.max_positions, 0);  // not given: no warning past any length
  EXPECT_EQ(c.rotary_dims(), 8);
  ASSERT_EQ(c.layer_kinds.size(), 8u);  // full_attention_interval 4 by default
  EXPECT_EQ(c.layer_kinds[3], LayerKind::kFullAttention);
  EXPECT_EQ(c.layer_kinds[7], LayerKind::kFullAttention);
  EXPECT_EQ(c.layer_kinds[4], LayerKind::kLinearAttention);
}

TEST(ModelConfig, BadConfigsAreNamed) {
  struct Case {
    std::function<void(json&)> edit;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["model_type"] = "llama"; }, "not supported"},
      {[](json& j) { j.erase("hidden_size"); }, "missing \"hidden_size\""},
      {[](json& j) { j["hidden_size"] = -4; }, "hidden_size is -4, not in [1, 65536]"},
      {[](json& j) { j["max_position_embeddings"] = -1; },
       "max_position_embeddings is -1, not in [0, 2147483647]"},
      {[](json& j) { j["num_key_value_heads"] = 3; }, "not a multiple"},
      {[](json& j) { j["linear_num_value_heads"] = 3; }, "not a multiple"},
      {[](json& j) { j["layer_types"] = {"linear_attention"}; }, "layer_types has 1 entries"},
      {[](json& j) { j["vocab_size"] = "many"; }, "\"vocab_size\" is \"many\", not an integer"},
      // Out-of-range numbers are refused, never converted (a float -> int cast is undefined).
      {[](json& j) { j["hidden_size"] = 1e30; },
       "\"hidden_size\" is 1e+30, not an integer in the range of int"},
      {[](json& j) { j["hidden_size"] = int64_t{1} << 40; }, "not an integer in the range of int"},
      {[](json& j) { j["head_dim"] = 2.5; }, "\"head_dim\" is 2.5, not an integer"},
      {[](json& j) { j["rms_norm_eps"] = 1e300; },
       "\"rms_norm_eps\" is 1e+300, out of float range"},
      {[](json& j) { j["full_attention_interval"] = 1e20; },
       "\"full_attention_interval\" is 1e+20"},
      {[](json& j) { j["num_hidden_layers"] = 100000; },
       "num_hidden_layers 100000 is more than 4096"},
      {[](json& j) { j["model_type"] = 5; }, "\"model_type\" is 5, not a string"},
      {[](json& j) { j["tie_word_embeddings"] = "yes"; },
       "\"tie_word_embeddings\" is \"yes\", not the expected type"},
      {[](json& j) {
         j["rope_parameters"] = {{"rope_type", "yarn"}};
       },
       "rope_type \"yarn\""},
  };
  for (const Case& c : cases) {
    json j = minimal_text();
    j["model_type"] = "qwen3_5_text";
    c.edit(j);
    ModelConfig cfg;
    const Status st = parse_model_config(j.dump(), "c.json", &cfg);
    ASSERT_FALSE(st.ok()) << c.expect;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
  }
  ModelConfig cfg;
  EXPECT_NE(parse_model_config("{", "c.json", &cfg).message().find("malformed JSON"),
            std::string::npos);
}

}  // namespace
}  // namespace hanpu::model
