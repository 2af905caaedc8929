// What must not change the result: the placement (uniform and balanced are bit-identical:
// placement changes which core computes a row, never how), the thread count; decode over a
// cache equals the last rows of a prefill; a prefill continued after cached tokens equals the
// same rows of one long prefill.
#include <cstring>

#include <gtest/gtest.h>

#include "attn_test_util.h"
#include "la_test_util.h"

namespace hanpu::test {
namespace {

AttnData run(const AttnCase& c, const std::string& placement, int threads) {
  AttnData d = make_attn_data(c);
  d.poison();
  AttnOptions opt;
  opt.placement = placement;
  opt.threads = threads;
  opt.tiles = c.tiles;
  const Status st = attn_prefill(d.args(), opt);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

TEST(AttnInvariance, UniformAndBalancedAndThreadCountsAreBitIdentical) {
  const AttnCase cases[] = {
      {.T = 1000, .Tk = 1000, .Hq = 4, .Hkv = 2, .D = 64, .mask = AttnMask::kCausal, .seed = 71},
      {.T = 333,
       .Tk = 500,
       .Hq = 8,
       .Hkv = 2,
       .D = 128,
       .mask = AttnMask::kSliding,
       .window = 50,
       .seed = 72},
      {.dtype = DType::kBF16,
       .T = 257,
       .Tk = 257,
       .Hq = 2,
       .Hkv = 1,
       .D = 256,
       .mask = AttnMask::kNone,
       .seed = 73},
  };
  for (const AttnCase& c : cases) {
    const AttnData base = run(c, "balanced", 2);
    for (const auto& [placement, threads] : {std::pair{"uniform", 2}, std::pair{"balanced", 1},
                                             std::pair{"balanced", 3}, std::pair{"uniform", 5}}) {
      const AttnData d = run(c, placement, threads);
      EXPECT_EQ(0, std::memcmp(base.o.data(), d.o.data(), base.o.size()))
          << c.describe() << ": " << placement << " on " << threads << " threads";
      EXPECT_EQ(0, std::memcmp(base.lse.data(), d.lse.data(), base.lse.size() * sizeof(float)))
          << c.describe() << ": " << placement << " on " << threads << " threads";
    }
  }
}

// Copies rows [t0, t0 + n) of a [T, H, D] storage buffer.
std::vector<uint8_t> rows_of(const std::vector<uint8_t>& x, int64_t t0, int64_t n, int H, int D,
                             DType dt) {
  const size_t row = static_cast<size_t>(H) * D * dtype_size(dt);
  return {x.begin() + t0 * row, x.begin() + (t0 + n) * row};
}

TEST(AttnInvariance, DecodeEqualsLastRowsOfPrefillAndContinuedPrefillEqualsOnePrefill) {
  for (DType dt : {DType::kF32, DType::kF16}) {
    const AttnCase full{.dtype = dt,
                        .T = 700,
                        .Tk = 700,
                        .Hq = 8,
                        .Hkv = 2,
                        .D = 128,
                        .mask = AttnMask::kCausal,
                        .seed = 80};
    const AttnData whole = run(full, "balanced", 2);
    for (int64_t tail : {1, 3, 200}) {  // decode of 1 and 3 rows; a 200-row continued prefill
      AttnData part = make_attn_data(full);
      part.cs.T = tail;
      part.q = rows_of(part.q, full.T - tail, tail, full.Hq, full.D, dt);
      part.o.resize(part.q.size());
      part.lse.resize(static_cast<size_t>(full.Hq) * tail);
      part.poison();
      const Status st = tail <= 3 ? attn_decode(part.args(), 2) : attn_prefill(part.args());
      ASSERT_TRUE(st.ok()) << st.message();
      std::vector<double> want_o, want_lse;
      const std::vector<double> all_o = whole.o_as_double();
      for (int64_t t = full.T - tail; t < full.T; ++t) {
        want_o.insert(want_o.end(), all_o.begin() + t * full.Hq * full.D,
                      all_o.begin() + (t + 1) * full.Hq * full.D);
      }
      for (int h = 0; h < full.Hq; ++h) {
        for (int64_t t = full.T - tail; t < full.T; ++t)
          want_lse.push_back(whole.lse[h * full.T + t]);
      }
      // Different key splits round differently: equal to fp32 accuracy, not bit for bit
      // (f16 outputs: both sides rounded to f16, so a rounding step apart at most).
      const double bound = dt == DType::kF32 ? 1e-10 : 1e-6;
      EXPECT_LE(nmse(want_o, part.o_as_double()), bound) << dtype_name(dt) << " tail " << tail;
      EXPECT_LE(nmse(want_lse, part.lse_as_double()), 1e-10) << dtype_name(dt) << " tail " << tail;
    }
  }
}

TEST(AttnInvariance, EmptyQueryIsANoOp) {
  AttnData d = make_attn_data({.T = 0, .Tk = 10, .Hq = 2, .Hkv = 1, .D = 64});
  EXPECT_TRUE(attn_prefill(d.args()).ok());
  EXPECT_TRUE(attn_decode(d.args()).ok());
}

}  // namespace
}  // namespace hanpu::test
