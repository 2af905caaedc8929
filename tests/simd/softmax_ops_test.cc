// exp2, the online-softmax column step, the row softmax and the row-scaled GEMM store
// against float64.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "simd/gemm.h"
#include "simd/softmax_ops.h"

namespace hanpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SoftmaxOps, Exp2IsAccurateAndUnderflowsToZero) {
  std::vector<float> x;
  for (double v = -170.0; v <= 20.0; v += 0.0137) x.push_back(static_cast<float>(v));
  x.push_back(-kInf);
  x.push_back(0.0f);
  std::vector<float> y = x;
  simd::exp2_inplace(y.data(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp2(static_cast<double>(x[i]));
    if (x[i] <= -160.0f) {
      EXPECT_EQ(y[i], 0.0f) << x[i];  // and -inf: a masked score
    } else if (want < 0x1p-126) {     // the denormal range may flush to 0
      EXPECT_GE(y[i], 0.0f) << x[i];
      EXPECT_LE(y[i], 0x1p-125) << x[i];
    } else {
      EXPECT_LE(std::abs(y[i] - want) / want, 4e-7) << "2^" << x[i];
    }
  }
}

TEST(SoftmaxOps, OnlineColumnsOverTilesEqualsOneSoftmax) {
  Rng rng(3);
  const int rows = 45, n = 37, lds = 40;  // odd sizes, a masked tail of lanes
  std::vector<float> s(static_cast<size_t>(rows) * lds);
  for (float& v : s) v = static_cast<float>(rng.normal() * 6.0);
  for (int c = 0; c < n; ++c) {  // -inf on a prefix per column: some columns see nothing in tile 1
    for (int p = 0; p < c % 23; ++p) s[p * lds + c] = -kInf;
  }
  const std::vector<float> s0 = s;
  std::vector<float> m(n, -kInf), l(n, 0.0f), alpha(n, kInf);
  std::vector<double> m_prev(n, -HUGE_VAL);
  const int split = 19;
  simd::online_softmax_columns(s.data(), lds, split, n, m.data(), l.data(), alpha.data());
  simd::online_softmax_columns(s.data() + split * lds, lds, rows - split, n, m.data(), l.data(),
                               alpha.data());
  for (int c = 0; c < n; ++c) {
    double mx = -HUGE_VAL, mx1 = -HUGE_VAL;
    for (int p = 0; p < rows; ++p) mx = std::max(mx, double(s0[p * lds + c]));
    for (int p = 0; p < split; ++p) mx1 = std::max(mx1, double(s0[p * lds + c]));
    double sum = 0;
    for (int p = 0; p < rows; ++p) sum += std::exp2(double(s0[p * lds + c]) - mx);
    EXPECT_EQ(m[c], static_cast<float>(mx));
    EXPECT_NEAR(l[c], sum, 1e-5 * sum) << c;
    EXPECT_NEAR(alpha[c], std::exp2(mx1 - mx), 1e-6) << c;
    for (int p = split; p < rows; ++p) {  // second tile's probabilities, relative to the final max
      EXPECT_NEAR(s[p * lds + c], std::exp2(double(s0[p * lds + c]) - mx), 1e-6) << c;
    }
  }
}

TEST(SoftmaxOps, RowSoftmaxAndItsLogSum) {
  Rng rng(4);
  std::vector<float> x(133);
  for (float& v : x) v = static_cast<float>(rng.normal() * 5.0);
  x[7] = -kInf;
  const std::vector<float> x0 = x;
  const float lse2 = simd::softmax_row(x.data(), x.size());
  double mx = -HUGE_VAL, sum = 0;
  for (float v : x0) mx = std::max(mx, double(v));
  for (float v : x0) sum += std::exp2(double(v) - mx);
  EXPECT_NEAR(lse2, mx + std::log2(sum), 1e-5);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(x[i], std::exp2(double(x0[i]) - mx) / sum, 1e-7);
  EXPECT_EQ(x[7], 0.0f);
}

TEST(SoftmaxOps, GemmRowScaledFoldsTheRescaleIntoTheStore) {
  Rng rng(5);
  const int M = 29, N = 70, Kd = 33, ldc = 75;
  std::vector<float> a(static_cast<size_t>(M) * Kd), b(static_cast<size_t>(Kd) * N),
      c(static_cast<size_t>(M) * ldc), rb(M);
  for (float& v : a) v = static_cast<float>(rng.normal());
  for (float& v : b) v = static_cast<float>(rng.normal());
  for (float& v : c) v = static_cast<float>(rng.normal());
  for (float& v : rb) v = static_cast<float>(rng.uniform());
  rb[3] = 0.0f;
  const std::vector<float> c0 = c;
  simd::gemm_row_scaled(M, N, Kd, simd::row_major(a.data(), Kd), b.data(), N, c.data(), ldc,
                        rb.data());
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double want = double(rb[i]) * c0[i * ldc + j];
      for (int p = 0; p < Kd; ++p) want += double(a[i * Kd + p]) * b[p * N + j];
      EXPECT_NEAR(c[i * ldc + j], want, 1e-4) << i << "," << j;
    }
    for (int j = N; j < ldc; ++j) EXPECT_EQ(c[i * ldc + j], c0[i * ldc + j]);  // past N untouched
  }
}

}  // namespace
}  // namespace hanpu
