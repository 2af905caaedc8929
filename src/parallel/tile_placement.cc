// Uniform and sparsity-balanced query-tile placement (see tile_placement.h).
#include "parallel/tile_placement.h"

#include <algorithm>

#include <fmt/format.h>

namespace hanpu {

namespace {

TilePlacement with_work(TilePlacement p, const std::vector<double>& tile_work) {
  p.core_work.assign(p.per_core.size(), 0.0);
  for (size_t c = 0; c < p.per_core.size(); ++c) {
    for (const TileUnit& u : p.per_core[c]) p.core_work[c] += tile_work[u.tile];
  }
  return p;
}

}  // namespace

double TilePlacement::imbalance() const {
  if (core_work.empty()) return 1.0;
  double sum = 0, mx = 0;
  for (double w : core_work) {
    sum += w;
    mx = std::max(mx, w);
  }
  return sum > 0 ? mx / (sum / static_cast<double>(core_work.size())) : 1.0;
}

std::string TilePlacement::describe() const {
  std::string s;
  for (size_t c = 0; c < per_core.size(); ++c) {
    s += fmt::format("core {}: {} tiles, work {:.4g}\n", c, per_core[c].size(), core_work[c]);
  }
  s += fmt::format("imbalance (max/mean work) {:.3f}\n", imbalance());
  return s;
}

TilePlacement place_tiles_uniform(int heads, const std::vector<double>& tile_work, int cores) {
  const int n = static_cast<int>(tile_work.size());
  TilePlacement p;
  p.per_core.resize(std::max(cores, 1));
  for (int c = 0; c < cores; ++c) {
    const int begin = static_cast<int>(static_cast<int64_t>(n) * c / cores);
    const int end = static_cast<int>(static_cast<int64_t>(n) * (c + 1) / cores);
    for (int h = 0; h < heads; ++h) {
      for (int t = begin; t < end; ++t) p.per_core[c].push_back({h, t});
    }
  }
  return with_work(std::move(p), tile_work);
}

TilePlacement place_tiles_balanced(int heads, const std::vector<double>& tile_work, int cores) {
  const int n = static_cast<int>(tile_work.size());
  TilePlacement p;
  p.per_core.resize(std::max(cores, 1));
  int64_t k = 0;  // position in the snake over all (head, tile) units
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < n; ++t, ++k) {
      const int64_t round = k / cores, slot = k % cores;
      const int core = static_cast<int>(round % 2 == 0 ? slot : cores - 1 - slot);
      p.per_core[core].push_back({h, t});
    }
  }
  return with_work(std::move(p), tile_work);
}

}  // namespace hanpu
