// MLA over the compressed cache: the absorbed form equals the decompressed one (prefill,
// decode steps, histories longer than one decompressed block, shared segments), the cache
// holds one latent row a token, and the form heuristic's worked example.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fixtures.h"
#include "base/quant_quantize.h"
#include "model/gguf.h"
#include "model/gguf_writer.h"
#include "model/mla_layer.h"
#include "model/model.h"

namespace hanpu::model {
namespace {

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    d = std::max(d, std::abs(a[i] - b[i]));
  }
  return d;
}

float spread(const std::vector<float>& v) {
  return *std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end());
}

std::vector<int> token_ids(int n, int vocab, int mul) {
  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * mul + 3) % vocab;
  return ids;
}

// Prefill `chunks` (token counts) then `steps` decode tokens in one form; the last logits.
std::vector<float> run(const Model& m, MlaForm form, const std::vector<int>& ids,
                       const std::vector<int>& chunks, int steps) {
  ForwardOptions opt;
  opt.mla_form = form;
  SequenceState s = m.new_state();
  std::vector<float> logits;
  int at = 0;
  for (int n : chunks) {
    EXPECT_TRUE(m.forward(ids.data() + at, n, &s, opt, &logits).ok());
    at += n;
  }
  for (int i = 0; i < steps; ++i) {
    EXPECT_TRUE(m.forward(ids.data() + at, 1, &s, opt, &logits).ok());
    ++at;
  }
  return logits;
}

class MlaForms : public ::testing::TestWithParam<const char*> {};

TEST_P(MlaForms, AbsorbedEqualsDecompressedInPrefillAndDecode) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const auto ids = token_ids(1300, m->config().vocab, 29);
  // One prefill; a prefill then decode steps; and chunks past one decompressed block (1024
  // cached rows), so the decompressed form merges blocks.
  for (const auto& [chunks, steps] :
       std::vector<std::pair<std::vector<int>, int>>{{{97}, 0}, {{60}, 17}, {{1100, 150}, 3}}) {
    const auto a = run(*m, MlaForm::kAbsorbed, ids, chunks, steps);
    const auto d = run(*m, MlaForm::kDecompressed, ids, chunks, steps);
    const auto automatic = run(*m, MlaForm::kAuto, ids, chunks, steps);
    EXPECT_LE(max_abs_diff(a, d), 1e-5f * spread(d)) << chunks.size() << " chunks, " << steps;
    EXPECT_LE(max_abs_diff(automatic, d), 1e-5f * spread(d));
  }
}

// A cache row a token per MLA layer, the latent and rope key padded to 16: C + R values where
// per-head keys and values would take H (N + R + Dv).
TEST_P(MlaForms, TheCacheHoldsOneLatentRowAToken) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const ModelConfig& c = m->config();
  SequenceState s = m->new_state();
  const auto ids = token_ids(300, c.vocab, 7);
  std::vector<float> logits;
  ASSERT_TRUE(m->forward(ids.data(), 300, &s, {}, &logits).ok());
  int mla_layers = 0;
  for (int i = 0; i < c.layers; ++i) {
    if (!s.kv[i]) continue;
    ++mla_layers;
    EXPECT_EQ(s.kv[i]->length(), 300);
    EXPECT_EQ(s.kv[i]->kv_heads(), 1);
    EXPECT_EQ(s.kv[i]->head_dim(), mla_cache_dim(c.mla));
    EXPECT_EQ(s.kv[i]->head_dim() % 16, 0);
    EXPECT_LT(s.kv[i]->head_dim(), c.mla.kv_lora_rank + c.mla.qk_rope_dim + 16);
    std::vector<float> k(300 * s.kv[i]->head_dim()), v(k.size());
    ASSERT_TRUE(s.kv[i]->read_f32(0, 300, k.data(), v.data()).ok());
    EXPECT_EQ(k, v) << "the values are the keys";
    EXPECT_EQ(LayerKv::bytes_of(*std::make_shared<KvCache>(1, s.kv[i]->head_dim(), DType::kF32, 512,
                                                           KvValues::kAreKeys)),
              512 * s.kv[i]->head_dim() * 4)
        << "one copy";
  }
  EXPECT_GT(mla_layers, 0);
}

// A shared prefix (a checkpoint's segments) is attended in both forms alike.
TEST_P(MlaForms, SharedSegmentsGiveTheSameLogitsInBothForms) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const auto ids = token_ids(200, m->config().vocab, 13);
  std::vector<float> first[2];
  int f = 0;
  for (MlaForm form : {MlaForm::kAbsorbed, MlaForm::kDecompressed}) {
    ForwardOptions opt;
    opt.mla_form = form;
    SequenceState s = m->new_state(), checkpoint, resumed;
    std::vector<float> logits;
    ASSERT_TRUE(m->forward(ids.data(), 120, &s, opt, &logits).ok());
    ASSERT_TRUE(share_state(&s, &checkpoint).ok());
    ASSERT_TRUE(copy_state(checkpoint, &resumed).ok());
    ASSERT_TRUE(m->forward(ids.data() + 120, 40, &resumed, opt, &logits).ok());
    ASSERT_TRUE(m->forward(ids.data() + 160, 1, &resumed, opt, &logits).ok());
    first[f++] = logits;
  }
  EXPECT_LE(max_abs_diff(first[0], first[1]), 1e-5f * spread(first[1]));
  const auto straight = run(*m, MlaForm::kDecompressed, ids, {160}, 1);
  EXPECT_LE(max_abs_diff(first[1], straight), 1e-5f * spread(straight));
}

