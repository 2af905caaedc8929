// The projection (fp32 and f16 panels, bf16 pairs) on every kernel of the table this machine
// has (projection_kernels.h: AMX, the dot instruction, the pairs kernel, OpenBLAS, the FMA
// micro-kernel) against a double-precision
// product: odd shapes (panels narrower than 256, depth slices not multiples of 512, six panels
// with a short last one, padded
// pairs blocks), strided x and y, 1 and 2 threads, poisoned outputs; short convolution and
// SwiGLU over cores against the same loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <numeric>
#include <vector>

#include "base/rng.h"
#include "cpu/nn/conv1d.h"
#include "cpu/nn/linear.h"
#include "cpu/nn/quant_linear.h"

namespace hanpu::cpu {
namespace {

class LinearDtype : public ::testing::TestWithParam<DType> {};

TEST_P(LinearDtype, MatchesDoubleOnOddShapes) {
  // Against the product of the weights as stored (rounded to the dtype): only the fp32
  // accumulation differs, so the bound is tight for 16-bit weights too; T = 1 takes the
  // GEMV path ({1, 1283, 64} and {1, 301, 300}: panels cut into slices of their inputs, the
  // slices' sums added afterwards), T > 1 the AMX tiles, the dot kernel or (bf16) the pairs kernel
  // and the widened blocks: {300, 40, 2100} has nine panels, so one 300-row unit each: OpenBLAS's
  // size for f32 / f16.
  const DType dtype = GetParam();
  Rng rng(11);
  struct Shape {
    int64_t T;
    int in, out;
  };
  for (const Shape s : {Shape{1, 1, 1},
                        {3, 17, 5},
                        {7, 100, 300},
                        {200, 513, 257},
                        {33, 1100, 16},
                        {1, 64, 1000},
                        {1000, 70, 40},
                        {40, 96, 1300},
                        {1, 130, 4100},
                        {1, 1283, 64},
                        {1, 301, 300},
                        {300, 40, 2100}}) {
    std::vector<float> w(static_cast<size_t>(s.out) * s.in);
    for (float& x : w) x = static_cast<float>(rng.normal());
    // Output columns from a permutation of W's rows, as the Qwen3-Next regrouping does.
    std::vector<int> rows(s.out);
    std::iota(rows.begin(), rows.end(), 0);
    for (int i = s.out - 1; i > 0; --i) std::swap(rows[i], rows[rng.below(i + 1)]);
    const PackedLinear p = PackedLinear::from_rows(w.data(), s.in, rows, dtype);
    // Exact for the panels; the bf16 pairs layout pads to whole 32 x 32 blocks.
    const auto padded = [](int n) { return static_cast<int64_t>((n + 31) / 32 * 32); };
    ASSERT_EQ(p.bytes(), dtype == DType::kBF16 ? padded(s.in) * padded(s.out) * 2
                                               : static_cast<int64_t>(s.in) * s.out *
                                                     static_cast<int64_t>(dtype_size(dtype)));
    const int64_t ldx = s.in + 3, ldy = s.out + 2;
    std::vector<float> x(s.T * ldx);
    for (float& v : x) v = static_cast<float>(rng.normal());
    // The double products, once per shape: of x as given and of x rounded to bf16.
    std::vector<double> exact(static_cast<size_t>(s.T) * s.out), rounded(exact.size());
    for (int64_t t = 0; t < s.T; ++t) {
      for (int o = 0; o < s.out; ++o) {
        double acc = 0, acc_rounded = 0;
        for (int i = 0; i < s.in; ++i) {
          const float xi = x[t * ldx + i];
          acc += static_cast<double>(xi) * p.at(i, o);
          acc_rounded += static_cast<double>(bf16_bits_to_f32(f32_to_bf16_bits(xi))) * p.at(i, o);
        }
        exact[t * s.out + o] = acc;
        rounded[t * s.out + o] = acc_rounded;
        const float src = w[static_cast<size_t>(rows[o]) * s.in + (o == 0 ? 0 : s.in - 1)];
        EXPECT_NEAR(p.at(o == 0 ? 0 : s.in - 1, o), src,
                    dtype == DType::kF32 ? 0.0 : 0.01 * std::abs(src) + 1e-6);
      }
    }
    // Every projection kernel of the table this CPU has (projection_kernels.h), 1 and 2 threads.
    for (const ProjectionKernelInfo& kernel : projection_kernels()) {
      if (!kernel.usable()) continue;
      for (int threads : {1, 2}) {
        std::vector<float> y(s.T * ldy, NAN);
        linear(x.data(), ldx, s.T, p, y.data(), ldy, threads, kernel.kernel);
        // The AMX tiles and the dot kernel multiply x rounded to bf16: the tight bound holds
        // against the product of the rounded x, and the rounding itself costs a bounded NMSE
        // (bf16 keeps 8 mantissa bits: ~3e-6 expected).
        const bool rounds_x =
            dtype == DType::kBF16 && s.T > 1 && linear_rounds_x_to_bf16(kernel.kernel);
        double err = 0, ref = 0, err_x = 0;
        for (int64_t t = 0; t < s.T; ++t) {
          for (int o = 0; o < s.out; ++o) {
            const double want = rounds_x ? rounded[t * s.out + o] : exact[t * s.out + o];
            const float got = y[t * ldy + o];
            ASSERT_TRUE(std::isfinite(got)) << kernel.name;
            err += (got - want) * (got - want);
            err_x += (got - exact[t * s.out + o]) * (got - exact[t * s.out + o]);
            ref += exact[t * s.out + o] * exact[t * s.out + o];
          }
          for (int64_t o = s.out; o < ldy; ++o)
            ASSERT_TRUE(std::isnan(y[t * ldy + o])) << "wrote past its row (" << kernel.name << ")";
        }
        EXPECT_LE(err / std::max(ref, 1e-30), 1e-12)
            << kernel.name << " T=" << s.T << " in=" << s.in << " out=" << s.out << " threads "
            << threads;
        EXPECT_LE(err_x / std::max(ref, 1e-30), rounds_x ? 1e-5 : 1e-12)
            << kernel.name << " T=" << s.T << " in=" << s.in;
      }
    }
  }
}

// HANPU_PROJECTION=fma (the ctest entry cpu_nn_test_env_projection) makes auto the micro-kernel
// for every projection; unset, auto is the fastest kernel this CPU has.
TEST(EnvProjection, TheEnvironmentSetsWhatAutoMeans) {
  const char* env = std::getenv("HANPU_PROJECTION");
  const std::vector<float> w(64 * 256, 0.5f);
  std::vector<int> rows(256);
  std::iota(rows.begin(), rows.end(), 0);
  const PackedLinear bf16 = PackedLinear::from_rows(w.data(), 64, rows, DType::kBF16);
  if (env != nullptr && std::string(env) == "fma") {
    EXPECT_EQ(projection_kernel_from_env(), ProjectionKernel::kFma);
    EXPECT_STREQ(linear_kernel_name(bf16, 64, 1), "fma");
    EXPECT_FALSE(linear_rounds_x_to_bf16());
  } else if (env == nullptr) {
    EXPECT_EQ(projection_kernel_from_env(), ProjectionKernel::kAuto);
    const char* fastest = linear_uses_amx() ? "amx" : linear_uses_dot() ? "dot" : "pairs";
    EXPECT_STREQ(linear_kernel_name(bf16, 64, 1), fastest);
  }
  EXPECT_STREQ(linear_kernel_name(bf16, 64, 1, ProjectionKernel::kPairs), "pairs");
  EXPECT_STREQ(linear_kernel_name(bf16, 64, 1, ProjectionKernel::kFma), "fma");
}

// The table drives the choice: each kernel a ceiling, in order, and auto the fastest usable.
TEST(ProjectionKernels, TheTableNamesEachKernelOnceAndAutoIsTheFastestUsable) {
  const auto table = projection_kernels();
  ASSERT_EQ(table.size(), 6u);
  EXPECT_EQ(table[0].name, "auto");
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(table[i].kernel), i);
    EXPECT_EQ(parse_projection_kernel(table[i].name), table[i].kernel);
    EXPECT_EQ(&projection_kernel_info(table[i].kernel), &table[i]);
  }
  EXPECT_FALSE(parse_projection_kernel("AMX").has_value());
  EXPECT_FALSE(parse_projection_kernel("").has_value());
  EXPECT_TRUE(projection_kernel_info(ProjectionKernel::kFma).usable());
  EXPECT_TRUE(projection_kernel_info(ProjectionKernel::kPairs).usable());
  // Under a ceiling, nothing above it; the fma ceiling allows the micro-kernel alone.
  for (const ProjectionKernelInfo& k : table) {
    EXPECT_EQ(projection_kernel_allowed(ProjectionKernel::kFma, k.kernel),
              k.kernel == ProjectionKernel::kFma)
        << k.name;
    if (k.kernel != ProjectionKernel::kAuto) {
      EXPECT_EQ(projection_kernel_allowed(ProjectionKernel::kAmx, k.kernel), k.usable()) << k.name;
    }
  }
  EXPECT_FALSE(projection_kernel_allowed(ProjectionKernel::kPairs, ProjectionKernel::kDot));
  EXPECT_FALSE(linear_uses_amx(ProjectionKernel::kDot));
  EXPECT_FALSE(linear_rounds_x_to_bf16(ProjectionKernel::kPairs));
  EXPECT_EQ(linear_uses_dot(ProjectionKernel::kDot),
            projection_kernel_info(ProjectionKernel::kDot).usable());
}

