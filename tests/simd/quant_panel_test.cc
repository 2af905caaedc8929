// The int8 panel GEMM (simd/quant_panel.h) against float64: fresh random blocks of every type
// it takes, rows ending inside a unit, panels with fewer columns than they hold, tiles of 1-4
// activation rows, and outputs poisoned with NaN (cells outside the rows and columns asked for
// stay NaN; every cell asked for is finite and within the derived bound); non-finite
// activations give NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/aligned_vector.h"
#include "base/quant_blocks.h"
#include "base/rng.h"
#include "simd/quant_dot.h"
#include "simd/quant_panel.h"
#include "quant_test_rows.h"

namespace hanpu::simd {
namespace {

using Panel = std::vector<uint8_t, CacheAlignedAllocator<uint8_t>>;

TEST(QuantPanel, MatchesFloat64WithinTheDerivedBound) {
  if (!quant_panel_usable(QuantType::kQ4_K)) GTEST_SKIP() << "no AVX512-VNNI on this CPU";
  Rng rng(29);
  int tried = 0;
  for (const QuantTypeInfo& info : quant_types()) {
    if (!quant_panel_usable(info.type)) continue;
    ++tried;
    for (int in : row_lengths(info.type)) {
      for (int n : {32, 7, 19}) {
        constexpr int64_t T = 7, r0 = 1;  // rows 1..6: a tile of 4 and one of 2
        const int64_t ldy = 37;
        const size_t row_bytes = static_cast<size_t>(in / info.block_elems) * info.bytes;
        const auto w = random_rows(info.type, n, in, rng);
        std::vector<const uint8_t*> rows(n);
        for (int o = 0; o < n; ++o) rows[o] = w.data() + (n - 1 - o) * row_bytes;  // reversed
        Panel panel(quant_panel_bytes(info.type, in), 0xA5);
        pack_quant_panel(info.type, rows.data(), n, in, panel.data());
        std::vector<float> x(T * in);
        for (float& v : x) v = static_cast<float>(rng.normal());
        QuantActs a;
        quantize_acts(x.data(), in, T, in, nullptr, &a, quant_panel_acts(info.type));
        PanelActs pa;
        size_panel_acts(info.type, a, &pa);
        panel_acts_rows(info.type, a, 0, T, &pa);
        std::vector<float> y(T * ldy, std::numeric_limits<float>::quiet_NaN());
        quant_panel_gemm(info.type, panel.data(), n, a, pa, r0, T, y.data(), ldy);
        std::vector<float> wd(in);
        const bool per_unit = quant_panel_acts(info.type) == ActsKinds::kPerUnit;
        for (int64_t r = 0; r < T; ++r) {
          for (int c = 0; c < ldy; ++c) {
            const float got = y[r * ldy + c];
            if (r < r0 || c >= n) {
              ASSERT_TRUE(std::isnan(got)) << "wrote outside: row " << r << " col " << c;
              continue;
            }
            dequantize_blocks(info.type, rows[c], in / info.block_elems, wd.data());
            const RefDot dot = ref_dot(info.type, rows[c], in, wd, a, r, per_unit);
            const double ref = dot.ref;
            double mag = dot.mag;
            // The signed-code layout's sums carry 128 sum_g scale_g sum c more, taken off per
            // unit: their part is at most 128 |w_i| d_a a value.
            if (per_unit) {
              for (int i = 0; i < in; ++i)
                mag += 128 * std::abs(double(wd[i])) * std::abs(double(a.d256_row(r)[i / 256]));
            }
            // f32 error: the decoder's scale and offset round once or twice; per group the
            // scaled sum and the offset term round once each (the integer sums and the
            // activations' sums are exact), per unit the weights' 128-term and the
            // activations' scale once each; each relative to the parts' magnitudes (mag), as
            // in quant_dot_test.cc.
            const double bound = (std::ceil(in / 16.0) + 8) * std::ldexp(mag, -23);
            ASSERT_TRUE(std::isfinite(got)) << info.name;
            ASSERT_NEAR(got, ref, bound)
                << info.name << " in " << in << " n " << n << " col " << c << " row " << r;
          }
        }
      }
    }
  }
  EXPECT_GE(tried, 10);  // the 32-value types, Q4_K, Q5_K, IQ4_XS, Q6_K
}

TEST(QuantPanel, NonFiniteActivationsGiveNaN) {
  if (!quant_panel_usable(QuantType::kQ4_K)) GTEST_SKIP() << "no AVX512-VNNI on this CPU";
  Rng rng(3);
  for (const QuantType t : {QuantType::kQ4_K, QuantType::kQ6_K, QuantType::kQ8_0}) {
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      constexpr int in = 512, n = 5;
      const auto w = random_rows(t, n, in, rng);
      std::vector<const uint8_t*> rows(n);
      const QuantTypeInfo& info = quant_type_info(t);
      for (int o = 0; o < n; ++o) rows[o] = w.data() + o * (in / info.block_elems) * info.bytes;
      Panel panel(quant_panel_bytes(t, in));
      pack_quant_panel(t, rows.data(), n, in, panel.data());
      std::vector<float> x(2 * in, 0.5f);
      x[in + 300] = bad;  // the second row's second unit
      QuantActs a;
      quantize_acts(x.data(), in, 2, in, nullptr, &a, quant_panel_acts(t));
      PanelActs pa;
      size_panel_acts(t, a, &pa);
      panel_acts_rows(t, a, 0, 2, &pa);
      std::vector<float> y(2 * n, 0.0f);
      quant_panel_gemm(t, panel.data(), n, a, pa, 0, 2, y.data(), n);
      for (int c = 0; c < n; ++c) {
        EXPECT_TRUE(std::isfinite(y[c]));
        EXPECT_TRUE(std::isnan(y[n + c])) << y[n + c];
      }
    }
  }
}

}  // namespace
}  // namespace hanpu::simd
