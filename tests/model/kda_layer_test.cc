// The KDA layer (model/kda_layer.h) against transformers' own KimiLinearDeltaAttention and
// BailingHybridDeltaAttention (scripts/make_kda_vectors.py: random weights, 11 tokens): the
// whole prefill, and a prefill of 7 continued by 4 single-token steps (the conv and recurrent
// states carried, the decode kernel), each within float32 noise of the module's output.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "fixtures.h"
#include "model/kda_layer.h"

namespace hanpu::model {
namespace {

using nlohmann::json;

Linear linear_of(const json& w) {
  const auto shape = w["shape"].get<std::vector<int>>();
  const auto data = w["data"].get<std::vector<float>>();
  std::vector<int> rows(shape[0]);
  std::iota(rows.begin(), rows.end(), 0);
  return Linear::from_rows(data.data(), shape[1], rows, DType::kF32);
}

struct Layer {
  ModelConfig c;
  KdaWeights w;
  int T = 0;
  std::vector<float> x, want;
};

Layer layer_of(const json& l) {
  Layer L;
  const json& ws = l["weights"];
  const int H = l["heads"], K = l["head_dim"], kc = l["kernel"];
  L.c.hidden = l["hidden"];
  L.c.la_key_heads = L.c.la_value_heads = H;
  L.c.la_key_dim = L.c.la_value_dim = K;
  L.c.conv_kernel = kc;
  L.c.rms_eps = l["eps"];
  L.T = l["T"];
  L.x = l["x"].get<std::vector<float>>();
  L.want = l["out"].get<std::vector<float>>();
  KdaWeights& w = L.w;
  w.q = linear_of(ws["q_proj.weight"]);
  w.k = linear_of(ws["k_proj.weight"]);
  w.v = linear_of(ws["v_proj.weight"]);
  w.b = linear_of(ws["b_proj.weight"]);
  w.out = linear_of(ws["o_proj.weight"]);
  w.o_norm = ws["o_norm.weight"]["data"].get<std::vector<float>>();
  w.a_rate = ws["forget_gate.A_log"]["data"].get<std::vector<float>>();
  for (float& a : w.a_rate) a = std::exp(a);
  w.dt_bias = ws["forget_gate.dt_bias"]["data"].get<std::vector<float>>();
  if (ws.contains("forget_gate.f_a_proj.weight")) {  // Kimi: low rank, unbounded gate
    w.f_a = linear_of(ws["forget_gate.f_a_proj.weight"]);
    w.f_b = linear_of(ws["forget_gate.f_b_proj.weight"]);
    w.g_a = linear_of(ws["g_a_proj.weight"]);
    w.g_b = linear_of(ws["g_b_proj.weight"]);
  } else {  // Ling: full rank, bounded gate
    w.f_a = linear_of(ws["forget_gate.f_proj.weight"]);
    w.g_a = linear_of(ws["g_proj.weight"]);
    w.gate_lower_bound = -5.0f;
  }
  // torch's conv1d weight [C, 1, kernel] to tap-major [kernel, C].
  const auto cw = ws["conv1d.weight"]["data"].get<std::vector<float>>();
  const int C = 3 * H * K;
  w.conv.resize(static_cast<size_t>(kc) * C);
  for (int ch = 0; ch < C; ++ch) {
    for (int j = 0; j < kc; ++j) w.conv[static_cast<size_t>(j) * C + ch] = cw[ch * kc + j];
  }
  return L;
}

double nmse(const float* got, const float* want, size_t n) {
  double e = 0, s = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    e += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    s += double(want[i]) * want[i];
  }
  return e / s;
}

TEST(KdaLayer, MatchesTransformersPrefillAndDecode) {
  const json v =
      json::parse(testing::read_text(std::string(HANPU_FIXTURES_DIR) + "/kda/vectors.json"));
  ASSERT_EQ(v["layers"].size(), 2u);
  for (const json& l : v["layers"]) {
    const Layer L = layer_of(l);
    const ModelConfig& c = L.c;
    const int H = c.la_key_heads, K = c.la_key_dim, hidden = c.hidden;
    const std::string name = l["name"];
    for (const char* strategy : {"hanpu", "fla", "recurrent"}) {
      ForwardOptions opt;
      opt.la_strategy = strategy;
      Workspace ws;
      double kernel_ms = 0;
      std::vector<float> conv(static_cast<size_t>(c.conv_kernel - 1) * 3 * H * K, 0.0f);
      AlignedFloats rec(static_cast<size_t>(H) * K * K, 0.0f);
      std::vector<float> out(static_cast<size_t>(L.T) * hidden + 1, std::nanf(""));
      ASSERT_TRUE(
          kda_layer(c, L.w, L.x.data(), L.T, &conv, &rec, opt, L.T, out.data(), &kernel_ms, ws)
              .ok());
      EXPECT_LT(nmse(out.data(), L.want.data(), L.want.size()), 1e-10) << name << " " << strategy;
      EXPECT_TRUE(std::isnan(out.back())) << "wrote past out";
      // 7 tokens, then 4 one at a time: the last 4 rows again.
      std::fill(conv.begin(), conv.end(), 0.0f);
      std::fill(rec.begin(), rec.end(), 0.0f);
      std::vector<float> step(static_cast<size_t>(L.T) * hidden, std::nanf(""));
      const int P = 7;
      ASSERT_TRUE(
          kda_layer(c, L.w, L.x.data(), P, &conv, &rec, opt, P, step.data(), &kernel_ms, ws).ok());
      for (int t = P; t < L.T; ++t) {
        ASSERT_TRUE(kda_layer(c, L.w, L.x.data() + t * hidden, 1, &conv, &rec, opt, 1,
                              step.data() + t * hidden, &kernel_ms, ws)
                        .ok());
      }
      EXPECT_LT(nmse(step.data(), L.want.data(), L.want.size()), 1e-10)
          << name << " " << strategy << ": prefill 7 + 4 decode steps";
    }
  }
}

}  // namespace
}  // namespace hanpu::model
