// simd::gemm_bf16_pairs against a double-precision product of the weights as stored and x as
// given (fp32 x, weights widened exactly): see pairs_gemm_check.h for the cases and poisons.
#include <gtest/gtest.h>

#include "pairs_gemm_check.h"
#include "simd/gemm_bf16_pairs.h"

namespace hanpu::cpu {
namespace {

TEST(GemmBf16Pairs, MatchesDoubleOnOddShapes) {
  Rng rng(23);
  check_pairs_gemm_odd_shapes(simd::gemm_bf16_pairs, simd::gemm_bf16_pairs_tile_rows(), rng, false);
}

TEST(GemmBf16Pairs, SumsReductionRangesIntoC) {
  Rng rng(29);
  check_pairs_gemm_ranges(simd::gemm_bf16_pairs, rng, false);
}

}  // namespace
}  // namespace hanpu::cpu
