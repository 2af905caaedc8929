// simd/attn_bf16_dot.h (AVX512-BF16): the pair packers against f32_to_bf16_bits (nearest
// even) word by word, and the pairs GEMM against a double product of the operands it was
// given (the products are exact, so only the fp32 sums differ), in its three store modes,
// on odd shapes and strides, with NaN poison outside what it may write. Skipped, saying so,
// on a machine without the instruction.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "base/rng.h"
#include "hanpu/dtype.h"
#include "simd/attn_bf16_dot.h"
#include "simd/gemm_bf16_dot.h"

namespace hanpu::simd {
namespace {

class AttnBf16Dot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bf16_dot_usable()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  }
};

uint32_t pair_of(float lo, float hi) {
  return static_cast<uint32_t>(f32_to_bf16_bits(lo)) | static_cast<uint32_t>(f32_to_bf16_bits(hi))
                                                           << 16;
}
float lo_of(uint32_t w) { return bf16_bits_to_f32(static_cast<uint16_t>(w & 0xffffu)); }
float hi_of(uint32_t w) { return bf16_bits_to_f32(static_cast<uint16_t>(w >> 16)); }

std::vector<float> normals(Rng& rng, size_t n) {
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(rng.normal());
  return x;
}

TEST_F(AttnBf16Dot, PackersRoundEachValueToNearestEven) {
  Rng rng(3);
  for (int n : {1, 15, 16, 17, 40, 256}) {
    const std::vector<float> r0 = normals(rng, n), r1 = normals(rng, n);
    std::vector<uint32_t> out(n + 8, 0xdeadbeef);
    pack_bf16_row_pairs(r0.data(), r1.data(), n, out.data());
    for (int j = 0; j < n; ++j) ASSERT_EQ(out[j], pair_of(r0[j], r1[j])) << "n " << n << " j " << j;
    EXPECT_EQ(out[n], 0xdeadbeef) << "wrote past n " << n;
    pack_bf16_row_pairs(r0.data(), nullptr, n, out.data());
    for (int j = 0; j < n; ++j) ASSERT_EQ(out[j], pair_of(r0[j], 0.0f)) << "n " << n << " j " << j;
  }
  // Transposed, scaled: rows x [rows x n] (ldx > n) into out[q ldo + r].
  for (auto [rows, n] : {std::pair{1, 2}, std::pair{7, 16}, std::pair{13, 48}, std::pair{3, 256}}) {
    const int64_t ldx = n + 5, ldo = rows + 3;
    const std::vector<float> x = normals(rng, static_cast<size_t>(rows) * ldx);
    std::vector<uint32_t> out(static_cast<size_t>(n / 2) * ldo, 0xdeadbeef);
    const float s = 0.37f;
    pack_bf16_pairs_transposed(x.data(), ldx, rows, n, s, out.data(), ldo);
    for (int q = 0; q < n / 2; ++q) {
      for (int r = 0; r < ldo; ++r) {
        const uint32_t want =
            r < rows ? pair_of(s * x[r * ldx + 2 * q], s * x[r * ldx + 2 * q + 1]) : 0xdeadbeef;
        ASSERT_EQ(out[q * ldo + r], want) << rows << "x" << n << " q " << q << " r " << r;
      }
    }
  }
}

// C (M x N, ldc) from A k-major (lda) and B (ldb) pair words; mode 0: overwrite, 1: accumulate,
// 2: row-scaled. Checks every element of C's buffer: inside against double, outside unchanged.
void check_gemm(int M, int N, int kp, int mode, Rng& rng) {
  const int64_t lda = M + 3, ldb = N + 7, ldc = N + 2;
  std::vector<uint32_t> a(static_cast<size_t>(kp) * lda), b(static_cast<size_t>(kp) * ldb);
  for (auto& w : a) w = pair_of(static_cast<float>(rng.normal()), static_cast<float>(rng.normal()));
  for (auto& w : b) w = pair_of(static_cast<float>(rng.normal()), static_cast<float>(rng.normal()));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> c(static_cast<size_t>(M) * ldc + 1, nan), scale(M);
  for (int i = 0; i < M; ++i) {
    scale[i] = static_cast<float>(rng.uniform());
    if (mode > 0) {
      for (int j = 0; j < N; ++j) c[i * ldc + j] = static_cast<float>(rng.normal());
    }
  }
  const std::vector<float> before = c;
  gemm_bf16_dot_pairs(M, N, kp, a.data(), lda, b.data(), ldb, c.data(), ldc,
                      mode == 2 ? scale.data() : nullptr, mode == 1);
  for (int i = 0; i < M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= N) {
        ASSERT_TRUE(std::isnan(got)) << "wrote C[" << i << "][" << j << "] past N " << N;
        continue;
      }
      double want = mode == 0   ? 0.0
                    : mode == 1 ? before[i * ldc + j]
                                : double{scale[i]} * before[i * ldc + j];
      double mag = std::abs(want);
      for (int q = 0; q < kp; ++q) {
        const uint32_t x = a[q * lda + i], w = b[q * ldb + j];
        const double t = double{lo_of(x)} * lo_of(w) + double{hi_of(x)} * hi_of(w);
        want += t;
        mag += std::abs(t);
      }
      ASSERT_NEAR(got, want, 1e-6 * mag + 1e-30)
          << M << "x" << N << " kp " << kp << " mode " << mode << " at " << i << "," << j;
    }
  }
  EXPECT_TRUE(std::isnan(c.back())) << "wrote past C";
}

TEST_F(AttnBf16Dot, PairsGemmMatchesDoubleInEveryStoreMode) {
  Rng rng(5);
  for (int mode : {0, 1, 2}) {
    for (auto [M, N, kp] : {std::array{1, 1, 1}, std::array{12, 32, 8}, std::array{13, 33, 5},
                            std::array{64, 128, 128}, std::array{25, 16, 32}, std::array{7, 47, 3},
                            std::array{32, 256, 32}, std::array{3, 80, 0}}) {
      check_gemm(M, N, kp, mode, rng);
    }
  }
}

}  // namespace
}  // namespace hanpu::simd
