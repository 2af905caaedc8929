// STEEL's placement problem on CPU cores (§IV-C) as a pure function: which core computes
// which query tile of which head. Under a causal mask the work of query tile t grows with t,
// so contiguous blocks leave the last core with most of it; dealing the tiles in a snake
// order equalises the unmasked work. Printed by the bench and unit-tested.
#pragma once

#include <string>
#include <vector>

namespace hanpu {

struct TileUnit {
  int head = 0;  // a key/value head (its query heads are computed together)
  int tile = 0;  // query tile index
  bool operator==(const TileUnit&) const = default;
};

struct TilePlacement {
  std::vector<std::vector<TileUnit>> per_core;  // per_core[c] runs in order on core c
  // Units no core owns: after its own list, every core claims the next of these (heaviest
  // first) until none is left, so a core that falls behind (slowed by other load) is helped
  // out at the end instead of being waited for. Empty unless a shared tail was asked for.
  std::vector<TileUnit> shared_tail;
  double tail_work = 0.0;
  std::vector<double> core_work;   // sum of the units' work per core
  std::vector<double> core_speed;  // the relative speeds it was placed for
  // max / mean of the cores' times core_work / core_speed (1 = perfect)
  double imbalance() const;
  std::string describe() const;  // one line per core
};

// tile_work[t]: the work of query tile t (e.g. its visible query-key pairs), equal for every
// head. Both place every (head, tile) exactly once.
//   uniform:  each head's tiles cut into `cores` contiguous blocks; core c gets block c of
//             every head (the placement STEEL calls uniform).
//   balanced: STEEL's sparsity-aware dealing: heavy (late, causal) tiles are paired with light
//             ones so every core gets the same unmasked work; done as longest-first to the
//             least-loaded core, which on 2 cores and work linear in t is the snake
//             0,1 | 1,0 | 0,1 ... and stays exact for any tile and core count. Each core then
//             walks its units in (head, tile) order, so one head's keys and values are reused
//             from its cache before the next head's.
//
// speeds (optional, one per core, > 0): the cores' relative speeds as measured on earlier
// calls (parallel/speed_balance.h). Both placements then aim at equal time rather than equal
// work: uniform cuts each head's tiles into contiguous blocks whose tile counts follow the
// speeds, balanced deals each unit to the core that would finish it first. Example: 2 cores
// at speeds {2, 1}, one head of 30 equal tiles: uniform blocks of 20 and 10 tiles.
//
// tail_fraction (optional, 0 .. 0.5): the lightest tiles, of every head, about this share of
// all the work, go to the shared tail instead; the placement deals the rest. Both placements
// take the same tiles out (the first query tiles under a causal mask). Uniform cuts its
// blocks as without a tail and only leaves the tail's tiles out of them, so it keeps its
// imbalance: under a causal mask the tail comes out of the first core's light block, and
// the last core, which holds the heavy block, still finishes last.
TilePlacement place_tiles_uniform(int heads, const std::vector<double>& tile_work, int cores,
                                  const std::vector<double>& speeds = {},
                                  double tail_fraction = 0.0);
TilePlacement place_tiles_balanced(int heads, const std::vector<double>& tile_work, int cores,
                                   const std::vector<double>& speeds = {},
                                   double tail_fraction = 0.0);

}  // namespace hanpu
