// Scoring every position (Model::score) and perplexity over chunks (Engine::perplexity)
// against independent recomputations: each scored position's log p from a forward call over
// its own prefix, in double; the last position of transformers' reference logits; and
// llama.cpp's chunking and +/- recomputed from those terms.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "fixtures.h"
#include "hanpu/engine.h"
#include "model/model.h"

namespace hanpu::model {
namespace {

// log softmax(logits)[id] in double, written apart from the engine's.
double log_p(const std::vector<float>& logits, int id) {
  double top = -INFINITY;
  for (float l : logits) top = std::max(top, static_cast<double>(l));
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - top);
  return static_cast<double>(logits[id]) - top - std::log(sum);
}

// log p(tokens[t + 1] | tokens[0..t]) from a forward call over that prefix alone.
double log_p_by_prefix(const Model& m, const std::vector<int>& tokens, int t,
                       DType kv = DType::kF32) {
  SequenceState s = m.new_state(kv);
  std::vector<float> logits;
  const Status st = m.forward(tokens.data(), t + 1, &s, {}, &logits);
  EXPECT_TRUE(st.ok()) << st.message();
  return st.ok() ? log_p(logits, tokens[t + 1]) : NAN;
}

std::vector<int> random_tokens(std::mt19937& rng, int n, int vocab) {
  std::vector<int> ids(static_cast<size_t>(n));
  for (int& id : ids) id = static_cast<int>(rng() % static_cast<unsigned>(vocab));
  return ids;
}

class ScoreFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ScoreFixture, EveryRowMatchesAForwardCallOverItsPrefix) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (const auto& [n, from] :
       {std::pair{13, 4}, std::pair{9, 0}, std::pair{37, 36}, std::pair{70, 33}}) {
    const std::vector<int> ids =
        random_tokens(rng, n + 1, m->config().vocab);             // the last is only a target
    std::vector<double> got(static_cast<size_t>(n - from), NAN);  // poisoned
    SequenceState scored = m->new_state(), forwarded = m->new_state();
    ForwardOptions fo;
    fo.threads = 2;
    const Status st = m->score(ids.data(), n, from, ids.data() + from + 1, &scored, fo, got.data());
    ASSERT_TRUE(st.ok()) << st.message();
    for (int t = from; t < n; ++t) {
      const double want = log_p_by_prefix(*m, ids, t);
      EXPECT_NEAR(got[t - from], want, 2e-5)
          << GetParam() << " seed " << seed << " n " << n << " row " << t;
    }
    // The state moves on exactly as a forward call over the same tokens moves it.
    std::vector<float> logits;
    ASSERT_TRUE(m->forward(ids.data(), n, &forwarded, fo, &logits).ok());
    EXPECT_EQ(scored.position, forwarded.position);
    EXPECT_EQ(scored.tokens, forwarded.tokens);
    EXPECT_EQ(scored.recurrent, forwarded.recurrent);
    EXPECT_EQ(scored.conv, forwarded.conv);
  }
}

TEST_P(ScoreFixture, LastRowMatchesTransformersReferenceLogits) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const auto ref = testing::reference(GetParam());  // kept: the loop walks a part of it
  for (const auto& p : ref["prompts"]) {
    const auto ids = p["ids"].get<std::vector<int>>();
    const auto want = p["last_logits"].get<std::vector<float>>();
    const auto n = static_cast<int64_t>(ids.size());
    for (int next : {0, static_cast<int>(want.size()) - 1,
                     static_cast<int>(ids.size()) * 7 % m->config().vocab}) {
      SequenceState s = m->new_state();
      double got = NAN;
      ASSERT_TRUE(m->score(ids.data(), n, n - 1, &next, &s, {}, &got).ok());
      EXPECT_NEAR(got, log_p(want, next), 2e-4) << p["text"] << " next " << next;
    }
  }
}

TEST_P(ScoreFixture, RefusesRowsAndTargetsOutOfRange) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const std::vector<int> ids = {1, 2, 3, 4};
  double out[4] = {0, 0, 0, 0};
  SequenceState s = m->new_state();
  Status st = m->score(ids.data(), 4, 4, ids.data(), &s, {}, out);
  EXPECT_NE(st.message().find("row 4 is not one of the 4 tokens"), std::string::npos)
      << st.message();
  const int bad[2] = {5, m->config().vocab};
  st = m->score(ids.data(), 4, 2, bad, &s, {}, out);
  EXPECT_NE(st.message().find(fmt::format("next token id {} at position 3", m->config().vocab)),
            std::string::npos)
      << st.message();
  EXPECT_EQ(s.position, 0) << "a refused call leaves the state alone";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ScoreFixture,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny", "kimi-linear-tiny",
                                           "ling-tiny"));

