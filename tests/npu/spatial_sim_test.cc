// The spatial simulator's semantics on small programs: DMA-channel and memory budgets are
// enforced with errors naming the tile; a broadcast FIFO moves only when every consumer has
// room, so one slow consumer stalls the producer and the other consumers; DRAM traffic is
// counted at the shims; a program that waits on a release never recorded is refused; a
// forward through a mem tile and a DRAM read keep the stream busy (neither the hop's
// latency nor the mem tile's release holds the channel); neighbouring compute tiles side by
// side or one above the other share memory.
#include <gtest/gtest.h>

#include "npu/machine/spatial_machine.h"
#include "npu/sim/spatial_sim.h"

namespace hanpu::npu {
namespace {

SpatialMachine xdna2() {
  SpatialMachine m;
  EXPECT_TRUE(load_spatial_machine("xdna2", &m).ok());
  return m;
}

TEST(SpatialSim, ChannelAndMemoryBudgetsAreEnforced) {
  const SpatialMachine m = xdna2();
  SpatialSim sim(m);
  int id = 0;
  for (int i = 0; i < 6; ++i) {  // a mem tile has 6 output channels
    std::string name = "q";
    name += std::to_string(i);
    ASSERT_TRUE(sim.fifo(name, {3, 1}, {{i, 2}}, 8192, 2, &id).ok());
  }
  const Status st = sim.fifo("q6", {3, 1}, {{6, 2}}, 8192, 2, &id);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fifo 'q6': mem tile (3, 1) needs 7 of its 6 output DMA channels"),
            std::string::npos)
      << st.message();
  // A compute tile's 64 KiB: 2 x 8 KiB already held by q0's consumer end.
  EXPECT_TRUE(sim.reserve({0, 2}, 48 * 1024, "scores").ok());
  const Status full = sim.reserve({0, 2}, 1, "one more byte");
  EXPECT_NE(full.message().find("compute tile (0, 2) cannot hold one more byte"), std::string::npos)
      << full.message();
  EXPECT_FALSE(sim.fifo("bad", {9, 2}, {{0, 2}}, 64, 2, &id).ok());  // no column 9 on xdna2
}

// One producer (a mem tile) broadcasting `n` objects to two compute consumers, each doing
// `fast` / `slow` cycles of work per object before releasing it.
SpatialStats broadcast(double fast_macs, double slow_macs, int n) {
  const SpatialMachine m = xdna2();
  SpatialSim sim(m);
  int f = 0;
  EXPECT_TRUE(sim.fifo("kv", {3, 1}, {{0, 2}, {1, 2}}, 8192, 2, &f).ok());
  const TileId a{0, 2}, b{1, 2};
  std::vector<int64_t> put(n);
  for (int k = 0; k < n; ++k) put[k] = sim.put(f, {});
  for (int k = 0; k < n; ++k) {
    sim.release(f, 0, {sim.compute(a, fast_macs, 0, 0, {put[k]})});
    sim.release(f, 1, {sim.compute(b, slow_macs, 0, 0, {put[k]})});
  }
  SpatialStats s;
  EXPECT_TRUE(sim.finish(&s).ok());
  return s;
}

TEST(SpatialSim, ASlowConsumerStallsTheBroadcast) {
  const double macs_per_cycle = xdna2().bf16_macs_per_cycle;
  const SpatialStats balanced = broadcast(100 * macs_per_cycle, 100 * macs_per_cycle, 16);
  const SpatialStats skewed = broadcast(100 * macs_per_cycle, 4000 * macs_per_cycle, 16);
  // The slow consumer sets the pace of the whole group: ~16 x 4000 cycles.
  EXPECT_GT(skewed.latency_cycles, 16 * 4000);
  EXPECT_LT(skewed.latency_cycles, 16 * 4000 + 10000);
  EXPECT_GT(skewed.stall_cycles, 10 * balanced.stall_cycles + 1000);
  // The fast consumer idles: its core is busy 16 x 100 cycles of a ~64000-cycle run.
  EXPECT_LT(skewed.tile_util[0], 0.05);
  EXPECT_GT(skewed.tile_util[static_cast<size_t>(xdna2().compute_rows)], 0.95);  // tile (1, 2)
  EXPECT_EQ(skewed.stream_bytes, 16 * 8192);
  EXPECT_EQ(skewed.offchip_bytes, 0);
}

TEST(SpatialSim, DramTrafficIsCountedAtTheShimsAndDeadlocksAreRefused) {
  const SpatialMachine m = xdna2();
  SpatialSim sim(m);
  int in = 0, out = 0;
  ASSERT_TRUE(sim.fifo("in", {0, 0}, {{0, 2}}, 4096, 2, &in).ok());
  ASSERT_TRUE(sim.fifo("out", {0, 2}, {{0, 0}}, 4096, 2, &out).ok());
  for (int k = 0; k < 4; ++k) {
    const int64_t p = sim.put(in, {});
    const int64_t c = sim.compute({0, 2}, 1000, 4096, 0, {p});
    sim.release(in, 0, {c});
    sim.release(out, 0, {sim.put(out, {c})});
  }
  SpatialStats s;
  ASSERT_TRUE(sim.finish(&s).ok());
  EXPECT_EQ(s.offchip_bytes, 2 * 4 * 4096);  // read in and written back
  EXPECT_GT(s.energy_mj, 0);
  SpatialSim stuck(m);
  int f = 0;
  ASSERT_TRUE(stuck.fifo("f", {0, 1}, {{0, 2}}, 64, 2, &f).ok());
  for (int k = 0; k < 3; ++k) stuck.put(f, {});  // object 2 needs object 0 released: never
  const Status st = stuck.finish(&s);
  EXPECT_NE(st.message().find("consumer 0 never released object 0"), std::string::npos)
      << st.message();
}

// `n` objects from DRAM through a mem tile to a compute tile that releases each at once.
SpatialStats forward(int n, int64_t bytes) {
  const SpatialMachine m = xdna2();
  SpatialSim sim(m);
  int in = 0, out = 0;
  EXPECT_TRUE(sim.fifo("in", {0, 0}, {{0, 1}}, bytes, 2, &in).ok());
  EXPECT_TRUE(sim.fifo("out", {0, 1}, {{0, 2}}, bytes, 2, &out).ok());
  for (int k = 0; k < n; ++k) {
    const int64_t a = sim.put(in, {});
    const int64_t b = sim.put(out, {a});
    sim.release(in, 0, {b});
    sim.release(out, 0, {sim.compute({0, 2}, 0, 64, 0, {b})});
  }
  SpatialStats s;
  EXPECT_TRUE(sim.finish(&s).ok());
  return s;
}

TEST(SpatialSim, AForwardKeepsTheStreamBusy) {
  const SpatialMachine m = xdna2();
  const int64_t bytes = 8192;
  const double per_object = static_cast<double>(bytes) / m.stream_bytes_per_cycle;
  // (Both runs last longer than the launch overhead the latency is floored at.)
  const SpatialStats few = forward(24, bytes), many = forward(88, bytes);
  // Each object crosses two hops, but with two buffers at the mem tile the hops overlap:
  // one more object costs one stream time, not two, and not a DRAM latency either.
  const double marginal = (many.latency_cycles - few.latency_cycles) / 64;
  EXPECT_NEAR(marginal, per_object, 0.02 * per_object);
  // The first object still pays the DRAM latency and both hops.
  EXPECT_GT(few.latency_cycles, 24 * per_object + m.dram_latency_cycles);
}

TEST(SpatialSim, NeighboursShareMemoryInRowsAndColumns) {
  const SpatialMachine m = xdna2();
  SpatialSim sim(m);
  int f = 0;
  for (const TileId to : {TileId{1, 2}, TileId{0, 3}}) {  // east and north of (0, 2)
    ASSERT_TRUE(sim.fifo("near", {0, 2}, {to}, 4096, 2, &f).ok());
    for (int k = 0; k < 3; ++k) sim.release(f, 0, {sim.put(f, {})});
  }
  ASSERT_TRUE(sim.fifo("far", {0, 2}, {{2, 2}}, 4096, 2, &f).ok());  // two columns away: DMA
  for (int k = 0; k < 3; ++k) sim.release(f, 0, {sim.put(f, {})});
  SpatialStats s;
  ASSERT_TRUE(sim.finish(&s).ok());
  EXPECT_EQ(s.stream_bytes, 3 * 4096);  // only the far FIFO streams
  EXPECT_EQ(sim.free_dma({0, 2}, true), m.tile_dma_out - 1);
  EXPECT_EQ(sim.free_dma({1, 2}, false), m.tile_dma_in);
  EXPECT_EQ(sim.free_dma({2, 2}, false), m.tile_dma_in - 1);
  EXPECT_EQ(sim.free_dma({99, 2}, false), 0);
}

}  // namespace
}  // namespace hanpu::npu
