// Quantized projections (cpu/nn/quant_linear.h) under every kernel ceiling this CPU has,
// decode (int8 activations on the int8 kernels) and prefill (the int8 panels under auto where
// the CPU has them, W decoded to bf16 for the amx, dot or pairs kernel, or the int8 kernels
// under blas and fma), against the float64 product of
// the reference-decoded weights and x, on fresh random blocks, odd sizes and NaN-poisoned y.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/rng.h"
#include "cpu/nn/projection_kernels.h"
#include "cpu/nn/quant_linear.h"
#include "simd/quant_dot.h"
#include "simd/quant_panel.h"
#include "simd/quant_q4k_rows16.h"
#include "simd/quant_q5_0_rows16.h"
#include "simd/quant_q6k_rows16.h"

namespace hanpu::cpu {
namespace {

// The widened path's bound, derived, on the squared error of y over the sum of the squared
// products w_oi x_ti it sums (not over y^2: a random W's rows share a mean, so y ~ mean *
// sum(x), which one decode row can make near zero while the error is not). bf16 keeps 8
// significant bits: a value v in [1, 2) is rounded to a step of 2^-7, an error uniform in half
// a step, so a rounded factor's relative error has variance 2^-14 / 12 E[1/v^2] = 2.5e-6 per
// product. The widened path rounds W (pairs: 2.5e-6) or W and x (amx, dot: 5e-6); bound 2e-5.
// Its rounding errors are independent per product, so the ratio stays near its expectation.
constexpr double kWidenedBound = 2e-5;

// sum (got - want)^2 / sum_t,o,i (w_oi x_ti)^2; NaN anywhere in got fails every bound.
double error_per_product(const std::vector<float>& got, const std::vector<double>& want,
                         double products) {
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i) e += (got[i] - want[i]) * (got[i] - want[i]);
  return e / products;
}

// The int8 path's bound, a worst case per output: x is quantized per block (32 values, or a
// whole unit of 256 where simd::quant_gemm_uses_unit_acts) to steps of amax / 127, each value
// within half a step, so |y_to - want_to| <= sum_i |w_oi| step_ti / 2; the kernels' f32 sums
// add rounding far below 1e-5 of sum_i |w_oi x_ti|. (A statistical bound does not hold here:
// one decode row's quantization errors are shared by every output, so their squared sum has
// few degrees of freedom and a long tail.) Returns the outputs past the bound (NaN included).
int outputs_past_int8_bound(const std::vector<float>& got, const std::vector<double>& want,
                            const std::vector<float>& x, const std::vector<double>& wd, int64_t T,
                            int in, int out, int block) {
  int bad = 0;
  for (int64_t t = 0; t < T; ++t) {
    const float* xt = x.data() + t * in;
    std::vector<double> half_step(static_cast<size_t>(in));
    for (int b0 = 0; b0 < in; b0 += block) {
      double amax = 0;
      for (int i = b0; i < std::min(in, b0 + block); ++i)
        amax = std::max(amax, std::abs(double(xt[i])));
      for (int i = b0; i < std::min(in, b0 + block); ++i) half_step[i] = amax / 127 / 2;
    }
    for (int o = 0; o < out; ++o) {
      double bound = 0;
      for (int i = 0; i < in; ++i) {
        const double w = std::abs(wd[static_cast<size_t>(o) * in + i]);
        bound += w * (half_step[i] * 1.0001 + 1e-5 * std::abs(double(xt[i])));
      }
      const double err = std::abs(double(got[t * out + o]) - want[t * out + o]);
      if (!(err <= bound)) ++bad;
    }
  }
  return bad;
}

// Activations per block of the int8 path for w at T rows.
int int8_block(const PackedLinear& w, int64_t T) {
  return simd::quant_gemm_uses_unit_acts(*w.quant, w.out, T, simd::quant_kernel_default())
             ? simd::kQuantUnit
             : 32;
}

// Activations per block of the int8 panels for type t.
int panel_block(QuantType t) {
  return simd::quant_panel_acts(t) == simd::ActsKinds::kPerUnit ? simd::kQuantUnit : 32;
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
                // Decoded for a prefill in units of 1 strip (deep rows)...
                {QuantType::kQ4_K, 8192, 300},
                // ... and of 4 strips, the last strip 8 columns wide.
                {QuantType::kQ4_K, 256, 1000}};
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
        if (!k.usable()) continue;
        std::vector<float> y(want.size(), NAN);
        quant_linear(x.data(), s.in, T, w, y.data(), s.out, 2, k.kernel);
        const bool panels = quant_prefill_panels(w, T, k.kernel);
        EXPECT_EQ(panels, T >= kQuantPanelRows && k.kernel == ProjectionKernel::kAuto &&
                              simd::quant_panel_usable(s.type));
        const bool widened = quant_prefill_widens(w, T, k.kernel);
        EXPECT_EQ(widened, T >= kQuantWidenRows && !panels &&
                               projection_kernel_allowed(k.kernel, ProjectionKernel::kPairs));
        if (panels) {  // the int8 panels: activations as the decode kernels quantize them
          EXPECT_EQ(outputs_past_int8_bound(y, want, x, wd, T, s.in, s.out, panel_block(s.type)), 0)
              << quant_type_info(s.type).name << " T " << T << " panels";
        } else if (widened) {
          EXPECT_LE(error_per_product(y, want, products), kWidenedBound)
              << quant_type_info(s.type).name << " T " << T << " ceiling " << k.name;
        } else {
          EXPECT_EQ(outputs_past_int8_bound(y, want, x, wd, T, s.in, s.out, int8_block(w, T)), 0)
              << quant_type_info(s.type).name << " T " << T << " ceiling " << k.name;
        }
      }
    }
  }
}