TEST(Linear, ManyProjectionsOfOneInputEqualOneCallEach) {
  // The GDN layer's four projections in one call (shared bf16 rounding of x, one dispatch)
  // give bit for bit what four calls give, for every dtype and T = 1 (decode); a set that
  // mixes input sizes or dtypes falls back to one call each.
  Rng rng(3);
  for (DType dt : kAllDTypes) {
    for (int64_t T : {1, 7, 300}) {
      const int in = 70;
      std::vector<PackedLinear> ws;
      for (int out : {300, 33, 16, 1}) {
        std::vector<float> w(static_cast<size_t>(out) * in);
        for (float& v : w) v = static_cast<float>(rng.normal());
        std::vector<int> rows(out);
        std::iota(rows.begin(), rows.end(), 0);
        ws.push_back(PackedLinear::from_rows(w.data(), in, rows, dt));
      }
      std::vector<float> x(T * in);
      for (float& v : x) v = static_cast<float>(rng.normal());
      std::vector<std::vector<float>> one(ws.size()), many(ws.size());
      std::vector<LinearOut> outs;
      for (size_t j = 0; j < ws.size(); ++j) {
        one[j].assign(T * ws[j].out, NAN);
        many[j].assign(T * ws[j].out, NAN);
        linear(x.data(), in, T, ws[j], one[j].data(), ws[j].out, 2);
        outs.push_back({&ws[j], many[j].data(), ws[j].out});
      }
      linear_many(x.data(), in, T, outs, 2);
      for (size_t j = 0; j < ws.size(); ++j)
        EXPECT_EQ(one[j], many[j]) << dtype_name(dt) << " T=" << T << " j=" << j;
    }
  }
  // Mixed: a different input size and dtype in the same set.
  std::vector<float> w1(5 * 70), w2(6 * 40), x(9 * 70);
  for (float& v : w1) v = static_cast<float>(rng.normal());
  for (float& v : w2) v = static_cast<float>(rng.normal());
  for (float& v : x) v = static_cast<float>(rng.normal());
  const PackedLinear a = PackedLinear::from_rows(w1.data(), 70, {0, 1, 2, 3, 4}, DType::kBF16);
  const PackedLinear b = PackedLinear::from_rows(w2.data(), 40, {0, 1, 2, 3, 4, 5}, DType::kF32);
  std::vector<float> ya(9 * 5), yb(9 * 6), ra(9 * 5), rb(9 * 6);
  linear_many(x.data(), 70, 9, {{&a, ya.data(), 5}, {&b, yb.data(), 6}}, 2);
  linear(x.data(), 70, 9, a, ra.data(), 5, 2);
  linear(x.data(), 70, 9, b, rb.data(), 6, 2);
  EXPECT_EQ(ya, ra);
  EXPECT_EQ(yb, rb);
}

