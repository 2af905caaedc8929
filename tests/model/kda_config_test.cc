// The KDA hybrids' config.json (model/kda_config.h): the Kimi Linear and Ling fixtures
// (written by transformers 5) parse to the shapes they were built with, Kimi's own
// checkpoint layout (linear_attn_config, first_k_dense_replace) reads the same, every bad
// field is refused by name, and loading such a checkpoint is refused naming the model type.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "hanpu/quantize.h"
#include "model/model.h"
#include "model/model_config.h"

namespace hanpu::model {
namespace {

using nlohmann::json;

json fixture_config(const std::string& name) {
  return json::parse(testing::read_text(testing::fixture_dir(name) + "/config.json"));
}

Status parse(const json& j, ModelConfig* c) {
  return parse_model_config(j.dump(), "config.json", c);
}

TEST(KdaConfig, KimiLinearFixtureParses) {
  ModelConfig c;
  const Status st = parse(fixture_config("kimi-linear-tiny"), &c);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(c.arch, Arch::kKimiLinear);
  EXPECT_TRUE(c.kda_hybrid());
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.layers, 4);
  const std::vector<LayerKind> kinds = {LayerKind::kLinearAttention, LayerKind::kLinearAttention,
                                        LayerKind::kFullAttention, LayerKind::kLinearAttention};
  EXPECT_EQ(c.layer_kinds, kinds);
  EXPECT_EQ(c.la_key_heads, 4);
  EXPECT_EQ(c.la_value_heads, 4);
  EXPECT_EQ(c.la_key_dim, 16);
  EXPECT_EQ(c.la_value_dim, 16);
  EXPECT_EQ(c.conv_kernel, 4);
  EXPECT_TRUE(std::isnan(c.kda_gate_lower_bound)) << "Kimi Linear's gate has no lower bound";
  EXPECT_EQ(c.mla.q_lora_rank, 0);
  EXPECT_EQ(c.mla.kv_lora_rank, 32);
  EXPECT_EQ(c.mla.qk_nope_dim, 16);
  EXPECT_EQ(c.mla.qk_rope_dim, 8);
  EXPECT_EQ(c.mla.v_dim, 16);
  EXPECT_FALSE(c.mla.rope) << "Kimi Linear's MLA code applies no position encoding";
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.experts_per_token, 2);
  EXPECT_EQ(c.moe_intermediate, 32);
  EXPECT_EQ(c.router.groups, 2);
  EXPECT_EQ(c.router.topk_groups, 1);
  EXPECT_FLOAT_EQ(c.router.routed_scaling, 2.446f);
  EXPECT_EQ(c.router.shared_experts, 1);
  EXPECT_EQ(c.shared_expert_intermediate, 32);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_FALSE(c.layer_has_moe(0));
  EXPECT_TRUE(c.layer_has_moe(1));
  EXPECT_TRUE(c.layer_has_moe(3));
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_EQ(c.max_positions, 4096);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
}

TEST(KdaConfig, LingFixtureParses) {
  ModelConfig c;
  const Status st = parse(fixture_config("ling-tiny"), &c);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(c.arch, Arch::kLing);
  const std::vector<LayerKind> kinds = {LayerKind::kLinearAttention, LayerKind::kFullAttention,
                                        LayerKind::kLinearAttention, LayerKind::kFullAttention};
  EXPECT_EQ(c.layer_kinds, kinds);
  EXPECT_EQ(c.la_key_heads, 4);
  EXPECT_EQ(c.la_key_dim, 16);
  EXPECT_FLOAT_EQ(c.kda_gate_lower_bound, -5.0f);
  EXPECT_EQ(c.mla.q_lora_rank, 24);
  EXPECT_TRUE(c.mla.rope);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FLOAT_EQ(c.router.routed_scaling, 2.5f);
  EXPECT_EQ(c.expert_swiglu_limit, (std::vector<float>{0, 0, 0, 0.25f}));
  EXPECT_EQ(c.shared_swiglu_limit, (std::vector<float>{0, 0, 0, 0.25f}));
  EXPECT_FALSE(c.layer_has_moe(0));
  EXPECT_TRUE(c.layer_has_moe(1));
}

// Moonshot's own config.json keeps the KDA shape in linear_attn_config (layers 1-based) and
// the dense layers as first_k_dense_replace; it reads as transformers' form does.
TEST(KdaConfig, KimiCheckpointLayoutReadsTheSame) {
  json j = fixture_config("kimi-linear-tiny");
  for (const char* k : {"layer_types", "mlp_layer_types", "linear_head_dim", "linear_num_heads",
                        "linear_conv_kernel_dim", "head_dim"}) {
    j.erase(k);
  }
  j["linear_attn_config"] = {{"kda_layers", {1, 2, 4}},
                             {"full_attn_layers", {3}},
                             {"head_dim", 16},
                             {"num_heads", 4},
                             {"short_conv_kernel_size", 4}};
  j["first_k_dense_replace"] = 1;
  j["moe_router_activation_func"] = "sigmoid";
  ModelConfig a, b;
  ASSERT_TRUE(parse(fixture_config("kimi-linear-tiny"), &a).ok());
  const Status st = parse(j, &b);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(b.layer_kinds, a.layer_kinds);
  EXPECT_EQ(b.mlp_only_layers, a.mlp_only_layers);
  EXPECT_EQ(b.la_key_heads, a.la_key_heads);
  EXPECT_EQ(b.la_key_dim, a.la_key_dim);
  EXPECT_EQ(b.conv_kernel, a.conv_kernel);
}

