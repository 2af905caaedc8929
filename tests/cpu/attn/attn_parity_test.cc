// Every attention placement and decode against the float64 reference, on fresh random inputs
// over the sweep of the issue: T/Tk in {1, 17, 64, 100, 1000, 2048}, GQA ratios 1/2/4/8,
// head dims 16..256, the three masks (with query offsets and windows), f32/f16/bf16 (also
// 16-bit keys/values under fp32 queries), odd tile sizes. NMSE of the outputs and of the
// log-sum-exp. All with fp32 products (AttnProducts::kF32); the bf16 ones:
// attn_bf16_products_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "attn_test_util.h"
#include "la_test_util.h"

namespace hanpu::test {
namespace {

std::vector<AttnCase> parity_cases() {
  std::vector<AttnCase> cases;
  uint64_t seed = 5000;
  auto add = [&](AttnCase c) {
    c.seed = seed++;
    cases.push_back(c);
  };
  for (AttnMask mask : {AttnMask::kNone, AttnMask::kCausal, AttnMask::kSliding}) {
    const int64_t w = 37;  // window, when sliding
    for (int64_t T : {1, 17, 64, 100, 1000}) {
      add({.T = T, .Tk = T, .Hq = 4, .Hkv = 2, .D = 64, .mask = mask, .window = w});
    }
    add({.T = 2048, .Tk = 2048, .Hq = 1, .Hkv = 1, .D = 64, .mask = mask, .window = 300});
    // GQA ratios 1, 2, 4, 8.
    for (auto [hq, hkv] : {std::pair{2, 2}, std::pair{4, 2}, std::pair{8, 2}, std::pair{8, 1}}) {
      add({.T = 100, .Tk = 100, .Hq = hq, .Hkv = hkv, .D = 128, .mask = mask, .window = w});
    }
    // Head dims (multiples of 16 up to 256).
    for (int D : {16, 48, 80, 144, 256}) {
      add({.T = 65, .Tk = 65, .Hq = 2, .Hkv = 1, .D = D, .mask = mask, .window = w});
    }
    // A prefill continuing a cache (default offset Tk - T), and an explicit offset with keys
    // past the queries.
    add({.T = 100, .Tk = 300, .Hq = 4, .Hkv = 1, .D = 64, .mask = mask, .window = w});
    add({.T = 17,
         .Tk = 1000,
         .Hq = 2,
         .Hkv = 2,
         .D = 64,
         .mask = mask,
         .q_offset = 500,
         .window = w});
    add({.T = 1, .Tk = 2048, .Hq = 8, .Hkv = 2, .D = 128, .mask = mask, .window = w});
    // Odd tiles: masks and partial tiles at every boundary.
    add({.T = 100,
         .Tk = 100,
         .Hq = 4,
         .Hkv = 2,
         .D = 64,
         .mask = mask,
         .window = w,
         .tiles = {7, 5}});
    add({.T = 130,
         .Tk = 200,
         .Hq = 3,
         .Hkv = 1,
         .D = 32,
         .mask = mask,
         .window = 1,
         .tiles = {16, 33}});
    // Peaky softmax (scale 1 at D = 64: scores of std 8).
    add({.T = 300,
         .Tk = 300,
         .Hq = 2,
         .Hkv = 1,
         .D = 64,
         .mask = mask,
         .window = w,
         .scale = 1.0f});
    // Storage dtypes.
    for (DType dt : {DType::kF16, DType::kBF16}) {
      add({.dtype = dt,
           .T = 200,
           .Tk = 200,
           .Hq = 4,
           .Hkv = 1,
           .D = 128,
           .mask = mask,
           .window = w});
      add({.dtype = dt,
           .T = 1000,
           .Tk = 1000,
           .Hq = 2,
           .Hkv = 2,
           .D = 64,
           .mask = mask,
           .window = 100});
      // A 16-bit KV cache under fp32 queries: keys and values widened tile by tile (in the
      // decode row path, in the prefill packs and in the unpacked tile copies).
      add({.kv = dt, .T = 100, .Tk = 300, .Hq = 4, .Hkv = 1, .D = 64, .mask = mask, .window = w});
      add({.kv = dt, .T = 1, .Tk = 2048, .Hq = 8, .Hkv = 2, .D = 256, .mask = mask, .window = 300});
      add({.kv = dt,
           .T = 3,
           .Tk = 777,
           .Hq = 6,
           .Hkv = 3,
           .D = 80,
           .mask = mask,
           .window = w,
           .tiles = {7, 33}});
    }
  }
  add({.T = 64, .Tk = 64, .Hq = 2, .Hkv = 1, .D = 64, .mask = AttnMask::kSliding, .window = 1});
  add({.T = 64, .Tk = 64, .Hq = 2, .Hkv = 1, .D = 64, .mask = AttnMask::kSliding, .window = 1000});
  // Values of another head dim than the keys (MLA decompressed: keys of nope + rope dims,
  // values of their own), every mask, prefill and decode, 16-bit storage.
  for (AttnMask mask : {AttnMask::kCausal, AttnMask::kNone, AttnMask::kSliding}) {
    add({.T = 150, .Tk = 150, .Hq = 4, .Hkv = 4, .D = 192, .Dv = 128, .mask = mask, .window = 40});
    add({.T = 1, .Tk = 700, .Hq = 4, .Hkv = 2, .D = 48, .Dv = 16, .mask = mask, .window = 90});
    add({.T = 37, .Tk = 300, .Hq = 6, .Hkv = 3, .D = 32, .Dv = 80, .mask = mask, .window = 33});
  }
  add({.dtype = DType::kBF16,
       .kv = DType::kBF16,
       .T = 65,
       .Tk = 65,
       .Hq = 2,
       .Hkv = 1,
       .D = 96,
       .Dv = 64});
  add({.kv = DType::kF16, .T = 3, .Tk = 200, .Hq = 4, .Hkv = 1, .D = 64, .Dv = 128});
  // MLA's absorbed form: every head against one latent row per key, the widest head dim;
  // 16 heads (Kimi Linear's decode: 16 query rows of one unit, the most the row path takes)
  // with values the keys' first 512 dims, and 2 rows x 8 heads.
  for (DType kv : {DType::kF32, DType::kBF16}) {
    add({.kv = kv, .T = 1, .Tk = 333, .Hq = 8, .Hkv = 1, .D = kAttnMaxHeadDim});
    add({.kv = kv, .T = 37, .Tk = 101, .Hq = 4, .Hkv = 1, .D = kAttnMaxHeadDim});
    add({.kv = kv, .T = 1, .Tk = 301, .Hq = 16, .Hkv = 1, .D = kAttnMaxHeadDim, .Dv = 512});
    add({.kv = kv, .T = 2, .Tk = 190, .Hq = 8, .Hkv = 1, .D = 64});
  }
  return cases;
}

class AttnParity : public ::testing::TestWithParam<AttnCase> {};

void expect_close(const AttnCase& c, const ref::AttnRefResult& want, const AttnData& d,
                  const std::string& who) {
  const double e_o = nmse(want.o, d.o_as_double());
  const double e_lse = nmse(want.lse, d.lse_as_double());
  EXPECT_LE(e_o, attn_nmse_bound(c)) << who << ": output NMSE " << e_o;
  EXPECT_LE(e_lse, attn_nmse_bound(c)) << who << ": lse NMSE " << e_lse;
}

TEST_P(AttnParity, EveryPlacementAndDecodeMatchFloat64Reference) {
  const AttnCase& c = GetParam();
  AttnData d = make_attn_data(c);
  const ref::AttnRefResult want = ref::attention(d.args());
  for (const AttnPlacementInfo& pl : attn_placements()) {
    d.poison();
    AttnOptions opt;
    opt.placement = std::string(pl.name);
    opt.tiles = c.tiles;
    opt.products = AttnProducts::kF32;  // fp32 parity; bf16 products: attn_bf16_products_test.cc
    const Status st = attn_prefill(d.args(), opt);
    ASSERT_TRUE(st.ok()) << pl.name << ": " << st.message();
    expect_close(c, want, d, std::string(pl.name));
  }
  if (c.T <= 100) {  // decode: few rows, keys split over the cores (3 workers: uneven slices)
    for (int threads : {1, 2, 3}) {
      d.poison();
      const Status st = attn_decode(d.args(), threads);
      ASSERT_TRUE(st.ok()) << st.message();
      expect_close(c, want, d, fmt::format("decode on {} threads", threads));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, AttnParity, ::testing::ValuesIn(parity_cases()));

}  // namespace
}  // namespace hanpu::test
