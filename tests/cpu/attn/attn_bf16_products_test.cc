// The fused prefill on bf16 products (AttnProducts, attn_tile_pairs.cc), on fresh random
// inputs over masks, offsets, GQA groups, head dims, odd tiles and storage dtypes, against
// the float64 reference fed exactly what the kernel multiplies: c q rounded to bf16 (c = the
// scale times log2 e, folded in before rounding as the kernel does), k and v rounded to bf16.
// That leaves the rounding of the probabilities P as the one difference, and it is bounded:
// each term p v of an output is off by at most 2^-9 of itself and the weights sum to 1, so
// |o - ref| <= 2^-9 max|v| (twice that when o is stored in bf16). The log-sum-exp comes from
// fp32 scores of those same inputs: fp32 accuracy. Skipped where the CPU has no bf16 dot
// instruction, except the test of what asking for it then says.
#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "attn_test_util.h"
#include "la_test_util.h"
#include "simd/gemm_bf16_dot.h"

namespace hanpu::test {
namespace {

constexpr float kLog2E = 1.4426950408889634f;

float round_bf16(float x) { return bf16_bits_to_f32(f32_to_bf16_bits(x)); }

// The reference on the values the dot path multiplies (see the file comment).
ref::AttnRefResult mirrored_reference(AttnData& d) {
  const AttnCase& c = d.cs;
  const float scale =
      c.scale ? *c.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.D)));
  const float fold = scale * kLog2E;
  AttnArgs a = d.args();
  std::vector<float> q(static_cast<size_t>(a.q.numel())), k(static_cast<size_t>(a.k.numel())),
      v(k.size());
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = round_bf16(load_as_f32(d.q.data(), c.dtype, i) * fold) / fold;
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = round_bf16(load_as_f32(d.k.data(), c.kv_dtype(), i));
    v[i] = round_bf16(load_as_f32(d.v.data(), c.kv_dtype(), i));
  }
  a.q = {q.data(), DType::kF32, a.q.shape};
  a.k = {k.data(), DType::kF32, a.k.shape};
  a.v = {v.data(), DType::kF32, a.v.shape};
  return ref::attention(a);
}

std::vector<AttnCase> cases() {
  std::vector<AttnCase> out;
  uint64_t seed = 9100;
  auto add = [&](AttnCase c) {
    c.seed = seed++;
    if (!c.kv) c.kv = DType::kBF16;  // a bf16 KV cache under fp32 queries: the model's case
    out.push_back(c);
  };
  for (AttnMask mask : {AttnMask::kNone, AttnMask::kCausal, AttnMask::kSliding}) {
    const int64_t w = 37;
    for (int64_t T : {17, 64, 100, 333})
      add({.T = T, .Tk = T, .Hq = 4, .Hkv = 2, .D = 64, .mask = mask, .window = w});
    for (auto [hq, hkv] : {std::pair{2, 2}, std::pair{8, 2}, std::pair{8, 1}}) {
      add({.T = 100, .Tk = 100, .Hq = hq, .Hkv = hkv, .D = 128, .mask = mask, .window = w});
    }
    for (int D : {16, 48, 80, 144, 256})
      add({.T = 65, .Tk = 65, .Hq = 2, .Hkv = 1, .D = D, .mask = mask, .window = w});
    // Continuing a cache, at an even and an odd offset, and keys past the queries.
    add({.T = 100, .Tk = 300, .Hq = 4, .Hkv = 1, .D = 64, .mask = mask, .window = w});
    add({.T = 99, .Tk = 300, .Hq = 4, .Hkv = 1, .D = 64, .mask = mask, .window = w});
    add({.T = 17,
         .Tk = 1000,
         .Hq = 2,
         .Hkv = 2,
         .D = 64,
         .mask = mask,
         .q_offset = 501,
         .window = w});
    // Odd query tiles and small or uneven key tiles: odd key counts at every tile's end.
    add({.T = 100,
         .Tk = 100,
         .Hq = 4,
         .Hkv = 2,
         .D = 64,
         .mask = mask,
         .window = w,
         .tiles = {7, 6}});
    add({.T = 130,
         .Tk = 200,
         .Hq = 3,
         .Hkv = 1,
         .D = 32,
         .mask = mask,
         .window = 1,
         .tiles = {16, 2}});
    add({.T = 61,
         .Tk = 61,
         .Hq = 8,
         .Hkv = 2,
         .D = 256,
         .mask = mask,
         .window = w,
         .tiles = {5, 128}});
    // Peaky softmax (scale 1 at D = 64: scores of std 8): a key in the wrong place shows.
    add({.T = 300,
         .Tk = 300,
         .Hq = 2,
         .Hkv = 1,
         .D = 64,
         .mask = mask,
         .window = w,
         .scale = 1.0f});
    // bf16 queries and outputs; and keys and values stored wider, rounded by the kernel.
    add({.dtype = DType::kBF16,
         .T = 200,
         .Tk = 200,
         .Hq = 4,
         .Hkv = 1,
         .D = 128,
         .mask = mask,
         .window = w});
    add({.kv = DType::kF32,
         .T = 150,
         .Tk = 150,
         .Hq = 4,
         .Hkv = 2,
         .D = 64,
         .mask = mask,
         .window = w});
    add({.kv = DType::kF16,
         .T = 150,
         .Tk = 150,
         .Hq = 4,
         .Hkv = 2,
         .D = 64,
         .mask = mask,
         .window = w});
  }
  add({.T = 1000,
       .Tk = 1000,
       .Hq = 8,
       .Hkv = 2,
       .D = 256,
       .mask = AttnMask::kCausal});  // the Qwen3.5 heads
  return out;
}

