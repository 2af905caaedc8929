// The discrete-event core shared by the modelled NPUs (the Ascend-class simulator and the
// spatial one): a recorded program of events, each on one in-order queue (an engine of a
// core, a DMA channel of a tile), with the events it waits for, a fixed latency, its own
// time, and bytes it takes from one shared bandwidth (GM / DRAM). Events belong to epochs
// (kernel launches, cross-core syncs): epoch e starts when every event of e - 1 is done,
// plus that boundary's overhead. Replay is deterministic: among queue heads whose
// dependencies are done, the one that can start first runs (ties: the lowest id).
#pragma once

#include <cstdint>
#include <vector>

namespace hanpu::npu {

struct Event {
  int queue = 0;
  double cycles = 0;         // time on its queue at the engine's or channel's rate
  double latency = 0;        // fixed start-up (DMA latency, pipeline fill)
  int64_t shared_bytes = 0;  // bytes through the shared bandwidth, served in start order
  int epoch = 0;
  std::vector<int64_t> deps;  // events that must finish first (earlier ids)
};

struct Replay {
  std::vector<double> start, finish;  // per event
  std::vector<double> busy;           // per queue: summed event time
  double latency_cycles = 0;          // when the last event (or the first launch) is done
  std::vector<double> epoch_done;     // per epoch: when its last event is done (an empty
                                      // epoch: when it opened)
};

// `epoch_overhead[e]`: what starting epoch e + 1 costs after epoch e ends. `host_issue[e]`
// (optional): when the host has issued the launch that opens epoch e + 1, so a host slower
// than the device (a framework dispatching one small operator after another) sets the pace:
// epoch e + 1 starts at max(epoch e done, issued) + its overhead.
Replay replay(const std::vector<Event>& events, int queues,
              const std::vector<double>& epoch_overhead, double shared_bytes_per_cycle,
              const std::vector<double>& host_issue = {});

}  // namespace hanpu::npu
