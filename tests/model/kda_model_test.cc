// The KDA hybrids as loaded models: their weight tables name exactly the checkpoints'
// tensors; a config whose MLA or KDA sizes the tensors do not back is refused naming the
// tensor; projections quantized at load stay close to fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "fixtures.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/weight_converter.h"

namespace hanpu::model {
namespace {

const char* const kHybrids[] = {"kimi-linear-tiny", "ling-tiny"};

TEST(KdaModel, TheWeightTableIsWhatTheCheckpointHolds) {
  for (const char* name : kHybrids) {
    SCOPED_TRACE(name);
    const std::string dir = testing::fixture_dir(name);
    ModelConfig c;
    ASSERT_TRUE(load_model_config(dir + "/config.json", &c).ok());
    WeightStore store;
    ASSERT_TRUE(load_safetensors(dir, &store).ok());
    std::set<std::string> stored, table;
    for (const auto& [n, t] : store.tensors()) stored.insert(n);
    const auto expected = kda_hybrid_weight_table(c, store);
    for (const auto& e : expected) table.insert(e.name);
    EXPECT_EQ(table, stored);
    EXPECT_TRUE(check_weight_table(expected, store).ok());
  }
}

// A copy of fixture `name` whose config.json has `field` set to `value`.
std::string edited_fixture(const std::string& name, const std::string& field, int value) {
  namespace fs = std::filesystem;
  const std::string dir = testing::temp_file("kda_model", name + "_" + field);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(testing::fixture_dir(name)))
    fs::copy_file(e.path(), fs::path(dir) / e.path().filename());
  auto config = nlohmann::json::parse(testing::read_text(dir + "/config.json"));
  config[field] = value;
  std::ofstream(dir + "/config.json") << config.dump(2);
  return dir;
}

// Sizes the tensors do not back (the value head dim against kv_b_proj, the rope dims against
// kv_a_proj_with_mqa, the latent, the KDA head dim): refused naming the first such tensor,
// with nothing loaded.
TEST(KdaModel, SizesTheWeightsDoNotBackAreRefusedNamingTheTensor) {
  for (const char* name : kHybrids) {
    for (const auto& [field, value, tensor] :
         {std::tuple{"v_head_dim", 32, "kv_b_proj.weight"},
          {"qk_rope_head_dim", 16, ".q_"},  // q_proj (Kimi) or q_b_proj (Ling) comes first
          {"kv_lora_rank", 16, "kv_a_proj_with_mqa.weight"},
          {"linear_head_dim", 32, "q_proj.weight"}}) {
      SCOPED_TRACE(std::string(name) + " " + field);
      std::unique_ptr<Model> m;
      const Status st = load_model(edited_fixture(name, field, value), {}, &m);
      ASSERT_FALSE(st.ok());
      EXPECT_EQ(m, nullptr);
      EXPECT_NE(st.message().find(tensor), std::string::npos) << st.message();
    }
  }
}

// Q8_0 at load: the logits move by a small fraction of their spread, and prefill + decode
// stays as close to one prefill. Not to fp32 noise: a prefill widens the blocks and rounds x
// to bf16, a decode step quantizes x to int8 (cpu/nn/linear.h), and these random tiny models
// amplify a product's error (gguf_quant_test.cc). Measured: 2.1% and 1.7% of the spread from
// fp32, 2.9% and 3.5% between the split and the one prefill.
TEST(KdaModel, ProjectionsQuantizedAtLoadStayClose) {
  for (const char* name : kHybrids) {
    SCOPED_TRACE(name);
    std::unique_ptr<Model> f32, q8;
    ASSERT_TRUE(load_model(testing::fixture_dir(name), {}, &f32).ok());
    LoadOptions lo;
    lo.quantize = QuantType::kQ8_0;
    ASSERT_TRUE(load_model(testing::fixture_dir(name), lo, &q8).ok());
    std::vector<int> ids;
    for (int i = 0; i < 40; ++i) ids.push_back((i * 31 + 5) % f32->config().vocab);
    std::vector<float> a, b, c;
    SequenceState sa = f32->new_state(), sb = q8->new_state(), sc = q8->new_state();
    ASSERT_TRUE(f32->forward(ids.data(), 40, &sa, {}, &a).ok());
    ASSERT_TRUE(q8->forward(ids.data(), 40, &sb, {}, &b).ok());
    ASSERT_TRUE(q8->forward(ids.data(), 30, &sc, {}, &c).ok());
    for (int t = 30; t < 40; ++t) ASSERT_TRUE(q8->forward(ids.data() + t, 1, &sc, {}, &c).ok());
    const float spread =
        *std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end());
    float d = 0, split = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      d = std::max(d, std::abs(a[i] - b[i]));
      split = std::max(split, std::abs(b[i] - c[i]));
    }
    EXPECT_GT(d, 0.0f) << "quantizing changed nothing";
    EXPECT_LT(d, 0.06f * spread);
    EXPECT_LT(split, 0.06f * spread);
    EXPECT_LT(q8->weights().bytes(), f32->weights().bytes() / 2);
  }
}

}  // namespace
}  // namespace hanpu::model
