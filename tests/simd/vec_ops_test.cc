// Element-wise SIMD ops against scalar float64 / scalar conversions, with masked tails.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "base/rng.h"
#include "simd/vec_ops.h"

namespace hanpu {
namespace {

// The double-precision sum of squares against a float64 loop on every target, over odd sizes
// (the vector body and the scalar tail), a wide range of magnitudes, and NaN and infinity
// passed on.
TEST(VecOps, SumSquaresInDoubleMatchesFloat64OnEveryTarget) {
  Rng rng(9);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (size_t n : {0u, 1u, 3u, 8u, 17u, 128u, 1280u, 4099u}) {
      std::vector<float> x(n);
      for (float& v : x) v = static_cast<float>(rng.normal() * std::exp(rng.uniform(-20, 20)));
      double want = 0;
      for (float v : x) want += static_cast<double>(v) * v;
      EXPECT_NEAR(simd::sum_squares_f64(x.data(), n), want, 1e-13 * want)
          << hwy::TargetName(target) << " n=" << n;
    }
    for (float bad : {NAN, INFINITY}) {
      std::vector<float> x(37, 1.0f);
      x[30] = bad;  // in the vector body
      EXPECT_FALSE(std::isfinite(simd::sum_squares_f64(x.data(), x.size())));
      x[30] = 1.0f;
      x[36] = bad;  // in the tail
      EXPECT_FALSE(std::isfinite(simd::sum_squares_f64(x.data(), x.size())));
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(VecOps, ExpAndGatesMatchScalar) {
  Rng rng(3);
  for (size_t n : {1u, 5u, 16u, 33u, 128u}) {
    std::vector<float> x(n), a(n), c(n), y(n), g(n);
    for (size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(rng.normal());
      a[i] = static_cast<float>(rng.uniform(-30, 0));
      c[i] = static_cast<float>(rng.uniform(0, 30)) + a[i];  // a - c <= 0
      g[i] = static_cast<float>(rng.uniform(-100, 0));
    }
    std::vector<float> e = a;
    simd::exp_inplace(e.data(), n);
    simd::mul(y.data(), x.data(), c.data(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(e[i], std::exp(double(a[i])), 3e-7 * std::exp(double(a[i])) + 1e-38);
      EXPECT_EQ(y[i], x[i] * c[i]);
    }
  }
}

TEST(VecOps, GateLowerAndScaleRowsMatchFloat64) {
  Rng rng(9);
  for (int c : {1, 7, 16, 37}) {
    const int ld = c + 3;
    std::vector<float> src(c * ld), dst(c * ld, -9.0f), gam(c), rs(c);
    for (float& x : src) x = static_cast<float>(rng.normal());
    float acc = 0;
    for (int i = 0; i < c; ++i) {
      acc -= static_cast<float>(rng.uniform(0, 3));  // a non-increasing cumsum of gates
      gam[i] = acc;
      rs[i] = static_cast<float>(rng.uniform(0.1, 1));
    }
    for (bool inclusive : {false, true}) {
      std::fill(dst.begin(), dst.end(), -9.0f);
      simd::gate_lower(dst.data(), src.data(), ld, gam.data(), rs.data(), 0.5f, c, inclusive);
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < ld; ++j) {
          if (j < i || (inclusive && j == i)) {
            const double w = 0.5 * rs[i] * src[i * ld + j] * std::exp(double(gam[i]) - gam[j]);
            EXPECT_NEAR(dst[i * ld + j], w, 1e-5 * std::abs(w) + 1e-30) << i << "," << j;
          } else {
            EXPECT_EQ(dst[i * ld + j], -9.0f) << "wrote outside the lower triangle";
          }
        }
    }
    simd::scale_rows(dst.data(), ld, src.data(), ld, rs.data(), 2.0f, c, c);
    for (int i = 0; i < c; ++i)
      for (int j = 0; j < c; ++j) EXPECT_FLOAT_EQ(dst[i * ld + j], 2.0f * rs[i] * src[i * ld + j]);
  }
}

// The factored GDN mask against exp of the difference in float64, over chunk sizes that end
// mid-block, mild to very strong decay (products of factors that underflow must give 0, not
// NaN), and both outputs' triangles (L strict, Qm inclusive, nothing written above).
TEST(VecOps, GateLowerGdnMatchesFloat64) {
  Rng rng(21);
  for (int c : {1, 5, 16, 17, 40, 64, 128}) {
    for (double max_decay : {0.0, 0.5, 20.0}) {
      const int ld = c + 5;
      std::vector<float> kk(c * ld), qk(c * ld), L(c * ld, -9.0f), Qm(c * ld, -9.0f), gam(c),
          beta(c);
      for (float& x : kk) x = static_cast<float>(rng.normal());
      for (float& x : qk) x = static_cast<float>(rng.normal());
      float acc = 0;
      for (int i = 0; i < c; ++i) {
        acc -= static_cast<float>(rng.uniform(0, max_decay));
        gam[i] = acc;
        beta[i] = static_cast<float>(rng.uniform(0.1, 1));
      }
      simd::gate_lower_gdn(L.data(), Qm.data(), kk.data(), qk.data(), ld, gam.data(), beta.data(),
                           0.25f, c, 16);
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < ld; ++j) {
          const double e = j <= i ? std::exp(double(gam[i]) - gam[j]) : 0.0;
          const float l = L[i * ld + j], q = Qm[i * ld + j];
          ASSERT_FALSE(std::isnan(l) || std::isnan(q)) << i << "," << j;
          if (j < i) {
            const double w = beta[i] * e * kk[i * ld + j];
            EXPECT_NEAR(l, w, 2e-6 * std::abs(w) + 1e-30) << c << ": " << i << "," << j;
          } else {
            EXPECT_EQ(l, -9.0f) << "L written on or above the diagonal at " << i << "," << j;
          }
          if (j <= i) {
            const double w = 0.25 * e * qk[i * ld + j];
            EXPECT_NEAR(q, w, 2e-6 * std::abs(w) + 1e-30) << c << ": " << i << "," << j;
          } else {
            EXPECT_EQ(q, -9.0f) << "Qm written above the diagonal at " << i << "," << j;
          }
        }
    }
  }
}

// (I + StrictTril(L))^-1 times (I + StrictTril(L)) is the identity in float64; L's diagonal
// and upper triangle hold NaN (never read), inv starts poisoned and ends zero above.
TEST(VecOps, InvertUnitLowerIsTheInverse) {
  Rng rng(22);
  for (int n : {1, 2, 5, 13, 16}) {
    const int ldl = n + 3, ldi = 16;
    std::vector<float> L(n * ldl, std::nanf("")), inv(n * ldi, -7.0f);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < i; ++j) L[i * ldl + j] = static_cast<float>(rng.uniform(-0.3, 0.3));
    simd::invert_unit_lower(L.data(), ldl, n, inv.data(), ldi);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double prod = inv[i * ldi + j];  // (inv (I + L))_ij = inv_ij + sum_{k > j} inv_ik L_kj
        for (int k = j + 1; k < n; ++k) prod += double(inv[i * ldi + k]) * L[k * ldl + j];
        EXPECT_NEAR(prod, i == j ? 1.0 : 0.0, 1e-5) << n << ": " << i << "," << j;
        if (j > i) EXPECT_EQ(inv[i * ldi + j], 0.0f);
      }
    }
  }
}

