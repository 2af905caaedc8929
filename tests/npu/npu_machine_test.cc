// NPU targets as data: the built-in files parse, carry sources, and malformed files are
// refused naming the field; the simulator refuses an over-full buffer by name and orders a
// write into reused buffer bytes after their last reader; FlashQLA's segments are searched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "npu/kernels/gdn_kernels.h"
#include "npu/machine/npu_machine.h"
#include "npu/machine/spatial_machine.h"
#include "npu/sim/npu_sim.h"

namespace hanpu::npu {
namespace {

TEST(NpuMachine, BuiltInTargetsLoadWithSources) {
  ASSERT_GE(npu_machine_names().size(), 2u);
  NpuMachine p, b;
  ASSERT_TRUE(load_npu_machine("ascend-310p", &p).ok());
  ASSERT_TRUE(load_npu_machine("ascend-310b", &b).ok());
  EXPECT_EQ(p.cores, 10);
  EXPECT_EQ(b.cores, 1);
  EXPECT_EQ(p.buffers[static_cast<int>(Buf::kUB)].bytes, 256 * 1024);
  EXPECT_EQ(p.buffers[static_cast<int>(Buf::kL1)].bytes, 1024 * 1024);
  EXPECT_DOUBLE_EQ(p.path_gbps[static_cast<int>(Path::kGmToL1)], 95.0);
  EXPECT_DOUBLE_EQ(p.path_gbps[static_cast<int>(Path::kUbToL1)], 205.0);
  EXPECT_EQ(p.cube_macs_per_cycle(), 4096.0);
  for (const char* key :
       {"cores", "clock_ghz", "buffers", "paths_gbps", "dma_burst", "gm_gbps", "energy_pj"}) {
    EXPECT_FALSE(p.sources[key].empty()) << key;
  }
}

TEST(NpuMachine, MalformedFilesAreRefusedByField) {
  NpuMachine m;
  EXPECT_NE(parse_npu_machine("[1]", "x.json", &m).message().find("x.json: not a JSON object"),
            std::string::npos);
  EXPECT_NE(load_npu_machine("/nonexistent.json", &m).message().find("neither a built-in"),
            std::string::npos);
  // A valid file with one field broken at a time.
  NpuMachine ok;
  ASSERT_TRUE(load_npu_machine("ascend-310p", &ok).ok());
  const std::string base = R"({"name": "t", "cores": 2, "clock_ghz": 1, "launch_overhead_us": 0,
    "framework_op_us": 0,
    "buffers": {"L1": {"bytes": 1024, "align": 32}, "L0A": {"bytes": 1024, "align": 512},
                "L0B": {"bytes": 1024, "align": 512}, "L0C": {"bytes": 1024, "align": 64},
                "UB": {"bytes": 1024, "align": 32}},
    "cube": {"m": 16, "k": 16, "n": 16, "startup_cycles": 0},
    "vector": {"bytes_per_cycle": 256, "startup_cycles": 0, "nz_row_op_factor": 1},
    "paths_gbps": {"GM->L1": 1, "GM->UB": 1, "UB->GM": 1, "UB->L1": 1, "L1->L0A": 1, "L1->L0B": 1,
                   "L0C->UB": 1, "L1->UB": 1},
    "dma_latency_cycles": {"GM": 0, "local": 0}, "dma_burst": {"setup_cycles": 0, "min_bytes": 32},
    "gm_gbps": 10,
    "energy_pj": {"gm_byte": 1, "l1_byte": 1, "l0_byte": 1, "ub_byte": 1, "cube_mac": 1, "vector_byte": 1, "static_w": 0},
    "sources": {"cores": "s", "clock_ghz": "s", "framework_op_us": "s", "buffers": "s", "cube": "s", "vector": "s", "paths_gbps": "s",
                "dma_burst": "s", "gm_gbps": "s", "energy_pj": "s"}})";
  ASSERT_TRUE(parse_npu_machine(base, "t.json", &m).ok());
  const auto broken = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return parse_npu_machine(s, "t.json", &m).message();
  };
  EXPECT_NE(broken("\"cores\": 2", "\"cores\": -2").find("cores must be"), std::string::npos);
  EXPECT_NE(broken("\"align\": 512}", "\"align\": 500}")
                .find("buffers.L0A: align must be a power of two"),
            std::string::npos);
  EXPECT_NE(broken("\"L1->UB\": 1", "\"L1->XB\": 1").find("L1->UB"), std::string::npos);
  EXPECT_NE(broken("\"min_bytes\": 32", "\"min_bytes\": -1").find("dma_burst: min_bytes"),
            std::string::npos);
  EXPECT_NE(broken("\"framework_op_us\": 0", "\"framework_op_us\": -1").find("framework_op_us"),
            std::string::npos);
  EXPECT_NE(broken("\"framework_op_us\": 0,", "").find("framework_op_us"), std::string::npos);
  EXPECT_NE(broken("\"setup_cycles\": 0, \"min", "\"setup_cycles\": -3, \"min")
                .find("dma_burst: setup_cycles"),
            std::string::npos);
  EXPECT_NE(broken("\"gm_gbps\": \"s\",", "").find("sources.gm_gbps is missing"),
            std::string::npos);
  // Found by the fuzzer: a size far beyond any integer type is refused, not converted.
  EXPECT_NE(broken("\"bytes\": 1024, \"align\": 32}, \"L0A\"",
                   "\"bytes\": 1e300, \"align\": 32}, \"L0A\"")
                .find("buffers.L1: bytes must be an integer"),
            std::string::npos);
  EXPECT_NE(broken("\"cores\": 2", "\"cores\": 2.5").find("cores must be an integer"),
            std::string::npos);
  // Found by the fuzzer in CI: a summary that is not a string threw out of the parser.
  EXPECT_NE(broken("\"name\": \"t\",", "\"name\": \"t\", \"summary\": 5,")
                .find("t.json: summary must be a string"),
            std::string::npos);
}

