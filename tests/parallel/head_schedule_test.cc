// The HA-NPU core schedule: whole-head rounds, column-split tails, full coverage.
#include <gtest/gtest.h>

#include <map>

#include "parallel/head_schedule.h"

namespace hanpu {
namespace {

// Every (seq, head, column) is covered exactly once.
void expect_exact_cover(const HeadSchedule& s, const std::vector<int64_t>& lens, int heads,
                        int cols) {
  std::map<std::tuple<int, int, int>, int> count;
  for (const auto& core : s.per_core)
    for (const HeadWork& w : core) {
      EXPECT_LT(w.col_begin, w.col_end);
      for (int c = w.col_begin; c < w.col_end; ++c) ++count[{w.seq, w.head, c}];
    }
  for (int n = 0; n < static_cast<int>(lens.size()); ++n)
    for (int h = 0; h < heads; ++h)
      for (int c = 0; c < cols; ++c) EXPECT_EQ((count[{n, h, c}]), lens[n] > 0 ? 1 : 0);
}

TEST(HeadSchedule, PaperExample16HeadsOn10Cores) {
  const HeadSchedule s = make_head_schedule({4096}, 16, 128, 10, 16);
  EXPECT_EQ(s.whole_rounds, 1);
  EXPECT_EQ(s.split_heads, 6);
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(s.per_core[c][0], (HeadWork{0, c, 0, 128}));  // round 1: one whole head each
    int tail_cols = 0;
    for (size_t i = 1; i < s.per_core[c].size(); ++i) {
      EXPECT_GE(s.per_core[c][i].head, 10);
      tail_cols += s.per_core[c][i].col_end - s.per_core[c][i].col_begin;
    }
    EXPECT_NEAR(tail_cols, 6 * 128 / 10.0, 16);  // 76.8 columns each, within one alignment step
  }
  expect_exact_cover(s, {4096}, 16, 128);
}

TEST(HeadSchedule, DivisibleHeadsAreNeverSplit) {
  const HeadSchedule s = make_head_schedule({100}, 16, 128, 2, 16);
  EXPECT_EQ(s.whole_rounds, 8);
  EXPECT_EQ(s.split_heads, 0);
  for (int c = 0; c < 2; ++c) {
    ASSERT_EQ(s.per_core[c].size(), 8u);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(s.per_core[c][i].head, c * 8 + i);  // contiguous blocks
  }
  expect_exact_cover(s, {100}, 16, 128);
}

TEST(HeadSchedule, OddShapesCoverEverything) {
  for (int cores : {1, 2, 3, 7, 16}) {
    for (int heads : {1, 3, 5, 32}) {
      for (int cols : {1, 17, 100, 128}) {
        expect_exact_cover(make_head_schedule({9}, heads, cols, cores, 16), {9}, heads, cols);
        const std::vector<int64_t> lens = {5, 0, 300, 64};
        expect_exact_cover(make_head_schedule(lens, heads, cols, cores, 16), lens, heads, cols);
      }
    }
  }
}

TEST(HeadSchedule, VarlenBalancesByLength) {
  const std::vector<int64_t> lens = {1000, 10, 10, 10, 500, 500};
  const HeadSchedule s = make_head_schedule(lens, 2, 64, 2, 16);
  std::vector<int64_t> load(2, 0);
  for (int c = 0; c < 2; ++c)
    for (const HeadWork& w : s.per_core[c]) load[c] += lens[w.seq];
  EXPECT_EQ(load[0] + load[1], 2 * 2030);
  EXPECT_LE(std::max(load[0], load[1]), 2100);  // LPT: 2030 each is optimal here
}

}  // namespace
}  // namespace hanpu