// linear_each over `ws` (random x of each one's input size) against one linear() call each:
// equal within `rel` of each output's largest value (0: bit for bit).
void expect_each_matches_one_call_each(const std::vector<PackedLinear>& ws, Rng& rng, float rel,
                                       const std::string& what) {
  std::vector<std::vector<float>> xs, one(ws.size()), each(ws.size());
  std::vector<LinearRow> rows;
  for (size_t j = 0; j < ws.size(); ++j) {
    xs.emplace_back(ws[j].in);
    for (float& v : xs.back()) v = static_cast<float>(rng.normal());
  }
  for (size_t j = 0; j < ws.size(); ++j) {
    one[j].assign(ws[j].out, NAN);
    each[j].assign(ws[j].out, NAN);
    linear(xs[j].data(), ws[j].in, 1, ws[j], one[j].data(), ws[j].out, 2);
    rows.push_back({xs[j].data(), &ws[j], each[j].data()});
  }
  linear_each(rows, 2);
  for (size_t j = 0; j < ws.size(); ++j) {
    if (rel == 0) {
      EXPECT_EQ(one[j], each[j]) << what << " j=" << j;
      continue;
    }
    float big = 0;
    for (float v : one[j]) big = std::max(big, std::abs(v));
    for (int o = 0; o < ws[j].out; ++o)
      ASSERT_NEAR(each[j][o], one[j][o], rel * big) << what << " j=" << j << " o=" << o;
  }
}

