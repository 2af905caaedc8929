// simd::gemm_bf16_dot (AVX512-BF16) against a double-precision product of the weights as
// stored and x rounded to bf16 the way the kernel promises (nearest even): the products are
// exact, so only the fp32 sums differ (pairs_gemm_check.h: the cases and poisons). Skipped,
// saying so, on a machine without the instruction.
#include <gtest/gtest.h>

#include "pairs_gemm_check.h"
#include "simd/gemm_bf16_dot.h"

namespace hanpu::cpu {
namespace {

class GemmBf16Dot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simd::bf16_dot_usable()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  }
};

TEST_F(GemmBf16Dot, MatchesDoubleOnOddShapes) {
  Rng rng(31);
  check_pairs_gemm_odd_shapes(simd::gemm_bf16_dot, simd::gemm_bf16_dot_tile_rows(), rng, true);
}

TEST_F(GemmBf16Dot, SumsReductionRangesIntoC) {
  Rng rng(37);
  check_pairs_gemm_ranges(simd::gemm_bf16_dot, rng, true);
}

// Against x as given the error is the bf16 rounding of x: with 7 stored mantissa bits the
// rounding error of x = m 2^e is uniform over +-2^(e-8), NMSE about 2^-14 / 12 E[1/m^2] =
// 2.5e-6 when rounded to nearest, four times that if the kernel truncated.
TEST_F(GemmBf16Dot, RoundsXToNearest) {
  Rng rng(41);
  const double e = pairs_gemm_nmse(simd::gemm_bf16_dot, {40, 1024, 64, 0, -1, false}, rng, false);
  EXPECT_GT(e, 1e-6);
  EXPECT_LT(e, 5e-6);
}

}  // namespace
}  // namespace hanpu::cpu
