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
  std::vector<double> core_work;                // sum of the units' work per core
  double imbalance() const;                     // max / mean of core_work (1 = perfect)
  std::string describe() const;                 // one line per core
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
TilePlacement place_tiles_uniform(int heads, const std::vector<double>& tile_work, int cores);
TilePlacement place_tiles_balanced(int heads, const std::vector<double>& tile_work, int cores);

}  // namespace hanpu
