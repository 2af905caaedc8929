// llama-perplexity's log-probability file and KL divergence (model/kl_divergence.h): the
// encoding against a float64 log-softmax, a model against itself (KL 0), a Q8_0 model against
// its fp32 base, the file's exact size, and hostile files refused by what is wrong with them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "fixtures.h"
#include "model/kl_divergence.h"
#include "model/logprob_file.h"
#include "model/model.h"
#include "model/perplexity.h"

namespace hanpu::model {
namespace {

std::string tmp(const std::string& name) { return testing::temp_file("hanpu_kl", name); }

// Each encoded log-probability is the float64 log-softmax to within half a code step (the
// range of at most 16 nats over 65535 codes, plus f32 rounding). The encoding against itself
// has KL 0 to first order in those errors: the decoded base is not exactly normalised, so
// |KL| <= half a step (1.3e-4 nats at the widest range) plus the mass cut at 16 nats below
// the top (vocab e^-16); the top token is kept.
TEST(KlDivergence, EncodingKeepsEveryLogProbabilityToHalfAStep) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 gen(seed);
  for (const int vocab : {7, 384, 1001}) {
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& l : logits) l = normal(gen);
    std::vector<uint16_t> record(static_cast<size_t>(logprob_record_words(vocab)), 0xABCD);
    encode_logprobs(logits.data(), vocab, record.data());
    if (vocab % 2 != 0) {
      EXPECT_EQ(record.back(), 0) << "padding";
    }
    float scale, min_log_prob;
    std::memcpy(&scale, record.data(), 4);
    std::memcpy(&min_log_prob, record.data() + 2, 4);
    double top = -INFINITY, sum = 0;
    for (float l : logits) top = std::max(top, static_cast<double>(l));
    for (float l : logits) sum += std::exp(l - top);
    const double lse = top + std::log(sum);
    double lowest = INFINITY;
    for (float l : logits) lowest = std::min(lowest, static_cast<double>(l));
    for (int i = 0; i < vocab; ++i) {
      const double want = std::max(logits[i] - lse, std::max(lowest, top - 16) - lse);
      const double got = scale * record[4 + i] + min_log_prob;
      ASSERT_NEAR(got, want, 0.5 * scale + 1e-5) << "vocab " << vocab << " entry " << i;
    }
    const KlTerms t = compare_logprobs(logits.data(), vocab, record.data(), 3);
    EXPECT_LT(std::fabs(t.kld), 0.5 * scale + vocab * std::exp(-16.0)) << vocab;
    EXPECT_TRUE(t.same_top);
    EXPECT_NEAR(t.nll, -(logits[3] - lse), 1e-4);  // a token 16 nats below the top reads as that
    EXPECT_NEAR(t.nll_base, -std::max(logits[3] - lse, std::max(lowest, top - 16) - lse), 1e-3);
  }
}

class KlFixture : public ::testing::TestWithParam<const char*> {};

// `m`'s perplexity over `tokens` in chunks of `ctx`, its log-probabilities saved to `file`.
PerplexityStats save_base(const Model& m, const std::vector<int>& tokens, int ctx,
                          const std::string& file) {
  PerplexityRun run;
  run.context = ctx;
  run.save_logprobs = file;
  PerplexityStats ppl;
  const Status s = perplexity(m, tokens, run, {}, &ppl);
  EXPECT_TRUE(s.ok()) << s.message();
  return ppl;
}

std::vector<int> text_tokens(int n, int vocab) {
  std::mt19937 gen(7);
  std::vector<int> ids(static_cast<size_t>(n));
  for (int& id : ids) id = static_cast<int>(gen() % static_cast<unsigned>(vocab));
  return ids;
}

// Saved, the file is exactly the header, the tokens and a record a scored position; a model
// against its own file has KL divergence 0 (to the encoding's half step, 1.3e-4 nats at most,
// as above), the same top token and the same probability of each right token everywhere.
TEST_P(KlFixture, AModelAgainstItselfDivergesByNothing) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const int vocab = m->config().vocab, ctx = 40, chunks = 3;
  const std::vector<int> tokens = text_tokens(ctx * chunks + 5, vocab);
  const std::string file = tmp(std::string(GetParam()) + "-self.kl");
  const PerplexityStats ppl = save_base(*m, tokens, ctx, file);
  const uint64_t want =
      20 + 4ull * ctx * chunks + 2ull * logprob_record_words(vocab) * (ctx - 1 - ctx / 2) * chunks;
  EXPECT_EQ(std::filesystem::file_size(file), want);
  EXPECT_FALSE(std::filesystem::exists(file + ".partial"));
  KlDivergenceStats kl;
  int reports = 0;
  const Status s = kl_divergence(
      *m, file, {}, [&](const KlDivergenceStats&) { ++reports; }, &kl);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(reports, chunks);
  EXPECT_EQ(kl.count, ppl.scored_tokens);
  EXPECT_EQ(kl.kld.size(), static_cast<size_t>(kl.count));
  EXPECT_NEAR(kl.q.nll_sum, ppl.nll_sum, 1e-6 * std::fabs(ppl.nll_sum));
  EXPECT_LT(std::fabs(kl.kld_sum / kl.count), 1.3e-4);
  EXPECT_EQ(kl.same_top, kl.count);
  EXPECT_LT(kl.max_p_diff, 1e-4);
}

