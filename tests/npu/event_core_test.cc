// The shared event core on hand-made programs whose timing can be worked out on paper:
// in-order queues overlap, a dependency delays, the shared bandwidth serialises, an epoch
// waits for the previous one plus its overhead, and a consumer released late holds back a
// bounded producer (the pattern of a depth-limited FIFO).
#include <gtest/gtest.h>

#include "npu/sim/event_core.h"

namespace hanpu::npu {
namespace {

Event ev(int queue, double cycles, std::vector<int64_t> deps = {}, int epoch = 0,
         int64_t shared = 0, double latency = 0) {
  Event e;
  e.queue = queue;
  e.cycles = cycles;
  e.deps = std::move(deps);
  e.epoch = epoch;
  e.shared_bytes = shared;
  e.latency = latency;
  return e;
}

TEST(EventCore, QueuesOverlapAndDependenciesDelay) {
  // q0: A(10) then B(5); q1: C(4) waits for A, then D(3).
  const Replay r = replay({ev(0, 10), ev(0, 5), ev(1, 4, {0}), ev(1, 3)}, 2, {}, 1.0);
  EXPECT_EQ(r.finish, (std::vector<double>{10, 15, 14, 17}));
  EXPECT_EQ(r.busy, (std::vector<double>{15, 7}));
  EXPECT_EQ(r.latency_cycles, 17);
}

TEST(EventCore, SharedBandwidthServesInStartOrder) {
  // Two transfers of 100 bytes on different queues at 10 bytes per cycle, latency 5 each:
  // the second waits for the first's bytes.
  const Replay r = replay({ev(0, 1, {}, 0, 100, 5), ev(1, 1, {}, 0, 100, 5)}, 2, {}, 10.0);
  EXPECT_EQ(r.finish[0], 15);  // 5 latency + 10 cycles of bandwidth
  EXPECT_EQ(r.finish[1], 25);
}

TEST(EventCore, EpochsWaitForThePreviousPlusOverhead) {
  const Replay r = replay({ev(0, 10), ev(1, 2, {}, 1)}, 2, {7}, 1.0);
  EXPECT_EQ(r.finish[1], 19);  // epoch 1 opens at 10 + 7
  const Replay empty = replay({}, 1, {5}, 1.0);
  EXPECT_EQ(empty.latency_cycles, 5);  // a launch with nothing in it still costs its overhead
}

TEST(EventCore, AHostSlowerThanTheDeviceSetsThePace) {
  // Two launches the host issues at 30 and 32: the first opens at 30 + 7 although the device
  // is idle from 0; the second waits for the first (37 + 10) rather than for its issue.
  const Replay r = replay({ev(0, 10, {}, 1), ev(0, 10, {}, 2)}, 1, {7, 7}, 1.0, {30, 32});
  EXPECT_EQ(r.start[0], 37);
  EXPECT_EQ(r.finish[1], 64);  // 47 + 7 + 10
  // A host issuing ahead of the device changes nothing.
  const Replay ahead = replay({ev(0, 10, {}, 1), ev(0, 10, {}, 2)}, 1, {7, 7}, 1.0, {0, 1});
  EXPECT_EQ(ahead.finish[1], 34);
  const Replay empty = replay({}, 1, {5}, 1.0, {40});
  EXPECT_EQ(empty.latency_cycles, 45);
}

TEST(EventCore, ABoundedProducerWaitsForItsSlowestConsumer) {
  // A depth-1 buffer broadcast to two consumers: the producer's second write (event 3)
  // depends on both consumers' reads of the first (events 1, 2); consumer 2 is slow.
  const Replay r = replay({ev(0, 1), ev(1, 1, {0}), ev(2, 20, {0}), ev(0, 1, {1, 2})}, 3, {}, 1.0);
  EXPECT_EQ(r.finish[3], 22);  // 1 (write) + 20 (slow read) + 1
}

}  // namespace
}  // namespace hanpu::npu