class AttnBf16Products : public ::testing::TestWithParam<AttnCase> {
 protected:
  void SetUp() override {
    if (!simd::bf16_dot_usable()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  }
};

TEST_P(AttnBf16Products, FusedPlacementsMatchTheReferenceOfTheRoundedOperands) {
  const AttnCase& c = GetParam();
  AttnData d = make_attn_data(c);
  const ref::AttnRefResult want = mirrored_reference(d);
  double vmax = 0;
  for (size_t i = 0; i < d.v.size() / dtype_size(c.kv_dtype()); ++i) {
    vmax = std::max(vmax, std::abs(double{round_bf16(load_as_f32(d.v.data(), c.kv_dtype(), i))}));
  }
  const double bound =
      (c.dtype == DType::kBF16 ? 2.0 : 1.0) * std::ldexp(vmax, -9) * 1.01 + 1e-6 * vmax;
  // Rounding to bf16 costs an NMSE of about 2.5e-6 (gemm_bf16_dot_test.cc), and for random
  // values the error of o = sum w v over o's own size is that of one rounded term: ~2.5e-6 from
  // P, as much again when o is stored in bf16. A key lost or counted twice among n costs ~1/n.
  const double nmse_bound = c.dtype == DType::kBF16 ? 1e-5 : 5e-6;
  for (const char* placement : {"balanced", "uniform"}) {
    for (int threads : {1, 2, 3}) {
      d.poison();
      AttnOptions opt;
      opt.placement = placement;
      opt.threads = threads;
      opt.tiles = c.tiles;
      opt.products = AttnProducts::kBf16;
      AttnStats stats;
      const Status st = attn_prefill(d.args(), opt, &stats);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_TRUE(stats.bf16_products);
      const std::vector<double> got = d.o_as_double();
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double e = std::abs(got[i] - want.o[i]);
        worst = std::isnan(e) ? INFINITY : std::max(worst, e);
      }
      EXPECT_LE(worst, bound) << placement << " on " << threads << " threads: max |o - ref|";
      EXPECT_LE(nmse(want.o, got), nmse_bound)
          << placement << " on " << threads << " threads: output NMSE";
      EXPECT_LE(nmse(want.lse, d.lse_as_double()), 1e-10)
          << placement << " on " << threads << " threads: lse NMSE";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, AttnBf16Products, ::testing::ValuesIn(cases()));

// A value row that no query of a unit sees but that shares a bf16 pair with one it does (7-row
// query tiles: the first ends at key 6, which pairs with key 7) must weigh nothing, even when it
// is not finite: 0 x inf is NaN, so the dot path must not multiply it at all.
TEST(AttnBf16ProductsEdges, KeysAUnitDoesNotSeeNeverReachItsOutput) {
  if (!simd::bf16_dot_usable()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  const AttnCase c{.kv = DType::kBF16,
                   .T = 20,
                   .Tk = 20,
                   .Hq = 2,
                   .Hkv = 1,
                   .D = 32,
                   .mask = AttnMask::kCausal,
                   .tiles = {7, 64},
                   .seed = 9300};
  for (float bad : {INFINITY, NAN}) {
    AttnData d = make_attn_data(c);
    for (int dd = 0; dd < c.D; ++dd)
      store_from_f32(d.v.data(), DType::kBF16, 7 * c.D + dd, bad);  // key 7, kv head 0
    for (const char* placement : {"balanced", "uniform"}) {
      d.poison();
      AttnOptions opt;
      opt.placement = placement;
      opt.tiles = c.tiles;
      opt.products = AttnProducts::kBf16;
      ASSERT_TRUE(attn_prefill(d.args(), opt).ok());
      const std::vector<double> got = d.o_as_double();
      for (int64_t t = 0; t < 7; ++t) {  // rows 0..6 see keys 0..6 only
        for (int64_t i = t * c.Hq * c.D; i < (t + 1) * c.Hq * c.D; ++i) {
          ASSERT_TRUE(std::isfinite(got[i]))
              << placement << ": row " << t << " took key 7's value " << bad;
        }
      }
    }
  }
}

// kAuto takes bf16 products for bf16 keys and values only; kF32 never; kBf16 where it cannot
// run is an error that says why, and nothing is written.
TEST(AttnBf16ProductsEdges, AutoPicksThemForABf16CacheAndAskingWhereTheyCannotRunFails) {
  EXPECT_EQ(parse_attn_products("bf16"), AttnProducts::kBf16);
  EXPECT_EQ(parse_attn_products("f32"), AttnProducts::kF32);
  EXPECT_EQ(parse_attn_products("auto"), AttnProducts::kAuto);
  EXPECT_FALSE(parse_attn_products("fp8").has_value());
  const bool usable = simd::bf16_dot_usable();
  for (DType kv : {DType::kF32, DType::kF16, DType::kBF16}) {
    AttnData d =
        make_attn_data({.kv = kv, .T = 40, .Tk = 40, .Hq = 2, .Hkv = 1, .D = 32, .seed = 9400});
    for (AttnProducts products : {AttnProducts::kAuto, AttnProducts::kF32}) {
      AttnOptions opt;
      opt.products = products;
      AttnStats stats;
      ASSERT_TRUE(attn_prefill(d.args(), opt, &stats).ok());
      EXPECT_EQ(stats.bf16_products,
                usable && kv == DType::kBF16 && products == AttnProducts::kAuto)
          << dtype_name(kv) << " " << attn_products_name(products);
    }
  }
  AttnData d = make_attn_data(
      {.kv = DType::kBF16, .T = 40, .Tk = 40, .Hq = 2, .Hkv = 1, .D = 32, .seed = 9401});
  auto fails = [&](AttnOptions opt, const std::string& why) {
    d.poison();
    opt.products = AttnProducts::kBf16;
    const Status st = attn_prefill(d.args(), opt);
    ASSERT_FALSE(st.ok()) << why;
    EXPECT_NE(st.message().find("bf16 products"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
    for (double x : d.o_as_double()) ASSERT_TRUE(std::isnan(x)) << "wrote the output";
  };
  if (!usable) {
    fails({}, "AVX512-BF16");
    return;
  }
  AttnOptions layer;
  layer.placement = "layer";
  fails(layer, "layer placement");
  AttnOptions odd;
  odd.tiles = {16, 33};
  fails(odd, "even number");
}

}  // namespace
}  // namespace hanpu::test
