// Phased, speed-balanced walk of LA work items (see la_walk.h).
#include "cpu/la/la_walk.h"

#include <algorithm>
#include <barrier>

#include "base/timer.h"
#include "cpu/la/la_strategy.h"
#include "parallel/speed_balance.h"
#include "parallel/thread_pool.h"

namespace hanpu::cpu {

std::vector<HeadWork> walk_order(const LaProblem& p, const HeadSchedule& sched) {
  std::vector<HeadWork> items;
  for (const auto& core_items : sched.per_core)
    items.insert(items.end(), core_items.begin(), core_items.end());
  const std::vector<int64_t> lens = p.seq_lens();
  const bool varlen =
      std::any_of(lens.begin(), lens.end(), [&](int64_t l) { return l != lens[0]; });
  if (varlen) {  // lockstep batches need neighbours of one sequence
    std::stable_sort(items.begin(), items.end(),
                     [](const HeadWork& a, const HeadWork& b) { return a.seq < b.seq; });
  }
  return items;
}

int64_t walk_phase_tokens(int64_t longest_seq, int64_t quantum) {
  constexpr int64_t kMaxPhases = 8, kMinQuantaPerPhase = 4;
  const int64_t quanta = (longest_seq + quantum - 1) / quantum;
  return quantum * std::max(kMinQuantaPerPhase, (quanta + kMaxPhases - 1) / kMaxPhases);
}

namespace {

// The walk's shared state: the current phase, its deal, and what each worker did in it.
class PhasedWalk {
 public:
  PhasedWalk(const LaProblem& p, int threads, std::span<const HeadWork> items,
             int64_t item_state_bytes, int64_t quantum)
      : p_(p),
        items_(items),
        lockstep_cap_(static_cast<size_t>(
            std::max<int64_t>(1, kResidentStateBytes / std::max<int64_t>(item_state_bytes, 1)))),
        balancer_(ThreadPool::shared(threads)),
        done_(threads, 0),
        phase_busy_(threads, 0.0),
        total_busy_(threads, 0.0),
        barrier_(threads, PhaseEnd{this}) {
    int64_t longest = 0;
    for (int n = 0; n < p.N; ++n) longest = std::max(longest, p.seq_len(n));
    phase_tokens_ = walk_phase_tokens(longest, quantum);
    phases_ = static_cast<int>((longest + phase_tokens_ - 1) / phase_tokens_);
    deal();
  }

  bool finished() const { return phase_ >= phases_; }

  // This worker's batches of the current phase.
  std::vector<LaBatch> batches_of(int core) const {
    std::vector<LaBatch> out;
    for (size_t i = cuts_[core]; i < cuts_[core + 1];) {
      if (costs_[i] == 0) {
        ++i;
        continue;
      }
      const int n = items_[i].seq;
      const int64_t begin = p_.cu[n] + phase_ * phase_tokens_;
      const int64_t end = std::min(p_.cu[n + 1], begin + phase_tokens_);
      size_t j = i + 1;
      while (j < cuts_[core + 1] && j - i < lockstep_cap_ && items_[j].seq == n) ++j;
      out.push_back(LaBatch{i, j, n, begin, end, begin == p_.cu[n], end == p_.cu[n + 1]});
      i = j;
    }
    return out;
  }

  int64_t cost_of(int core) const {
    int64_t sum = 0;
    for (size_t i = cuts_[core]; i < cuts_[core + 1]; ++i) sum += costs_[i];
    return sum;
  }

  void end_phase(int core, int64_t done, double busy_ms) {
    done_[core] = done;
    phase_busy_[core] = busy_ms;
    total_busy_[core] += busy_ms;
    barrier_.arrive_and_wait();
  }
  void drop() { barrier_.arrive_and_drop(); }
  const std::vector<double>& total_busy() const { return total_busy_; }

 private:
  struct PhaseEnd {
    PhasedWalk* walk;
    void operator()() noexcept {
      walk->balancer_.record(walk->done_, walk->phase_busy_);
      ++walk->phase_;
      if (!walk->finished()) walk->deal();
    }
  };

  // Work of each item in the current phase (tokens x state columns), cut in proportion to
  // the workers' speeds.
  void deal() noexcept {
    costs_.assign(items_.size(), 0);
    for (size_t i = 0; i < items_.size(); ++i) {
      const int n = items_[i].seq;
      const int64_t begin = phase_ * phase_tokens_;
      const int64_t tokens = std::clamp<int64_t>(p_.seq_len(n) - begin, 0, phase_tokens_);
      costs_[i] = tokens * (items_[i].col_end - items_[i].col_begin);
    }
    cuts_ = balancer_.cuts(costs_);
  }

  const LaProblem& p_;
  std::span<const HeadWork> items_;
  size_t lockstep_cap_;
  SpeedBalancer balancer_;
  int64_t phase_tokens_ = 0;
  int phases_ = 0;
  int phase_ = 0;
  std::vector<int64_t> costs_;
  std::vector<size_t> cuts_;
  std::vector<int64_t> done_;
  std::vector<double> phase_busy_;
  std::vector<double> total_busy_;
  std::barrier<PhaseEnd> barrier_;
};

class Walker final : public LaWalker {
 public:
  Walker(PhasedWalk& walk, int core) : walk_(walk), core_(core) { start_phase(); }

  std::optional<LaBatch> next() override {
    while (!done_) {
      if (pos_ < batches_.size()) return batches_[pos_++];
      walk_.end_phase(core_, cost_, timer_.ms());
      start_phase();
    }
    return std::nullopt;
  }

  // Leaves the walk early (an exception in the worker): the others must not wait for it.
  void leave() {
    if (!done_) walk_.drop();
    done_ = true;
  }

 private:
  void start_phase() {
    done_ = walk_.finished();
    if (done_) return;
    batches_ = walk_.batches_of(core_);
    cost_ = walk_.cost_of(core_);
    pos_ = 0;
    timer_ = Timer();
  }

  PhasedWalk& walk_;
  int core_;
  bool done_ = false;
  std::vector<LaBatch> batches_;
  size_t pos_ = 0;
  int64_t cost_ = 0;
  Timer timer_;
};

}  // namespace

std::vector<double> walk_in_phases(const LaProblem& p, int threads, std::span<const HeadWork> items,
                                   int64_t item_state_bytes, int64_t quantum,
                                   const std::function<void(int, LaWalker&)>& worker_fn) {
  ThreadPool& pool = ThreadPool::shared(threads);
  PhasedWalk walk(p, pool.size(), items, item_state_bytes, quantum);
  pool.run_on_all([&](int core) {
    Walker walker(walk, core);
    try {
      worker_fn(core, walker);
    } catch (...) {
      walker.leave();
      throw;
    }
    walker.leave();
  });
  return walk.total_busy();
}

}  // namespace hanpu::cpu
