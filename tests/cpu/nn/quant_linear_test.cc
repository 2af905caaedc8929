// Quantized projections (cpu/nn/quant_linear.h) under every kernel ceiling this CPU has,
// decode (int8 activations on the int8 kernels) and prefill (W decoded to bf16 for the amx,
// dot or pairs kernel, or the int8 kernels under blas and fma), against the float64 product of
// the reference-decoded weights and x, on fresh random blocks, odd sizes and NaN-poisoned y.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/rng.h"
#include "cpu/nn/projection_kernels.h"
#include "cpu/nn/quant_linear.h"

namespace hanpu::cpu {
namespace {

// Error bounds, derived, on the squared error of y over the sum of the squared products
// w_oi x_ti it sums (not over y^2: a random W's rows share a mean, so y ~ mean * sum(x), which
// one decode row can make near zero while the error is not). bf16 keeps 8 significant bits: a
// value v in [1, 2) is rounded to a step of 2^-7, an error uniform in half a step, so a
// rounded factor's relative error has variance 2^-14 / 12 E[1/v^2] = 2.5e-6 per product. The
// widened path rounds W (pairs: 2.5e-6) or W and x (amx, dot: 5e-6); bound 2e-5. The int8
// path quantizes x per 32 values to steps of amax / 127, an error uniform in half a step: for
// Gaussian x (amax of 32 about 2.1 sigma) a variance of (2.1 / 127)^2 / 12 = 2.3e-5 of x's;
// bound 1e-4. Each ratio sums hundreds of independent terms, so it stays within a few tenths
// of its expectation.
constexpr double kWidenedBound = 2e-5, kInt8Bound = 1e-4;

// sum (got - want)^2 / sum_t,o,i (w_oi x_ti)^2; NaN anywhere in got fails every bound.
double error_per_product(const std::vector<float>& got, const std::vector<double>& want,
                         double products) {
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i) e += (got[i] - want[i]) * (got[i] - want[i]);
  return e / products;
}

TEST(QuantLinear, EveryCeilingMatchesDoubleOnDecodeAndPrefill) {
  Rng rng(0x9a17 ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  const struct {
    QuantType type;
    int in, out;
  } shapes[] = {{QuantType::kQ4_K, 512, 37},
                {QuantType::kQ6_K, 256, 70},
                {QuantType::kQ8_0, 352, 29},
                {QuantType::kIQ4_XS, 768, 45},
                {QuantType::kQ5_0, 96, 33},
                {QuantType::kQ4_0, 160, 64},
                // Decoded for a prefill in two panels, the second a partial one.
                {QuantType::kQ4_K, 8192, 300}};
  ASSERT_GT(300, quant_widen_panel_rows(8192));
  ASSERT_LT(300, 2 * quant_widen_panel_rows(8192));
  for (const auto& s : shapes) {
    const PackedLinear w = random_quant_linear(s.type, s.in, s.out, rng.next(), 0.05f);
    std::vector<float> row(static_cast<size_t>(s.in));
    std::vector<double> wd(static_cast<size_t>(s.in) * s.out);
    for (int o = 0; o < s.out; ++o) {
      quant_linear_row(w, o, row.data());
      for (int i = 0; i < s.in; ++i) wd[static_cast<size_t>(o) * s.in + i] = row[i];
    }
    for (const int64_t T : {1, 7, 33, 70}) {
      std::vector<float> x(static_cast<size_t>(T) * s.in);
      for (float& v : x) v = static_cast<float>(rng.normal());
      std::vector<double> want(static_cast<size_t>(T) * s.out);
      double products = 0;
      for (int64_t t = 0; t < T; ++t)
        for (int o = 0; o < s.out; ++o) {
          double acc = 0;
          for (int i = 0; i < s.in; ++i) {
            const double p =
                wd[static_cast<size_t>(o) * s.in + i] * x[static_cast<size_t>(t) * s.in + i];
            acc += p;
            products += p * p;
          }
          want[static_cast<size_t>(t) * s.out + o] = acc;
        }
      for (const ProjectionKernelInfo& k : projection_kernels()) {
        if (!k.usable() || k.kernel == ProjectionKernel::kAuto) continue;
        std::vector<float> y(want.size(), NAN);
        quant_linear(x.data(), s.in, T, w, y.data(), s.out, 2, k.kernel);
        const bool widened = quant_prefill_widens(w, T, k.kernel);
        EXPECT_EQ(widened, T >= kQuantWidenRows &&
                               projection_kernel_allowed(k.kernel, ProjectionKernel::kPairs));
        EXPECT_LE(error_per_product(y, want, products), widened ? kWidenedBound : kInt8Bound)
            << quant_type_info(s.type).name << " T " << T << " ceiling " << k.name;
      }
    }
  }
}

}  // namespace
}  // namespace hanpu::cpu