// k_i / (a_1 ... a_i) against float64, masked channel tails included, and the smallest
// factor reported (the fast path's overflow guard) equal to the float64 minimum.
TEST(VecOps, DecayRowsInverseMatchesFloat64) {
  Rng rng(23);
  for (int K : {1, 7, 16, 100}) {
    for (int n : {1, 2, 16}) {
      const int ldx = K + 3;
      std::vector<float> k(n * ldx), a(n * K), out(n * K, -9.0f);
      for (float& x : k) x = static_cast<float>(rng.normal());
      for (float& x : a) x = static_cast<float>(std::exp(-rng.uniform(0, 2)));
      const float smallest = simd::decay_rows_inverse(k.data(), ldx, a.data(), K, n, out.data());
      double want_smallest = 1.0;
      for (int ch = 0; ch < K; ++ch) {
        double f = 1.0;
        for (int i = 0; i < n; ++i) {
          if (i > 0) f *= a[i * K + ch];
          const double w = k[i * ldx + ch] / f;
          EXPECT_NEAR(out[i * K + ch], w, 1e-5 * std::abs(w))
              << K << " " << n << ": " << i << "," << ch;
        }
        want_smallest = std::min(want_smallest, f);
      }
      EXPECT_NEAR(smallest, want_smallest, 1e-5 * want_smallest) << K << " " << n;
    }
  }
}

