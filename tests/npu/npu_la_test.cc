// The modelled Ascend NPU: every GDN kernel variant's outputs and final state match the
// float64 reference (fp16 storage, fp32 gates and states: NMSE <= 1e-5) on fresh random
// inputs of odd sizes, heads up to 256 wide included; the fused kernel's GM traffic is exactly the
// compulsory traffic (the paper's Figure 4: 21.41 MiB at T = 2048, H = 10, C = 64, K = V = 128);
// FLA's flow moves more and runs longer; runs are deterministic; bad calls are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "hanpu/npu.h"
#include "la_test_util.h"

namespace hanpu::test {
namespace {

struct NpuCase {
  const char* variant;
  LaCase la;
  int chunk;
};

class NpuParity : public ::testing::TestWithParam<NpuCase> {};

TEST_P(NpuParity, MatchesFloat64Reference) {
  const NpuCase& nc = GetParam();
  LaData d = make_la_data(nc.la);
  d.poison();
  const ref::LaRefResult want = ref::la_recurrent(d.args());
  NpuLaOptions o;
  o.variant = nc.variant;
  o.chunk_size = nc.chunk;
  NpuLaStats st;
  const Status s = npu_la_prefill(d.args(), o, &st);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_LE(nmse(want.o, d.o_as_double()), 1e-5) << nc.la.describe();
  EXPECT_LE(nmse(want.final_state, d.s1), 1e-5) << nc.la.describe();
  EXPECT_GT(st.latency_ms, 0.0);
  EXPECT_GT(st.cube_macs, 0);
  EXPECT_LE(st.peak_bytes["UB"], 256 * 1024);
}

LaCase gdn(int64_t T, int H, int K, int V, bool s0, Gates g, uint64_t seed) {
  LaCase c;
  c.mech = LaMech::kGdn;
  c.dtype = DType::kF16;
  c.seq_lens = {T};
  c.H = c.HV = H;
  c.K = K;
  c.V = V;
  c.initial_state = s0;
  c.gates = g;
  c.seed = seed;
  return c;
}

// Grouped value attention: `hv` value heads over the case's q/k heads.
LaCase with_hv(LaCase c, int hv) {
  c.HV = hv;
  return c;
}

// A varlen batch of these sequence lengths.
LaCase with_seqs(LaCase c, std::vector<int64_t> lens) {
  c.seq_lens = std::move(lens);
  return c;
}

// q and k as raw projections (rows of norm 2-8), normalised inside the kernel.
LaCase with_l2norm(LaCase c) {
  c.normalized_qk = false;
  c.l2norm_in_kernel = true;
  return c;
}

std::vector<NpuCase> cases() {
  std::vector<NpuCase> out;
  static std::vector<std::string> names;  // every variant of the table, ablation steps included
  if (names.empty()) {
    for (const auto& info : npu_la_variants()) names.emplace_back(info.name);
  }
  for (const std::string& name : names) {
    const char* v = name.c_str();
    out.push_back({v, gdn(1, 1, 16, 16, false, Gates::kMild, 11), 64});
    out.push_back({v, gdn(65, 3, 32, 48, true, Gates::kStrong, 12), 64});
    out.push_back({v, gdn(200, 2, 128, 128, true, Gates::kMild, 13), 64});
    out.push_back({v, gdn(97, 12, 64, 64, false, Gates::kZero, 14), 32});
    out.push_back({v, gdn(50, 1, 128, 16, true, Gates::kMild, 15), 16});
    out.push_back({v, with_hv(gdn(130, 2, 32, 32, true, Gates::kStrong, 16), 6), 64});
    out.push_back({v, with_hv(gdn(70, 4, 64, 64, true, Gates::kMild, 17), 12), 32});
    out.push_back({v, with_l2norm(gdn(150, 3, 64, 64, true, Gates::kMild, 18)), 64});
    out.push_back({v, with_l2norm(with_hv(gdn(60, 1, 32, 48, true, Gates::kStrong, 19), 2)), 32});
    // Heads wider than 128, run as value-column parts: 256 x 256 (4 parts of 64), 192 x 160
    // (2 of 80), and 256-wide grouped value heads.
    out.push_back({v, gdn(70, 2, 256, 256, true, Gates::kMild, 20), 64});
    out.push_back({v, gdn(45, 1, 192, 160, true, Gates::kStrong, 21), 32});
    out.push_back({v, with_hv(gdn(33, 1, 128, 256, true, Gates::kMild, 22), 2), 64});
    // Varlen batches: an empty sequence (its state passes through), unequal and equal lengths.
    out.push_back({v, with_seqs(gdn(0, 2, 32, 48, true, Gates::kStrong, 25), {30, 0, 45}), 32});
    out.push_back(
        {v, with_seqs(with_hv(gdn(0, 1, 64, 64, true, Gates::kMild, 26), 2), {64, 64}), 64});
  }
  return out;
}

LaCase kda(int64_t T, int H, int K, int V, bool s0, Gates g, uint64_t seed) {
  LaCase c = gdn(T, H, K, V, s0, g, seed);
  c.mech = LaMech::kKda;
  return c;
}

std::vector<NpuCase> kda_cases() {
  std::vector<NpuCase> out;
  static std::vector<std::string> names;  // every variant runs KDA as well
  if (names.empty()) {
    for (const auto& info : npu_la_variants()) names.emplace_back(info.name);
  }
  for (const std::string& name : names) {
    const char* v = name.c_str();
    out.push_back({v, kda(1, 1, 16, 16, false, Gates::kMild, 31), 64});
    out.push_back({v, kda(77, 3, 32, 48, true, Gates::kStrong, 32), 64});
    out.push_back({v, kda(150, 2, 128, 128, true, Gates::kMild, 33), 64});
    out.push_back({v, kda(40, 12, 64, 64, false, Gates::kZero, 34), 32});
    out.push_back({v, kda(50, 1, 128, 16, true, Gates::kMild, 35), 16});
    out.push_back({v, with_hv(kda(90, 2, 32, 32, true, Gates::kStrong, 36), 6), 64});
    out.push_back({v, with_hv(kda(70, 4, 64, 64, true, Gates::kMild, 37), 12), 32});
    out.push_back({v, with_l2norm(kda(150, 3, 64, 64, true, Gates::kMild, 38)), 64});
    out.push_back({v, with_l2norm(with_hv(kda(60, 1, 32, 48, true, Gates::kStrong, 39), 2)), 32});
    out.push_back({v, kda(70, 2, 256, 256, true, Gates::kMild, 40), 64});
    out.push_back({v, with_l2norm(kda(45, 1, 192, 160, true, Gates::kStrong, 41)), 32});
    out.push_back({v, with_seqs(kda(0, 2, 32, 32, true, Gates::kMild, 42), {17, 40, 1}), 16});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Kda, NpuParity, ::testing::ValuesIn(kda_cases()), [](const auto& info) {
  std::string n = std::string(info.param.variant) + "_" + std::to_string(info.index);
  for (char& ch : n) ch = ch == '-' ? '_' : ch;
  return n;
});

INSTANTIATE_TEST_SUITE_P(Sweep, NpuParity, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string n = std::string(info.param.variant) + "_" + std::to_string(info.index);
  for (char& ch : n) ch = ch == '-' ? '_' : ch;
  return n;
});

// q, k, v, o fp16; g, beta fp32; initial and final states fp32: what must cross GM at least once.
int64_t compulsory_bytes(int64_t T, int H, int K, int V) {
  return T * H * (2 * K + 2 * V) * 2 + T * H * 2 * 4 + 2 * static_cast<int64_t>(H) * K * V * 4;
}

TEST(NpuTraffic, FusedKernelMovesExactlyTheCompulsoryBytes) {
  LaCase c = gdn(2048, 10, 128, 128, true, Gates::kMild, 21);
  LaData d = make_la_data(c);
  NpuLaStats st;
  ASSERT_TRUE(npu_la_prefill(d.args(), {}, &st).ok());
  EXPECT_EQ(st.gm_bytes(), compulsory_bytes(2048, 10, 128, 128));
  EXPECT_NEAR(static_cast<double>(st.gm_bytes()) / (1 << 20), 21.41,
              0.005);  // HA-NPU Figure 4 (GDN)
  EXPECT_EQ(st.spill_bytes, 0);
  EXPECT_EQ(st.launches, 1);
}

TEST(NpuTraffic, FusedKdaKernelMovesExactlyTheCompulsoryBytes) {
  LaData d = make_la_data(kda(2048, 10, 128, 128, true, Gates::kMild, 26));
  NpuLaStats st;
  const Status s = npu_la_prefill(d.args(), {}, &st);
  ASSERT_TRUE(s.ok()) << s.message();
  // KDA's gate is per key channel: g is [T, H, K] fp32.
  EXPECT_EQ(st.gm_bytes(),
            compulsory_bytes(2048, 10, 128, 128) - 2048 * 10 * 4 + int64_t{2048} * 10 * 128 * 4);
  EXPECT_NEAR(static_cast<double>(st.gm_bytes()) / (1 << 20), 31.33,
              0.005);  // HA-NPU Figure 4 (KDA)
  EXPECT_EQ(st.spill_bytes, 0);
}

TEST(NpuTraffic, FlaMovesMoreAndRunsLonger) {
  LaCase c = gdn(512, 16, 128, 128, true, Gates::kMild, 22);
  LaData d = make_la_data(c);
  NpuLaStats fused, fla;
  ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = "hanpu"}, &fused).ok());
  ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = "fla"}, &fla).ok());
  EXPECT_GT(fla.gm_bytes(), 2 * fused.gm_bytes());
  EXPECT_GT(fla.latency_ms, fused.latency_ms);
  EXPECT_GT(fla.energy_mj, fused.energy_mj);
  EXPECT_EQ(fla.launches, 3);
  NpuLaStats qla;
  ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = "flashqla"}, &qla).ok());
  // One segment at 8 chunks: past the compulsory bytes FlashQLA reads k and beta once more
  // (its kkt_solve, then the walk) and writes and reads A (64 fp16 a row) and the gates'
  // cumsum (fp32) once each; its walk reads K once for W, the state update and Q K^T.
  EXPECT_EQ(qla.gm_bytes(), compulsory_bytes(512, 16, 128, 128) +
                                int64_t{512} * 16 * (128 * 2 + 4 + 2 * 64 * 2 + 2 * 4));
  EXPECT_LT(qla.gm_bytes(), fla.gm_bytes());
  EXPECT_GT(qla.latency_ms, fused.latency_ms);
  // FlashQLA keeps A = (I + L)^-1 [T, H, 64] fp16 and the gates' cumsum [T, H] fp32 in GM
  // (8 chunks: one segment, so no segment states), never W or U: its walks rebuild them.
  EXPECT_EQ(qla.gm_workspace_bytes, int64_t{512} * 16 * 64 * 2 + int64_t{512} * 16 * 4);
  // FLA materialises every chunk's state h in GM (grows with T); the fused kernel needs none.
  EXPECT_GE(fla.gm_workspace_bytes, int64_t{512 / 64} * 16 * 128 * 128 * 2);
  EXPECT_EQ(fused.gm_workspace_bytes, 0);
  // Device memory (Figure 16): the fused kernel holds its inputs, outputs and states only
  // (q, k, v, o fp16; g, beta fp32 [T, H]; the initial and final states fp32), FLA those plus
  // its workspace.
  const int64_t io =
      4 * int64_t{512} * 16 * 128 * 2 + 2 * int64_t{512} * 16 * 4 + 2 * int64_t{16} * 128 * 128 * 4;
  EXPECT_EQ(fused.gm_device_bytes, io);
  EXPECT_EQ(fla.gm_device_bytes, io + fla.gm_workspace_bytes);
  EXPECT_EQ(qla.gm_device_bytes, io + qla.gm_workspace_bytes);
  // Deterministic: the same call measures the same.
  NpuLaStats again;
  ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = "hanpu"}, &again).ok());
  EXPECT_EQ(again.latency_ms, fused.latency_ms);
  EXPECT_EQ(again.gm_bytes(), fused.gm_bytes());
}

