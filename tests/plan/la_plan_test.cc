// The planner's passes: reordering halves the live state versions and fits the 310P UB
// where FLA's order does not; the layout DP's plan is never worse than all-dense or
// all-blocked under its own model and picks each layout somewhere; the 16-heads-on-10-cores
// schedule splits the 6 tail heads by columns.
#include <gtest/gtest.h>

#include "plan/la_plan.h"

namespace hanpu::plan {
namespace {

TEST(Reorder, HalvesTheStateVersionsAndFitsTheBuffer) {
  const ChunkGraph fla = chunk_fla_order(false, 64, 128, 128);
  const ChunkGraph ha = reorder(fla);
  EXPECT_TRUE(order_is_legal(fla));
  EXPECT_TRUE(order_is_legal(ha));
  EXPECT_EQ(max_live_state_versions(fla), 2);
  EXPECT_EQ(max_live_state_versions(ha), 1);
  EXPECT_GT(peak_live_bytes(fla), 256 * 1024);  // the paper: 244 KiB + a 64 KiB state > 256 KiB
  EXPECT_LE(peak_live_bytes(ha), 256 * 1024);
  EXPECT_LT(peak_live_bytes(ha), peak_live_bytes(fla));
  // The GEMM-first group reads K, Q and S0 before the inverse.
  int group = -1, solve = -1;
  for (size_t i = 0; i < ha.ops.size(); ++i) {
    if (ha.ops[i].name == "H-read+KKT") group = static_cast<int>(i);
    if (ha.ops[i].name == "Solve") solve = static_cast<int>(i);
  }
  EXPECT_GE(group, 0);
  EXPECT_LT(group, solve);
  // An order that reads before writing is refused.
  ChunkGraph bad = ha;
  std::swap(bad.ops[1], bad.ops[5]);
  EXPECT_FALSE(order_is_legal(bad));
}

TEST(Reorder, KdaChunkToo) {
  // KDA's gates per key channel make gam [C x K]: FLA's order needs two state versions and
  // over-fills the UB; the reordered chunk holds one and fits (the fused kernel's measured
  // UB peak in the simulator is the same 240.8 KiB).
  const ChunkGraph fla = chunk_fla_order(true, 64, 128, 128);
  const ChunkGraph ha = reorder(fla);
  EXPECT_TRUE(fla.kda && ha.kda);
  EXPECT_TRUE(order_is_legal(fla));
  EXPECT_TRUE(order_is_legal(ha));
  EXPECT_EQ(max_live_state_versions(fla), 2);
  EXPECT_EQ(max_live_state_versions(ha), 1);
  EXPECT_GT(peak_live_bytes(fla), 256 * 1024);
  EXPECT_LE(peak_live_bytes(ha), 256 * 1024);
  EXPECT_GT(peak_live_bytes(ha), peak_live_bytes(reorder(chunk_fla_order(false, 64, 128, 128))));
  int intra = -1, solve = -1;
  for (size_t i = 0; i < ha.ops.size(); ++i) {
    if (ha.ops[i].name == "Intra") intra = static_cast<int>(i);
    if (ha.ops[i].name == "Solve") solve = static_cast<int>(i);
  }
  EXPECT_GE(intra, 0);
  EXPECT_LT(intra, solve);
}

TEST(PartCost, KdaRepeatsMoreWorkPerPartThanGdn) {
  const TargetDesc t;
  const LayoutPlan p = plan_layouts(64, 128, 128, t);
  for (bool kda : {false, true}) {
    EXPECT_LT(chunk_part_cycles(kda, 64, 128, 16, p, t),
              chunk_part_cycles(kda, 64, 128, 128, p, t));
  }
  // The share of a whole head's work that a 16-column part still does.
  const auto fixed_share = [&](bool kda) {
    return chunk_part_cycles(kda, 64, 128, 16, p, t) / chunk_part_cycles(kda, 64, 128, 128, p, t);
  };
  EXPECT_GT(fixed_share(true), fixed_share(false));
  EXPECT_GT(kda_intra_vector_bytes(64, 128), kda_intra_vector_bytes(32, 128));
}

TEST(LayoutPlan, NeverWorseThanUniformPlans) {
  for (double factor : {1.0, 1.5, 2.0, 4.0, 8.0}) {
    for (int C : {16, 32, 64}) {
      for (int K : {64, 128}) {
        TargetDesc t;
        t.nz_row_op_factor = factor;
        const LayoutPlan p = plan_layouts(C, K, K, t);
        const double dense = uniform_plan(Layout::kDense, C, K, K, t).cycles_per_chunk;
        const double blocked = uniform_plan(Layout::kBlocked, C, K, K, t).cycles_per_chunk;
        EXPECT_LE(p.cycles_per_chunk, dense + 1e-9) << factor << " " << C << " " << K;
        EXPECT_LE(p.cycles_per_chunk, blocked + 1e-9) << factor << " " << C << " " << K;
        // The DP equals the best of all 2^6 assignments.
        double best = 1e300;
        for (int mask = 0; mask < 64; ++mask) {
          LayoutPlan q;
          for (int i = 0; i < kNumChains; ++i) q.chain[i] = static_cast<Layout>((mask >> i) & 1);
          q.state = static_cast<Layout>((mask >> 5) & 1);
          best = std::min(best, plan_cycles(q, gdn_chain_costs(C, K, K), t));
        }
        EXPECT_NEAR(p.cycles_per_chunk, best, 1e-9);
      }
    }
  }
  // At the 310P's figures the plan mixes layouts: the state stays blocked (element-wise
  // work, no transforms), the inverse-heavy chain goes dense.
  const LayoutPlan p = plan_layouts(64, 128, 128, TargetDesc{});
  EXPECT_EQ(p.state, Layout::kBlocked);
  EXPECT_EQ(p.chain[static_cast<int>(Chain::kMasks)], Layout::kDense);
}

TEST(Schedule, SixteenHeadsOnTenCoresSplitTheTailByColumns) {
  const CoreSchedule s = schedule_heads(16, 128, 10, 16);
  EXPECT_EQ(s.whole_rounds, 1);
  EXPECT_EQ(s.split_heads, 6);
  int cols[16] = {};
  for (int c = 0; c < 10; ++c) {
    int load = 0;
    for (const HeadPart& p : s.per_core[c]) {
      load += p.col_end - p.col_begin;
      cols[p.head] += p.col_end - p.col_begin;
      EXPECT_EQ(p.col_begin % 16, 0);
    }
    EXPECT_GE(load, 128 + 64);  // one whole head plus 64-80 tail columns each
    EXPECT_LE(load, 128 + 80);
  }
  for (int h = 0; h < 16; ++h) EXPECT_EQ(cols[h], 128) << h;  // every column exactly once
  const CoreSchedule even = schedule_heads(20, 128, 10, 16);
  EXPECT_EQ(even.whole_rounds, 2);
  EXPECT_EQ(even.split_heads, 0);
}

// Every column of every head placed exactly once, on column boundaries.
void expect_complete(const CoreSchedule& s, int H, int V) {
  std::vector<int> cols(H, 0);
  for (const auto& parts : s.per_core) {
    for (const HeadPart& p : parts) {
      EXPECT_EQ(p.col_begin % 16, 0);
      cols[p.head] += p.col_end - p.col_begin;
    }
  }
  for (int h = 0; h < H; ++h) EXPECT_EQ(cols[h], V) << h;
}

TEST(Schedule, AFixedShareOfEveryPartDecidesHowFarTheTailIsSplit) {
  // Work every part repeats (the inverse, KDA's intra-chunk products) as a share f of a
  // whole head's cost: the even split wins when f is small, whole tail heads when it is large.
  const auto with_fixed = [](double f) {
    return PartCost([f](int w) { return f + (1 - f) * w / 128.0; });
  };
  const CoreSchedule small = schedule_heads(16, 128, 10, 16, with_fixed(0.05));
  EXPECT_EQ(small.split_heads, 6);
  EXPECT_LT(small.makespan, 2.0);
  const CoreSchedule large = schedule_heads(16, 128, 10, 16, with_fixed(0.6));
  EXPECT_EQ(large.split_heads, 0);
  EXPECT_NEAR(large.makespan, 2.0, 1e-12);  // two whole heads on the busiest core
  EXPECT_NE(large.tail.find("whole"), std::string::npos);
  for (double f : {0.0, 0.05, 0.2, 0.3, 0.6, 0.9}) {
    for (int H : {1, 3, 7, 16, 23}) {
      const CoreSchedule s = schedule_heads(H, 128, 10, 16, with_fixed(f));
      expect_complete(s, H, 128);
      // Never worse than either fixed policy under its own model.
      const double whole_tail = (H / 10) + (H % 10 ? 1 : 0);
      EXPECT_LE(s.makespan, whole_tail + 1e-9) << f << " " << H;
    }
  }
}

TEST(Schedule, ChunkSplitTailLeavesTheCoreLists) {
  CoreSchedule s = schedule_heads(16, 128, 10, 16);
  chunk_split_tail(&s, 10, 16, "test");
  EXPECT_EQ(s.chunk_split, 6);
  EXPECT_EQ(s.split_heads, 0);
  EXPECT_EQ(s.chunk_split_heads, (std::vector<int>{10, 11, 12, 13, 14, 15}));
  for (int c = 0; c < 10; ++c) {
    ASSERT_EQ(s.per_core[c].size(), 1u);
    EXPECT_EQ(s.per_core[c][0].head, c);
  }
  EXPECT_NE(s.describe().find("then all cores, chunk-head-chunk: h10 h11 h12 h13 h14 h15"),
            std::string::npos);
}

}  // namespace
}  // namespace hanpu::plan
