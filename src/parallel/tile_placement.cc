// Uniform and sparsity-balanced query-tile placement (see tile_placement.h).
#include "parallel/tile_placement.h"

#include <algorithm>

#include <fmt/format.h>

#include "parallel/speed_balance.h"

namespace hanpu {

namespace {

std::vector<double> speeds_for(const std::vector<double>& speeds, int cores) {
  if (static_cast<int>(speeds.size()) == cores) return speeds;
  return std::vector<double>(cores, 1.0);
}

// The tiles of every head left to the placement (ascending), and the shared tail: the
// lightest tiles until they hold tail_fraction of the work, as units heaviest first.
std::vector<int> take_shared_tail(int heads, const std::vector<double>& tile_work,
                                  double tail_fraction, TilePlacement& p) {
  const int n = static_cast<int>(tile_work.size());
  std::vector<int> by_work(n);
  for (int t = 0; t < n; ++t) by_work[t] = t;
  std::stable_sort(by_work.begin(), by_work.end(),
                   [&](int a, int b) { return tile_work[a] < tile_work[b]; });
  double total = 0.0;
  for (double w : tile_work) total += w;
  std::vector<bool> in_tail(n, false);
  double taken = 0.0;
  for (int t : by_work) {
    if (taken + tile_work[t] > std::clamp(tail_fraction, 0.0, 0.5) * total) break;
    taken += tile_work[t];
    in_tail[t] = true;
  }
  for (auto it = by_work.rbegin(); it != by_work.rend(); ++it) {
    if (!in_tail[*it]) continue;
    for (int h = 0; h < heads; ++h) p.shared_tail.push_back({h, *it});
  }
  p.tail_work = taken * heads;
  std::vector<int> rest;
  for (int t = 0; t < n; ++t) {
    if (!in_tail[t]) rest.push_back(t);
  }
  return rest;
}

TilePlacement with_work(TilePlacement p, const std::vector<double>& tile_work) {
  p.core_work.assign(p.per_core.size(), 0.0);
  if (p.core_speed.size() != p.per_core.size()) p.core_speed.assign(p.per_core.size(), 1.0);
  for (size_t c = 0; c < p.per_core.size(); ++c) {
    for (const TileUnit& u : p.per_core[c]) p.core_work[c] += tile_work[u.tile];
  }
  return p;
}

}  // namespace

double TilePlacement::imbalance() const {
  if (core_work.empty()) return 1.0;
  double sum = 0, mx = 0;
  for (size_t c = 0; c < core_work.size(); ++c) {
    const double time = core_work[c] / (c < core_speed.size() ? core_speed[c] : 1.0);
    sum += time;
    mx = std::max(mx, time);
  }
  return sum > 0 ? mx / (sum / static_cast<double>(core_work.size())) : 1.0;
}

std::string TilePlacement::describe() const {
  std::string s;
  for (size_t c = 0; c < per_core.size(); ++c) {
    s += fmt::format("core {}: {} tiles, work {:.4g}\n", c, per_core[c].size(), core_work[c]);
  }
  if (!shared_tail.empty()) {
    s += fmt::format("shared tail: {} tiles, work {:.4g}, claimed by whichever core is free\n",
                     shared_tail.size(), tail_work);
  }
  s += fmt::format("imbalance (max/mean work) {:.3f}\n", imbalance());
  return s;
}

TilePlacement place_tiles_uniform(int heads, const std::vector<double>& tile_work, int cores,
                                  const std::vector<double>& speeds, double tail_fraction) {
  cores = std::max(cores, 1);
  TilePlacement p;
  p.per_core.resize(cores);
  p.core_speed = speeds_for(speeds, cores);
  const std::vector<int> rest = take_shared_tail(heads, tile_work, tail_fraction, p);
  std::vector<bool> placed(tile_work.size(), false);
  for (int t : rest) placed[t] = true;
  // Contiguous blocks of all the tiles with counts in proportion to the speeds (equal at equal
  // speeds); tiles of the shared tail are then left out of whichever block they fall in, so
  // the blocks, and uniform's imbalance, are those of the placement without a tail.
  const std::vector<size_t> cut =
      proportional_cuts(std::vector<int64_t>(tile_work.size(), 1), p.core_speed);
  for (int c = 0; c < cores; ++c) {
    for (int h = 0; h < heads; ++h) {
      for (size_t t = cut[c]; t < cut[c + 1]; ++t) {
        if (placed[t]) p.per_core[c].push_back({h, static_cast<int>(t)});
      }
    }
  }
  return with_work(std::move(p), tile_work);
}

TilePlacement place_tiles_balanced(int heads, const std::vector<double>& tile_work, int cores,
                                   const std::vector<double>& speeds, double tail_fraction) {
  cores = std::max(cores, 1);
  TilePlacement p;
  p.per_core.resize(cores);
  p.core_speed = speeds_for(speeds, cores);
  const std::vector<int> rest = take_shared_tail(heads, tile_work, tail_fraction, p);
  // Heaviest units first, each to the least-loaded core (LPT): the snake's pairing of heavy
  // and light tiles, made exact when tiles per head are not a multiple of 2 x cores.
  std::vector<TileUnit> units;
  units.reserve(static_cast<size_t>(heads) * rest.size());
  for (int h = 0; h < heads; ++h) {
    for (int t : rest) units.push_back({h, t});
  }
  std::stable_sort(units.begin(), units.end(), [&](const TileUnit& a, const TileUnit& b) {
    return tile_work[a.tile] > tile_work[b.tile];
  });
  std::vector<double> load(cores, 0.0);
  for (const TileUnit& u : units) {
    // The core that would finish this unit first (least loaded, at equal speeds).
    int c = 0;
    for (int k = 1; k < cores; ++k) {
      if ((load[k] + tile_work[u.tile]) / p.core_speed[k] <
          (load[c] + tile_work[u.tile]) / p.core_speed[c])
        c = k;
    }
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