TEST(SpatialMachine, BuiltInTargetsLoadWithSources) {
  EXPECT_EQ(spatial_machine_names(), (std::vector<std::string>{"xdna1", "xdna2"}));
  for (const std::string& n : npu_machine_names()) EXPECT_EQ(n.rfind("ascend", 0), 0u) << n;
  SpatialMachine x1, x2;
  ASSERT_TRUE(load_spatial_machine("xdna1", &x1).ok());
  ASSERT_TRUE(load_spatial_machine("xdna2", &x2).ok());
  EXPECT_EQ(x1.compute_tiles(), 20);  // 5 columns x 4 (STEEL's XDNA1 port)
  EXPECT_EQ(x2.compute_tiles(), 32);  // 8 columns x 4
  EXPECT_EQ(x2.local_bytes, 64 * 1024);
  EXPECT_EQ(x2.memtile_bytes, 512 * 1024);
  EXPECT_EQ(x2.memtile_dma_out, 6);  // STEEL: "each Mem tile provides six ports"
  EXPECT_TRUE(x1.exp_lookup_table);  // XDNA1 has no exp unit
  EXPECT_FALSE(x2.exp_lookup_table);
  EXPECT_EQ(x2.fifo_depth, 2);
  for (const char* k :
       {"columns", "clock_ghz", "compute_tile", "mem_tile", "dram_gbps", "energy_pj"}) {
    EXPECT_FALSE(x2.sources[k].empty()) << k;
  }
  // Each parser refuses the other kind by name rather than misreading it.
  NpuMachine ascend;
  EXPECT_NE(load_npu_machine("xdna2", &ascend).message().find("kind 'spatial'"), std::string::npos);
  EXPECT_NE(load_spatial_machine("ascend-310p", &x1).message().find("kind must be \"spatial\""),
            std::string::npos);
  EXPECT_NE(load_spatial_machine("/nonexistent.json", &x1).message().find("xdna1, xdna2"),
            std::string::npos);
}

