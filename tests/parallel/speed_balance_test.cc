// Speed-proportional dealing: cut points and the rate estimates behind them.
#include <gtest/gtest.h>

#include <vector>

#include "parallel/speed_balance.h"
#include "parallel/thread_pool.h"

namespace hanpu {
namespace {

std::vector<size_t> cuts(const std::vector<int64_t>& cost, const std::vector<double>& speed) {
  return proportional_cuts(cost, speed);
}

TEST(ProportionalCuts, EqualSpeedsSplitTheCostEqually) {
  EXPECT_EQ(cuts({4, 4, 4, 4}, {1, 1}), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(cuts(std::vector<int64_t>(16, 7), {1, 1}), (std::vector<size_t>{0, 8, 16}));
  // The schedule's own deal of 16 heads on 10 cores plus split tails is reproduced by
  // per-item costs: here 3 cores, items of cost 2, 2, 1 | 2, 2, 1 | 2, 2, 1.
  EXPECT_EQ(cuts({2, 2, 1, 2, 2, 1, 2, 2, 1}, {1, 1, 1}), (std::vector<size_t>{0, 3, 6, 9}));
}

TEST(ProportionalCuts, AFasterCoreGetsMore) {
  EXPECT_EQ(cuts({4, 4, 4, 4}, {3, 1}), (std::vector<size_t>{0, 3, 4}));
  EXPECT_EQ(cuts({4, 4, 4, 4}, {1, 3}), (std::vector<size_t>{0, 1, 4}));
  // 16 heads, core 1 at 0.57 of core 0 (44 vs 77 ms for 8 heads): 10 and 6.
  EXPECT_EQ(cuts(std::vector<int64_t>(16, 1), {1.0, 44.0 / 77.0}),
            (std::vector<size_t>{0, 10, 16}));
}

TEST(ProportionalCuts, ZeroCostItemsAndMoreCoresThanItems) {
  const std::vector<size_t> c = cuts({0, 5, 0, 5, 0}, {1, 1});
  ASSERT_EQ(c.size(), 3u);
  int64_t first = 0;
  for (size_t i = c[0]; i < c[1]; ++i) first += std::vector<int64_t>{0, 5, 0, 5, 0}[i];
  EXPECT_EQ(first, 5);
  const std::vector<size_t> few = cuts({3}, {1, 1, 1, 1});
  ASSERT_EQ(few.size(), 5u);
  EXPECT_EQ(few.front(), 0u);
  EXPECT_EQ(few.back(), 1u);
  for (size_t i = 1; i < few.size(); ++i) EXPECT_LE(few[i - 1], few[i]);
  EXPECT_EQ(cuts({}, {1, 1}), (std::vector<size_t>{0, 0, 0}));
}

TEST(SpeedBalancer, LearnsWhichCoreIsSlowAndTheRatesCarryToTheNextJob) {
  if (!speed_balancing_enabled()) GTEST_SKIP() << "HANPU_BALANCE=0";
  ThreadPool pool(2);
  {
    SpeedBalancer b(pool);
    EXPECT_EQ(b.speeds(), (std::vector<double>{1.0, 1.0}));
    for (int phase = 0; phase < 6; ++phase)
      b.record(std::vector<int64_t>{100, 100}, std::vector<double>{10.0, 30.0});
    EXPECT_GT(b.speeds()[0], 2.5 * b.speeds()[1]);
    const std::vector<size_t> c = b.cuts(std::vector<int64_t>(16, 1));
    EXPECT_GE(c[1], 11u);  // 3 : 1 -> 12 of 16
    EXPECT_LE(c[1], 13u);
    // A phase in which core 1 had nothing to do (or too little to time) keeps its rate.
    const std::vector<double> before = b.speeds();
    b.record(std::vector<int64_t>{100, 0}, std::vector<double>{10.0, 0.0});
    EXPECT_NEAR(b.speeds()[1] / b.speeds()[0], before[1] / before[0], 1e-9);
  }
  const std::vector<double> kept = pool.speed_hints();
  EXPECT_GT(kept[0], 2.5 * kept[1]);
}

TEST(SpeedBalancer, OneOddPhaseMovesTheRateOnlyPartWay) {
  if (!speed_balancing_enabled()) GTEST_SKIP() << "HANPU_BALANCE=0";
  ThreadPool pool(2);
  SpeedBalancer b(pool);
  b.record(std::vector<int64_t>{100, 100},
           std::vector<double>{10.0, 100.0});  // core 1 lost a time slice
  EXPECT_GT(b.speeds()[1], 0.4);               // not written down to 1/10
  EXPECT_LT(b.speeds()[1], 1.0);
  // Rates stay bounded, so no core is ever dealt nothing because of a stale estimate.
  for (int i = 0; i < 50; ++i)
    b.record(std::vector<int64_t>{1000, 1}, std::vector<double>{1.0, 1000.0});
  EXPECT_GE(b.speeds()[1], 0.125 - 1e-12);
}

}  // namespace
}  // namespace hanpu
