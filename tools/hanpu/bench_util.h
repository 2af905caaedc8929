// What the benchmarks share: the machine header (measured FMA peak), timed repeats with a
// warm-up and a median, per-core imbalance from busy times, human-readable bytes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "hanpu/machine.h"
#include "hanpu/status.h"

namespace hanpu::cli {

std::string human_bytes(int64_t b);

// The middle element of v (the upper of the two middles for an even count); v non-empty.
double median(std::vector<double> v);

// Measures and prints (to `out`) the FMA peak and the micro-kernel rate; returns the peak.
FmaPeak print_machine_header(FILE* out, int threads);

struct Timing {
  double median_ms = 0;
  std::vector<double> run_ms;  // every timed run, in order (for the standard deviation)
  double peak_gflops = 0;      // median of the FMA peaks measured right after each timed run
  double imbalance = 1.0;      // max / mean of the workers' busy time (last run)
  int64_t extra_bytes = 0;     // peak over the runs
};

// One warm-up, then `repeats` timed calls of run(busy_ms, extra_bytes); the first error stops.
// After each timed call the FMA peak is measured again (a short probe on `threads` workers):
// the machine is shared, and a row's % of peak is taken against the peak it had at the time
// rather than the one measured minutes earlier at start.
using TimedRun = std::function<Status(std::vector<double>&, int64_t&)>;
Status time_runs(int repeats, int threads, const TimedRun& run, Timing* out);

// The same for several calls compared side by side (e.g. placements): one warm-up each,
// then `repeats` rounds that time every call once, in forward order on even rounds and in
// reverse on odd ones, so neither a drift of the shared machine nor a call's position in
// the round favours one of them. out[i] is call i's timing. `before_each`, if set, runs
// before every call, untimed (e.g. to evict the caches).
Status time_runs_interleaved(int repeats, int threads, const std::vector<TimedRun>& runs,
                             std::vector<Timing>* out,
                             const std::function<void()>& before_each = {});
// time_runs_interleaved for a bench command: false (the error printed to stderr) on failure.
bool time_side_by_side(int repeats, int threads, const std::vector<TimedRun>& runs,
                       std::vector<Timing>* out, const std::function<void()>& before_each = {});

// Reads a buffer of twice the last-level cache (64 MB at least) on the calling thread, so
// that what the next call reads comes from DRAM, as a model's weights do in a real step.
void evict_caches();

// Parses every name of a flag or prints which one is wrong (returns false).
template <class Parse, class T>
bool parse_all(const std::vector<std::string>& names, Parse parse, const char* flag,
               const char* allowed, std::vector<T>& out) {
  for (const auto& n : names) {
    auto v = parse(n);
    if (!v) {
      std::fprintf(stderr, "error: %s '%s' is not %s\n", flag, n.c_str(), allowed);
      return false;
    }
    out.push_back(*v);
  }
  return true;
}

}  // namespace hanpu::cli