TEST(SpatialMachine, MalformedFilesAreRefusedByField) {
  SpatialMachine ok;
  ASSERT_TRUE(load_spatial_machine("xdna2", &ok).ok());
  const std::string base =
      R"({"name": "t", "kind": "spatial", "columns": 2, "compute_rows": 4, "clock_ghz": 1,
    "launch_overhead_us": 0, "design_switch_us": 0,
    "compute_tile": {"local_bytes": 65536, "bf16_macs_per_cycle": 128, "vector_bytes_per_cycle": 64,
                     "exp_per_cycle": 4, "exp_lookup_table": true, "dma_in": 2, "dma_out": 2},
    "mem_tile": {"bytes": 524288, "dma_in": 6, "dma_out": 6}, "shim_tile": {"dma_in": 2, "dma_out": 2},
    "stream_bytes_per_cycle": 4, "fifo_depth": 2, "dram_gbps": 60, "dma_latency_cycles": {"dram": 0, "stream": 0},
    "energy_pj": {"dram_byte": 1, "memtile_byte": 1, "local_byte": 1, "stream_byte": 1, "bf16_mac": 1,
                  "vector_byte": 1, "static_w": 0},
    "sources": {"columns": "s", "compute_rows": "s", "clock_ghz": "s", "design_switch_us": "s", "compute_tile": "s", "mem_tile": "s",
                "shim_tile": "s", "stream_bytes_per_cycle": "s", "fifo_depth": "s", "dram_gbps": "s",
                "energy_pj": "s"}})";
  SpatialMachine m;
  ASSERT_TRUE(parse_spatial_machine(base, "t.json", &m).ok())
      << parse_spatial_machine(base, "t.json", &m).message();
  EXPECT_EQ(m.memtile_ports(), 24);
  const auto broken = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return parse_spatial_machine(s, "t.json", &m).message();
  };
  EXPECT_NE(broken("\"columns\": 2", "\"columns\": 0")
                .find("t.json: columns must be an integer in [1, 64]"),
            std::string::npos);
  EXPECT_NE(
      broken("\"fifo_depth\": 2", "\"fifo_depth\": 1.5").find("fifo_depth must be an integer"),
      std::string::npos);
  EXPECT_NE(broken("\"exp_lookup_table\": true", "\"exp_lookup_table\": 1")
                .find("exp_lookup_table must be true or false"),
            std::string::npos);
  EXPECT_NE(
      broken("\"bytes\": 524288", "\"bytes\": 1e300").find("mem_tile: bytes must be an integer"),
      std::string::npos);
  EXPECT_NE(broken("\"dram_gbps\": \"s\",", "").find("sources.dram_gbps is missing"),
            std::string::npos);
  EXPECT_NE(
      broken("\"kind\": \"spatial\"", "\"kind\": \"ascend\"").find("kind must be \"spatial\""),
      std::string::npos);
}

TEST(NpuSim, OverFullBufferIsAnErrorThatNamesIt) {
  NpuMachine m;
  ASSERT_TRUE(load_npu_machine("ascend-310p", &m).ok());
  NpuSim sim(m);
  Tile *a, *b;
  ASSERT_TRUE(sim.alloc(3, Buf::kUB, 128, 256, false, Layout::kND, "first", &a).ok());   // 128 KiB
  ASSERT_TRUE(sim.alloc(3, Buf::kUB, 128, 256, false, Layout::kND, "second", &b).ok());  // full
  Tile* c;
  const Status s = sim.alloc(3, Buf::kUB, 1, 8, false, Layout::kND, "third", &c);
  EXPECT_NE(s.message().find("core 3: UB cannot hold third"), std::string::npos) << s.message();
  sim.free(a);
  EXPECT_TRUE(sim.alloc(3, Buf::kUB, 1, 8, false, Layout::kND, "third", &c).ok());
  // The cube refuses dense operands.
  Tile *x, *y, *z;
  ASSERT_TRUE(sim.alloc(0, Buf::kL0A, 16, 16, true, Layout::kND, "x", &x).ok());
  ASSERT_TRUE(sim.alloc(0, Buf::kL0B, 16, 16, true, Layout::kNZ, "y", &y).ok());
  ASSERT_TRUE(sim.alloc(0, Buf::kL0C, 16, 16, false, Layout::kNZ, "z", &z).ok());
  EXPECT_NE(sim.mmad(z, x, y, false).message().find("fp16 NZ"), std::string::npos);
}

