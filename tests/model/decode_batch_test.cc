// Continuous batching: one decode step of several sequences at once equals each sequence's
// own decode step (logits within float rounding of the projections' row order, states alike),
// for sequences at different positions, on both architectures.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "fixtures.h"
#include "model/model.h"

namespace hanpu::model {
namespace {

class DecodeBatch : public ::testing::TestWithParam<const char*> {};

TEST_P(DecodeBatch, EqualsEachSequenceStepAlone) {
  std::unique_ptr<Model> m;
  ASSERT_TRUE(load_model(testing::fixture_dir(GetParam()), {}, &m).ok());
  const ModelConfig& c = m->config();
  Rng rng(17);
  constexpr int kSeqs = 5;
  std::vector<SequenceState> alone, together;
  std::vector<int> next;
  for (int s = 0; s < kSeqs; ++s) {
    std::vector<int> prompt(3 + 7 * s);  // different lengths: different positions
    for (int& id : prompt) id = static_cast<int>(rng.below(c.vocab));
    for (auto* set : {&alone, &together}) {
      set->push_back(m->new_state());
      ASSERT_TRUE(
          m->forward(prompt.data(), static_cast<int64_t>(prompt.size()), &set->back(), {}, nullptr)
              .ok());
    }
    next.push_back(static_cast<int>(rng.below(c.vocab)));
  }
  for (int step = 0; step < 3; ++step) {
    std::vector<float> batch(static_cast<size_t>(kSeqs) * c.vocab, std::nanf(""));
    std::vector<SequenceState*> ptrs;
    for (auto& s : together) ptrs.push_back(&s);
    ASSERT_TRUE(m->decode_batch(next.data(), kSeqs, ptrs.data(), {}, batch.data()).ok());
    for (int s = 0; s < kSeqs; ++s) {
      std::vector<float> one;
      ASSERT_TRUE(m->forward(&next[s], 1, &alone[s], {}, &one).ok());
      const std::vector<float> row(batch.begin() + static_cast<int64_t>(s) * c.vocab,
                                   batch.begin() + static_cast<int64_t>(s + 1) * c.vocab);
      EXPECT_LT(testing::nmse(row, one), 1e-10) << GetParam() << " seq " << s << " step " << step;
      EXPECT_EQ(together[s].position, alone[s].position);
      EXPECT_EQ(together[s].tokens, alone[s].tokens);
      next[s] = static_cast<int>(std::max_element(one.begin(), one.end()) - one.begin());
    }
  }
  SequenceState* twice[2] = {&together[0], &together[0]};
  std::vector<float> out(2 * static_cast<size_t>(c.vocab));
  const Status st = m->decode_batch(next.data(), 2, twice, {}, out.data());
  EXPECT_NE(st.message().find("are one state"), std::string::npos) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Models, DecodeBatch,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny", "kimi-linear-tiny",
                                           "ling-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

}  // namespace
}  // namespace hanpu::model