// vLLM-Ascend's chain dispatches the eager operators of the reference code it follows: 419
// whatever the shape (the 63-row triangular solve is 378 of them) and 18 a chunk. With a host
// far slower than the device the host sets the pace: the latency is at least the dispatch
// time; with a free host it is the device's alone, which is shorter.
TEST(NpuTraffic, VllmAscendPaysTheHostForEveryEagerOperator) {
  for (const bool kda_mech : {false, true}) {
    LaCase c = kda_mech ? kda(300, 3, 32, 48, true, Gates::kMild, 23)
                        : gdn(300, 3, 32, 48, true, Gates::kMild, 23);
    LaData d = make_la_data(c);
    NpuLaStats st;
    ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = "vllm-ascend"}, &st).ok());
    EXPECT_EQ(st.framework_ops, 419 + 18 * 5);  // 300 tokens: 5 chunks, the last short
    const auto with_host_us = [&](double us, NpuLaStats* out) {
      std::ifstream in(std::string(HANPU_DATA_DIR) + "/npu/ascend-310p.json");
      std::stringstream text;
      text << in.rdbuf();
      std::string json = text.str();
      const std::string key = "\"framework_op_us\": ";
      const size_t at = json.find(key);
      EXPECT_NE(at, std::string::npos);
      const size_t end = json.find(',', at);
      json.replace(at + key.size(), end - at - key.size(), std::to_string(us));
      const std::string path = testing::TempDir() + "ascend-310p-host.json";
      std::ofstream(path) << json;
      return npu_la_prefill(d.args(), {.target = path, .variant = "vllm-ascend"}, out);
    };
    NpuLaStats slow_host, free_host;
    ASSERT_TRUE(with_host_us(1000, &slow_host).ok());
    ASSERT_TRUE(with_host_us(0, &free_host).ok());
    EXPECT_GE(slow_host.latency_ms, (419 + 18 * 5) * 1.0);
    EXPECT_LT(slow_host.latency_ms, (419 + 18 * 5) * 1.0 + 2 * free_host.latency_ms);
    EXPECT_LT(free_host.latency_ms, st.latency_ms);
    NpuLaStats fused;
    ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = "hanpu"}, &fused).ok());
    EXPECT_EQ(fused.framework_ops, 0);
    // Where the time goes: every engine's busy share is in [0, 1], and the cube and the GM
    // loads did some work.
    ASSERT_EQ(fused.engine_busy.size(), 5u);
    for (const auto& [engine, busy] : fused.engine_busy) {
      EXPECT_GE(busy, 0.0) << engine;
      EXPECT_LE(busy, 1.0) << engine;
    }
    EXPECT_GT(fused.engine_busy["cube"], 0.0);
    EXPECT_GT(fused.engine_busy["mte2"], 0.0);
  }
}