// Several projections of one x through linear_many (one quantization of x, their rows shared
// out as one range; types mixed, so both activation forms at once) give each projection's
// product within the bounds above, decode and prefill alike.
TEST(QuantLinear, ManyProjectionsOfOneInputMatchDouble) {
  Rng rng(0x51c3 ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  constexpr int in = 512;
  const std::pair<QuantType, int> specs[] = {{QuantType::kQ4_K, 37},
                                             {QuantType::kQ6_K, 16},
                                             {QuantType::kQ8_0, 21},
                                             {QuantType::kQ4_0, 5}};
  std::vector<PackedLinear> ws;
  for (const auto& [type, out] : specs)
    ws.push_back(random_quant_linear(type, in, out, rng.next(), 0.05f));
  for (const int64_t T : {1, 6, 45}) {
    std::vector<float> x(static_cast<size_t>(T) * in);
    for (float& v : x) v = static_cast<float>(rng.normal());
    for (const ProjectionKernelInfo& k : projection_kernels()) {
      if (!k.usable()) continue;
      std::vector<std::vector<float>> ys;
      std::vector<LinearOut> outs;
      for (const PackedLinear& w : ws) ys.emplace_back(static_cast<size_t>(T) * w.out, NAN);
      for (size_t i = 0; i < ws.size(); ++i) outs.push_back({&ws[i], ys[i].data(), ws[i].out});
      linear_many(x.data(), in, T, outs, 2, k.kernel);
      for (size_t i = 0; i < ws.size(); ++i) {
        const PackedLinear& w = ws[i];
        std::vector<double> want(static_cast<size_t>(T) * w.out);
        std::vector<double> wd(static_cast<size_t>(w.out) * in);
        std::vector<float> row(in);
        double products = 0;
        for (int o = 0; o < w.out; ++o) {
          quant_linear_row(w, o, row.data());
          for (int j = 0; j < in; ++j) wd[static_cast<size_t>(o) * in + j] = row[j];
          for (int64_t t = 0; t < T; ++t) {
            double acc = 0;
            for (int j = 0; j < in; ++j) {
              const double p = double(row[j]) * x[static_cast<size_t>(t) * in + j];
              acc += p;
              products += p * p;
            }
            want[static_cast<size_t>(t) * w.out + o] = acc;
          }
        }
        const std::string what = std::string(quant_type_info(w.quant.value()).name) + " T " +
                                 std::to_string(T) + " ceiling " + std::string(k.name);
        if (quant_prefill_panels(w, T, k.kernel)) {
          EXPECT_EQ(outputs_past_int8_bound(ys[i], want, x, wd, T, in, w.out, simd::kQuantUnit), 0)
              << what;
        } else if (quant_prefill_widens(w, T, k.kernel)) {
          EXPECT_LE(error_per_product(ys[i], want, products), kWidenedBound) << what;
        } else {
          EXPECT_EQ(outputs_past_int8_bound(ys[i], want, x, wd, T, in, w.out, int8_block(w, T)), 0)
              << what;
        }
      }
    }
  }
}

// Rows picked from a tensor out of order (a pointer a row) and rows joined from two tensors
// give, column for column, what the same rows give as a tensor's own (one base and a stride):
// bit for bit, decode and prefill, since each output column is computed on its own (a Q4_K
// decode's repacked groups too: a row a lane).
TEST(QuantLinear, PickedAndJoinedRowsMatchATensorsOwnRows) {
  Rng rng(0x51de ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  for (const QuantType type : {QuantType::kQ4_K, QuantType::kQ6_K}) {
    SCOPED_TRACE(quant_type_info(type).name);
    const int in = 512, out = 300;
    const PackedLinear full = random_quant_linear(type, in, out, rng.next(), 0.05f);
    ASSERT_TRUE(full.qrows.empty());  // a base and a stride
    std::vector<int> picked(out);
    for (int o = 0; o < out; ++o) picked[o] = static_cast<int>((o * 7 + 3) % out);
    const PackedLinear pick = quant_linear_from_rows(type, full.qrow(0), in, picked, full.qowner);
    ASSERT_EQ(pick.qrows.size(), static_cast<size_t>(out));
    std::vector<int> head(100), tail(out - 100);
    for (int o = 0; o < 100; ++o) head[o] = o;
    for (int o = 100; o < out; ++o) tail[o - 100] = o;
    const PackedLinear a = quant_linear_from_rows(type, full.qrow(0), in, tail, full.qowner),
                       b = quant_linear_from_rows(type, full.qrow(0), in, head, full.qowner);
    const PackedLinear joined = quant_linear_concat(a, b);  // rows 100.., then 0..99: not adjacent
    ASSERT_EQ(joined.qrows.size(), static_cast<size_t>(out));
    const PackedLinear adjacent = quant_linear_concat(b, a);
    EXPECT_TRUE(adjacent.qrows.empty());  // 0..99 then 100..: one base again
    // Rows 0..159 and 160..: the first part's repacked groups are whole, so the second's are
    // appended as they are rather than repacked.
    std::vector<int> low(160), high(out - 160);
    for (int o = 0; o < out; ++o) (o < 160 ? low[o] : high[o - 160]) = o;
    const PackedLinear in_groups =
        quant_linear_concat(quant_linear_from_rows(type, full.qrow(0), in, low, full.qowner),
                            quant_linear_from_rows(type, full.qrow(0), in, high, full.qowner));
    EXPECT_EQ(in_groups.qgroups.size(), full.qgroups.size());
    for (const int64_t T : {1, 50}) {
      std::vector<float> x(static_cast<size_t>(T) * in);
      for (float& v : x) v = static_cast<float>(rng.normal());
      std::vector<float> y_full(static_cast<size_t>(T) * out, NAN),
          y_pick = y_full, y_join = y_full, y_adj = y_full, y_groups = y_full;
      quant_linear(x.data(), in, T, full, y_full.data(), out, 2);
      quant_linear(x.data(), in, T, pick, y_pick.data(), out, 2);
      quant_linear(x.data(), in, T, joined, y_join.data(), out, 2);
      quant_linear(x.data(), in, T, adjacent, y_adj.data(), out, 2);
      quant_linear(x.data(), in, T, in_groups, y_groups.data(), out, 2);
      for (int64_t t = 0; t < T; ++t) {
        for (int o = 0; o < out; ++o) {
          const float want = y_full[t * out + o];
          ASSERT_FALSE(std::isnan(want));
          ASSERT_EQ(y_pick[t * out + o], y_full[t * out + picked[o]]) << "T " << T << " o " << o;
          ASSERT_EQ(y_join[t * out + o], y_full[t * out + (o + 100) % out]) << "T " << T;
          ASSERT_EQ(y_adj[t * out + o], want) << "T " << T << " o " << o;
          ASSERT_EQ(y_groups[t * out + o], want) << "T " << T << " o " << o;
        }
      }
    }
  }
}

// The decode copies repacked 16 rows to a group (attach_decode_groups: Q4_K, Q6_K, Q5_0):
// made exactly where the CPU runs their kernels, for those types only, not under
// HANPU_REPACK=0; a decode from a copy and one from the blocks are both within the int8 bound
// of the float64 product, on odd row counts (the last group partly empty), and agree with
// each other closely.
TEST(QuantLinear, RepackedGroupsOnlyWhereUsableAndWithinTheBound) {
  Rng rng(0x4b16 ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  EXPECT_TRUE(random_quant_linear(QuantType::kQ8_0, 256, 32, 1).qgroups.empty());
  EXPECT_TRUE(random_quant_linear(QuantType::kQ5_K, 256, 32, 1).qgroups.empty());
  const struct {
    QuantType type;
    int group_rows;
    bool usable;
  } kinds[] = {{QuantType::kQ4_K, simd::kQ4kGroupRows, simd::q4k_group_usable()},
               {QuantType::kQ6_K, simd::kQ6kGroupRows, simd::q6k_group_usable()},
               {QuantType::kQ5_0, simd::kQ5_0GroupRows, simd::q5_0_group_usable()}};
  for (const auto& k : kinds) {
    for (const int out : {1, 3, 16, 37, 300}) {
      const int in = 768;
      const std::string what =
          std::string(quant_type_info(k.type).name) + " out " + std::to_string(out);
      const uint64_t seed = rng.next();
      const PackedLinear grouped = random_quant_linear(k.type, in, out, seed, 0.05f);
      const size_t groups = (out + k.group_rows - 1) / k.group_rows;
      ASSERT_EQ(grouped.qgroups.size(), k.usable ? groups : 0u) << what;
      ASSERT_EQ(grouped.qgroup_rows, k.usable ? k.group_rows : 0) << what;
      EXPECT_EQ(grouped.decode_copy_bytes(), static_cast<int64_t>(grouped.qgroups.size()) *
                                                 k.group_rows *
                                                 static_cast<int64_t>(grouped.qrow_bytes));
      std::vector<int> all(out);
      for (int o = 0; o < out; ++o) all[o] = o;
      EXPECT_TRUE(quant_linear_from_rows(k.type, grouped.qrow(0), in, all, grouped.qowner,
                                         /*decode_copy=*/false)
                      .qgroups.empty());  // a table read a row at a time
      setenv("HANPU_REPACK", "0", 1);
      const PackedLinear blocks = random_quant_linear(k.type, in, out, seed, 0.05f);
      unsetenv("HANPU_REPACK");
      ASSERT_TRUE(blocks.qgroups.empty());
      EXPECT_EQ(blocks.decode_copy_bytes(), 0);
      std::vector<float> row(static_cast<size_t>(in)), x(static_cast<size_t>(in));
      for (float& v : x) v = static_cast<float>(rng.normal());
      std::vector<double> wd(static_cast<size_t>(in) * out), want(static_cast<size_t>(out));
      for (int o = 0; o < out; ++o) {
        quant_linear_row(blocks, o, row.data());
        double acc = 0;
        for (int i = 0; i < in; ++i) {
          wd[static_cast<size_t>(o) * in + i] = row[i];
          acc += double(row[i]) * x[i];
        }
        want[o] = acc;
      }
      std::vector<float> y_grouped(static_cast<size_t>(out) + 1, NAN), y_blocks = y_grouped;
      quant_linear(x.data(), in, 1, grouped, y_grouped.data(), out, 2);
      quant_linear(x.data(), in, 1, blocks, y_blocks.data(), out, 2);
      EXPECT_TRUE(std::isnan(y_grouped[out])) << "wrote past the outputs, " << what;
      y_grouped.pop_back();
      y_blocks.pop_back();
      const int block = int8_block(blocks, 1);
      EXPECT_EQ(outputs_past_int8_bound(y_grouped, want, x, wd, 1, in, out, block), 0) << what;
      EXPECT_EQ(outputs_past_int8_bound(y_blocks, want, x, wd, 1, in, out, block), 0) << what;
      for (int o = 0; o < out; ++o)
        EXPECT_NEAR(y_grouped[o], y_blocks[o], 1e-4 * (1 + std::abs(want[o]))) << what << " " << o;
    }
  }
}

}  // namespace
}  // namespace hanpu::cpu
