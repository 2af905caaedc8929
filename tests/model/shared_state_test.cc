// Checkpoints that share their KV rows (share_state / copy_state) on both fixture
// architectures: a sequence resumed from a chain of checkpoints (its attention over several
// shared segments) gives the cold run's logits within 1e-5 relative, and the memory a chain of
// checkpoints holds grows by the rows appended between them, not by the whole prefix each time.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/rng.h"
#include "fixtures.h"
#include "model/model.h"

namespace hanpu::model {
namespace {

class SharedState : public ::testing::TestWithParam<const char*> {};

TEST_P(SharedState, ResumedFromAChainOfCheckpointsEqualsCold) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const int vocab = m->config().vocab;
  Rng rng(23);
  std::vector<int> ids(90);
  for (int& id : ids) id = static_cast<int>(rng.below(vocab));
  SequenceState cold = m->new_state();
  std::vector<float> want;
  ASSERT_TRUE(m->forward(ids.data(), 90, &cold, {}, &want).ok());

  // A chat's worth of checkpoints: each turn resumes from the last one and takes a new one.
  const int64_t cuts[] = {13, 30, 31, 52, 77};
  std::vector<SequenceState> chain(1);
  chain[0] = m->new_state();
  int64_t at = 0;
  for (int64_t cut : cuts) {
    SequenceState running;
    ASSERT_TRUE(copy_state(chain.back(), &running).ok());
    ASSERT_TRUE(m->forward(ids.data() + at, cut - at, &running, {}, nullptr).ok());
    chain.emplace_back();
    ASSERT_TRUE(share_state(&running, &chain.back()).ok());
    at = cut;
  }
  SequenceState resumed;
  ASSERT_TRUE(copy_state(chain.back(), &resumed).ok());
  std::vector<float> got(vocab, std::nanf(""));
  ASSERT_TRUE(m->forward(ids.data() + at, 90 - at, &resumed, {}, &got).ok());
  double worst = 0, scale = 0;
  for (int i = 0; i < vocab; ++i) {
    ASSERT_TRUE(std::isfinite(got[i]));
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale) << GetParam();
  EXPECT_EQ(resumed.tokens, cold.tokens);

  // One more step from each: decode over the shared segments too.
  std::vector<float> a, b;
  ASSERT_TRUE(m->forward(&ids[5], 1, &cold, {}, &a).ok());
  ASSERT_TRUE(m->forward(&ids[5], 1, &resumed, {}, &b).ok());
  worst = 0;
  for (int i = 0; i < vocab; ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  EXPECT_LE(worst, 1e-5 * scale);

  // The chain shares its KV blocks: counted once, it holds less than a copy per checkpoint.
  // (KV bytes alone: the tiny fixtures' LA states outweigh their few KV rows.)
  std::map<const void*, int64_t> blocks;
  int64_t once = 0, whole = 0;
  for (size_t i = 1; i < chain.size(); ++i) {  // the checkpoints (chain[0] is the empty start)
    for (const auto& kv : chain[i].kv) {
      if (!kv) continue;
      once += kv->own_bytes();
      whole += kv->own_bytes();
      for (const auto& seg : kv->shared()) {
        blocks[seg.get()] = LayerKv::bytes_of(*seg);
        whole += LayerKv::bytes_of(*seg);
      }
    }
  }
  for (const auto& [id, b] : blocks) once += b;
  EXPECT_LT(once, whole * 0.8) << once << " of " << whole;
  EXPECT_GT(blocks.size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Models, SharedState,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny", "kimi-linear-tiny",
                                           "ling-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace hanpu::model