// Tier III: with one KDA head on ten cores, keeping it whole leaves nine cores idle and ten
// column parts repeat the heavy intra-chunk work ten times, so the head runs FLA's
// chunk-head-chunk flow over all cores inside the fused kernel's launch (its intermediates
// through GM); with four GDN heads the cheaper parts keep a column split.
TEST(NpuSchedule, ExtremeTailsRunChunkHeadChunk) {
  LaData kd = make_la_data(kda(1024, 1, 128, 128, true, Gates::kMild, 41));
  NpuLaStats fused, mega;
  ASSERT_TRUE(npu_la_prefill(kd.args(), {.variant = "hanpu"}, &fused).ok());
  ASSERT_TRUE(npu_la_prefill(kd.args(), {.variant = "fla-mega"}, &mega).ok());
  EXPECT_EQ(fused.launches, 1);
  EXPECT_GT(fused.gm_workspace_bytes, 0);  // W, U, h, Vn, Aqk of the chunk-split heads
  EXPECT_NEAR(fused.latency_ms, mega.latency_ms,
              0.02 * mega.latency_ms);  // the same flow, one sync more
  std::string plan;
  ASSERT_TRUE(describe_npu_plan("ascend-310p", LaMech::kKda, 1, 1024, 128, 64, &plan).ok());
  EXPECT_NE(plan.find("1 tail head(s) chunk-split over all cores"), std::string::npos) << plan;
  EXPECT_NE(plan.find("then all cores, chunk-head-chunk: h0"), std::string::npos) << plan;
  // With q and k normalised in the kernel the chunk-split head normalises them to GM first
  // (its flow reads them from there), inside the same launch.
  LaData kn = make_la_data(with_l2norm(kda(1024, 1, 128, 128, true, Gates::kMild, 43)));
  kn.poison();
  const ref::LaRefResult want = ref::la_recurrent(kn.args());
  NpuLaStats normed;
  ASSERT_TRUE(npu_la_prefill(kn.args(), {.variant = "hanpu"}, &normed).ok());
  EXPECT_LE(nmse(want.o, kn.o_as_double()), 1e-5);
  EXPECT_LE(nmse(want.final_state, kn.s1), 1e-5);
  EXPECT_EQ(normed.launches, 1);
  EXPECT_EQ(normed.gm_workspace_bytes, fused.gm_workspace_bytes + 2 * int64_t{1024} * 128 * 2);
  LaData gd = make_la_data(gdn(1024, 4, 128, 128, true, Gates::kMild, 42));
  NpuLaStats g;
  ASSERT_TRUE(npu_la_prefill(gd.args(), {.variant = "hanpu"}, &g).ok());
  EXPECT_EQ(g.gm_workspace_bytes, 0);
  ASSERT_TRUE(describe_npu_plan("ascend-310p", LaMech::kGdn, 4, 1024, 128, 64, &plan).ok());
  EXPECT_EQ(plan.find("chunk-split"), std::string::npos) << plan;
}