// The Kimi fixture's GGUF with attn_v_b (head h's Dv rows of C) in Q8_0 blocks, as a
// quantized file holds it (the fixture's attn_k_b rows, N = 16 values, fit no block type).
std::string kimi_with_quantized_v_b(const std::string& out) {
  GgufMetadata meta;
  WeightStore store;
  EXPECT_TRUE(
      load_gguf(testing::fixture_dir("kimi-linear-tiny") + "/model.gguf", &meta, &store).ok());
  std::vector<GgufTensorOut> tensors;
  for (const auto& [name, t] : store.tensors()) {
    const int64_t numel = shape_numel(t.shape);
    const bool quantize = name.find("attn_v_b") != std::string::npos;
    EXPECT_EQ(t.dtype, DType::kF32) << name;
    const uint64_t bytes = quantize ? static_cast<uint64_t>(numel / 32) * 34 : numel * 4;
    tensors.push_back(
        {name, t.shape, quantize ? 8u : 0u, bytes, [&t, numel, quantize, bytes](uint8_t* dst) {
           if (quantize) {
             quantize_blocks(QuantType::kQ8_0, reinterpret_cast<const float*>(t.data),
                             static_cast<size_t>(numel / 32), dst);
           } else {
             std::memcpy(dst, t.data, bytes);
           }
           return Status::Ok();
         }});
  }
  EXPECT_TRUE(write_gguf(out, meta, tensors).ok());
  return out;
}

// A quantized GGUF's per-head halves stay in its blocks (a decode step reads their stored
// bytes), and its absorbed decode still follows the decompressed form, whose kv_b is the same
// blocks widened: they differ by the int8 rounding of the absorbed form's activations alone.
TEST(MlaQuantized, TheHalvesStayInTheFilesBlocksAndAgreeWithTheDecompressedForm) {
  const std::string out =
      kimi_with_quantized_v_b(testing::temp_file("hanpu_mla", "kimi-v_b-q8_0.gguf"));
  std::unique_ptr<Model> m;
  const Status st = load_model(out, {}, &m);
  ASSERT_TRUE(st.ok()) << st.message();
  int mla_layers = 0;
  for (const LayerWeights& l : m->weights().layers) {
    if (l.kind == LayerKind::kLinearAttention) continue;
    ++mla_layers;
    ASSERT_FALSE(l.mla.uv.empty());
    for (size_t h = 0; h < l.mla.uv.size(); ++h) {
      EXPECT_EQ(l.mla.uv[h].quant, QuantType::kQ8_0) << h;
      EXPECT_FALSE(l.mla.uk[h].quant.has_value()) << h;  // F32 in the file
    }
  }
  EXPECT_GT(mla_layers, 0);
  const auto ids = token_ids(80, m->config().vocab, 11);
  const auto a = run(*m, MlaForm::kAbsorbed, ids, {60}, 6);
  const auto d = run(*m, MlaForm::kDecompressed, ids, {60}, 6);
  EXPECT_GT(max_abs_diff(a, d), 0.0f) << "the absorbed halves are not the file's blocks";
  EXPECT_LE(max_abs_diff(a, d), 0.02f * spread(d));
}

INSTANTIATE_TEST_SUITE_P(Models, MlaForms, ::testing::Values("kimi-linear-tiny", "ling-tiny"),
                         [](const auto& info) {
                           return std::string(info.param)[0] == 'k' ? "kimi" : "ling";
                         });

// mla_layer.h's worked example, Kimi Linear's shape.
TEST(MlaForm, AbsorbedForDecodeDecompressedForAFreshPrefill) {
  MlaShape kimi;
  kimi.kv_lora_rank = 512;
  kimi.qk_nope_dim = 128;
  kimi.qk_rope_dim = 64;
  kimi.v_dim = 128;
  EXPECT_EQ(mla_cache_dim(kimi), 576);
  EXPECT_EQ(mla_key_dim(kimi), 192);
  EXPECT_EQ(mla_value_dim(kimi), 128);
  EXPECT_TRUE(mla_runs_absorbed(kimi, 1, 4096));
  EXPECT_FALSE(mla_runs_absorbed(kimi, 256, 256));
  EXPECT_TRUE(mla_runs_absorbed(kimi, 100, 100000));
  EXPECT_FALSE(mla_runs_absorbed(kimi, 200, 100000));
}

}  // namespace
}  // namespace hanpu::model