TEST(VecOps, ConversionsMatchScalarRoundToNearestEven) {
  Rng rng(4);
  for (DType t : {DType::kF16, DType::kBF16}) {
    for (size_t n : {1u, 15u, 16u, 37u}) {
      std::vector<float> x(n);
      for (float& v : x) v = static_cast<float>(rng.normal() * std::exp(rng.uniform(-8, 8)));
      if (n > 3) x[2] = std::nanf("");
      std::vector<uint16_t> simd_bits(n), scalar_bits(n);
      simd::store_f32(simd_bits.data(), t, x.data(), n);
      for (size_t i = 0; i < n; ++i) store_from_f32(scalar_bits.data(), t, i, x[i]);
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(x[i])) {
          EXPECT_TRUE(std::isnan(load_as_f32(simd_bits.data(), t, i)));
        } else {
          EXPECT_EQ(simd_bits[i], scalar_bits[i]) << dtype_name(t) << " " << x[i];
        }
      }
      std::vector<float> back(n);
      simd::load_f32(back.data(), scalar_bits.data(), t, n);
      for (size_t i = 0; i < n; ++i) {
        const float want = load_as_f32(scalar_bits.data(), t, i);
        if (!std::isnan(want)) {
          EXPECT_EQ(back[i], want);
        }
      }
    }
  }
}

TEST(VecOps, KdaDiagBlockMatchesFloat64) {
  Rng rng(5);
  const int K = 37, n = 11, ld = 13;
  std::vector<float> k(n * K), q(n * K), g(n * K), a(n * K);
  for (int i = 0; i < n * K; ++i) {
    k[i] = static_cast<float>(rng.normal());
    q[i] = static_cast<float>(rng.normal());
    g[i] = static_cast<float>(rng.uniform(-3, 0));
    a[i] = std::exp(g[i]);
  }
  std::vector<float> L(n * ld, -7.0f), Qm(n * ld, -7.0f);
  simd::kda_diag_block(k.data(), q.data(), K, a.data(), K, n, L.data(), Qm.data(), ld);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double lk = 0, lq = 0, mag = 0;
      for (int d = 0; d < K; ++d) {
        double gam = 0;  // Gam_i - Gam_j = sum of g over (j, i]
        for (int s = j + 1; s <= i; ++s)
          gam += a[s * K + d] > 0 ? std::log(double(a[s * K + d])) : 0;
        lk += double(k[i * K + d]) * k[j * K + d] * std::exp(gam);
        lq += double(q[i * K + d]) * k[j * K + d] * std::exp(gam);
        mag += std::abs(double(q[i * K + d]) * k[j * K + d]) +
               std::abs(double(k[i * K + d]) * k[j * K + d]);
      }
      if (j < i) {
        EXPECT_NEAR(L[i * ld + j], lk, 1e-5 * mag) << i << "," << j;
      }
      if (j >= i) {
        EXPECT_EQ(L[i * ld + j], -7.0f) << "wrote above the strict lower triangle";
      }
      if (j <= i) {
        EXPECT_NEAR(Qm[i * ld + j], lq, 1e-5 * mag) << i << "," << j;
      }
      if (j > i) {
        EXPECT_EQ(Qm[i * ld + j], -7.0f) << "wrote above the diagonal";
      }
    }
}

TEST(VecOps, FindsTheFirstBadGateAtEveryPosition) {
  for (size_t n : {1u, 7u, 16u, 45u}) {
    std::vector<float> g(n, -0.5f);
    EXPECT_EQ(simd::find_bad_gate(g.data(), n), n);
    EXPECT_EQ(simd::find_non_finite(g.data(), n), n);
    for (size_t pos = 0; pos < n; ++pos) {
      for (float bad : {0.25f, std::nanf(""), -INFINITY, INFINITY}) {
        std::vector<float> h = g;
        h[pos] = bad;
        if (pos + 1 < n) h[n - 1] = 1.0f;  // a later bad value must not win
        EXPECT_EQ(simd::find_bad_gate(h.data(), n), pos) << n << " " << pos << " " << bad;
        if (!std::isfinite(bad)) {
          std::vector<float> b = g;
          b[pos] = bad;
          EXPECT_EQ(simd::find_non_finite(b.data(), n), pos);
        }
      }
    }
    std::vector<float> z(n, 0.0f);  // zero gates are valid
    EXPECT_EQ(simd::find_bad_gate(z.data(), n), n);
  }
}