// Random weights [out, in] for each shape, packed by `pack`.
template <class Pack>
std::vector<PackedLinear> random_projections(const std::vector<std::pair<int, int>>& shapes,
                                             Rng& rng, Pack pack) {
  std::vector<PackedLinear> ws;
  for (auto [in, out] : shapes) {
    std::vector<float> w(static_cast<size_t>(out) * in);
    for (float& v : w) v = static_cast<float>(rng.normal());
    std::vector<int> rows(out);
    std::iota(rows.begin(), rows.end(), 0);
    ws.push_back(pack(w.data(), in, rows));
  }
  return ws;
}

TEST(Linear, EachRowThroughItsOwnProjectionEqualsOneCallEach) {
  // Per-head and per-expert products of a decode step in one job: bit for bit what one call
  // each gives, for every dtype (all share one job; projections of fewer than four 16-bit or
  // fp32 panels are cut into slices of their inputs), inputs and sizes differing between the
  // products, one of them empty.
  Rng rng(5);
  for (DType dt : kAllDTypes) {
    const auto ws = random_projections({{70, 300}, {16, 48}, {48, 16}, {70, 0}, {33, 129}}, rng,
                                       [&](const float* w, int in, const std::vector<int>& r) {
                                         return PackedLinear::from_rows(w, in, r, dt);
                                       });
    expect_each_matches_one_call_each(ws, rng, 0.0f, std::string(dtype_name(dt)));
  }
  // Quantized projections: each row's x quantized for its own, one job (sizes past what
  // parallel_rows keeps on the calling thread, so the pool's threads read the activations).
  // Not bit for bit: the int8 kernel's tiles of rows sum in another order where a core's
  // range starts elsewhere (as in quant_linear_many); within fp32 rounding of the sums.
  for (QuantType q : {QuantType::kQ8_0, QuantType::kQ4_K}) {
    const auto ws = random_projections({{1024, 3000}, {512, 17}, {256, 640}}, rng,
                                       [&](const float* w, int in, const std::vector<int>& r) {
                                         return *quantized_rows(q, w, in, r);
                                       });
    expect_each_matches_one_call_each(ws, rng, 2e-6f, "quantized");
  }
}

TEST(Linear, RowRangesGiveEveryCoreSeveralUnits) {
  EXPECT_EQ(linear_row_ranges(1024, 4, 2), 2);    // 6 slabs, 4 panels: 8 units
  EXPECT_EQ(linear_row_ranges(1024, 24, 2), 1);   // enough panels already
  EXPECT_EQ(linear_row_ranges(100, 1, 2), 1);     // one slab
  EXPECT_EQ(linear_row_ranges(1000, 1, 2), 6);    // never more ranges than slabs
  EXPECT_EQ(linear_row_ranges(4096, 1, 16), 22);  // 64 units wanted, 22 slabs
}

