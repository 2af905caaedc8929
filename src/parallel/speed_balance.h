// Dealing work to cores in proportion to how fast each core is running right now.
//
// hanpu's schedules deal equal work to every core, which is optimal only when the cores run
// at the same speed. They often do not: a big.LITTLE edge board mixes fast and slow cores, and
// on a shared machine one core can run at half speed for seconds because a neighbour loads
// its sibling (docs/performance.md, "Design measurements": speed-balanced dealing). With a
// static split the fast core then idles while the
// slow one finishes. A SpeedBalancer measures each worker's rate (work done per busy second)
// on one phase of a job and cuts the next phase's work list in proportion; the pool keeps the
// rates between jobs, so the first phase of the next call starts from them too.
// Users: the LA walk (la_walk.h, re-dealt between phases of a call), the attention
// placements (dealt per call from the rates of earlier calls). Projections (linear.h) need no
// rates: their units are claimed from a shared counter.
// HANPU_BALANCE=0 turns all of it off: every phase is then dealt as if the speeds were equal
// (the schedule's own deal, reproducible run to run), and projections deal round-robin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hanpu {

class ThreadPool;

// False when HANPU_BALANCE=0.
bool speed_balancing_enabled();

// Cuts items [0, n) into speed.size() contiguous ranges [cut[c], cut[c + 1]) whose costs are
// as close as item boundaries allow to the shares speed[c] / sum(speed) of the total. Equal
// speeds give equal shares. Example: costs {4, 4, 4, 4}, speeds {3, 1} -> cuts {0, 3, 4}
// (12 : 4 of the cost). Speeds must be > 0.
std::vector<size_t> proportional_cuts(std::span<const int64_t> cost, std::span<const double> speed);

class SpeedBalancer {
 public:
  // Starts from the rates the pool remembers from earlier jobs (equal for a new pool).
  explicit SpeedBalancer(ThreadPool& pool);
  // Writes the latest rates back to the pool.
  ~SpeedBalancer();
  SpeedBalancer(const SpeedBalancer&) = delete;
  SpeedBalancer& operator=(const SpeedBalancer&) = delete;

  // Cuts for the next phase (see proportional_cuts) at the current rates.
  std::vector<size_t> cuts(std::span<const int64_t> cost) const;
  // After a phase: worker c did work done[c] in busy_ms[c]. A worker that did no work, or
  // too little to time (< 0.2 ms), keeps its rate.
  void record(std::span<const int64_t> done, std::span<const double> busy_ms);
  const std::vector<double>& speeds() const { return speed_; }

 private:
  ThreadPool& pool_;
  bool enabled_;
  std::vector<double> speed_;
};

}  // namespace hanpu
