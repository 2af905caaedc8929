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
  cores = std::max(cores, 1);
  // Heaviest units first, each to the least-loaded core (LPT): the snake's pairing of heavy
  // and light tiles, made exact when tiles per head are not a multiple of 2 x cores.
  std::vector<TileUnit> units;
  units.reserve(static_cast<size_t>(heads) * n);
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < n; ++t) units.push_back({h, t});
  }
  std::stable_sort(units.begin(), units.end(), [&](const TileUnit& a, const TileUnit& b) {
    return tile_work[a.tile] > tile_work[b.tile];
  });
  TilePlacement p;
  p.per_core.resize(cores);
  std::vector<double> load(cores, 0.0);
  for (const TileUnit& u : units) {
    const int c = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[c] += tile_work[u.tile];
    p.per_core[c].push_back(u);
  }
  // Each core walks its units in head order: one head's keys and values stay in its cache.
  for (auto& core : p.per_core) {
    std::sort(core.begin(), core.end(), [](const TileUnit& a, const TileUnit& b) {
      return a.head != b.head ? a.head < b.head : a.tile < b.tile;
    });
  }
  return with_work(std::move(p), tile_work);
}

}  // namespace hanpu
