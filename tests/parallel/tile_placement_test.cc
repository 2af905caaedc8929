// STEEL's placements: every (head, tile) placed once; balanced evens causal work; uniform is
// contiguous blocks (and so leaves the last core the most causal work).
#include <gtest/gtest.h>

#include <set>

#include "parallel/tile_placement.h"

namespace hanpu {
namespace {

std::vector<double> causal_work(int tiles) {
  std::vector<double> w(tiles);
  for (int t = 0; t < tiles; ++t) w[t] = t + 0.5;  // ~ keys a causal query tile sees
  return w;
}

void expect_each_unit_once(const TilePlacement& p, int heads, int tiles) {
  std::set<std::pair<int, int>> seen;
  for (const auto& core : p.per_core) {
    for (const TileUnit& u : core) EXPECT_TRUE(seen.insert({u.head, u.tile}).second);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(heads) * tiles);
}

TEST(TilePlacement, EveryUnitOnceForManyShapes) {
  for (int heads : {1, 2, 3, 32}) {
    for (int tiles : {1, 2, 7, 16, 33}) {
      for (int cores : {1, 2, 3, 10}) {
        expect_each_unit_once(place_tiles_uniform(heads, causal_work(tiles), cores), heads, tiles);
        expect_each_unit_once(place_tiles_balanced(heads, causal_work(tiles), cores), heads, tiles);
      }
    }
  }
}

TEST(TilePlacement, BalancedEvensCausalWorkUniformDoesNot) {
  // 2 cores, one head, 32 tiles: uniform gives core 1 the upper half (3x core 0's work).
  const auto u = place_tiles_uniform(1, causal_work(32), 2);
  EXPECT_EQ(u.per_core[0].front().tile, 0);
  EXPECT_EQ(u.per_core[1].front().tile, 16);
  EXPECT_NEAR(u.core_work[1] / u.core_work[0], 3.0, 0.1);
  EXPECT_GT(u.imbalance(), 1.45);
  const auto b = place_tiles_balanced(1, causal_work(32), 2);
  EXPECT_LE(b.imbalance(), 1.001);
  // Heavy tiles paired with light ones: each core holds both ends of the causal range.
  for (const auto& core : b.per_core) {
    EXPECT_LT(core.front().tile, 4);
    EXPECT_GT(core.back().tile, 27);
    EXPECT_EQ(core.size(), 16u);
  }
  // The STEEL shape on 2 cores and on 10: 32 heads, 16 tiles each.
  EXPECT_LE(place_tiles_balanced(32, causal_work(16), 2).imbalance(), 1.01);
  EXPECT_LE(place_tiles_balanced(32, causal_work(16), 10).imbalance(), 1.05);
}

TEST(TilePlacement, MeasuredSpeedsAimBothPlacementsAtEqualTime) {
  // Core 0 twice as fast as core 1. Uniform: contiguous blocks of 20 and 10 of 30 tiles.
  const std::vector<double> equal(30, 1.0);
  const auto u = place_tiles_uniform(2, equal, 2, {2.0, 1.0});
  EXPECT_EQ(u.per_core[0].size(), 40u);
  EXPECT_EQ(u.per_core[1].front().tile, 20);
  EXPECT_LE(u.imbalance(), 1.001);
  expect_each_unit_once(u, 2, 30);
  // Balanced under a causal mask: core 0 gets ~2/3 of the work, still heavy and light tiles.
  const auto b = place_tiles_balanced(8, causal_work(32), 2, {2.0, 1.0});
  expect_each_unit_once(b, 8, 32);
  EXPECT_NEAR(b.core_work[0] / (b.core_work[0] + b.core_work[1]), 2.0 / 3.0, 0.01);
  EXPECT_LE(b.imbalance(), 1.02);
  // Speeds of the wrong length are ignored (equal speeds).
  EXPECT_EQ(place_tiles_balanced(4, causal_work(16), 2, {1.0}).per_core,
            place_tiles_balanced(4, causal_work(16), 2).per_core);
}

TEST(TilePlacement, ASharedTailTakesTheLightestTilesAndLeavesUniformItsBlocks) {
  const std::vector<double> work = causal_work(64);
  double total = 0;
  for (double w : work) total += w * 4;
  for (const bool balanced : {false, true}) {
    const TilePlacement p = balanced ? place_tiles_balanced(4, work, 2, {}, 0.1)
                                     : place_tiles_uniform(4, work, 2, {}, 0.1);
    std::set<std::pair<int, int>> seen;
    for (const auto& core : p.per_core) {
      for (const TileUnit& u : core) EXPECT_TRUE(seen.insert({u.head, u.tile}).second);
    }
    for (const TileUnit& u : p.shared_tail) EXPECT_TRUE(seen.insert({u.head, u.tile}).second);
    EXPECT_EQ(seen.size(), 4u * 64);
    // The lightest tiles, about a tenth of the work, claimed heaviest first.
    EXPECT_NEAR(p.tail_work / total, 0.1, 0.01);
    EXPECT_LE(p.tail_work, 0.1 * total);
    for (const TileUnit& u : p.shared_tail) EXPECT_LT(u.tile, 21);
    EXPECT_GE(p.shared_tail.front().tile, p.shared_tail.back().tile);
  }
  // Uniform keeps its blocks: core 1 still holds tiles 32..63 of every head, the tail comes
  // out of core 0's block only.
  const TilePlacement u = place_tiles_uniform(4, work, 2, {}, 0.1);
  EXPECT_EQ(u.per_core[1], place_tiles_uniform(4, work, 2).per_core[1]);
  // No tail asked: none made.
  EXPECT_TRUE(place_tiles_balanced(4, work, 2).shared_tail.empty());
}

}  // namespace
}  // namespace hanpu
