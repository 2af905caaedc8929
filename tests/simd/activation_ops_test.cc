// SiLU and sigmoid products, the causal short convolution and the KDA forget gate against
// double-precision loops, over odd sizes, channel ranges and inputs far out in both
// directions, with poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/rng.h"
#include "simd/activation_ops.h"

namespace hanpu::simd {
namespace {

double silu(double x) { return x / (1.0 + std::exp(-x)); }

TEST(ActivationOps, SiluMulMatchesDouble) {
  Rng rng(3);
  for (size_t n : {1u, 7u, 16u, 33u, 1000u}) {
    std::vector<float> g(n), u(n), out(n, NAN);
    for (size_t i = 0; i < n; ++i)
      g[i] = static_cast<float>(rng.uniform(-30, 30)), u[i] = static_cast<float>(rng.normal());
    silu_mul(g.data(), u.data(), out.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double want = silu(g[i]) * u[i];
      ASSERT_NEAR(out[i], want, 1e-6 * (1 + std::abs(want))) << "n=" << n << " i=" << i;
    }
  }
}

// Gates far below zero: silu(x) -> 0 (a SwiGLU gate of -200 once came back as -200, the
// vector exp being undefined past 104), and far above: silu(x) -> x. NaN stays NaN.
TEST(ActivationOps, SiluMulHoldsFarOutInBothDirections) {
  std::vector<float> g, u;
  for (float x : {-3e38f, -1e6f, -700.0f, -200.0f, -105.0f, -104.0f, -89.0f, -88.0f, -87.0f, -20.0f,
                  0.0f, 20.0f, 88.0f, 89.0f, 200.0f, 1e6f, 3e38f}) {
    g.push_back(x);
    u.push_back(1.0f);
  }
  std::vector<float> out(g.size() + 1, NAN);
  silu_mul(g.data(), u.data(), out.data(), g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const double want = silu(g[i]);
    EXPECT_NEAR(out[i], want, 1e-6 * (1 + std::abs(want))) << "gate " << g[i];
  }
  EXPECT_TRUE(std::isnan(out.back())) << "wrote past n";
  const float nan_gate = NAN, one = 1.0f;
  float nan_out = 0;
  silu_mul(&nan_gate, &one, &nan_out, 1);
  EXPECT_TRUE(std::isnan(nan_out));
}

// sigmoid(gate) * up against double, over odd sizes and gates far out in both directions
// (the vector exp is undefined past 104, so the sigmoid must not take exp of a large
// argument), with a poisoned element past n; NaN stays NaN.
TEST(ActivationOps, SigmoidMulMatchesDouble) {
  Rng rng(5);
  const auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  for (size_t n : {1u, 7u, 16u, 33u, 1000u}) {
    std::vector<float> g(n), u(n), out(n + 1, NAN);
    for (size_t i = 0; i < n; ++i) {
      g[i] = static_cast<float>(i % 5 == 2 ? rng.uniform(-400, 400) : rng.uniform(-30, 30));
      u[i] = static_cast<float>(rng.normal());
    }
    sigmoid_mul(g.data(), u.data(), out.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double want = sigmoid(g[i]) * u[i];
      ASSERT_NEAR(out[i], want, 1e-6 * (1 + std::abs(want))) << "n=" << n << " gate " << g[i];
    }
    EXPECT_TRUE(std::isnan(out[n])) << "wrote past n";
  }
  const float nan_gate = NAN, one = 1.0f;
  float nan_out = 0;
  sigmoid_mul(&nan_gate, &one, &nan_out, 1);
  EXPECT_TRUE(std::isnan(nan_out));
}

// g = -rate softplus(x + bias) (softplus(v) = v above 20), or lower_bound sigmoid(rate v).
TEST(ActivationOps, KdaGateMatchesDouble) {
  Rng rng(7);
  for (size_t n : {1u, 5u, 16u, 33u, 128u, 131u}) {
    for (float bound : {NAN, -5.0f}) {
      std::vector<float> x(n), bias(n), g(n + 1, NAN);
      for (size_t i = 0; i < n; ++i) {
        // Normal draws and a few far out, where exp overflows or underflows.
        x[i] = static_cast<float>(i % 7 == 3 ? rng.uniform(-400, 400) : rng.normal() * 8);
        bias[i] = static_cast<float>(rng.normal());
      }
      const float rate = static_cast<float>(std::exp(rng.uniform(-1, 2)));
      kda_gate(x.data(), bias.data(), rate, bound, g.data(), n);
      EXPECT_TRUE(std::isnan(g[n])) << "wrote past n";
      for (size_t i = 0; i < n; ++i) {
        const double v = double(x[i]) + bias[i];
        const double want = std::isnan(bound)
                                ? -double(rate) * (v > 20 ? v : std::log1p(std::exp(v)))
                                : bound / (1.0 + std::exp(-double(rate) * v));
        ASSERT_NEAR(g[i], want, 2e-6 * (1 + std::abs(want)))
            << "n=" << n << " i=" << i << " v=" << v << " bound " << bound;
      }
    }
  }
}

TEST(ActivationOps, CausalConvSiluMatchesDouble) {
  Rng rng(5);
  for (int kc : {1, 2, 4, 9}) {
    for (int C : {1, 17, 64, 100}) {
      const int64_t T = 13;
      const int hist = kc - 1, ld_in = C + 3, ld_out = C + 5;
      std::vector<float> in((hist + T) * ld_in), w(static_cast<size_t>(kc) * C),
          out(T * ld_out, NAN);
      for (float& x : in) x = static_cast<float>(rng.normal());
      for (float& x : w) x = static_cast<float>(rng.normal() * 0.5);
      const int c0 = C > 3 ? 3 : 0, c1 = C;  // a channel range not starting at 0
      causal_conv_silu(in.data(), ld_in, w.data(), C, kc, T, c0, c1, out.data() + c0, ld_out);
      for (int64_t t = 0; t < T; ++t) {
        for (int c = 0; c < C; ++c) {
          const float got = out[t * ld_out + c];
          if (c < c0) {
            ASSERT_TRUE(std::isnan(got)) << "wrote outside its channels";
            continue;
          }
          double acc = 0;
          for (int j = 0; j < kc; ++j)
            acc += static_cast<double>(w[j * C + c]) * in[(t + j) * ld_in + c];
          ASSERT_NEAR(got, silu(acc), 1e-5 * (1 + std::abs(acc)))
              << "kc=" << kc << " C=" << C << " t=" << t;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hanpu::simd