// 16 heads on 10 cores: the paper splits the 6 tail heads by value columns over all cores;
// the planner keeps them whole because every part repeats the chunk's inverse (and KDA's
// intra-chunk products) and re-reads q and k. Both run; the planner's is the faster, and the
// split moves more GM bytes.
TEST(NpuSchedule, PlannersTailBeatsThePapersColumnSplitAtSixteenHeads) {
  for (bool is_kda : {false, true}) {
    LaData d = make_la_data(is_kda ? kda(512, 16, 128, 128, false, Gates::kMild, 61)
                                   : gdn(512, 16, 128, 128, false, Gates::kMild, 62));
    NpuLaStats planned, split;
    ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = "hanpu"}, &planned).ok());
    ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = "hanpu-colsplit"}, &split).ok());
    EXPECT_LT(planned.latency_ms, split.latency_ms) << (is_kda ? "kda" : "gdn");
    EXPECT_LT(planned.gm_bytes(), split.gm_bytes()) << (is_kda ? "kda" : "gdn");
  }
}

// HA-NPU Figure 18's steps at its shape (T = 1024, H = 16): each technique cuts latency from
// the step before it except head mapping over FLA (see docs/npu-model.md for why the model's
// FLA port is faster than the paper's); FLA's order spills on the core, the reordered ones do not.
TEST(NpuAblation, ReorderingAndLayoutPlanEachHelp) {
  LaData d = make_la_data(gdn(1024, 16, 128, 128, false, Gates::kMild, 25));
  std::map<std::string, NpuLaStats> r;
  for (const char* v : {"fla", "hanpu-fused", "hanpu-reordered", "hanpu"}) {
    ASSERT_TRUE(npu_la_prefill(d.args(), {.variant = v}, &r[v]).ok()) << v;
  }
  EXPECT_GT(r["hanpu-fused"].spill_bytes, 0);
  EXPECT_EQ(r["hanpu-reordered"].spill_bytes, 0);
  EXPECT_LT(r["hanpu-fused"].gm_bytes(), r["fla"].gm_bytes());
  EXPECT_LT(r["hanpu-reordered"].gm_bytes(), r["hanpu-fused"].gm_bytes());
  EXPECT_LT(r["hanpu-reordered"].latency_ms, r["hanpu-fused"].latency_ms);
  EXPECT_LT(r["hanpu"].latency_ms, r["hanpu-reordered"].latency_ms);
  EXPECT_LT(r["hanpu"].latency_ms, r["fla"].latency_ms);
}

