// Speed-proportional dealing of work (see speed_balance.h).
#include "parallel/speed_balance.h"
#include "base/env_settings.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>

#include "parallel/thread_pool.h"

namespace hanpu {

std::vector<size_t> proportional_cuts(std::span<const int64_t> cost,
                                      std::span<const double> speed) {
  const size_t P = std::max<size_t>(speed.size(), 1), n = cost.size();
  std::vector<int64_t> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + std::max<int64_t>(cost[i], 0);
  const double total_speed = std::accumulate(speed.begin(), speed.end(), 0.0);
  std::vector<size_t> cut(P + 1, n);
  cut[0] = 0;
  double share = 0.0;
  for (size_t c = 1; c < P; ++c) {
    share += speed.empty() ? 1.0 / static_cast<double>(P) : speed[c - 1] / total_speed;
    const double target = share * static_cast<double>(prefix[n]);
    // The item boundary nearest the target, never before the previous cut.
    size_t b = static_cast<size_t>(std::lower_bound(prefix.begin(), prefix.end(), target) -
                                   prefix.begin());
    b = std::min(b, n);
    if (b > 0 &&
        target - static_cast<double>(prefix[b - 1]) < static_cast<double>(prefix[b]) - target)
      --b;
    cut[c] = std::max(b, cut[c - 1]);
  }
  return cut;
}

bool speed_balancing_enabled() { return !env_switched_off(EnvVar::kBalance); }

SpeedBalancer::SpeedBalancer(ThreadPool& pool)
    : pool_(pool), enabled_(speed_balancing_enabled()), speed_(pool.speed_hints()) {
  if (!enabled_) speed_.assign(speed_.size(), 1.0);
}

SpeedBalancer::~SpeedBalancer() {
  if (enabled_) pool_.set_speed_hints(speed_);
}

std::vector<size_t> SpeedBalancer::cuts(std::span<const int64_t> cost) const {
  return proportional_cuts(cost, speed_);
}

void SpeedBalancer::record(std::span<const int64_t> done, std::span<const double> busy_ms) {
  constexpr double kMinTimedMs = 0.2;
  if (!enabled_) return;
  const size_t P = speed_.size();
  // This phase's rates of the workers that did timeable work, scaled so that together they
  // keep the share of the total they had: one timed worker alone tells nothing new.
  std::vector<double> rate(P, 0.0);
  double rate_sum = 0.0, old_sum = 0.0;
  for (size_t c = 0; c < P; ++c) {
    if (c < done.size() && c < busy_ms.size() && done[c] > 0 && busy_ms[c] >= kMinTimedMs) {
      rate[c] = static_cast<double>(done[c]) / busy_ms[c];
      rate_sum += rate[c];
      old_sum += speed_[c];
    }
  }
  if (rate_sum == 0.0) return;
  for (size_t c = 0; c < P; ++c) {
    if (rate[c] == 0.0) continue;
    // Half the old estimate, half the new: a core that lost one time slice in a phase (the OS
    // ran something else on it) is not written off at once.
    speed_[c] = 0.5 * speed_[c] + 0.5 * old_sum * rate[c] / rate_sum;
  }
  // Keep the rates comparable (mean 1) and bounded, so one odd phase cannot starve a core.
  const double mean = std::accumulate(speed_.begin(), speed_.end(), 0.0) / static_cast<double>(P);
  for (double& s : speed_) s = std::clamp(s / mean, 0.125, 8.0);
}

}  // namespace hanpu
