// The whole prefill's other kernels on the simulated Ascend cores: the cube projection and
// fused full attention, each against a float64 reference on the same fp16 inputs (odd sizes,
// outputs poisoned first, NaN never passes), their GM traffic exact, the NZ weight's bursts
// as the simulator defines them, and bad calls named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <limits>
#include <random>
#include <vector>

#include "hanpu/dtype.h"
#include "hanpu/npu.h"
#include "hybrid_shape_util.h"
#include "la_test_util.h"
#include "npu/kernels/attn_ascend.h"
#include "npu/kernels/cube_gemm.h"
#include "npu/kernels/gdn_decode.h"
#include "npu/kernels/row_pass.h"
#include "npu/machine/npu_machine.h"
#include "npu/sim/npu_sim.h"

namespace hanpu::npu {
namespace {

float f16(float x) { return f16_bits_to_f32(f32_to_f16_bits(x)); }

void fill_random(GmTensor* t, std::mt19937_64& rng, float sd) {
  std::normal_distribution<float> n(0.0f, sd);
  for (float& x : t->v) x = f16(n(rng));
}

void poison(GmTensor* t) {
  for (float& x : t->v) x = std::numeric_limits<float>::quiet_NaN();
}

NpuMachine ascend() {
  NpuMachine m;
  EXPECT_TRUE(load_npu_machine("ascend-310p", &m).ok());
  return m;
}

struct GemmCase {
  int64_t M, K, N;
};

TEST(CubeGemm, MatchesFloat64OnOddShapesWithExactTraffic) {
  const NpuMachine m = ascend();
  std::mt19937_64 rng(0x6e6d);
  for (const GemmCase c : {GemmCase{1, 16, 16}, GemmCase{37, 80, 50}, GemmCase{130, 600, 270},
                           GemmCase{257, 1040, 530}}) {
    SCOPED_TRACE(testing::Message() << "M " << c.M << " K " << c.K << " N " << c.N);
    NpuSim sim(m);
    GmTensor *x = sim.gm("x", c.M, c.K, true), *w = sim.gm("w", c.K, c.N, true),
             *y = sim.gm("y", c.M, c.N, true);
    w->nz = true;
    fill_random(x, rng, 1.0f);
    fill_random(w, rng, 0.05f);
    poison(y);
    sim.launch();
    const Status st = cube_gemm(sim, x, w, y);
    ASSERT_TRUE(st.ok()) << st.message();
    const SimStats s = sim.finish();
    std::vector<double> want(static_cast<size_t>(c.M * c.N));
    for (int64_t i = 0; i < c.M; ++i) {
      for (int64_t j = 0; j < c.N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < c.K; ++k)
          acc += static_cast<double>(x->v[i * c.K + k]) * w->v[k * c.N + j];
        want[i * c.N + j] = acc;
      }
    }
    // fp32 sums rounded once to fp16: about 2^-12 relative, squared.
    EXPECT_LT(test::nmse(want, y->v), 1e-6);
    // x is read once per column tile and w once per row tile; y written once.
    const GemmTiling t = gemm_tiling(m, c.M, c.K, c.N);
    const int64_t row_tiles = (c.M + t.bm - 1) / t.bm, col_tiles = (c.N + t.bn - 1) / t.bn;
    EXPECT_EQ(s.gm_read_bytes, 2 * (col_tiles * c.M * c.K + row_tiles * c.K * c.N));
    EXPECT_EQ(s.gm_write_bytes, 2 * c.M * c.N);
    EXPECT_GT(s.cube_util, 0);
    EXPECT_LE(s.cube_util, 1);
  }
}

// A large product runs near the larger of its two bounds (the busiest core's cube time, its
// GM bytes at the chip's rate): loads overlap the multiplies, and the tiling picks the bound.
TEST(CubeGemm, RunsNearItsRoofline) {
  const NpuMachine m = ascend();
  for (const GemmCase c :
       {GemmCase{1024, 1024, 2560}, GemmCase{512, 2048, 6144}, GemmCase{2048, 512, 512}}) {
    SCOPED_TRACE(testing::Message() << "M " << c.M << " K " << c.K << " N " << c.N);
    NpuSim sim(m);
    GmTensor *x = sim.gm("x", c.M, c.K, true), *w = sim.gm("w", c.K, c.N, true),
             *y = sim.gm("y", c.M, c.N, true);
    w->nz = true;
    sim.launch();
    const Status st = cube_gemm(sim, x, w, y);
    ASSERT_TRUE(st.ok()) << st.message();
    const SimStats s = sim.finish();
    const double cube = s.engine_busy_cycles[static_cast<int>(Engine::kCube)] / m.cores;
    const double gm =
        static_cast<double>(s.gm_read_bytes + s.gm_write_bytes) / (m.gm_gbps / m.clock_ghz);
    EXPECT_LT(s.latency_cycles, 1.3 * std::max(cube, gm))
        << "cube " << cube << " gm " << gm << " util " << s.cube_util;
  }
}

TEST(CubeGemm, RefusesBadOperandsByName) {
  const NpuMachine m = ascend();
  NpuSim sim(m);
  GmTensor *x = sim.gm("x", 8, 32, true), *w = sim.gm("w", 32, 16, true),
           *y = sim.gm("y", 8, 16, true), *y2 = sim.gm("y2", 8, 17, true);
  Status s = cube_gemm(sim, x, w, y);
  EXPECT_NE(s.message().find("NZ order"), std::string::npos) << s.message();  // w not NZ
  w->nz = true;
  s = cube_gemm(sim, x, w, y2);
  EXPECT_NE(s.message().find("y2 [8 x 17]"), std::string::npos) << s.message();
  s = cube_gemm(sim, x, w, y, GemmTiling{.bm = 100});
  EXPECT_NE(s.message().find("multiples of 16"), std::string::npos) << s.message();
  // An NZ tensor goes only into NZ tiles in L1.
  Tile* u;
  ASSERT_TRUE(sim.alloc(0, Buf::kUB, 8, 16, true, Layout::kND, "u", &u).ok());
  s = sim.load(u, {w, 0, 8, 0, 16});
  EXPECT_NE(s.message().find("NZ tiles in L1"), std::string::npos) << s.message();
}

// An NZ weight block moves as one burst per 16-column strip, or one in all when it spans every
// row; a row-major block of the same shape pays a burst a row.
TEST(CubeGemm, AnNzWeightMovesInStrips) {
  NpuMachine m = ascend();
  m.dma_burst_setup_cycles = 100;
  m.dma_min_burst_bytes = 512;
  const auto cycles = [&](bool nz, int64_t rows) {
    NpuSim sim(m);
    GmTensor* w = sim.gm("w", rows, 1024, true);
    w->nz = nz;
    Tile* t = nullptr;
    EXPECT_TRUE(sim.alloc(0, Buf::kL1, 64, 128, true, Layout::kNZ, "t", &t).ok());
    EXPECT_TRUE(sim.load(t, {w, 0, 64, 0, 128}).ok());
    return sim.finish().latency_cycles;
  };
  const double rate = m.path_bytes_per_cycle(Path::kGmToL1), bytes = 64 * 128 * 2;
  EXPECT_NEAR(cycles(true, 64), m.gm_latency_cycles + bytes / rate + 100, 1e-6);
  EXPECT_NEAR(cycles(true, 512), m.gm_latency_cycles + bytes / rate + 8 * 100, 1e-6);
  // Row-major: 64 bursts of 256 B, each taken as 512.
  EXPECT_NEAR(cycles(false, 512), m.gm_latency_cycles + 64 * 512 / rate + 64 * 100, 1e-6);
}

struct AttnCase {
  int64_t T;
  int Hq, Hkv, D;
  bool causal;
};

std::vector<double> attention_reference(const AscendAttnGm& g) {
  const int group = g.Hq / g.Hkv;
  const int64_t Tk = g.Tk > 0 ? g.Tk : g.T;
  std::vector<double> o(static_cast<size_t>(g.T) * g.Hq * g.D);
  std::vector<double> s(static_cast<size_t>(Tk));
  for (int h = 0; h < g.Hq; ++h) {
    const int64_t qc = static_cast<int64_t>(h) * g.D, kc = static_cast<int64_t>(h / group) * g.D;
    for (int64_t i = 0; i < g.T; ++i) {
      const int64_t n = g.causal ? Tk - g.T + i + 1 : Tk;
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        double d = 0;
        for (int e = 0; e < g.D; ++e)
          d += static_cast<double>(g.q->v[i * g.q->cols + qc + e]) * g.k->v[j * g.k->cols + kc + e];
        s[j] = d * g.scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += s[j] = std::exp(s[j] - mx);
      for (int e = 0; e < g.D; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += s[j] * g.v->v[j * g.v->cols + kc + e];
        o[i * g.o->cols + qc + e] = acc / sum;
      }
    }
  }
  return o;
}

AscendAttnGm attn_tensors(NpuSim& sim, const AttnCase& c, std::mt19937_64& rng, int64_t Tk = 0) {
  AscendAttnGm g;
  g.T = c.T;
  g.Tk = Tk;
  g.Hq = c.Hq;
  g.Hkv = c.Hkv;
  g.D = c.D;
  g.causal = c.causal;
  g.scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  g.q = sim.gm("q", c.T, int64_t{c.Hq} * c.D, true);
  g.k = sim.gm("k", Tk > 0 ? Tk : c.T, int64_t{c.Hkv} * c.D, true);
  g.v = sim.gm("v", Tk > 0 ? Tk : c.T, int64_t{c.Hkv} * c.D, true);
  g.o = sim.gm("o", c.T, int64_t{c.Hq} * c.D, true);
  for (GmTensor* t : {g.q, g.k, g.v}) fill_random(t, rng, 1.0f);
  poison(g.o);
  return g;
}

TEST(AscendAttention, MatchesFloat64OnOddShapes) {
  const NpuMachine m = ascend();
  std::mt19937_64 rng(0xa77e);
  for (const AttnCase c :
       {AttnCase{1, 1, 1, 16, true}, AttnCase{70, 2, 1, 64, true}, AttnCase{200, 4, 2, 256, true},
        AttnCase{130, 2, 2, 48, false}, AttnCase{129, 3, 1, 128, true}}) {
    SCOPED_TRACE(testing::Message() << "T " << c.T << " heads " << c.Hq << "/" << c.Hkv << " D "
                                    << c.D << (c.causal ? " causal" : " unmasked"));
    NpuSim sim(m);
    const AscendAttnGm g = attn_tensors(sim, c, rng);
    sim.launch();
    ASSERT_TRUE(ascend_flash_attention(sim, g).ok());
    const SimStats s = sim.finish();
    // P rounded to fp16 for the cube and O to fp16 on the way out: ~1e-7 when right.
    EXPECT_LT(test::nmse(attention_reference(g), g.o->v), 1e-5);
    EXPECT_GT(s.latency_ms, 0);
    // The estimate callers bound a run with is an upper one, and not a loose one.
    const double est = ascend_attention_events(g);
    EXPECT_LE(static_cast<double>(s.instructions), est);
    EXPECT_GE(static_cast<double>(s.instructions), 0.5 * est);
  }
}

// Queries after a cache of keys (a decode step, a chunk of a longer prefill): query i sits
// at Tk - T + i and attends to every key up to it.
TEST(AscendAttention, QueriesAfterACacheMatchFloat64) {
  const NpuMachine m = ascend();
  std::mt19937_64 rng(0xdec0);
  for (const auto& [c, Tk] : {std::pair{AttnCase{1, 8, 2, 256, true}, int64_t{300}},
                              std::pair{AttnCase{70, 4, 2, 64, true}, int64_t{200}},
                              std::pair{AttnCase{3, 2, 2, 32, false}, int64_t{40}}}) {
    SCOPED_TRACE(testing::Message() << "T " << c.T << " after " << Tk - c.T);
    NpuSim sim(m);
    const AscendAttnGm g = attn_tensors(sim, c, rng, Tk);
    sim.launch();
    const Status st = ascend_flash_attention(sim, g);
    ASSERT_TRUE(st.ok()) << st.message();
    sim.finish();
    EXPECT_LT(test::nmse(attention_reference(g), g.o->v), 1e-5);
  }
}

// Skipping the key blocks above the diagonal changes no output bit, and saves cube work and
// time; GM reads drop with the K and V blocks not loaded.
TEST(AscendAttention, SkippingMaskedBlocksChangesNothingButTheWork) {
  const NpuMachine m = ascend();
  std::mt19937_64 rng(7);
  const AttnCase c{520, 4, 2, 128, true};
  SimStats st[2];
  std::vector<float> out[2];
  for (int skip = 0; skip < 2; ++skip) {
    std::mt19937_64 same = rng;
    NpuSim sim(m);
    const AscendAttnGm g = attn_tensors(sim, c, same);
    sim.launch();
    ASSERT_TRUE(ascend_flash_attention(sim, g, {.skip_masked = skip == 1}).ok());
    st[skip] = sim.finish();
    out[skip] = g.o->v;
  }
  EXPECT_EQ(out[0], out[1]);
  EXPECT_LT(st[1].cube_macs, 0.7 * st[0].cube_macs);
  EXPECT_LT(st[1].latency_ms, st[0].latency_ms);
  EXPECT_LT(st[1].gm_read_bytes, st[0].gm_read_bytes);
}

TEST(AscendAttention, RefusesBadShapesByName) {
  const NpuMachine m = ascend();
  std::mt19937_64 rng(1);
  NpuSim sim(m);
  AscendAttnGm g = attn_tensors(sim, {32, 3, 2, 64, true}, rng);
  Status s = ascend_flash_attention(sim, g);
  EXPECT_NE(s.message().find("3 query heads over 2 kv heads"), std::string::npos) << s.message();
  g = attn_tensors(sim, {32, 2, 1, 64, true}, rng);
  g.D = 60;
  s = ascend_flash_attention(sim, g);
  EXPECT_NE(s.message().find("D 60"), std::string::npos) << s.message();
  g.D = 64;
  s = ascend_flash_attention(sim, g, {.rows = 20});
  EXPECT_NE(s.message().find("multiples of 16"), std::string::npos) << s.message();
  // A run whose events would not fit memory is refused before anything is recorded.
  AscendAttnGm big = g;
  big.T = 1 << 20;
  EXPECT_GT(ascend_attention_events(big), kMaxAttentionEvents);
}

// Regions split the replayed timeline: their times add up to the latency, and a region whose
// operator the host dispatches slowly carries that wait.
TEST(NpuSim, RegionsSplitTheTimeline) {
  const NpuMachine m = ascend();
  NpuSim sim(m);
  GmTensor* x = sim.gm("x", 64, 256, false);
  Tile* t;
  ASSERT_TRUE(sim.alloc(0, Buf::kUB, 64, 256, false, Layout::kND, "t", &t).ok());
  sim.region("host-bound");
  sim.launch(3);
  ASSERT_TRUE(sim.load(t, {x, 0, 64, 0, 256}).ok());
  sim.region("device-bound");
  sim.launch();
  ASSERT_TRUE(sim.vector({t}, {t}, int64_t{400} * t->bytes, false, [] {}).ok());
  const SimStats s = sim.finish();
  ASSERT_EQ(s.region_ms.size(), 2u);
  EXPECT_EQ(s.region_ms[0].first, "host-bound");
  EXPECT_NEAR(s.region_ms[0].second + s.region_ms[1].second, s.latency_ms, 1e-9);
  EXPECT_GE(s.region_ms[0].second, 3 * m.framework_op_us * 1e-3);
  EXPECT_GT(s.region_ms[1].second,
            400.0 * t->bytes / m.vector_bytes_per_cycle / m.clock_ghz * 1e-6);
}

// A row pass with a halo (a causal moving sum over 3 rows) in blocks smaller than T: every
// output row sees the rows before it across block edges, and no row past the top.
TEST(RowPass, BlocksSeeTheirHaloAcrossEdges) {
  const NpuMachine m = ascend();
  NpuSim sim(m);
  const int64_t T = 1000;
  const int C = 48;
  GmTensor *x = sim.gm("x", T, C, false), *y = sim.gm("y", T, C, false);
  std::mt19937_64 rng(3);
  fill_random(x, rng, 1.0f);
  poison(y);
  RowPass p;
  p.in = {{x, 0, C}};
  p.out = {{y, 0, C}};
  p.halo = 2;
  int blocks = 0;
  p.fn = [&](const std::vector<Tile*>& in, const std::vector<Tile*>&, const std::vector<Tile*>& out,
             int halo, int64_t) {
    ++blocks;
    for (int i = 0; i < out[0]->rows; ++i) {
      for (int c = 0; c < C; ++c) {
        float acc = 0;
        for (int j = 0; j < 3; ++j) {
          const int r = halo + i - 2 + j;
          if (r >= 0) acc += in[0]->at(r, c);
        }
        out[0]->at(i, c) = acc;
      }
    }
  };
  sim.launch();
  ASSERT_TRUE(row_pass(sim, T, p).ok());
  sim.finish();
  EXPECT_GT(blocks, 1);
  for (int64_t t = 0; t < T; ++t) {
    for (int c = 0; c < C; ++c) {
      double want = 0;
      for (int64_t j = std::max<int64_t>(0, t - 2); j <= t; ++j) want += x->v[j * C + c];
      ASSERT_NEAR(y->v[t * C + c], want, 1e-4) << "row " << t << " col " << c;
    }
  }
}

// The decode step against a float64 delta rule on the same fp16 inputs: grouped value heads,
// q and k normalised in the kernel, the state updated in place.
TEST(GdnDecode, MatchesFloat64) {
  const NpuMachine m = ascend();
  std::mt19937_64 rng(0x5eed);
  NpuSim sim(m);
  GdnGm gm;
  gm.T = 1;
  gm.H = 4;
  gm.K = 32;
  gm.V = 48;
  gm.group = 2;
  gm.qk_l2norm = true;
  gm.scale = 0.2f;
  gm.q = sim.gm("q", 1, 2 * 32, true);
  gm.k = sim.gm("k", 1, 2 * 32, true);
  gm.v = sim.gm("v", 1, 4 * 48, true);
  gm.o = sim.gm("o", 1, 4 * 48, true);
  gm.g = sim.gm("g", 1, 4, false);
  gm.beta = sim.gm("beta", 1, 4, false);
  gm.state0 = sim.gm("s", 4 * 32, 48, false);
  for (GmTensor* t : {gm.q, gm.k, gm.v}) fill_random(t, rng, 1.0f);
  fill_random(gm.state0, rng, 0.3f);
  for (int h = 0; h < 4; ++h) {
    gm.g->v[h] = -0.1f * static_cast<float>(h + 1);
    gm.beta->v[h] = 0.2f * static_cast<float>(h + 1);
  }
  poison(gm.o);
  const std::vector<float> s0 = gm.state0->v;
  sim.launch();
  ASSERT_TRUE(gdn_decode_step(sim, gm).ok());
  sim.finish();
  std::vector<double> want_o(4 * 48), want_s(s0.begin(), s0.end());
  for (int h = 0; h < 4; ++h) {
    const int qh = h / 2;
    std::vector<double> q(32), k(32);
    double nq = 0, nk = 0;
    for (int i = 0; i < 32; ++i) {
      q[i] = gm.q->v[qh * 32 + i];
      k[i] = gm.k->v[qh * 32 + i];
      nq += q[i] * q[i];
      nk += k[i] * k[i];
    }
    for (int i = 0; i < 32; ++i) {
      q[i] /= std::sqrt(nq + 1e-6);
      k[i] /= std::sqrt(nk + 1e-6);
    }
    double* S = &want_s[static_cast<size_t>(h) * 32 * 48];
    for (int x = 0; x < 32 * 48; ++x) S[x] *= std::exp(static_cast<double>(gm.g->v[h]));
    for (int j = 0; j < 48; ++j) {
      double kv = 0;
      for (int i = 0; i < 32; ++i) kv += S[i * 48 + j] * k[i];
      const double delta = gm.beta->v[h] * (gm.v->v[h * 48 + j] - kv);
      double o = 0;
      for (int i = 0; i < 32; ++i) {
        S[i * 48 + j] += k[i] * delta;
        o += S[i * 48 + j] * q[i];
      }
      want_o[h * 48 + j] = gm.scale * o;
    }
  }
  // q, k rounded to fp16 after their norm, o rounded to fp16: ~1e-7.
  EXPECT_LT(test::nmse(want_o, gm.o->v), 1e-5);
  EXPECT_LT(test::nmse(want_s, gm.state0->v), 1e-5);
}

// The whole prefill adds up: each layer kind's operators in order sum to its layer, the
// prefill is the layer counts times the layers, the groups partition it; swapping the LA core
// changes only the LA layers, and hanpu's core beats vLLM-Ascend's chain.
TEST(HybridPrefill, OperatorsAddUpToThePrefill) {
  const NpuHybridShape s = tiny_hybrid_shape();
  NpuPrefillStats st[2];
  const char* variants[2] = {"vllm-ascend", "hanpu"};
  for (int i = 0; i < 2; ++i) {
    const Status r = npu_hybrid_prefill(s, 70, {.la_variant = variants[i]}, &st[i]);
    ASSERT_TRUE(r.ok()) << r.message();
  }
  for (const NpuPrefillStats& x : st) {
    SCOPED_TRACE(x.la_variant);
    double la = 0, attn = 0, groups = 0;
    std::vector<std::string> names;
    for (const auto& [op, ms] : x.ops) {
      EXPECT_GT(ms, 0) << op;
      names.push_back(op);
      (names.size() <= 12 ? la : attn) += ms;
    }
    ASSERT_EQ(names.size(), 22u);
    EXPECT_EQ(names[5], "la.core");
    EXPECT_EQ(names[15], "attn.core");
    EXPECT_NEAR(la, x.la_layer_ms, 1e-9);
    EXPECT_NEAR(attn, x.attn_layer_ms, 1e-9);
    EXPECT_NEAR(x.prefill_ms, 3 * x.la_layer_ms + x.attn_layer_ms, 1e-9);
    for (const auto& [g, ms] : x.group_ms) groups += ms;
    EXPECT_NEAR(groups, x.prefill_ms, 1e-9);
    EXPECT_GT(x.energy_mj, 0);
  }
  EXPECT_NEAR(st[0].attn_layer_ms, st[1].attn_layer_ms, 1e-9);
  EXPECT_LT(st[1].la_core_ms, st[0].la_core_ms);
  EXPECT_LT(st[1].prefill_ms, st[0].prefill_ms);
}

// A request: the time to first token is the prefill and the LM head; decode (the same for
// every prefill variant: the native backend's) adds a step per further token, each at least
// the LM head; a longer cache never makes a step shorter.
TEST(HybridRequest, ComposesPrefillHeadAndDecode) {
  NpuHybridShape s = tiny_hybrid_shape();
  s.vocab = 1000;
  std::vector<NpuRequestStats> rows;
  const Status st = npu_hybrid_request(s, 50, 4, {"vllm-ascend", "hanpu"}, {}, &rows);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(rows.size(), 2u);
  NpuPrefillStats p;
  ASSERT_TRUE(npu_hybrid_prefill(s, 50, {.la_variant = "hanpu"}, &p).ok());
  EXPECT_NEAR(rows[1].prefill_ms, p.prefill_ms, 1e-9);
  for (const NpuRequestStats& r : rows) {
    SCOPED_TRACE(r.la_variant);
    EXPECT_GT(r.ttft_ms, r.prefill_ms);
    EXPECT_NEAR(r.latency_ms, r.ttft_ms + r.decode_ms, 1e-9);
    EXPECT_GT(r.decode_ms, 3 * (r.ttft_ms - r.prefill_ms));
    EXPECT_NEAR(r.decode_ms, rows[0].decode_ms, 1e-12);
    EXPECT_GT(r.energy_mj, 0);
  }
  EXPECT_LT(rows[1].latency_ms, rows[0].latency_ms);
  std::vector<NpuRequestStats> one;
  ASSERT_TRUE(npu_hybrid_request(s, 50, 1, {"hanpu"}, {}, &one).ok());
  EXPECT_EQ(one[0].decode_ms, 0);
  EXPECT_NEAR(one[0].ttft_ms, rows[1].ttft_ms, 1e-9);
  const Status bad = npu_hybrid_request(s, 50, 0, {"hanpu"}, {}, &one);
  EXPECT_NE(bad.message().find("0 output tokens"), std::string::npos) << bad.message();
  s.vocab = 0;
  const Status no_head = npu_hybrid_request(s, 50, 2, {"hanpu"}, {}, &one);
  EXPECT_NE(no_head.message().find("vocab 0"), std::string::npos) << no_head.message();
}

TEST(HybridPrefill, RefusesBadShapesByField) {
  NpuHybridShape s = tiny_hybrid_shape();
  s.la_v_heads = 3;
  Status r = npu_hybrid_prefill(s, 16, {}, nullptr);
  EXPECT_NE(r.message().find("LA heads 2 (q/k) and 3 (v)"), std::string::npos) << r.message();
  s = tiny_hybrid_shape();
  s.kv_heads = 3;
  r = npu_hybrid_prefill(s, 16, {}, nullptr);
  EXPECT_NE(r.message().find("attention heads 4 over 3 kv heads"), std::string::npos)
      << r.message();
  s = tiny_hybrid_shape();
  s.hidden = 60;
  r = npu_hybrid_prefill(s, 16, {}, nullptr);
  EXPECT_NE(r.message().find("hidden 60"), std::string::npos) << r.message();
  r = npu_hybrid_prefill(tiny_hybrid_shape(), 0, {}, nullptr);
  EXPECT_NE(r.message().find("T 0"), std::string::npos) << r.message();
  r = npu_hybrid_prefill(tiny_hybrid_shape(), 16, {.la_variant = "nope"}, nullptr);
  EXPECT_NE(r.message().find("unknown LA variant 'nope'"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace hanpu::npu