TEST(Linear, RowRangesCoverTheRowsEvenlyInWholeGranules) {
  EXPECT_EQ(linear_row_range(512, 2, 0),
            (std::pair<int64_t, int64_t>{0, 256}));  // whole slabs gave 192 + 320
  EXPECT_EQ(linear_row_range(512, 2, 1), (std::pair<int64_t, int64_t>{256, 512}));
  // Granules of 32 (AMX) and of the pairs kernel's row blocks (8 tiles of 6 or 12 rows).
  for (int64_t granule : {32, 48, 96}) {
    for (int64_t T : {1, 31, 100, 193, 512, 1000, 1024, 4097}) {
      for (int cores : {1, 2, 16}) {
        for (int panels : {1, 2, 4, 28}) {
          const int ranges = linear_row_ranges(T, panels, cores);
          int64_t next = 0, smallest = T, largest = 0;
          for (int r = 0; r < ranges; ++r) {
            const auto [b, e] = linear_row_range(T, ranges, r, granule);
            ASSERT_EQ(b, next) << "T " << T << " ranges " << ranges;
            ASSERT_EQ(b % granule, 0);
            ASSERT_GT(e, b) << "empty range, T " << T << " ranges " << ranges << " granule "
                            << granule;
            smallest = std::min(smallest, e - b);
            largest = std::max(largest, e - b);
            next = e;
          }
          EXPECT_EQ(next, T);
          EXPECT_GE(smallest, std::min<int64_t>(T, 96));
          EXPECT_LE(largest - smallest, granule + (T % granule ? granule : 0))
              << "T " << T << " ranges " << ranges;
        }
      }
    }
  }
}