// llama.cpp's perplexity from the terms above: chunks of ctx, positions ctx/2 .. ctx-2 scored.
TEST(EnginePerplexity, ChunksAsLlamaCppFromForwardCallsOverPrefixes) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  const auto m = testing::load_fixture("qwen35-tiny");
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (const auto& [ctx, prefill_chunk] :
       {std::pair{10, 3}, std::pair{11, 1024}, std::pair{16, 8}, std::pair{3, 1}}) {
    const int chunks = 3;
    const std::vector<int> ids =
        random_tokens(rng, chunks * ctx + ctx - 1, m->config().vocab);  // a partial chunk left over
    double nll = 0, nll2 = 0;
    int64_t count = 0;
    for (int c = 0; c < chunks; ++c) {
      const std::vector<int> chunk(ids.begin() + c * ctx, ids.begin() + (c + 1) * ctx);
      for (int t = ctx / 2; t <= ctx - 2; ++t) {
        const double lp = log_p_by_prefix(*m, chunk, t);
        nll -= lp;
        nll2 += lp * lp;
        ++count;
      }
    }
    const double mean = nll / count, want_ppl = std::exp(mean);
    const double want_err = want_ppl * std::sqrt((nll2 / count - mean * mean) / (count - 1));
    PerplexityOptions o;
    o.context = ctx;
    o.prefill_chunk = prefill_chunk;
    o.kv_cache = "f32";
    std::vector<int> seen;
    PerplexityStats s;
    const Status st = e->perplexity(
        ids, o, [&](const PerplexityStats& so_far) { seen.push_back(so_far.chunks); }, &s);
    ASSERT_TRUE(st.ok()) << st.message();
    const std::string where =
        fmt::format("seed {} ctx {} prefill_chunk {}", seed, ctx, prefill_chunk);
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3})) << where;
    EXPECT_EQ(s.chunks, chunks);
    EXPECT_EQ(s.chunks_total, chunks);
    EXPECT_EQ(s.text_tokens, static_cast<int64_t>(ids.size()));
    EXPECT_EQ(s.scored_tokens, count) << where;
    EXPECT_EQ(s.run_tokens, chunks * (ctx - 1)) << where;
    EXPECT_NEAR(s.ppl(), want_ppl, 1e-5 * want_ppl) << where;
    if (count > 1) {
      EXPECT_NEAR(s.ppl_error(), want_err, 1e-4 * want_err + 1e-9) << where;
    }
    EXPECT_GT(s.ms, 0.0);
    // max_chunks stops early with the first chunks' figures.
    o.max_chunks = 1;
    PerplexityStats one;
    ASSERT_TRUE(e->perplexity(ids, o, nullptr, &one).ok());
    EXPECT_EQ(one.chunks, 1);
    EXPECT_EQ(one.scored_tokens, count / chunks);
  }
}

TEST(EnginePerplexity, RefusesWhatScoresNothingByName) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  const std::vector<int> ids(100, 7);
  PerplexityOptions o;
  PerplexityStats s;
  s.chunks = -1;  // untouched by a refusal
  o.context = 2;
  Status st = e->perplexity(ids, o, nullptr, &s);
  EXPECT_NE(st.message().find("a context of 2 tokens scores none (at least 3)"), std::string::npos)
      << st.message();
  o.context = 101;
  st = e->perplexity(ids, o, nullptr, &s);
  EXPECT_NE(st.message().find("the text has 100 tokens, fewer than one chunk of 101"),
            std::string::npos)
      << st.message();
  o.context = 10;
  o.kv_cache = "q8";
  st = e->perplexity(ids, o, nullptr, &s);
  EXPECT_NE(st.message().find("kv cache 'q8'"), std::string::npos) << st.message();
  o.kv_cache = "auto";
  o.max_chunks = -1;
  st = e->perplexity(ids, o, nullptr, &s);
  EXPECT_NE(st.message().find("max_chunks -1"), std::string::npos) << st.message();
  EXPECT_EQ(s.chunks, -1);
}

// A checkpoint whose final norm weights are huge (finite: the loader refuses NaN and inf), so
// the logits overflow to inf: perplexity refuses to give a figure (naming the chunk and
// position) rather than printing nan or inf.
TEST(EnginePerplexity, RefusesNonFiniteLogits) {
  const std::string dir = testing::scratch_checkpoint("hanpu-ppl-nan", {});
  const std::string path = dir + "/model.safetensors";
  std::string bytes = testing::read_text(path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  const auto header = nlohmann::json::parse(bytes.substr(8, header_len));
  const auto offsets = header.at("model.norm.weight").at("data_offsets").get<std::vector<size_t>>();
  const float huge = std::numeric_limits<float>::max() / 2;
  for (size_t at = 8 + header_len + offsets[0]; at < 8 + header_len + offsets[1]; at += 4) {
    std::memcpy(bytes.data() + at, &huge, 4);
  }
  std::ofstream(path, std::ios::binary) << bytes;
  std::unique_ptr<Engine> e;
  const Status loaded = Engine::load(dir, &e);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  PerplexityOptions o;
  o.context = 8;
  PerplexityStats s;
  s.chunks = -1;
  const Status st = e->perplexity(std::vector<int>(20, 5), o, nullptr, &s);
  EXPECT_NE(st.message().find("chunk 1, position 4: log p is "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("(the logits are not finite)"), std::string::npos) << st.message();
  EXPECT_EQ(s.chunks, -1);
}

}  // namespace
}  // namespace hanpu::model
