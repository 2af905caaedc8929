// simd::gemm_bf16_dot (AVX512-BF16) against a double-precision product of the weights as
// stored and x rounded to bf16 the way the kernel promises (nearest even): the products are
// exact, so only the fp32 sums differ. On the same shapes as the pairs kernel's test (odd rows
// around the register tile, depths that end inside a block, columns that end inside a tile,
// reduction sub-ranges, accumulation, strided x and C, poisoned outputs, NaN in x past `in`).
// Skipped, saying so, on a machine without the instruction.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "base/rng.h"
#include "cpu/nn/linear.h"
#include "hanpu/dtype.h"
#include "simd/gemm_bf16_dot.h"

namespace hanpu::cpu {
namespace {

struct Case {
  int rows, in, out;
  int kt0, kt_count;  // kt_count < 0: every block from kt0
  bool accumulate;
};

// NMSE of the kernel against float64 with x rounded to bf16 (`exact_x`: as the kernel rounds
// it) or as given.
double nmse(const Case& k, Rng& rng, bool rounded_x) {
  std::vector<float> w(static_cast<size_t>(k.out) * k.in);
  for (float& v : w) v = static_cast<float>(rng.normal());
  std::vector<int> order(k.out);
  std::iota(order.begin(), order.end(), 0);
  const PackedLinear p = PackedLinear::from_rows(w.data(), k.in, order, DType::kBF16);
  const int kt_count = k.kt_count < 0 ? p.k_blocks() - k.kt0 : k.kt_count;
  const int64_t lda = k.in + 5, ldc = k.out + 3;
  std::vector<float> a(static_cast<size_t>(k.rows) * lda);
  for (int64_t i = 0; i < k.rows; ++i) {
    for (int64_t j = 0; j < lda; ++j) a[i * lda + j] = j < k.in ? static_cast<float>(rng.normal()) : NAN;
  }
  std::vector<float> c(static_cast<size_t>(k.rows) * ldc, NAN), before(c.size());
  for (int64_t i = 0; i < k.rows; ++i) {
    for (int o = 0; o < k.out && k.accumulate; ++o) c[i * ldc + o] = static_cast<float>(rng.normal());
  }
  before = c;
  simd::gemm_bf16_dot(k.rows, a.data(), lda, k.in, p.half.data(), p.k_blocks(), k.kt0, kt_count, p.strips(), k.out,
                      c.data(), ldc, k.accumulate);
  const int k_begin = 32 * k.kt0, k_end = std::min(k.in, 32 * (k.kt0 + kt_count));
  double err = 0, ref = 0;
  for (int64_t i = 0; i < k.rows; ++i) {
    for (int o = 0; o < k.out; ++o) {
      double want = k.accumulate ? before[i * ldc + o] : 0.0;
      for (int j = k_begin; j < k_end; ++j) {
        const float x = a[i * lda + j];
        want += static_cast<double>(rounded_x ? bf16_bits_to_f32(f32_to_bf16_bits(x)) : x) * p.at(j, o);
      }
      const float got = c[i * ldc + o];
      EXPECT_TRUE(std::isfinite(got)) << "row " << i << " col " << o;
      if (!std::isfinite(got)) return INFINITY;
      err += (got - want) * (got - want);
      ref += want * want;
    }
    for (int64_t o = k.out; o < ldc; ++o) {
      EXPECT_TRUE(std::isnan(c[i * ldc + o])) << "wrote past its row";
      if (!std::isnan(c[i * ldc + o])) return INFINITY;
    }
  }
  return err / std::max(ref, 1e-30);
}

void check(const Case& k, Rng& rng) {
  EXPECT_LE(nmse(k, rng, true), 1e-12) << "rows=" << k.rows << " in=" << k.in << " out=" << k.out << " kt0=" << k.kt0
                                        << " kt_count=" << k.kt_count;
}

class GemmBf16Dot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simd::bf16_dot_usable()) GTEST_SKIP() << "this CPU has no AVX512-BF16 (or HANPU_BF16_DOT=0)";
  }
};

TEST_F(GemmBf16Dot, MatchesDoubleOnOddShapes) {
  Rng rng(31);
  const int mr = simd::gemm_bf16_dot_tile_rows();
  for (int rows : {1, mr - 1, mr, mr + 1, 2 * mr + 3, 8 * mr + 5}) {
    for (const auto& [in, out] : std::vector<std::pair<int, int>>{{1, 1}, {31, 17}, {33, 16}, {100, 40}, {512, 256}, {700, 97}}) {
      check({std::max(rows, 1), in, out, 0, -1, false}, rng);
    }
  }
}

TEST_F(GemmBf16Dot, SumsReductionRangesIntoC) {
  Rng rng(37);
  // Blocks 3.. of 22 (the last one partial), blocks 1..2, a range past `in` (C unchanged when
  // accumulating, zero otherwise), and longer than one L2 slice of blocks.
  for (const Case k : {Case{13, 700, 70, 3, -1, true}, Case{7, 700, 33, 1, 2, true}, Case{5, 64, 32, 2, 3, true},
                       Case{5, 64, 32, 2, 3, false}, Case{9, 1100, 48, 0, -1, true}, Case{50, 1024, 256, 4, 20, false}}) {
    check(k, rng);
  }
}

// Against x as given the error is the bf16 rounding of x: with 7 stored mantissa bits the
// rounding error of x = m 2^e is uniform over +-2^(e-8), NMSE about 2^-14 / 12 E[1/m^2] =
// 2.5e-6 when rounded to nearest, four times that if the kernel truncated.
TEST_F(GemmBf16Dot, RoundsXToNearest) {
  Rng rng(41);
  const double e = nmse({40, 1024, 64, 0, -1, false}, rng, false);
  EXPECT_GT(e, 1e-6);
  EXPECT_LT(e, 5e-6);
}

}  // namespace
}  // namespace hanpu::cpu
