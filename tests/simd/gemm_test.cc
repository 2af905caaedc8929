// The micro-kernel GEMM (both layout modes) against a float64 product on odd shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "simd/gemm.h"

namespace hanpu {
namespace {

struct Shape3 {
  int M, N, K;
};

class Gemm : public ::testing::TestWithParam<Shape3> {};

TEST_P(Gemm, MatchesFloat64ForEveryLayoutAndMode) {
  const auto [M, N, Kd] = GetParam();
  Rng rng(M * 131 + N * 7 + Kd);
  for (bool trans_a : {false, true}) {
    for (float beta : {0.0f, 1.0f, 0.375f}) {
      const bool acc = beta != 0.0f;
      for (auto fn : {&simd::gemm, &simd::gemm_repacking}) {
        const int lda = trans_a ? M + 3 : Kd + 2, ldb = N + 5, ldc = N + 1;
        std::vector<float> a(static_cast<size_t>(trans_a ? Kd : M) * lda),
            b(static_cast<size_t>(Kd) * ldb);
        for (float& x : a) x = static_cast<float>(rng.normal());
        for (float& x : b) x = static_cast<float>(rng.normal());
        std::vector<float> c(static_cast<size_t>(M) * ldc);
        for (float& x : c)
          x = acc ? static_cast<float>(rng.normal()) : std::numeric_limits<float>::quiet_NaN();
        const std::vector<float> c0 = c;
        const float alpha = -0.75f;
        const simd::MatA A =
            trans_a ? simd::transposed(a.data(), lda) : simd::row_major(a.data(), lda);
        fn(M, N, Kd, A, b.data(), ldb, c.data(), ldc, alpha, beta);
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < N; ++j) {
            double want = acc ? double(beta) * c0[i * ldc + j] : 0.0, mag = std::abs(want);
            for (int p = 0; p < Kd; ++p) {
              const double ap = trans_a ? a[p * lda + i] : a[i * lda + p];
              want += alpha * ap * b[p * ldb + j];
              mag += std::abs(alpha * ap * b[p * ldb + j]);
            }
            // fp32 accumulation: error bounded by ~Kd ulp of the sum of magnitudes.
            ASSERT_NEAR(c[i * ldc + j], want, 4e-7 * (Kd + 2) * mag + 1e-30)
                << "i=" << i << " j=" << j << " trans=" << trans_a << " beta=" << beta;
          }
        // Padding columns of C (j >= N) are never written.
        for (int i = 0; i < M; ++i)
          for (int j = N; j < ldc; ++j) {
            const float got = c[i * ldc + j], was = c0[i * ldc + j];
            ASSERT_TRUE((std::isnan(got) && std::isnan(was)) || got == was);
          }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Gemm,
                         ::testing::Values(Shape3{1, 1, 1}, Shape3{7, 13, 5}, Shape3{64, 64, 128},
                                           Shape3{17, 100, 64}, Shape3{128, 33, 63},
                                           Shape3{9, 257, 3}, Shape3{65, 128, 0}));

}  // namespace
}  // namespace hanpu
