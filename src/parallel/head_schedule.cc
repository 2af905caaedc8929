// HA-NPU core schedule: whole heads in rounds, tail heads split by value columns.
#include "parallel/head_schedule.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace hanpu {

namespace {

struct Unit {
  int seq;
  int head;
  int64_t cost;
};

// Cuts the concatenated columns of `tail` units into `cores` aligned contiguous ranges.
void split_tail_by_columns(const std::vector<Unit>& tail, int cols, int cores, int col_align,
                           HeadSchedule& s) {
  const int64_t total = static_cast<int64_t>(tail.size()) * cols;
  std::vector<int64_t> cut(cores + 1, total);
  cut[0] = 0;
  for (int c = 1; c < cores; ++c) {
    // Ideal boundary, snapped to an aligned column within its head (or to the head's end).
    int64_t ideal = total * c / cores;
    int64_t head_start = ideal / cols * cols;
    int64_t in_head = ideal - head_start;
    in_head = (in_head + col_align / 2) / col_align * col_align;
    cut[c] =
        std::clamp(std::min<int64_t>(head_start + in_head, head_start + cols), cut[c - 1], total);
  }
  for (int c = 0; c < cores; ++c) {
    int64_t pos = cut[c];
    while (pos < cut[c + 1]) {
      const int64_t u = pos / cols;
      const int64_t col = pos - u * cols;
      const int64_t end = std::min<int64_t>(cut[c + 1], (u + 1) * cols);
      s.per_core[c].push_back(HeadWork{tail[u].seq, tail[u].head, static_cast<int>(col),
                                       static_cast<int>(end - u * cols)});
      pos = end;
    }
  }
  s.split_heads = static_cast<int>(tail.size());
}

}  // namespace

HeadSchedule make_head_schedule(const std::vector<int64_t>& seq_lens, int heads, int cols,
                                int cores, int col_align) {
  HeadSchedule s;
  cores = std::max(cores, 1);
  col_align = std::max(col_align, 1);
  s.per_core.assign(cores, {});
  std::vector<Unit> units;
  for (int n = 0; n < static_cast<int>(seq_lens.size()); ++n) {
    if (seq_lens[n] <= 0) continue;  // an empty sequence has no work (its state passes through)
    for (int h = 0; h < heads; ++h) units.push_back(Unit{n, h, seq_lens[n]});
  }
  if (units.empty()) return s;
  const bool uniform = std::all_of(units.begin(), units.end(),
                                   [&](const Unit& u) { return u.cost == units[0].cost; });
  const int u_count = static_cast<int>(units.size());
  if (uniform) {
    s.whole_rounds = u_count / cores;
    const int whole = s.whole_rounds * cores;
    for (int i = 0; i < whole; ++i) {
      const Unit& u = units[i];
      // Contiguous blocks: core c owns units [c R, (c + 1) R), so a core's heads sit next to
      // each other in [T, H, K] rows and its reads stream through whole pages.
      s.per_core[i / s.whole_rounds].push_back(HeadWork{u.seq, u.head, 0, cols});
    }
    std::vector<Unit> tail(units.begin() + whole, units.end());
    if (!tail.empty()) split_tail_by_columns(tail, cols, cores, col_align, s);
    return s;
  }
  // Varlen: LPT over whole units.
  std::stable_sort(units.begin(), units.end(),
                   [](const Unit& a, const Unit& b) { return a.cost > b.cost; });
  if (u_count < cores) {
    // Too few units to fill the cores: split every unit by columns, proportionally to cost.
    split_tail_by_columns(units, cols, cores, col_align, s);
    return s;
  }
  std::vector<int64_t> load(cores, 0);
  for (const Unit& u : units) {
    const int c = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[c] += u.cost;
    s.per_core[c].push_back(HeadWork{u.seq, u.head, 0, cols});
  }
  return s;
}

std::string HeadSchedule::describe() const {
  std::string out =
      fmt::format("{} whole round(s), {} head(s) split by columns\n", whole_rounds, split_heads);
  for (size_t c = 0; c < per_core.size(); ++c) {
    out += fmt::format("  core {}:", c);
    for (const HeadWork& w : per_core[c]) {
      out += fmt::format(" s{}h{}[{},{})", w.seq, w.head, w.col_begin, w.col_end);
    }
    out += "\n";
  }
  return out;
}

}  // namespace hanpu