// The Q8_0 GGUF against the fp32 model's file: a small, positive divergence (its logits' NMSE
// is about 1e-2, gguf_quant_test.cc) and mostly the same top token.
TEST_P(KlFixture, TheQ8_0ModelDivergesALittleFromItsBase) {
  const auto base = testing::load_fixture(GetParam());
  std::unique_ptr<Model> q;
  ASSERT_TRUE(load_model(testing::fixture_dir(GetParam()) + "/model-q8_0.gguf", {}, &q).ok());
  const int vocab = base->config().vocab, ctx = 64;
  const std::vector<int> tokens = text_tokens(ctx * 2, vocab);
  const std::string file = tmp(std::string(GetParam()) + "-base.kl");
  save_base(*base, tokens, ctx, file);
  KlDivergenceStats kl;
  ASSERT_TRUE(kl_divergence(*q, file, {}, {}, &kl).ok());
  const double mean = kl.kld_sum / kl.count;
  EXPECT_GT(mean, 1e-7);
  EXPECT_LT(mean, 1e-2);
  EXPECT_GT(kl.same_top, kl.count * 7 / 10);
}

INSTANTIATE_TEST_SUITE_P(Models, KlFixture, ::testing::Values("qwen35-tiny", "qwen3next-tiny"));

// A file written for the fixture, then damaged one way at a time: each refused naming the
// problem, before any chunk runs.
TEST(KlDivergence, HostileFilesAreRefused) {
  const auto m = testing::load_fixture("qwen35-tiny");
  const int vocab = m->config().vocab, ctx = 16;
  const std::string file = tmp("hostile-base.kl");
  save_base(*m, text_tokens(ctx * 2, vocab), ctx, file);
  std::vector<char> good(std::filesystem::file_size(file));
  std::ifstream(file, std::ios::binary)
      .read(good.data(), static_cast<std::streamsize>(good.size()));
  const auto put32 = [](std::vector<char> b, size_t at, int32_t v) {
    std::memcpy(b.data() + at, &v, 4);
    return b;
  };
  const auto put_f32 = [](std::vector<char> b, size_t at, float v) {
    std::memcpy(b.data() + at, &v, 4);
    return b;
  };
  const size_t records = 20 + 4 * ctx * 2;
  std::vector<char> truncated(good.begin(), good.end() - 1);
  std::vector<char> magic = good;
  magic[0] = 'X';
  const struct {
    std::vector<char> bytes;
    std::string message;
  } cases[] = {
      {magic, "does not start with \"_logits_\""},
      {{}, "does not start with"},
      {truncated, "bytes where context 16"},
      {put32(good, 8, 2), "context 2 (offset 8) scores nothing"},
      {put32(good, 8, -5), "context -5"},
      {put32(good, 12, vocab + 1), "vocabulary has 385 tokens (offset 12)"},
      {put32(good, 16, 0), "chunk count 0"},
      {put32(good, 16, 1 << 30), "bytes where context 16"},
      {put32(good, 20 + 4 * 5, vocab), "token 5 (offset 40) is id 384"},
      {put32(good, 20 + 4 * 5, -1), "token 5 (offset 40) is id -1"},
      {put_f32(good, records, std::nanf("")), "chunk 1, scored position 0: scale nan"},
      {put_f32(good, records + 4, INFINITY), "min log-prob inf"},
      {put_f32(good, records, -1.0f), "scale -1"},
  };
  const std::string bad = tmp("hostile.kl");
  for (const auto& c : cases) {
    std::ofstream(bad, std::ios::binary | std::ios::trunc)
        .write(c.bytes.data(), static_cast<std::streamsize>(c.bytes.size()));
    KlDivergenceStats kl;
    const Status s = kl_divergence(*m, bad, {}, {}, &kl);
    ASSERT_FALSE(s.ok()) << c.message;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
  }
  KlDivergenceStats kl;
  EXPECT_FALSE(kl_divergence(*m, tmp("missing.kl"), {}, {}, &kl).ok());
  EXPECT_FALSE(kl_divergence(*m, ::testing::TempDir(), {}, {}, &kl).ok());
}

}  // namespace
}  // namespace hanpu::model
