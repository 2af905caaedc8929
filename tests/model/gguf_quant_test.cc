// Quantized GGUFs (scripts/make_quant_fixture.py: the fixtures' projections, embedding and tied
// head in Q8_0, made by the gguf package's reference quantizer): they load with the blocks kept
// (no widened copy), and their logits stay close to the fp32 model's.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "fixtures.h"
#include "model/model.h"

namespace hanpu::model {
namespace {

const std::string kDir = std::string(HANPU_FIXTURES_DIR) + "/models/";

class QuantGguf : public ::testing::TestWithParam<const char*> {};

// Every projection of the fixture's Q8_0 file is kept in blocks.
TEST_P(QuantGguf, ProjectionsKeepTheirBlocks) {
  std::unique_ptr<Model> q;
  const Status s = load_model(kDir + GetParam() + "/model-q8_0.gguf", {}, &q);
  ASSERT_TRUE(s.ok()) << s.message();
  const ModelWeights& w = q->weights();
  EXPECT_EQ(w.lm_head.quant, QuantType::kQ8_0);
  EXPECT_TRUE(w.embed.empty());
  for (const LayerWeights& l : w.layers) {
    if (l.kind == LayerKind::kLinearAttention) {
      for (const Linear* p : {&l.gdn.qkv, &l.gdn.z, &l.gdn.b, &l.gdn.a, &l.gdn.out})
        EXPECT_EQ(p->quant, QuantType::kQ8_0);
    } else {
      for (const Linear* p : {&l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o})
        EXPECT_EQ(p->quant, QuantType::kQ8_0);
    }
    if (!l.moe) {
      EXPECT_EQ(l.mlp.gate_up.quant, QuantType::kQ8_0);
      EXPECT_EQ(l.mlp.down.quant, QuantType::kQ8_0);
    }
  }
}

using testing::nmse;

// Every quantized projection of the Q8_0 model (ssm_out's permuted input, the fused gate|up
// rows, the tied head included) multiplies random x as the same projection decoded into f32
// does, within the error of rounding x to int8 blocks: a step of max|x| / 127 per block of
// Gaussian x, NMSE ~3e-5 on average; 1e-3 leaves room for the few samples of a 4-output
// projection at T = 1, while a wrong row, order or scale gives ~1.
TEST_P(QuantGguf, EveryProjectionMatchesItsDecodedWeights) {
  std::unique_ptr<Model> wide, q;
  const std::string file = kDir + GetParam() + "/model-q8_0.gguf";
  ASSERT_TRUE(load_model(file, {.weights = DType::kF32}, &wide).ok());
  ASSERT_TRUE(load_model(file, {}, &q).ok());
  std::vector<std::pair<const Linear*, const Linear*>> pairs = {
      {&q->weights().lm_head, &wide->weights().lm_head}};
  for (size_t i = 0; i < q->weights().layers.size(); ++i) {
    const LayerWeights &lq = q->weights().layers[i], &lw = wide->weights().layers[i];
    pairs.insert(pairs.end(), {{&lq.gdn.qkv, &lw.gdn.qkv},
                               {&lq.gdn.z, &lw.gdn.z},
                               {&lq.gdn.b, &lw.gdn.b},
                               {&lq.gdn.a, &lw.gdn.a},
                               {&lq.gdn.out, &lw.gdn.out},
                               {&lq.attn.q, &lw.attn.q},
                               {&lq.attn.k, &lw.attn.k},
                               {&lq.attn.v, &lw.attn.v},
                               {&lq.attn.o, &lw.attn.o},
                               {&lq.mlp.gate_up, &lw.mlp.gate_up},
                               {&lq.mlp.down, &lw.mlp.down}});
  }
  Rng rng(3);
  int checked = 0;
  for (auto [pq, pw] : pairs) {
    if (!pq->quant) continue;
    ASSERT_EQ(pq->in, pw->in);
    ASSERT_EQ(pq->out, pw->out);
    for (int64_t T : {1, 5}) {
      std::vector<float> x(T * pq->in), yq(T * pq->out, NAN), yw(T * pq->out);
      for (float& v : x) v = static_cast<float>(rng.normal());
      cpu::linear(x.data(), pq->in, T, *pq, yq.data(), pq->out, 0);
      cpu::linear(x.data(), pw->in, T, *pw, yw.data(), pw->out, 0);
      EXPECT_LE(nmse(yq, yw), 1e-3)
          << checked << " T " << T << " in " << pq->in << " out " << pq->out;
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// Three models of one fixture: fp32 (the safetensors checkpoint), the Q8_0 file decoded into
// f32 weights (the error of the Q8_0 weights alone, on the engine's tested f32 path), and the
// Q8_0 file on the quantized kernels (adding int8 activations). Measured NMSE of the last
// logits, over the fixture's prompts: decoded vs fp32 up to 7e-3 on qwen35-tiny and up to 0.12
// on qwen3next-tiny, whose random router picks other experts for one prompt once its weights
// move; kernels vs decoded up to 5.4e-3. These random tiny models amplify a weight's error far
// more than a trained model does (Q8_0's own relative error is ~3e-5 per weight), so the bounds
// are the measurements with room, and a broken kernel (a wrong scale, offset or order) gives
// NMSE near 1 or more.
TEST_P(QuantGguf, LogitsCloseToTheDecodedAndTheFp32Model) {
  const bool moe = std::string(GetParam()) == "qwen3next-tiny";
  std::unique_ptr<Model> ref, wide, q;
  ASSERT_TRUE(load_model(kDir + GetParam(), {.weights = DType::kF32}, &ref).ok());
  const std::string file = kDir + GetParam() + "/model-q8_0.gguf";
  ASSERT_TRUE(load_model(file, {.weights = DType::kF32}, &wide).ok());
  ASSERT_TRUE(load_model(file, {}, &q).ok());
  EXPECT_FALSE(wide->weights().lm_head.quant.has_value());
  const auto fixture = testing::reference(GetParam());
  for (const auto& p : fixture["prompts"]) {
    const auto ids = p["ids"].get<std::vector<int>>();
    const auto n = static_cast<int64_t>(ids.size());
    SequenceState a = ref->new_state(), b = wide->new_state(), c = q->new_state();
    std::vector<float> lr, lw, lq;
    ASSERT_TRUE(ref->forward(ids.data(), n, &a, {}, &lr).ok());
    ASSERT_TRUE(wide->forward(ids.data(), n, &b, {}, &lw).ok());
    ASSERT_TRUE(q->forward(ids.data(), n, &c, {}, &lq).ok());
    for (float v : lq) ASSERT_TRUE(std::isfinite(v));
    EXPECT_LE(nmse(lq, lw), 1e-2) << p["text"];
    EXPECT_LE(nmse(lq, lr), moe ? 0.2 : 3e-2) << p["text"];
    EXPECT_LE(nmse(lw, lr), moe ? 0.2 : 2e-2) << p["text"];
  }
}

// Decode steps (one token each: the GEMV shape) after a 4-token prefill give the logits a
// prefill of the whole prompt gives: each row of x is quantized on its own, so the two
// shapes differ only where the engine's prefill and decode do otherwise. qwen3next-tiny's
// experts (3-D tensors, held in bf16, gguf_model.cc) differ more: a bf16 prefill on the matrix
// unit rounds x to bf16, a decode step does not (cpu/nn/linear.h).
TEST_P(QuantGguf, DecodeStepsGiveThePrefillsLogits) {
  const bool moe = std::string(GetParam()) == "qwen3next-tiny";
  std::unique_ptr<Model> q;
  ASSERT_TRUE(load_model(kDir + GetParam() + "/model-q8_0.gguf", {}, &q).ok());
  const auto fixture = testing::reference(GetParam());
  const auto ids = fixture["prompts"][0]["ids"].get<std::vector<int>>();
  SequenceState steps = q->new_state();
  std::vector<float> ls, lp;
  ASSERT_TRUE(q->forward(ids.data(), 4, &steps, {}, &ls).ok());
  for (size_t t = 4; t < ids.size(); ++t) {
    ASSERT_TRUE(q->forward(&ids[t], 1, &steps, {}, &ls).ok());
    SequenceState whole = q->new_state();
    ASSERT_TRUE(q->forward(ids.data(), static_cast<int64_t>(t + 1), &whole, {}, &lp).ok());
    EXPECT_LE(nmse(ls, lp), moe ? 5e-3 : 1e-8) << "step " << t;
  }
}

// A safetensors checkpoint quantized at load (LoadOptions::quantize): every projection whose
// input is whole blocks, the tied head included, is held in blocks, and the logits stay close
// to the fp32 model's: Q8_0 as close as the Q8_0 GGUF's (the same bounds); Q4_K, whose 256-value
// blocks do not fit these rows of 64 and 96, falls back to Q5_0 as llama-quantize does. The
// random tiny models amplify weight error into logits (Q8_0: weight NMSE 3e-5, logits up to
// 1.5e-2); Q5_0's weight NMSE is about 60 times Q8_0's, so its bound is 0.5, which a wrong
// code, scale or fallback (logits uncorrelated: NMSE near 2) still fails.
TEST_P(QuantGguf, QuantizedAtLoadFromSafetensors) {
  const bool moe = std::string(GetParam()) == "qwen3next-tiny";
  std::unique_ptr<Model> ref;
  ASSERT_TRUE(load_model(kDir + GetParam(), {.weights = DType::kF32}, &ref).ok());
  const struct {
    QuantType asked, held;
    double dense_bound, moe_bound;
  } cases[] = {{QuantType::kQ8_0, QuantType::kQ8_0, 3e-2, 0.2},
               {QuantType::kQ4_K, QuantType::kQ5_0, 0.5, 0.5}};
  for (const auto& c : cases) {
    std::unique_ptr<Model> q;
    LoadOptions lo;
    lo.quantize = c.asked;
    const Status s = load_model(kDir + GetParam(), lo, &q);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(q->weights().lm_head.quant, c.held);
    for (const LayerWeights& l : q->weights().layers) {
      if (!l.moe) EXPECT_EQ(l.mlp.down.quant, c.held);
    }
    for (const auto& [text, e] : testing::prompt_logit_nmse(*q, *ref, GetParam()))
      EXPECT_LE(e, moe ? c.moe_bound : c.dense_bound)
          << quant_type_info(c.asked).name << ": " << text;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, QuantGguf, ::testing::Values("qwen35-tiny", "qwen3next-tiny"));

}  // namespace
}  // namespace hanpu::model
