// SiLU products and the causal short convolution against double-precision loops, over odd
// sizes and channel ranges, with poisoned outputs.
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
