// The scratch workspace a caller hands the model: a reused one whose buffers hold NaN garbage
// from before gives bit for bit the logits of a fresh one (nothing is read before it is
// written), for a prefill, a decode step, a batched decode step and a scored chunk; its
// memory is kept between steps and given back on release.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/rng.h"
#include "fixtures.h"
#include "model/model.h"
#include "model/workspace.h"

namespace hanpu::model {
namespace {

// Every buffer of ws grown past what the tiny model's steps use, and filled with NaN.
void poison(Workspace* ws) {
  constexpr size_t kFloats = 1 << 20;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < Workspace::kLayerSlots; ++i) std::fill_n(ws->layer(i, kFloats), kFloats, nan);
  for (int i = 0; i < static_cast<int>(Workspace::Stack::kCount); ++i)
    std::fill_n(ws->stack(static_cast<Workspace::Stack>(i), kFloats), kFloats, nan);
}

class WorkspaceReuse : public ::testing::TestWithParam<const char*> {};

TEST_P(WorkspaceReuse, PoisonedWorkspaceGivesTheFreshOnesLogits) {
  const auto m = testing::load_fixture(GetParam());
  ASSERT_NE(m, nullptr);
  const int vocab = m->config().vocab;
  Rng rng(5);
  std::vector<int> ids(37);
  for (int& id : ids) id = static_cast<int>(rng.below(vocab));
  Workspace ws;
  poison(&ws);
  const int64_t held = ws.bytes();
  EXPECT_GE(held, int64_t{15} * (1 << 20) * 4);

  // Prefill, then one decode step.
  SequenceState fresh = m->new_state(), reused = m->new_state();
  std::vector<float> want, got;
  ASSERT_TRUE(m->forward(ids.data(), 30, &fresh, {}, &want).ok());
  ASSERT_TRUE(m->forward(ids.data(), 30, &reused, {}, &got, nullptr, &ws).ok());
  EXPECT_EQ(want, got) << "prefill";
  poison(&ws);
  ASSERT_TRUE(m->forward(&ids[30], 1, &fresh, {}, &want).ok());
  ASSERT_TRUE(m->forward(&ids[30], 1, &reused, {}, &got, nullptr, &ws).ok());
  EXPECT_EQ(want, got) << "decode";
  EXPECT_EQ(ws.bytes(), held) << "the buffers are kept, not reallocated";

  // A batched step of two sequences.
  SequenceState other_fresh = m->new_state(), other_reused = m->new_state();
  ASSERT_TRUE(m->forward(ids.data(), 5, &other_fresh, {}, nullptr).ok());
  ASSERT_TRUE(m->forward(ids.data(), 5, &other_reused, {}, nullptr, nullptr, &ws).ok());
  SequenceState* fresh_pair[2] = {&fresh, &other_fresh};
  SequenceState* reused_pair[2] = {&reused, &other_reused};
  const int next[2] = {ids[31], ids[32]};
  std::vector<float> batch_want(2 * static_cast<size_t>(vocab)), batch_got(batch_want.size());
  poison(&ws);
  ASSERT_TRUE(m->decode_batch(next, 2, fresh_pair, {}, batch_want.data()).ok());
  ASSERT_TRUE(m->decode_batch(next, 2, reused_pair, {}, batch_got.data(), nullptr, &ws).ok());
  EXPECT_EQ(batch_want, batch_got) << "decode_batch";
  for (float v : batch_got) ASSERT_TRUE(std::isfinite(v));

  // A scored chunk.
  std::vector<double> lp_want(3), lp_got(3);
  poison(&ws);
  ASSERT_TRUE(m->score(&ids[32], 4, 1, &ids[34], &fresh, {}, lp_want.data()).ok());
  ASSERT_TRUE(
      m->score(&ids[32], 4, 1, &ids[34], &reused, {}, lp_got.data(), nullptr, {}, &ws).ok());
  EXPECT_EQ(lp_want, lp_got) << "score";

  ws.release();
  EXPECT_EQ(ws.bytes(), 0);
}

INSTANTIATE_TEST_SUITE_P(Models, WorkspaceReuse, ::testing::Values("qwen35-tiny", "qwen3next-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace hanpu::model