TEST(NpuErrors, BadCallsAreNamed) {
  LaData d = make_la_data(gdn(40, 2, 32, 32, false, Gates::kMild, 23));
  const auto err = [&](const NpuLaOptions& o) {
    return npu_la_prefill(d.args(), o, nullptr).message();
  };
  EXPECT_NE(err({.variant = "nope"}).find("unknown variant 'nope'"), std::string::npos);
  EXPECT_NE(err({.target = "ascend-999"}).find("ascend-999"), std::string::npos);
  EXPECT_NE(err({.chunk_size = 128}).find("chunk_size 128"), std::string::npos);
  LaData wide = make_la_data(gdn(8, 1, 272, 16, false, Gates::kMild, 24));
  EXPECT_NE(npu_la_prefill(wide.args(), {}, nullptr).message().find("K = 272"), std::string::npos);
  // A varlen batch whose rectangle (sequences by the longest) would pad past 4x its tokens.
  LaCase skew = gdn(0, 1, 16, 16, false, Gates::kMild, 27);
  skew.seq_lens = {100, 1, 1, 1, 1, 1, 1, 1, 1};
  LaData skewed = make_la_data(skew);
  EXPECT_NE(npu_la_prefill(skewed.args(), {}, nullptr).message().find("padded to 900 rows"),
            std::string::npos);
  // Offsets that go backwards.
  LaData back = make_la_data(gdn(64, 1, 16, 16, false, Gates::kMild, 28));
  LaArgs args = back.args();
  args.cu_seqlens = {0, 30, 20, 64};
  EXPECT_NE(npu_la_prefill(args, {}, nullptr).message().find("cu_seqlens[2] = 20"),
            std::string::npos);
}

}  // namespace
}  // namespace hanpu::test