// A tile placed over bytes a freed tile held is not written before that tile's last reader
// is done (write after read on a reused buffer): a load into UB the vector unit still reads
// from waits for the vector pass, where a load into fresh bytes overlaps it.
TEST(NpuSim, ATileOverFreedBytesWaitsForTheirLastReader) {
  NpuMachine m;
  ASSERT_TRUE(load_npu_machine("ascend-310p", &m).ok());
  const auto run = [&](bool reuse, bool second_load) {
    NpuSim sim(m);
    GmTensor* x = sim.gm("x", 64, 256, false);
    Tile *a = nullptr, *b = nullptr, *c = nullptr;
    EXPECT_TRUE(sim.alloc(0, Buf::kUB, 64, 256, false, Layout::kND, "a", &a).ok());  // 64 KiB
    EXPECT_TRUE(sim.alloc(0, Buf::kUB, 64, 256, false, Layout::kND, "b", &b).ok());
    EXPECT_TRUE(sim.load(a, {x, 0, 64, 0, 256}).ok());
    // A long pass reading a (50 times its bytes).
    EXPECT_TRUE(sim.vector({a}, {b}, int64_t{50} * a->bytes, false, [] {}).ok());
    if (reuse) sim.free(a);  // c then takes a's bytes (first fit), else the next free ones
    EXPECT_TRUE(sim.alloc(0, Buf::kUB, 64, 256, false, Layout::kND, "c", &c).ok());
    EXPECT_EQ(c->offset == a->offset, reuse);
    if (second_load) {
      EXPECT_TRUE(sim.load(c, {x, 0, 64, 0, 256}).ok());
    }
    return sim.finish().latency_cycles;
  };
  const double load_and_pass = run(false, false), fresh = run(false, true),
               reused = run(true, true);
  const double second_load = reused - load_and_pass;
  EXPECT_NEAR(fresh, load_and_pass, 1e-6 * fresh) << "a load into fresh bytes overlaps the pass";
  EXPECT_GT(second_load, 0.05 * load_and_pass) << "the load into a's bytes waited for the pass";
}

// A GM transfer moves in bursts: a block whose rows span the tensor's width is one burst, a
// narrower one a burst a row; each burst pays the setup and at least the minimum burst.
TEST(NpuSim, GmTransfersPayPerBurst) {
  NpuMachine m;
  ASSERT_TRUE(load_npu_machine("ascend-310p", &m).ok());
  m.dma_burst_setup_cycles = 100;
  m.dma_min_burst_bytes = 512;
  const auto cycles = [&](int64_t tensor_cols) {
    NpuSim sim(m);
    GmTensor* x = sim.gm("x", 64, tensor_cols, true);
    Tile* t = nullptr;
    EXPECT_TRUE(sim.alloc(0, Buf::kUB, 64, 128, true, Layout::kND, "t", &t).ok());
    EXPECT_TRUE(sim.load(t, {x, 0, 64, 0, 128}).ok());
    return sim.finish().latency_cycles;
  };
  const double rate = m.path_bytes_per_cycle(Path::kGmToUb);
  // 64 rows of 128 fp16 values: 16 KiB, one burst when contiguous.
  EXPECT_NEAR(cycles(128), m.gm_latency_cycles + 16384 / rate + 100, 1e-6);
  // Rows 2 KiB apart: 64 bursts of 256 B, each taken as 512.
  EXPECT_NEAR(cycles(1024), m.gm_latency_cycles + 64 * 512 / rate + 64 * 100, 1e-6);
}

