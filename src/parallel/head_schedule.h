// HA-NPU's core schedule (§4) as a pure function: which core runs which (sequence, value
// head) and which value columns of it. Printed by the CLI and unit-tested.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hanpu {

// One piece of work: value head `head` of sequence `seq`, state columns [col_begin, col_end).
// The K-side work of a head (K K^T, the inverse) is repeated by every part of a split head;
// state columns are independent, so parts never need a cross-core reduction.
struct HeadWork {
  int seq = 0;
  int head = 0;
  int col_begin = 0;
  int col_end = 0;
  bool operator==(const HeadWork&) const = default;
};

struct HeadSchedule {
  std::vector<std::vector<HeadWork>> per_core;  // per_core[c] runs in order on core c
  int whole_rounds = 0;                         // rounds in which every core ran one whole head
  int split_heads = 0;                          // heads split by columns in the tail
  std::string describe() const;                 // human-readable, one line per core
};

// seq_lens: tokens of each sequence (work of a unit ~ its length); heads: value heads HV;
// cols: V; cores: P; col_align: split points are multiples of this (the SIMD width).
//
// Uniform lengths (one sequence, or equal ones): units = seqs x heads. The first
// P*floor(U/P) units are whole: floor(U/P) rounds, dealt as contiguous blocks (core c gets
// units c*floor(U/P) ...); the R = U mod P tail units are split by
// columns: their R*V columns are cut into P contiguous ranges of ~R*V/P columns (aligned),
// a range that straddles two heads becoming two pieces. Example: 16 heads, V = 128, 10
// cores -> 1 whole round (heads 0-9), then heads 10-15 = 768 columns, 76.8 per core, cut at
// multiples of 16: core 0 gets head 10 cols [0,80), core 1 head 10 [80,128) + head 11 [0,32) ...
// With 16 heads on 2 cores: core 0 runs heads 0-7, core 1 heads 8-15, none split.
// Unequal lengths (varlen): longest-processing-time-first over whole units, which is within
// 4/3 of optimal; with fewer units than cores, every unit is split by columns.
HeadSchedule make_head_schedule(const std::vector<int64_t>& seq_lens, int heads, int cols,
                                int cores, int col_align);

}  // namespace hanpu
