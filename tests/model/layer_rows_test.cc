// The token mixers' out_rows (model/layers.h): computing the output of only the last rows must
// give those rows of the full output, leave the sequence's state exactly as the full call does,
// and write nothing past the rows asked for. Fixture weights (fp32), fresh random inputs, a
// state carried over from an earlier call, an odd T.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/rng.h"
#include "fixtures.h"
#include "model/kda_layer.h"
#include "model/layers.h"
#include "model/mla_layer.h"
#include "model/model.h"

namespace hanpu::model {
namespace {

std::vector<float> random_rows(Rng& rng, int64_t rows, int hidden) {
  std::vector<float> x(static_cast<size_t>(rows) * hidden);
  for (float& v : x) v = rng.normal();
  return x;
}

// Runs layer i's token mixer on a first chunk of T0 rows, then on T rows asking for the last
// out_rows; returns the out_rows outputs (checking that the NaN row after them survived) and
// leaves the state in *s.
std::vector<float> mixer_rows(const Model& m, int i, SequenceState* s,
                              const std::vector<float>& first, int64_t T0,
                              const std::vector<float>& x, int64_t T, int64_t out_rows) {
  const ModelConfig& c = m.config();
  const LayerWeights& lw = m.weights().layers[i];
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out(static_cast<size_t>(std::max(T0, T) + 1) * c.hidden, nan);  // poisoned
  double kernel_ms = 0;
  Workspace ws;
  const auto run = [&](const std::vector<float>& in, int64_t rows, int64_t want) {
    Status st;
    if (c.kda_hybrid()) {
      st = lw.kind == LayerKind::kLinearAttention
               ? kda_layer(c, lw.kda, in.data(), rows, &s->conv[i], &s->recurrent[i], {}, want,
                           out.data(), &kernel_ms, ws)
               : mla_layer(c, lw.mla, in.data(), rows, s->position, s->kv[i].get(), {}, want,
                           out.data(), &kernel_ms, ws);
    } else if (lw.kind == LayerKind::kLinearAttention) {
      st = gdn_layer(c, lw.gdn, in.data(), rows, &s->conv[i], &s->recurrent[i], {}, want,
                     out.data(), &kernel_ms, ws);
    } else {
      st = attention_layer(c, lw.attn, in.data(), rows, s->position, s->kv[i].get(), {}, want,
                           out.data(), &kernel_ms, ws);
    }
    EXPECT_TRUE(st.ok()) << st.message();
    s->position += rows;
  };
  run(first, T0, T0);
  std::fill(out.begin(), out.end(), nan);
  run(x, T, out_rows);
  const auto end = out.begin() + out_rows * c.hidden;
  EXPECT_TRUE(std::all_of(end, out.end(), [](float v) { return std::isnan(v); }))
      << "wrote past out_rows";
  return {out.begin(), end};
}

class LayerRows : public ::testing::TestWithParam<const char*> {};

TEST_P(LayerRows, LastRowsEqualTheFullOutputAndTheStateIsTheSame) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const ModelConfig& c = m->config();
  Rng rng(static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()) + 17);
  const int64_t T0 = 5, T = 13;
  const auto first = random_rows(rng, T0, c.hidden);
  const auto x = random_rows(rng, T, c.hidden);
  bool saw[2] = {false, false};
  for (int i = 0; i < c.layers; ++i) {
    const int kind = c.layer_kinds[i] == LayerKind::kLinearAttention ? 0 : 1;
    if (saw[kind]) continue;
    saw[kind] = true;
    SequenceState full_state = m->new_state();
    const auto full = mixer_rows(*m, i, &full_state, first, T0, x, T, T);
    for (const int64_t R : {int64_t{1}, int64_t{4}}) {
      SCOPED_TRACE(::testing::Message() << "layer " << i << ", out_rows " << R);
      SequenceState s = m->new_state();
      const auto part = mixer_rows(*m, i, &s, first, T0, x, T, R);
      double err = 0, ref = 0;
      for (size_t j = 0; j < part.size(); ++j) {
        const double want = full[(T - R) * c.hidden + j];
        err += (part[j] - want) * (part[j] - want);
        ref += want * want;
      }
      EXPECT_TRUE(std::isfinite(err)) << "NaN in the output";
      EXPECT_LE(err / ref, 1e-10) << "NMSE against the full call's last rows";
      // The state path does not depend on out_rows: bit for bit the same.
      EXPECT_EQ(s.conv[i], full_state.conv[i]);
      EXPECT_TRUE(std::equal(s.recurrent[i].begin(), s.recurrent[i].end(),
                             full_state.recurrent[i].begin(), full_state.recurrent[i].end()));
      if (s.kv[i] != nullptr) {
        const int64_t n = s.kv[i]->length();
        ASSERT_EQ(n, full_state.kv[i]->length());
        const size_t values = static_cast<size_t>(n) * s.kv[i]->kv_heads() * s.kv[i]->head_dim();
        std::vector<float> ka(values), va(values), kb(values), vb(values);
        ASSERT_TRUE(s.kv[i]->read_f32(0, n, ka.data(), va.data()).ok());
        ASSERT_TRUE(full_state.kv[i]->read_f32(0, n, kb.data(), vb.data()).ok());
        EXPECT_EQ(0, std::memcmp(ka.data(), kb.data(), values * sizeof(float)));
        EXPECT_EQ(0, std::memcmp(va.data(), vb.data(), values * sizeof(float)));
      }
    }
  }
  EXPECT_TRUE(saw[0] && saw[1]) << "the fixture should have both layer kinds";
}

INSTANTIATE_TEST_SUITE_P(Models, LayerRows,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny", "kimi-linear-tiny",
                                           "ling-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace hanpu::model
