// replay (see event_core.h).
#include "npu/sim/event_core.h"

#include <algorithm>

namespace hanpu::npu {

Replay replay(const std::vector<Event>& events, int queues,
              const std::vector<double>& epoch_overhead, double shared_bytes_per_cycle,
              const std::vector<double>& host_issue) {
  Replay r;
  const size_t n = events.size();
  r.finish.assign(n, -1.0);
  r.start.assign(n, 0.0);
  r.busy.assign(static_cast<size_t>(queues), 0.0);
  std::vector<std::vector<int64_t>> queue(static_cast<size_t>(queues));
  int epochs = 1;
  for (size_t i = 0; i < n; ++i) {
    queue[static_cast<size_t>(events[i].queue)].push_back(static_cast<int64_t>(i));
    epochs = std::max(epochs, events[i].epoch + 1);
  }
  epochs = std::max(epochs, static_cast<int>(epoch_overhead.size()) + 1);
  epochs = std::max(epochs, static_cast<int>(host_issue.size()) + 1);
  std::vector<size_t> head(queue.size(), 0);
  std::vector<double> queue_free(queue.size(), 0.0);
  std::vector<int64_t> left(epochs, 0);
  for (const Event& e : events) ++left[e.epoch];
  std::vector<double> epoch_start(epochs + 1, 0.0), epoch_end(epochs, 0.0);
  // overhead[e]: what starting epoch e costs after e - 1 ends (a launch, or nothing for a
  // cross-core sync, whose flag traffic is events of its own).
  std::vector<double> overhead(epochs + 1, 0.0);
  for (int e = 1; e < epochs && e - 1 < static_cast<int>(epoch_overhead.size()); ++e)
    overhead[e] = epoch_overhead[e - 1];
  // issued[e]: when the host has issued epoch e's launch. The device queue runs ahead of
  // nothing: a launch starts once the previous epoch is done and the host has issued it.
  std::vector<double> issued(epochs + 1, 0.0);
  for (int e = 1; e < epochs && e - 1 < static_cast<int>(host_issue.size()); ++e)
    issued[e] = host_issue[e - 1];
  const auto open_next = [&](int e, double prev_done) {
    epoch_start[e + 1] = std::max(prev_done, issued[e + 1]) + overhead[e + 1];
  };
  int open_epoch = 0;
  while (open_epoch < epochs && left[open_epoch] == 0) {
    open_next(open_epoch, epoch_start[open_epoch]);
    ++open_epoch;
  }
  double shared_free = 0;
  size_t done = 0;
  while (done < n) {
    int64_t best = -1;
    double best_start = 0;
    size_t best_q = 0;
    for (size_t q = 0; q < queue.size(); ++q) {
      if (head[q] >= queue[q].size()) continue;
      const int64_t id = queue[q][head[q]];
      const Event& ev = events[id];
      if (ev.epoch > open_epoch) continue;
      double start = std::max(queue_free[q], epoch_start[ev.epoch]);
      bool ready = true;
      for (int64_t d : ev.deps) {
        if (r.finish[d] < 0) {
          ready = false;
          break;
        }
        start = std::max(start, r.finish[d]);
      }
      if (!ready) continue;
      if (best < 0 || start < best_start || (start == best_start && id < best)) {
        best = id;
        best_start = start;
        best_q = q;
      }
    }
    if (best < 0) break;  // cannot happen when dependencies point backwards
    const Event& ev = events[best];
    double end = best_start + ev.latency + ev.cycles;
    if (ev.shared_bytes > 0) {  // the shared bandwidth serves transfers in the order they start
      const double shared_start = std::max(shared_free, best_start + ev.latency);
      shared_free = shared_start + static_cast<double>(ev.shared_bytes) / shared_bytes_per_cycle;
      end = std::max(end, shared_free);
    }
    r.start[best] = best_start;
    r.finish[best] = end;
    queue_free[best_q] = end;
    r.busy[best_q] += end - best_start;
    ++head[best_q];
    ++done;
    epoch_end[ev.epoch] = std::max(epoch_end[ev.epoch], end);
    if (--left[ev.epoch] == 0 && ev.epoch == open_epoch) {
      while (open_epoch < epochs && left[open_epoch] == 0) {
        open_next(open_epoch, std::max(epoch_end[open_epoch], epoch_start[open_epoch]));
        ++open_epoch;
      }
    }
  }
  r.epoch_done.resize(static_cast<size_t>(epochs));
  for (int e = 0; e < epochs; ++e) r.epoch_done[e] = std::max(epoch_end[e], epoch_start[e]);
  for (double f : r.finish) r.latency_cycles = std::max(r.latency_cycles, f);
  r.latency_cycles = std::max(r.latency_cycles, epochs > 1 ? issued[1] + overhead[1] : 0.0);
  r.latency_cycles = std::max(r.latency_cycles, epoch_start[epochs - 1]);
  return r;
}

}  // namespace hanpu::npu
