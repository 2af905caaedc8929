// How the head-level LA kernels (hanpu, recurrent) walk their work: every work item (a head,
// or a column piece of one) is advanced over its sequence by one core at a time, a core's
// items in lockstep batches, phase by phase, with the items re-dealt to the cores between
// phases in proportion to each core's measured speed (parallel/speed_balance.h).
//
// Why phases: HA-NPU deals equal work to equal cores and keeps each state on its core. On a
// CPU the cores are not always equal (big.LITTLE boards; a shared machine where one core
// runs at half speed for seconds), and an equal split then waits for the slowest core. A
// state is one K x V block (64 KiB at 128 x 128): moving it to another core between phases
// costs a few microseconds, so an item may change core at a phase boundary (only when the
// speeds say so) and never inside a phase. With equal speeds the deal is the schedule's own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "cpu/la/la_problem.h"
#include "parallel/head_schedule.h"

namespace hanpu::cpu {

// Items [b0, b1) of the walk's item list, all of sequence `seq`, to be advanced together over
// tokens [t_begin, t_end) (absolute, within the sequence; t_begin is a multiple of the walk's
// quantum from the sequence start). first / last: the range starts / ends the sequence.
struct LaBatch {
  size_t b0 = 0, b1 = 0;
  int seq = 0;
  int64_t t_begin = 0, t_end = 0;
  bool first = false, last = false;
};

// The items of a schedule in walk order: the cores' lists one after another (so an equal-speed
// deal is the schedule itself), grouped by sequence when sequence lengths differ.
std::vector<HeadWork> walk_order(const LaProblem& p, const HeadSchedule& sched);

// Phase length in tokens: a multiple of quantum, at most ~8 phases per sequence and at least
// 4 quanta per phase. Example: T = 4096, quantum 64 -> 512 (8 phases); T = 300 -> 256.
int64_t walk_phase_tokens(int64_t longest_seq, int64_t quantum);

// A worker's view of the walk: next() hands out this worker's batches, phase by phase, and
// waits for the other workers at the end of each phase.
class LaWalker {
 public:
  virtual ~LaWalker() = default;
  virtual std::optional<LaBatch> next() = 0;
};

// Runs worker_fn(core, walker) once on each of `threads` pool workers; worker_fn keeps its
// per-core buffers for the whole walk and processes every batch next() returns. Items are
// batched while their states fit kResidentStateBytes (item_state_bytes each). Returns each
// worker's busy time in ms (time in batches, not waiting at phase ends).
std::vector<double> walk_in_phases(const LaProblem& p, int threads, std::span<const HeadWork> items,
                                   int64_t item_state_bytes, int64_t quantum,
                                   const std::function<void(int, LaWalker&)>& worker_fn);

}  // namespace hanpu::cpu