TEST(KdaConfig, BadFieldsAreRefusedByName) {
  struct Case {
    const char* fixture;
    const char* field;  // expected in the message
    std::function<void(json&)> edit;
  };
  const std::vector<Case> cases = {
      {"kimi-linear-tiny", "num_expert_group", [](json& j) { j["num_expert_group"] = 3; }},
      {"kimi-linear-tiny", "num_expert_group", [](json& j) { j["num_expert_group"] = 8; }},
      {"kimi-linear-tiny", "num_experts_per_tok", [](json& j) { j["num_experts_per_token"] = 9; }},
      {"kimi-linear-tiny", "num_experts_per_token",
       [](json& j) { j["num_experts_per_token"] = 5; }},
      {"kimi-linear-tiny", "topk_group", [](json& j) { j["topk_group"] = 3; }},
      {"kimi-linear-tiny", "routed_scaling_factor",
       [](json& j) { j["routed_scaling_factor"] = -1; }},
      {"kimi-linear-tiny", "kv_lora_rank", [](json& j) { j["kv_lora_rank"] = 0; }},
      {"kimi-linear-tiny", "v_head_dim", [](json& j) { j["v_head_dim"] = 0; }},
      {"kimi-linear-tiny", "q_lora_rank", [](json& j) { j["q_lora_rank"] = -4; }},
      // Past the attention kernel's head dims (576): the cached latent row, the keys, values.
      {"kimi-linear-tiny", "kv_lora_rank + qk_rope_head_dim",
       [](json& j) { j["kv_lora_rank"] = 1024; }},
      {"kimi-linear-tiny", "qk_nope_head_dim + qk_rope_head_dim",
       [](json& j) { j["qk_nope_head_dim"] = 600; }},
      {"kimi-linear-tiny", "v_head_dim", [](json& j) { j["v_head_dim"] = 577; }},
      {"kimi-linear-tiny", "num_key_value_heads", [](json& j) { j["num_key_value_heads"] = 2; }},
      {"kimi-linear-tiny", "layer_types",
       [](json& j) { j["layer_types"].push_back("linear_attention"); }},
      {"kimi-linear-tiny", "mlp_layer_types", [](json& j) { j["mlp_layer_types"][2] = "moe"; }},
      {"kimi-linear-tiny", "moe_router_activation_func",
       [](json& j) { j["moe_router_activation_func"] = "softmax"; }},
      {"kimi-linear-tiny", "full_attn_layers",
       [](json& j) {
         j.erase("layer_types");
         j["linear_attn_config"] = {{"full_attn_layers", {9}}, {"head_dim", 16}, {"num_heads", 4}};
       }},
      {"kimi-linear-tiny", "kv_lora_rank", [](json& j) { j.erase("kv_lora_rank"); }},
      {"ling-tiny", "qk_rope_head_dim", [](json& j) { j["qk_rope_head_dim"] = 7; }},
      {"ling-tiny", "kda_lower_bound", [](json& j) { j["kda_lower_bound"] = 0.5; }},
      {"ling-tiny", "expert_swiglu_limit_list",
       [](json& j) {
         j["expert_swiglu_limit_list"] = {0, 1};
       }},
      {"ling-tiny", "share_expert_swiglu_limit_list",
       [](json& j) { j["share_expert_swiglu_limit_list"][1] = -2; }},
      {"ling-tiny", "rope_type",
       [](json& j) {
         j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 1e4}};
       }},
  };
  for (const Case& k : cases) {
    json j = fixture_config(k.fixture);
    k.edit(j);
    ModelConfig c;
    const Status st = parse(j, &c);
    EXPECT_FALSE(st.ok()) << k.fixture << ": " << k.field << " was accepted";
    EXPECT_NE(st.message().find(k.field), std::string::npos)
        << k.fixture << ": expected " << k.field << " in: " << st.message();
  }
}

// They load and run (model_forward_test.cc); writing one as a GGUF is refused naming the
// model type (not written as a qwen3next GGUF), and no output file is left.
// Ling has no GGUF form (llama.cpp neither converts nor runs bailing_hybrid); Kimi Linear's
// is tested in hf_to_gguf_test.cc.
TEST(KdaConfig, QuantizingLingToGgufIsRefusedNamingTheModelType) {
  const std::string out = testing::temp_file("kda_config", "ling-tiny.gguf");
  const Status q = quantize_model(testing::fixture_dir("ling-tiny"), out, "Q8_0");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("bailing_hybrid"), std::string::npos) << q.message();
  EXPECT_NE(q.message().find("no GGUF form"), std::string::npos) << q.message();
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace hanpu::model
