// The few-row GEMMs (decode attention's products: A B and A B^T) against a float64 product:
// every B dtype (16-bit B is the exact value its storage holds), odd row counts, column and
// reduction tails, with and without the per-row rescale of C, C poisoned where it must not be
// read or written.
#include "simd/gemm_few_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "hanpu/dtype.h"

namespace hanpu {
namespace {

struct FewCase {
  int M, N, K;
};

class GemmFewRows : public ::testing::TestWithParam<FewCase> {};

TEST_P(GemmFewRows, MatchesFloat64ForEveryDtype) {
  const auto [M, N, Kd] = GetParam();
  Rng rng(M * 977 + N * 13 + Kd);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (DType bt : kAllDTypes) {
    for (bool rescale : {false, true}) {
      const int lda = Kd + 3, ldb = N + 7, ldc = N + 2;
      std::vector<float> a(static_cast<size_t>(M) * lda);
      for (float& x : a) x = static_cast<float>(rng.normal());
      std::vector<uint8_t> b(static_cast<size_t>(Kd) * ldb * dtype_size(bt));
      for (size_t i = 0; i < static_cast<size_t>(Kd) * ldb; ++i)
        store_from_f32(b.data(), bt, i, static_cast<float>(rng.normal()));
      std::vector<float> row_beta(M);
      for (float& x : row_beta) x = static_cast<float>(rng.uniform());
      std::vector<float> c(static_cast<size_t>(M) * ldc);
      for (float& x : c) x = rescale ? static_cast<float>(rng.normal()) : nan;
      for (int i = 0; i < M; ++i) c[i * ldc + N + 1] = nan;  // a padding column: never touched
      const std::vector<float> c0 = c;
      simd::gemm_few_rows(M, N, Kd, a.data(), lda, b.data(), bt, ldb, c.data(), ldc,
                          rescale ? row_beta.data() : nullptr);
      for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
          double want = rescale ? double(row_beta[i]) * c0[i * ldc + j] : 0.0, mag = std::abs(want);
          for (int p = 0; p < Kd; ++p) {
            const double t = double(a[i * lda + p]) *
                             load_as_f32(b.data(), bt, static_cast<size_t>(p) * ldb + j);
            want += t;
            mag += std::abs(t);
          }
          ASSERT_NEAR(c[i * ldc + j], want, 4e-7 * (Kd + 2) * mag + 1e-30)
              << dtype_name(bt) << " i=" << i << " j=" << j << " rescale=" << rescale;
        }
        ASSERT_TRUE(std::isnan(c[i * ldc + N + 1])) << "padding column written, row " << i;
      }
    }
  }
}

TEST_P(GemmFewRows, TransposedBMatchesFloat64ForEveryDtype) {
  // gemm_few_rows_bt: C = A B^T with B [N x Kd] rows in their storage dtype (keys in place).
  const auto [M, N, Kd] = GetParam();
  Rng rng(M * 31 + N * 1013 + Kd * 7);
  for (DType bt : kAllDTypes) {
    const int lda = Kd + 1, ldb = Kd + 9, ldc = N + 2;
    std::vector<float> a(static_cast<size_t>(M) * lda);
    for (float& x : a) x = static_cast<float>(rng.normal());
    std::vector<uint8_t> b(static_cast<size_t>(N) * ldb * dtype_size(bt));
    for (size_t i = 0; i < static_cast<size_t>(N) * ldb; ++i)
      store_from_f32(b.data(), bt, i, static_cast<float>(rng.normal()));
    std::vector<float> c(static_cast<size_t>(M) * ldc, std::numeric_limits<float>::quiet_NaN());
    simd::gemm_few_rows_bt(M, N, Kd, a.data(), lda, b.data(), bt, ldb, c.data(), ldc);
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) {
        double want = 0.0, mag = 0.0;
        for (int p = 0; p < Kd; ++p) {
          const double t =
              double(a[i * lda + p]) * load_as_f32(b.data(), bt, static_cast<size_t>(j) * ldb + p);
          want += t;
          mag += std::abs(t);
        }
        ASSERT_NEAR(c[i * ldc + j], want, 4e-7 * (Kd + 2) * mag + 1e-30)
            << dtype_name(bt) << " i=" << i << " j=" << j;
      }
      for (int j = N; j < ldc; ++j)
        ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "padding written, row " << i;
    }
  }
}

TEST_P(GemmFewRows, RowsToFetchChangeNoResult) {
  // The prefetch stream is a hint: with one (rows of another buffer, odd sizes, more lines than
  // the product has steps and fewer), both products give bit for bit what they give without.
  const auto [M, N, Kd] = GetParam();
  Rng rng(M * 7 + N * 131 + Kd);
  for (DType bt : kAllDTypes) {
    const int lda = Kd + 3, ldb = std::max(N, Kd) + 5, ldc = std::max(N, Kd) + 1;
    std::vector<float> a(static_cast<size_t>(std::max(M, 1)) * lda);
    for (float& x : a) x = static_cast<float>(rng.normal());
    const size_t b_elems = static_cast<size_t>(std::max(N, Kd)) * ldb;
    std::vector<uint8_t> b(b_elems * dtype_size(bt)), other(3 * b.size() + 4096);
    for (size_t i = 0; i < b_elems; ++i)
      store_from_f32(b.data(), bt, i, static_cast<float>(rng.normal()));
    std::vector<float> beta(M);
    for (float& x : beta) x = static_cast<float>(rng.uniform());
    for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{40}}) {
      const simd::RowsToFetch fetch{other.data() + 7, static_cast<ptrdiff_t>(other.size() / 41),
                                    200, rows};
      std::vector<float> plain(static_cast<size_t>(M) * ldc), hinted(plain.size());
      for (size_t i = 0; i < plain.size(); ++i)
        plain[i] = hinted[i] = static_cast<float>(rng.normal());
      simd::gemm_few_rows(M, N, Kd, a.data(), lda, b.data(), bt, ldb, plain.data(), ldc,
                          beta.data());
      simd::gemm_few_rows(M, N, Kd, a.data(), lda, b.data(), bt, ldb, hinted.data(), ldc,
                          beta.data(), &fetch);
      ASSERT_EQ(plain, hinted) << dtype_name(bt) << " rows=" << rows;
      simd::gemm_few_rows_bt(M, N, Kd, a.data(), lda, b.data(), bt, ldb, plain.data(), ldc);
      simd::gemm_few_rows_bt(M, N, Kd, a.data(), lda, b.data(), bt, ldb, hinted.data(), ldc,
                             &fetch);
      ASSERT_EQ(plain, hinted) << dtype_name(bt) << " bt rows=" << rows;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmFewRows,
                         ::testing::Values(FewCase{1, 1, 1}, FewCase{4, 64, 256},
                                           FewCase{4, 256, 64}, FewCase{3, 17, 33},
                                           FewCase{5, 100, 7}, FewCase{8, 80, 256},
                                           FewCase{15, 129, 40}, FewCase{2, 48, 1},
                                           FewCase{1, 15, 9}, FewCase{7, 255, 100}));

}  // namespace
}  // namespace hanpu