TEST_P(LinearDtype, FromRowsPlacesEveryWeightRoundedOnce) {
  // Every element where index() says, rounded as store_from_f32 rounds it, and the bf16
  // layout's padding (steps past `in`, columns past `out`) zero: the packing at load is
  // vectorised and written in layout order, the reading side uses index().
  const DType dtype = GetParam();
  Rng rng(23);
  for (const auto& [in, out] : {std::pair{1, 1}, {33, 45}, {67, 32}, {64, 100}, {1025, 7}}) {
    std::vector<float> w(static_cast<size_t>(out + 3) * in);
    for (float& x : w) x = static_cast<float>(rng.normal() * 3);
    std::vector<int> rows(out);
    for (int& r : rows) r = static_cast<int>(rng.below(out + 3));  // any rows, repeats allowed
    const PackedLinear p = PackedLinear::from_rows(w.data(), in, rows, dtype);
    std::vector<bool> placed(dtype == DType::kF32 ? p.data.size() : p.half.size(), false);
    for (int o = 0; o < out; ++o) {
      for (int i = 0; i < in; ++i) {
        const float src = w[static_cast<size_t>(rows[o]) * in + i];
        uint32_t bits = 0;  // room for any dtype
        store_from_f32(&bits, dtype, 0, src);
        const float want = load_as_f32(&bits, dtype, 0);
        ASSERT_EQ(p.at(i, o), want)
            << "in " << in << " out " << out << " at (" << i << ", " << o << ")";
        placed[p.index(i, o)] = true;
      }
    }
    for (size_t j = 0; j < placed.size(); ++j) {
      if (!placed[j]) {
        ASSERT_EQ(dtype == DType::kF32 ? p.data[j] : p.half[j], 0) << "padding element " << j;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LinearDtype, ::testing::ValuesIn(kAllDTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Conv1d, CarriesTheStateAcrossCalls) {
  // Calls of 13 tokens, 5 + 8 and 2 + 1 + 10 (shorter than the window) equal one direct
  // loop over the sequence, with the output split over three buffers as the GDN layer does;
  // the state holds the last inputs.
  Rng rng(2);
  const int C = 37, kc = 4, T = 13;
  std::vector<float> w(kc * C), x(T * C), s0((kc - 1) * C);
  for (float& v : w) v = static_cast<float>(rng.normal());
  for (float& v : x) v = static_cast<float>(rng.normal());
  for (float& v : s0) v = static_cast<float>(rng.normal());
  std::vector<double> want(T * C);
  for (int t = 0; t < T; ++t) {
    for (int c = 0; c < C; ++c) {
      double acc = 0;
      for (int j = 0; j < kc; ++j) {
        const int i = t + j - (kc - 1);  // input row; < 0: the state
        acc +=
            static_cast<double>(w[j * C + c]) * (i < 0 ? s0[(kc - 1 + i) * C + c] : x[i * C + c]);
      }
      want[t * C + c] = acc / (1 + std::exp(-acc));
    }
  }
  for (const std::vector<int>& split : {std::vector<int>{13}, {5, 8}, {2, 1, 10}}) {
    std::vector<float> state = s0, a(T * 10, NAN), b(T * 20, NAN), c(T * 7, NAN);
    int t0 = 0;
    for (int n : split) {  // channels 0..9 -> a, 10..29 -> b, 30..36 -> c
      causal_conv1d_silu(x.data() + t0 * C, n, C, w.data(), kc, &state,
                         {{0, 10, a.data() + t0 * 10, 10},
                          {10, 20, b.data() + t0 * 20, 20},
                          {30, 7, c.data() + t0 * 7, 7}},
                         n % 2 + 1);
      t0 += n;
    }
    for (int t = 0; t < T; ++t) {
      for (int ch = 0; ch < C; ++ch) {
        const float got = ch < 10   ? a[t * 10 + ch]
                          : ch < 30 ? b[t * 20 + ch - 10]
                                    : c[t * 7 + ch - 30];
        ASSERT_NEAR(got, want[t * C + ch], 1e-5 * (1 + std::abs(want[t * C + ch])))
            << "t=" << t << " c=" << ch;
      }
    }
    EXPECT_EQ(std::vector<float>(x.end() - (kc - 1) * C, x.end()), state);
  }
}

// Into a separate buffer and in place over each row's gate half (how the MLP runs it).
TEST(Swiglu, MatchesScalarSeparateAndInPlace) {
  Rng rng(4);
  const int64_t rows = 9;
  const int I = 77;
  std::vector<float> gu(rows * 2 * I);
  for (float& v : gu) v = static_cast<float>(rng.normal() * 3);
  for (const bool in_place : {false, true}) {
    std::vector<float> buf = gu, out(rows * I, NAN);
    float* dst = in_place ? buf.data() : out.data();
    const int64_t ld = in_place ? 2 * I : I;
    swiglu(buf.data(), rows, I, dst, ld, 2);
    for (int64_t r = 0; r < rows; ++r) {
      for (int i = 0; i < I; ++i) {
        const double g = gu[r * 2 * I + i], u = gu[r * 2 * I + I + i];
        const double want = g / (1 + std::exp(-g)) * u;
        ASSERT_NEAR(dst[r * ld + i], want, 1e-5 * (1 + std::abs(want))) << in_place;
      }
    }
  }
}

// Ling's clipped SwiGLU: min(silu(g), limit) * clamp(u, -limit, limit), against the double
// formula, with values on both sides of the limit.
TEST(Swiglu, ClipsAtTheLimit) {
  Rng rng(6);
  const int64_t rows = 5;
  const int I = 41;
  const float limit = 0.7f;
  std::vector<float> gu(rows * 2 * I), out(rows * I, NAN);
  for (float& v : gu) v = static_cast<float>(rng.normal() * 3);
  swiglu(gu.data(), rows, I, out.data(), I, 2, limit);
  int clipped = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int i = 0; i < I; ++i) {
      const double g = gu[r * 2 * I + i], u = gu[r * 2 * I + I + i];
      const double s = g / (1 + std::exp(-g));
      clipped += s > limit || std::abs(u) > limit;
      const double want = std::min(s, double{limit}) * std::clamp(u, -double{limit}, double{limit});
      ASSERT_NEAR(out[r * I + i], want, 1e-6 * (1 + std::abs(want)));
    }
  }
  EXPECT_GT(clipped, rows * I / 4) << "the limit must bind";
}

}  // namespace
}  // namespace hanpu::cpu
