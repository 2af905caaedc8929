// STEEL and its baselines on the spatial model: outputs against the float64 reference on the
// same bf16 inputs (odd sizes, causal and unmasked, both targets, both placements; the output
// poisoned first), placement never changes the output, causal blocks are skipped in compute
// but not in the K/V streams, sparsity-aware placement is never slower than uniform on
// causal inputs, STEEL's pipeline layout, steel beats dato and layer, the layer baseline's
// design switches, and bad calls are named.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <random>
#include <vector>

#include "hanpu/npu.h"
#include "ref/attn_ref.h"

namespace hanpu {
namespace {

struct Data {
  std::vector<uint16_t> q, k, v;  // bf16
  std::vector<float> o;
  int64_t T;
  int H;
  AttnArgs args(AttnMask mask) {
    AttnArgs a;
    const Shape s{T, H, 64};
    a.q = {q.data(), DType::kBF16, s};
    a.k = {k.data(), DType::kBF16, s};
    a.v = {v.data(), DType::kBF16, s};
    a.o = {o.data(), DType::kF32, s};
    a.mask = mask;
    return a;
  }
};

Data make(int64_t T, int H, uint64_t seed) {
  Data d;
  d.T = T;
  d.H = H;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const size_t count = static_cast<size_t>(T) * H * 64;
  for (auto* t : {&d.q, &d.k, &d.v}) {
    t->resize(count);
    for (auto& x : *t) x = f32_to_bf16_bits(n(rng));
  }
  d.o.assign(count,
             std::numeric_limits<float>::quiet_NaN());  // poisoned: every row must be written
  return d;
}

double nmse(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = got[i] - want[i];
    num += e * e;
    den += want[i] * want[i];
  }
  return num / den;  // NaN anywhere makes this NaN, which fails every comparison
}

TEST(NpuAttn, MatchesFloat64Reference) {
  for (const char* target : {"xdna1", "xdna2"}) {
    for (AttnMask mask : {AttnMask::kCausal, AttnMask::kNone}) {
      for (auto [T, H] : {std::pair<int64_t, int>{1, 1}, {17, 2}, {64, 1}, {100, 3}, {333, 2}}) {
        for (const char* placement : {"uniform", "sparsity-aware"}) {
          Data d = make(T, H, 100 + T * 7 + H);
          const AttnArgs a = d.args(mask);
          NpuAttnStats st;
          ASSERT_TRUE(npu_attn_prefill(a, {.target = target, .placement = placement}, &st).ok());
          const double e = nmse(d.o, ref::attention(a).o);
          // bf16 operands as the reference; P is passed between stages in bf16 (STEEL's
          // kernels), which sets the error.
          EXPECT_LT(e, 2e-5) << target << " T " << T << " H " << H << " " << placement;
          EXPECT_GT(st.latency_ms, 0);
          EXPECT_GT(st.offchip_bytes, 0);
        }
      }
    }
  }
}

TEST(NpuAttn, PlacementNeverChangesOutputs) {
  Data d = make(2048, 2, 7);
  const AttnArgs a = d.args(AttnMask::kCausal);
  NpuAttnStats uni, sa;
  ASSERT_TRUE(npu_attn_prefill(a, {.placement = "uniform"}, &uni).ok());
  const std::vector<float> first = d.o;
  ASSERT_TRUE(npu_attn_prefill(a, {.placement = "sparsity-aware"}, &sa).ok());
  EXPECT_EQ(first, d.o);  // bit-identical: placement decides who computes a block, not how
  EXPECT_EQ(uni.macs, sa.macs);
  EXPECT_EQ(uni.offchip_bytes, sa.offchip_bytes);
  // Causal blocks above the diagonal are skipped: half the MACs of the unmasked run, plus
  // the diagonal blocks' halves.
  Data n = make(2048, 2, 7);
  NpuAttnStats full;
  ASSERT_TRUE(npu_attn_prefill(n.args(AttnMask::kNone), {}, &full).ok());
  const double blocks = 32;
  EXPECT_NEAR(sa.macs / full.macs, (blocks + 1) / (2 * blocks), 1e-12);
  // Every K/V tile still streams for every wave (as the public code does): the same bytes.
  EXPECT_EQ(sa.offchip_bytes, full.offchip_bytes);
  // With 32-bit streams the K/V broadcast, not the compute, paces this model (see
  // docs/npu-model.md): consumers wait on it, so the producer-side stall is what the
  // broadcast's slowest consumer adds on top.
  EXPECT_LT(sa.compute_util, 0.5);
}

TEST(NpuAttn, LayerBaselineIsCorrectAndSteelBeatsIt) {
  for (auto [T, H] : {std::pair<int64_t, int>{17, 2}, {130, 1}}) {
    Data d = make(T, H, 300 + T);
    const AttnArgs a = d.args(AttnMask::kCausal);
    ASSERT_TRUE(npu_attn_prefill(a, {.variant = "layer"}, nullptr).ok());
    // S and P stored as bf16 between the kernels.
    EXPECT_LT(nmse(d.o, ref::attention(a).o), 5e-5) << T;
  }
  for (const char* target : {"xdna1", "xdna2"}) {
    Data d = make(1024, 2, 11);
    const AttnArgs a = d.args(AttnMask::kCausal);
    NpuAttnStats steel, layer;
    ASSERT_TRUE(npu_attn_prefill(a, {.target = target, .variant = "steel"}, &steel).ok());
    ASSERT_TRUE(npu_attn_prefill(a, {.target = target, .variant = "layer"}, &layer).ok());
    EXPECT_LT(steel.latency_ms, layer.latency_ms) << target;
    EXPECT_LT(4 * steel.offchip_bytes, layer.offchip_bytes) << target;  // S and P through DRAM
    EXPECT_EQ(layer.placement, "none");
  }
}

// xdna2's file with `from` replaced by `to`, written to a temporary file `name`.
std::string xdna2_with(const std::string& from, const std::string& to, const std::string& name) {
  std::ifstream in(std::string(HANPU_DATA_DIR) + "/npu/xdna2.json");
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  EXPECT_NE(json.find(from), std::string::npos) << from;
  if (json.find(from) != std::string::npos) json.replace(json.find(from), from.size(), to);
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << json;
  return path;
}

std::string xdna2_with_switch(const std::string& us) {
  return xdna2_with("\"design_switch_us\": 110.0,", "\"design_switch_us\": " + us + ",",
                    "xdna2-switch-" + us + ".json");
}

TEST(NpuAttn, LayerBaselineLoadsADesignAtEachOfItsFourLaunches) {
  // GEMM, scale, softmax, GEMM (STEEL's Figure 5 baseline from IRON operators): each launch
  // loads its own design, in the latency once each; STEEL and DATO run one design.
  Data d = make(200, 3, 21);
  const AttnArgs a = d.args(AttnMask::kCausal);
  const std::string none = xdna2_with_switch("0"), slow = xdna2_with_switch("1000");
  NpuAttnStats layer0, layer1, steel0, steel1, dato;
  ASSERT_TRUE(npu_attn_prefill(a, {.target = none, .variant = "layer"}, &layer0).ok());
  ASSERT_TRUE(npu_attn_prefill(a, {.target = slow, .variant = "layer"}, &layer1).ok());
  ASSERT_TRUE(npu_attn_prefill(a, {.target = none, .variant = "steel"}, &steel0).ok());
  ASSERT_TRUE(npu_attn_prefill(a, {.target = slow, .variant = "steel"}, &steel1).ok());
  ASSERT_TRUE(npu_attn_prefill(a, {.target = slow, .variant = "dato"}, &dato).ok());
  EXPECT_EQ(layer1.design_switches, 4);
  EXPECT_EQ(steel1.design_switches, 0);
  EXPECT_EQ(dato.design_switches, 0);
  EXPECT_NEAR(layer1.latency_ms - layer0.latency_ms, 4 * 1.0, 1e-9);
  EXPECT_EQ(steel1.latency_ms, steel0.latency_ms);
  EXPECT_GT(layer1.energy_mj, layer0.energy_mj);  // the array idles through the switches
  // DRAM tiles (64 x 64 bf16) a head: Q K^T reads two a product and writes S; the scale
  // reads and writes S; the softmax reads S twice and writes P; P V reads two a product and
  // writes O a query block.
  const int64_t nb = (200 + 63) / 64, tile = 64 * 64 * 2;
  EXPECT_EQ(layer0.offchip_bytes, 3 * (10 * nb * nb + nb) * tile);
}

TEST(NpuAttn, SteelRunsThePapersPipelineLayout) {
  // 10 three-stage pipelines on XDNA2 (STEEL §IV-B: 30 of 32 cores), 6 on XDNA1 (§V-C).
  for (auto [target, tiles] : {std::pair<const char*, int>{"xdna2", 30}, {"xdna1", 18}}) {
    Data d = make(64 * 12, 1, 5);
    NpuAttnStats st;
    ASSERT_TRUE(npu_attn_prefill(d.args(AttnMask::kNone), {.target = target}, &st).ok());
    EXPECT_EQ(st.busy_tiles, tiles) << target;
  }
}

TEST(NpuAttn, ADesignNeedingMorePortsThanTheArrayHasIsRefused) {
  // xdna2 with three channels each way per mem tile: STEEL's Q/O groups shrink to 2
  // pipelines and fill five mem tiles, one of which V's broadcast also needs. The design is
  // refused, naming the tile that ran out, and nothing is run or written.
  const std::string path = xdna2_with(
      "\"mem_tile\": {\"bytes\": 524288, \"dma_in\": 6, \"dma_out\": 6}",
      "\"mem_tile\": {\"bytes\": 524288, \"dma_in\": 3, \"dma_out\": 3}", "xdna2-few-ports.json");
  Data d = make(128, 1, 3);
  const Status st = npu_attn_prefill(d.args(AttnMask::kCausal), {.target = path}, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("DMA channels"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("mem tile (2, 1) needs 4 of its 3"), std::string::npos)
      << st.message();
  for (float x : d.o) ASSERT_TRUE(std::isnan(x));  // nothing written
}

TEST(NpuAttn, SparsityAwareIsNeverSlowerThanUniformOnCausalInputs) {
  // The built-in targets, and a study where each stage's work on a tile outlasts the tile's
  // broadcast (STEEL's stated 64 MACs/cycle): there the placement must also pay off.
  const std::string study = std::string(HANPU_DATA_DIR) + "/npu/studies/xdna2-steel-rate.json";
  for (const std::string& target : {std::string("xdna1"), std::string("xdna2"), study}) {
    for (auto [T, H] : {std::pair<int64_t, int>{200, 2}, {640, 1}, {1000, 1}, {1500, 2}}) {
      Data d = make(T, H, 40 + T);
      const AttnArgs a = d.args(AttnMask::kCausal);
      NpuAttnStats uni, sa;
      ASSERT_TRUE(npu_attn_prefill(a, {.target = target, .placement = "uniform"}, &uni).ok());
      ASSERT_TRUE(npu_attn_prefill(a, {.target = target, .placement = "sparsity-aware"}, &sa).ok());
      EXPECT_LE(sa.latency_ms, uni.latency_ms) << target << " T " << T << " H " << H;
      if (target == study && T >= 1500) {
        EXPECT_LT(sa.latency_ms, 0.9 * uni.latency_ms) << T;
      }
    }
  }
}

TEST(NpuAttn, DatoIsCorrectAndSteelBeatsItOnXdna1) {
  for (AttnMask mask : {AttnMask::kCausal, AttnMask::kNone}) {
    for (auto [T, H] : {std::pair<int64_t, int>{1, 1}, {33, 2}, {130, 1}}) {
      Data d = make(T, H, 500 + T);
      const AttnArgs a = d.args(mask);
      NpuAttnStats st;
      ASSERT_TRUE(npu_attn_prefill(a, {.target = "xdna1", .variant = "dato"}, &st).ok());
      // DATO keeps the running output and row sums in bf16 (allo's Ty), which sets the error.
      EXPECT_LT(nmse(d.o, ref::attention(a).o), 1e-4) << T;
      EXPECT_EQ(st.placement, "none");
    }
  }
  Data d = make(1024, 2, 13);
  const AttnArgs a = d.args(AttnMask::kCausal);
  NpuAttnStats steel, dato;
  ASSERT_TRUE(npu_attn_prefill(a, {.target = "xdna1", .variant = "steel"}, &steel).ok());
  ASSERT_TRUE(npu_attn_prefill(a, {.target = "xdna1", .variant = "dato"}, &dato).ok());
  EXPECT_LT(2 * steel.latency_ms, dato.latency_ms);
  EXPECT_NEAR(dato.macs, 2.0 * 2 * 1024 * 1024 * 64,
              1);                  // nothing skipped: every chunk, both products
  EXPECT_EQ(dato.busy_tiles, 16);  // four columns of four stages
}

TEST(NpuAttn, BadCallsAreNamed) {
  Data d = make(64, 1, 9);
  AttnArgs a = d.args(AttnMask::kCausal);
  const auto err = [&](const AttnArgs& x, const NpuAttnOptions& o) {
    return npu_attn_prefill(x, o, nullptr).message();
  };
  EXPECT_NE(err(a, {.placement = "random"}).find("unknown placement 'random'"), std::string::npos);
  EXPECT_NE(
      err(a, {.variant = "flash"}).find("unknown variant 'flash' (one of: steel, dato, layer)"),
      std::string::npos);
  EXPECT_NE(err(a, {.target = "ascend-310p"}).find("kind must be \"spatial\""), std::string::npos);
  AttnArgs sliding = a;
  sliding.mask = AttnMask::kSliding;
  EXPECT_NE(err(sliding, {}).find("masks none and causal"), std::string::npos);
  std::vector<uint16_t> wide(64 * 128);
  std::vector<float> wo(64 * 128);
  AttnArgs w = a;
  w.q = w.k = w.v = {wide.data(), DType::kBF16, {64, 1, 128}};
  w.o = {wo.data(), DType::kF32, {64, 1, 128}};
  EXPECT_NE(err(w, {}).find("D = 128"), std::string::npos);
  // A program too long to hold in memory is refused before anything runs.
  Data big = make(131072, 1, 1);
  EXPECT_NE(err(big.args(AttnMask::kCausal), {}).find("would record ~101 M events"),
            std::string::npos)
      << err(big.args(AttnMask::kCausal), {});
  AttnArgs mismatch = a;
  mismatch.k.shape = {32, 1, 64};
  EXPECT_NE(err(mismatch, {}).find("must all be [T, H, D]"), std::string::npos);
}

}  // namespace
}  // namespace hanpu