// FlashQLA's segment count is searched as hanpu's tail schedule is: every candidate runs on
// the model and the fastest is taken; the variant then runs exactly that one.
TEST(NpuSim, FlashQlaRunsItsFastestSegmentCount) {
  NpuMachine m;
  ASSERT_TRUE(load_npu_machine("ascend-310p", &m).ok());
  GdnGm shape;
  shape.T = 640;  // 10 chunks: candidates 1, 2, 4, 8
  shape.H = 1;
  shape.K = shape.V = 128;
  std::vector<std::pair<int, double>> cycles;
  const int pick = flashqla_segments(m, shape, &cycles);
  ASSERT_EQ(cycles.size(), 4u);
  double fastest = cycles[0].second;
  for (const auto& [segs, c] : cycles) {
    EXPECT_TRUE(std::isfinite(c)) << segs;
    fastest = std::min(fastest, c);
  }
  const auto chosen =
      std::find_if(cycles.begin(), cycles.end(), [&](const auto& sc) { return sc.first == pick; });
  ASSERT_NE(chosen, cycles.end());
  EXPECT_EQ(chosen->second, fastest);
  EXPECT_GT(pick, 1) << "one head on 10 cores: one segment leaves most cores idle";
  NpuSim sim(m);
  ASSERT_TRUE(gdn_flashqla(sim, zero_inputs(sim, shape, shape.T)).ok());
  EXPECT_EQ(sim.finish().latency_cycles, fastest);
  NpuSim bad(m);
  const Status s = gdn_flashqla_segments(bad, zero_inputs(bad, shape, shape.T), 11);
  EXPECT_NE(s.message().find("11 segments for 10 chunks"), std::string::npos) << s.message();
}

// FLA's recurrence launch in value blocks: a block's state columns evolve on their own, so
// every block width gives the whole-head run's outputs and final states bit for bit; the
// width FLA runs is the fastest the model measures (whole heads, 64 or 32 columns).
TEST(NpuSim, FlaValueBlocksAgreeWithWholeHeadsAndTheFastestIsRun) {
  NpuMachine m;
  ASSERT_TRUE(load_npu_machine("ascend-310p", &m).ok());
  for (const bool kda : {false, true}) {
    GdnGm shape;
    shape.kda = kda;
    shape.T = 200;  // 4 chunks, the last short
    shape.H = 3;
    shape.K = 64;
    shape.V = 128;
    shape.scale = 0.125f;
    GmTensor marker;
    shape.state0 = shape.state1 = &marker;  // zero_inputs: allocate both states
    const auto run = [&](int bv, std::vector<float>* o, std::vector<float>* s1, double* cyc) {
      NpuSim sim(m);
      GdnGm g = zero_inputs(sim, shape, shape.T);
      std::mt19937 rng(41);
      std::uniform_real_distribution<float> u(-1, 1), gate(-0.3f, -0.01f), b(0.1f, 0.9f);
      for (GmTensor* t : {g.q, g.v, g.state0}) {
        for (float& x : t->v) x = u(rng);
      }
      for (float& x : g.k->v) x = 0.2f * u(rng);  // |k|^2 about 0.85: a stable delta rule
      for (float& x : g.g->v) x = gate(rng);
      for (float& x : g.beta->v) x = b(rng);
      std::fill(g.o->v.begin(), g.o->v.end(), std::nanf(""));
      std::fill(g.state1->v.begin(), g.state1->v.end(), std::nanf(""));
      const Status st = fla_flow(sim, g, all_value_heads(g), false, true, bv);
      ASSERT_TRUE(st.ok()) << st.message();
      *o = g.o->v;
      *s1 = g.state1->v;
      *cyc = sim.finish().latency_cycles;
    };
    std::vector<float> o_whole, s_whole;
    double c_whole = 0;
    run(0, &o_whole, &s_whole, &c_whole);
    for (float x : o_whole) ASSERT_TRUE(std::isfinite(x));
    for (float x : s_whole) ASSERT_TRUE(std::isfinite(x));
    for (int bv : {64, 32}) {
      std::vector<float> o, s1;
      double c = 0;
      run(bv, &o, &s1, &c);
      EXPECT_EQ(o, o_whole) << kda << " " << bv;
      EXPECT_EQ(s1, s_whole) << kda << " " << bv;
    }
    std::vector<std::pair<int, double>> cycles;
    const int pick = fla_value_block(m, shape, false, &cycles);
    ASSERT_EQ(cycles.size(), 3u);
    double fastest = cycles[0].second;
    for (const auto& [bv, c] : cycles) fastest = std::min(fastest, c);
    EXPECT_EQ(
        std::find_if(cycles.begin(), cycles.end(), [&](const auto& p) { return p.first == pick; })
            ->second,
        fastest);
    NpuSim bad(m);
    const Status s =
        fla_flow(bad, zero_inputs(bad, shape, shape.T), all_value_heads(shape), false, true, 48);
    EXPECT_NE(s.message().find("value block 48 for 128"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace hanpu::npu