// The first largest value's index against a scalar scan, on every SIMD target this CPU runs:
// random lengths (masked tails), ties (values from a few levels, so the maximum repeats),
// NaNs passed over wherever they fall, -inf, all-NaN rows.
TEST(VecOps, ArgMaxIsTheFirstLargestOnEveryTarget) {
  Rng rng(0xa79 ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    EXPECT_EQ(simd::argmax(nullptr, 0), 0u);
    for (int trial = 0; trial < 200; ++trial) {
      const size_t n = 1 + rng.next() % (trial < 150 ? 80 : 5000);
      std::vector<float> x(n);
      for (float& v : x) {
        v = trial % 3 == 0 ? static_cast<float>(rng.next() % 4)  // ties
                           : static_cast<float>(rng.normal() * 10);
      }
      if (trial % 5 == 1) x[rng.next() % n] = std::nanf("");
      if (trial % 5 == 2) x[0] = std::nanf("");
      if (trial % 7 == 3) x[rng.next() % n] = -INFINITY;
      if (trial % 50 == 4) std::fill(x.begin(), x.end(), std::nanf(""));
      size_t want = 0;
      bool seen = false;
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(x[i])) continue;
        if (!seen || x[i] > x[want]) want = i;
        seen = true;
      }
      ASSERT_EQ(simd::argmax(x.data(), n), want)
          << hwy::TargetName(target) << " n " << n << " trial " << trial;
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(VecOps, RunningDecayProductsMatchFloat64) {
  Rng rng(7);
  const int K = 37, n = 9, ldx = 41;
  std::vector<float> a(n * K), k(n * ldx), q(n * ldx), ref(K);
  for (float& x : a) x = static_cast<float>(std::exp(rng.uniform(-2, 0)));
  for (float& x : k) x = static_cast<float>(rng.normal());
  for (float& x : q) x = static_cast<float>(rng.normal());
  for (float& x : ref) x = static_cast<float>(std::exp(rng.uniform(-2, 0)));
  auto prod = [&](int from, int to, int d) {  // a_from ... a_to (1 when empty)
    double p = 1;
    for (int s = from; s <= to; ++s) p *= a[s * K + d];
    return p;
  };
  std::vector<float> f(n * K), b(n * K), ok(n * K), oq(n * K), ob(n * K);
  simd::cumprod_forward(a.data(), K, n, f.data());
  simd::cumprod_backward(a.data(), K, n, b.data());
  simd::decay_rows_forward(k.data(), q.data(), ldx, a.data(), K, n, ok.data(), oq.data());
  simd::decay_rows_backward(k.data(), ldx, a.data(), ref.data(), K, n, ob.data());
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < K; ++d) {
      EXPECT_NEAR(f[i * K + d], prod(0, i, d), 1e-6 * prod(0, i, d));
      EXPECT_NEAR(b[i * K + d], prod(i + 1, n - 1, d), 1e-6 * prod(i + 1, n - 1, d));
      EXPECT_NEAR(ok[i * K + d], k[i * ldx + d] * prod(1, i, d), 1e-6 * std::abs(k[i * ldx + d]));
      EXPECT_NEAR(oq[i * K + d], q[i * ldx + d] * prod(1, i, d), 1e-6 * std::abs(q[i * ldx + d]));
      const double wb = k[i * ldx + d] * prod(i + 1, n - 1, d) * ref[d];
      EXPECT_NEAR(ob[i * K + d], wb, 1e-6 * std::abs(wb) + 1e-30);
    }
}

TEST(VecOps, TransposeAndRowOps) {
  for (auto [rows, cols] :
       {std::pair{7, 19}, std::pair{64, 128}, std::pair{3, 5}, std::pair{13, 100}}) {
    const int lds = cols + 3, ldd = rows + 2;
    std::vector<float> a(rows * lds), t(cols * ldd, -1.0f);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
    simd::transpose(a.data(), lds, t.data(), ldd, rows, cols);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        ASSERT_EQ(t[j * ldd + i], a[i * lds + j]) << rows << "x" << cols;
    for (int j = 0; j < cols; ++j)
      for (int i = rows; i < ldd; ++i) ASSERT_EQ(t[j * ldd + i], -1.0f) << "wrote past the block";
  }
  std::vector<float> v = {1, 2, 3, 4, 5}, ks = {1, 1, 1, 1, 1}, y(5);
  const float e = 2.0f, b = 0.5f;
  simd::beta_residual_rows(y.data(), 5, v.data(), 5, ks.data(), 5, &e, &b, 1, 5);
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(y[i], 0.5f * (v[i] - 2.0f));
  simd::axpy(y.data(), v.data(), 2.0f, 5);
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(y[i], 0.5f * (v[i] - 2.0f) + 2 * v[i]);
  EXPECT_FLOAT_EQ(simd::sum_squares(v.data(), 5), 55.0f);
}

}  // namespace
}  // namespace hanpu
