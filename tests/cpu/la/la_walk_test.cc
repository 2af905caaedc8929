// The phased, speed-balanced walk of the head-level LA kernels: every item's tokens are
// visited once and in order, a slow core is dealt less, and the outputs do not depend on
// which core walked which phase.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "cpu/la/la_problem.h"
#include "cpu/la/la_walk.h"
#include "la_test_util.h"
#include "parallel/speed_balance.h"
#include "parallel/thread_pool.h"

namespace hanpu::test {
namespace {

cpu::LaProblem problem_of(const std::vector<int64_t>& seq_lens, int heads) {
  cpu::LaProblem p;
  p.H = p.HV = heads;
  p.K = p.V = 64;
  p.N = static_cast<int>(seq_lens.size());
  p.cu = {0};
  for (int64_t l : seq_lens) p.cu.push_back(p.cu.back() + l);
  p.T = p.cu.back();
  return p;
}

TEST(LaWalk, PhaseLengthFollowsItsRule) {
  EXPECT_EQ(cpu::walk_phase_tokens(4096, 64), 512);  // 8 phases
  EXPECT_EQ(cpu::walk_phase_tokens(300, 64), 256);   // at least 4 quanta
  EXPECT_EQ(cpu::walk_phase_tokens(1, 16), 64);
  EXPECT_EQ(cpu::walk_phase_tokens(100000, 64), 12544);
}

TEST(LaWalk, VisitsEveryTokenOfEveryItemOnceInOrder) {
  const std::vector<int64_t> lens = {700, 64, 1, 300};
  const cpu::LaProblem p = problem_of(lens, 5);
  const HeadSchedule sched = make_head_schedule(lens, p.HV, p.V, 3, 16);
  const std::vector<HeadWork> items = cpu::walk_order(p, sched);
  std::mutex mu;
  std::map<size_t, std::vector<std::pair<int64_t, int64_t>>> seen;  // item -> token ranges
  std::map<size_t, int> firsts, lasts;
  cpu::walk_in_phases(p, 3, items, 64 * 64 * 4, 16, [&](int, cpu::LaWalker& w) {
    while (const auto b = w.next()) {
      std::lock_guard<std::mutex> lock(mu);
      ASSERT_LT(b->b0, b->b1);
      for (size_t i = b->b0; i < b->b1; ++i) {
        EXPECT_EQ(items[i].seq, b->seq);
        seen[i].push_back({b->t_begin, b->t_end});
        firsts[i] += b->first;
        lasts[i] += b->last;
      }
    }
  });
  ASSERT_EQ(seen.size(), items.size());
  for (const auto& [i, ranges] : seen) {
    const int n = items[i].seq;
    int64_t at = p.cu[n];
    for (const auto& [t0, t1] : ranges) {  // phases arrive in order, back to back
      EXPECT_EQ(t0, at) << "item " << i;
      EXPECT_EQ((t0 - p.cu[n]) % 16, 0);
      EXPECT_LT(t0, t1);
      at = t1;
    }
    EXPECT_EQ(at, p.cu[n + 1]) << "item " << i;
    EXPECT_EQ(firsts[i], 1);
    EXPECT_EQ(lasts[i], 1);
  }
}

TEST(LaWalk, ASlowCoreIsDealtLessInLaterPhases) {
  if (!speed_balancing_enabled()) GTEST_SKIP() << "HANPU_BALANCE=0";
  const cpu::LaProblem p = problem_of({4096}, 8);
  const std::vector<HeadWork> items = cpu::walk_order(p, make_head_schedule({4096}, 8, 64, 2, 16));
  ThreadPool::shared(2).set_speed_hints({1.0, 1.0});
  std::mutex mu;
  std::vector<std::vector<int64_t>> tokens_per_phase(2);  // core -> item tokens, per phase
  cpu::walk_in_phases(p, 2, items, 64 * 64 * 4, 64, [&](int core, cpu::LaWalker& w) {
    int64_t phase_begin = -1;
    while (const auto b = w.next()) {
      const int64_t work = static_cast<int64_t>(b->b1 - b->b0) * (b->t_end - b->t_begin);
      // Core 1 runs at a quarter of core 0's speed: 1 us vs 4 us per item token.
      std::this_thread::sleep_for(std::chrono::microseconds(work * (core == 1 ? 4 : 1)));
      std::lock_guard<std::mutex> lock(mu);
      if (b->t_begin != phase_begin) tokens_per_phase[core].push_back(0);
      phase_begin = b->t_begin;
      tokens_per_phase[core].back() += work;
    }
  });
  // Phase 0 is dealt equally (4 heads each); by the last phase core 1 has at most 3 of 8.
  ASSERT_FALSE(tokens_per_phase[0].empty());
  ASSERT_FALSE(tokens_per_phase[1].empty());
  EXPECT_EQ(tokens_per_phase[0].front(), tokens_per_phase[1].front());
  EXPECT_LE(tokens_per_phase[1].back() * 5, tokens_per_phase[0].back() * 3);
  ThreadPool::shared(2).set_speed_hints({1.0, 1.0});
}

class LaWalkResults : public ::testing::TestWithParam<LaMech> {};

TEST_P(LaWalkResults, OutputsDoNotDependOnWhichCoreWalkedAPhase) {
  // Long enough for several phases; varlen with a 1-token and a chunk-sized sequence.
  LaData d = make_la_data({.mech = GetParam(),
                           .seq_lens = {700, 64, 1, 300},
                           .H = 2,
                           .HV = 6,
                           .K = 32,
                           .V = 48,
                           .seed = 21});
  const ref::LaRefResult want = ref::la_recurrent(d.args());
  for (const char* strategy : {"hanpu", "recurrent"}) {
    std::vector<uint8_t> o_equal;
    std::vector<float> s_equal;
    for (const std::vector<double>& hint : {std::vector<double>{1, 1}, {6, 1}, {1, 6}}) {
      ThreadPool::shared(2).set_speed_hints(hint);
      LaOptions opt;
      opt.strategy = strategy;
      opt.chunk_size = 16;
      opt.threads = 2;
      d.poison();
      ASSERT_TRUE(la_prefill(d.args(), opt).ok());
      EXPECT_LE(nmse(want.o, d.o_as_double()), 1e-10) << strategy;
      EXPECT_LE(nmse(want.final_state, d.s1), 1e-10) << strategy;
      if (o_equal.empty()) {
        o_equal = d.o;
        s_equal = d.s1;
      } else {
        EXPECT_EQ(d.o, o_equal) << strategy << " hint " << hint[0] << ":" << hint[1];
        EXPECT_EQ(0, std::memcmp(d.s1.data(), s_equal.data(), s_equal.size() * 4)) << strategy;
      }
    }
  }
  ThreadPool::shared(2).set_speed_hints({1.0, 1.0});
}

INSTANTIATE_TEST_SUITE_P(Mech, LaWalkResults, ::testing::Values(LaMech::kGdn, LaMech::kKda),
                         [](const auto& info) { return std::string(la_mech_name(info.param)); });

}  // namespace
}  // namespace hanpu::test
