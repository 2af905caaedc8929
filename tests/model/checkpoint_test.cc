// Checkpoints for a prefix cache (GenerateOptions::checkpoints): a sequence continued from the
// copy of one taken part way through a prompt, or after a reply, gives the same greedy tokens
// as the whole prompt run cold, and the copies are independent of each other.
#include <gtest/gtest.h>

#include "hanpu/engine.h"

namespace hanpu {
namespace {

std::unique_ptr<Engine> tiny() {
  std::unique_ptr<Engine> e;
  EXPECT_TRUE(Engine::load(default_model_dir(), &e).ok());
  return e;
}

GenerateOptions greedy(int max_tokens) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  o.stop_at_eos = false;
  o.prefill_chunk = 16;
  return o;
}

TEST(Checkpoints, ResumingFromOneEqualsTheWholePromptCold) {
  std::unique_ptr<Engine> e = tiny();
  const std::vector<int> prompt = e->random_prompt(57, 3);
  std::vector<int> cold;
  ASSERT_TRUE(e->generate(prompt, greedy(9), nullptr, nullptr, nullptr, &cold).ok());

  GenerateOptions o = greedy(9);
  o.checkpoints = {5, 21, 40};  // inside chunks and on their ends
  o.checkpoint_reply = true;
  std::vector<std::unique_ptr<Sequence>> taken;
  o.on_checkpoint = [&](std::unique_ptr<Sequence> s) { taken.push_back(std::move(s)); };
  std::vector<int> with;
  ASSERT_TRUE(e->generate(prompt, o, nullptr, nullptr, nullptr, &with).ok());
  EXPECT_EQ(with, cold);  // cutting chunks at the checkpoints changes nothing
  ASSERT_EQ(taken.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    const int64_t at = o.checkpoints[i];
    EXPECT_EQ(taken[i]->tokens(), std::vector<int>(prompt.begin(), prompt.begin() + at));
    EXPECT_GT(taken[i]->bytes(), 0);
    // Twice from the same checkpoint: each resume works on its own copy.
    for (int twice = 0; twice < 2; ++twice) {
      std::unique_ptr<Sequence> copy = e->copy_sequence(*taken[i]);
      ASSERT_NE(copy, nullptr);
      GenerateOptions r = greedy(9);
      r.sequence = copy.get();
      std::vector<int> resumed;
      GenerateStats st;
      ASSERT_TRUE(e->generate(std::vector<int>(prompt.begin() + at, prompt.end()), r, nullptr,
                              nullptr, &st, &resumed)
                      .ok());
      EXPECT_EQ(resumed, cold) << "checkpoint at " << at;
      EXPECT_EQ(st.resumed_tokens, at);
    }
    EXPECT_EQ(taken[i]->tokens().size(), static_cast<size_t>(at));  // left as it was
  }
  // After the reply: the prompt, the reply, and its last token run through.
  std::vector<int> whole = prompt;
  whole.insert(whole.end(), cold.begin(), cold.end());
  EXPECT_EQ(taken[3]->tokens(), whole);
  // The continuation of the reply checkpoint equals running prompt + reply + more cold.
  const std::vector<int> more = e->random_prompt(6, 4);
  std::vector<int> longer = whole;
  longer.insert(longer.end(), more.begin(), more.end());
  std::vector<int> cold_more, resumed_more;
  ASSERT_TRUE(e->generate(longer, greedy(5), nullptr, nullptr, nullptr, &cold_more).ok());
  std::unique_ptr<Sequence> copy = e->copy_sequence(*taken[3]);
  GenerateOptions r = greedy(5);
  r.sequence = copy.get();
  ASSERT_TRUE(e->generate(more, r, nullptr, nullptr, nullptr, &resumed_more).ok());
  EXPECT_EQ(resumed_more, cold_more);
}

TEST(Checkpoints, OffsetsOutsideThePromptAreRefused) {
  std::unique_ptr<Engine> e = tiny();
  GenerateOptions o = greedy(2);
  for (int64_t at : {int64_t{0}, int64_t{8}, int64_t{-1}}) {
    o.checkpoints = {at};
    const Status st = e->generate(e->random_prompt(7, 1), o, nullptr, nullptr, nullptr);
    EXPECT_NE(st.message().find("checkpoint offset"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace hanpu
