// The quantized dot kernels (simd/quant_dot.h) against float64 references: unpacked units
// against base/quant_blocks.h's decoder, activation quantization against its definition, and
// every kernel this CPU has (the scalar one always) against the float64 sum of the decoded
// weights times the quantized activations, on fresh random blocks of every type, odd row
// counts, rows that end inside a unit, and NaN-poisoned outputs.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/quant_blocks.h"
#include "base/rng.h"
#include "hanpu/dtype.h"
#include "simd/quant_acts.h"
#include "simd/quant_dot.h"
#include "simd/quant_q4k_rows16.h"
#include "simd/quant_q5_0_rows16.h"
#include "simd/quant_q6k_rows16.h"
#include "simd/vec_ops.h"
#include "quant_test_rows.h"

namespace hanpu::simd {
namespace {

TEST(QuantUnpack, UnitsDecodeAsTheBlockDecoderDoes) {
  Rng rng(11);
  for (const QuantTypeInfo& info : quant_types()) {
    for (int in : row_lengths(info.type)) {
      const auto row = random_rows(info.type, 1, in, rng);
      std::vector<float> want(in);
      dequantize_blocks(info.type, row.data(), in / info.block_elems, want.data());
      QuantUnit unit;
      for (int u = 0; u < quant_units(in); ++u) {
        unpack_unit(info.type, row.data(), in, u, &unit);
        for (int j = 0; j < kQuantUnit; ++j) {
          const int i = u * kQuantUnit + j;
          const double s = unit.scale[j / 16], o = unit.offset[j / 16];
          const double got = s * unit.code[j] - o;
          if (i >= in) {
            ASSERT_EQ(got, 0.0) << info.name;
            continue;
          }
          // The decoder rounds d * sub-scale, then the product, then the min: within two f32
          // roundings of the parts' magnitudes.
          const double bound = 2 * std::ldexp(std::abs(s * unit.code[j]) + std::abs(o), -23);
          ASSERT_NEAR(got, want[i], bound) << info.name << " in " << in << " value " << i;
        }
      }
    }
  }
}

// The fast row decoder (how a prefill widens weights) gives the reference decoder's values
// within the two roundings the reference makes apart (one here).
TEST(QuantUnpack, RowDecoderMatchesTheBlockDecoder) {
  Rng rng(23);
  for (const QuantTypeInfo& info : quant_types()) {
    for (int in : row_lengths(info.type)) {
      const auto row = random_rows(info.type, 1, in, rng);
      std::vector<float> want(in), got(in + 1, 7.0f);
      dequantize_blocks(info.type, row.data(), in / info.block_elems, want.data());
      dequantize_row(info.type, row.data(), in, got.data());
      ASSERT_EQ(got[in], 7.0f) << "wrote past the row";
      QuantUnit unit;
      for (int i = 0; i < in; ++i) {
        if (i % 256 == 0) unpack_unit(info.type, row.data(), in, i / 256, &unit);
        const double mag = std::abs(double(unit.scale[i % 256 / 16]) * unit.code[i % 256]) +
                           std::abs(double(unit.offset[i % 256 / 16]));
        ASSERT_NEAR(got[i], want[i], 3 * std::ldexp(mag, -24)) << info.name << " " << i;
      }
    }
  }
}

// The bf16 row decoder (how a prefill on the matrix unit decodes weights) gives exactly the f32
// decoder's values rounded to bf16 as store_f32 rounds them, and writes nothing past the row.
TEST(QuantUnpack, Bf16RowDecoderIsTheF32DecoderRounded) {
  Rng rng(0xbf16 ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  for (const QuantTypeInfo& info : quant_types()) {
    for (int in : row_lengths(info.type)) {
      const auto row = random_rows(info.type, 1, in, rng);
      std::vector<float> f32(in);
      dequantize_row(info.type, row.data(), in, f32.data());
      std::vector<uint16_t> want(in), got(in + 1, 0x7fc1);
      store_f32(want.data(), DType::kBF16, f32.data(), static_cast<size_t>(in));
      dequantize_row_bf16(info.type, row.data(), in, got.data());
      ASSERT_EQ(got[in], 0x7fc1) << "wrote past the row";
      for (int i = 0; i < in; ++i) ASSERT_EQ(got[i], want[i]) << info.name << " " << i;
    }
  }
}

TEST(QuantActs, BlocksHoldRoundedValuesScalesAndSums) {
  Rng rng(5);
  const int in = 300;  // 9 whole blocks and a 12-value one, 2 units
  const int64_t rows = 3, ldx = in + 5;
  std::vector<float> x(rows * ldx);
  for (float& v : x) v = static_cast<float>(rng.normal() * 3);
  std::vector<int32_t> order(in);
  for (int i = 0; i < in; ++i) order[i] = in - 1 - i;
  for (const int32_t* ord :
       {static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(order.data())}) {
    QuantActs a;
    quantize_acts(x.data(), ldx, rows, in, ord, &a);
    ASSERT_EQ(a.units, 2);
    for (int64_t r = 0; r < rows; ++r) {
      for (int b = 0; b < 2 * 8; ++b) {
        const float d = a.dlane_row(r)[(b / 8) * 64 + (b % 8) * 8];
        double amax = 0;
        int sum[2] = {0, 0};
        for (int j = 0; j < 32; ++j) {
          const int i = 32 * b + j;
          const double xi = i < in ? x[r * ldx + (ord ? ord[i] : i)] : 0.0;
          amax = std::max(amax, std::abs(xi));
          const int q = a.q_row(r)[i];
          sum[j / 16] += q;
          ASSERT_LE(std::abs(q * double(d) - xi), 0.5001 * d) << r << " " << i;
        }
        ASSERT_NEAR(d, amax / 127, 1e-6 * amax);
        for (int g = 0; g < 2; ++g)
          ASSERT_EQ(a.dsum_row(r)[2 * b + g], d * static_cast<float>(sum[g]));
      }
    }
  }
}

TEST(QuantActs, UnitsHoldRoundedValuesScalesAndGroupSums) {
  Rng rng(6);
  const int in = 300;  // a whole unit and one of 44 values
  const int64_t rows = 2, ldx = in + 3;
  std::vector<float> x(rows * ldx);
  for (float& v : x) v = static_cast<float>(rng.normal() * 2);
  QuantActs a;
  quantize_acts(x.data(), ldx, rows, in, nullptr, &a);
  for (int64_t r = 0; r < rows; ++r) {
    for (int u = 0; u < 2; ++u) {
      const float d = a.d256_row(r)[u];
      double amax = 0;
      for (int j = 0; j < 256 && 256 * u + j < in; ++j)
        amax = std::max(amax, std::abs(double(x[r * ldx + 256 * u + j])));
      ASSERT_NEAR(d, amax / 127, 1e-6 * amax);
      for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int j = 16 * g; j < 16 * g + 16; ++j) {
          const int i = 256 * u + j;
          const double xi = i < in ? x[r * ldx + i] : 0.0;
          const int q = a.q256_row(r)[i];
          sum += q;
          ASSERT_LE(std::abs(q * double(d) - xi), 0.5001 * d) << r << " " << i;
        }
        ASSERT_EQ(a.bsum16_row(r)[16 * u + g], sum);
      }
    }
  }
}

// A single row (a decode step) also gets the forms the VNNI decode kernels read: q256 in
// Q4_K's nibble order, sums per 32 values, and Q6_K's -32 sum per vpdpbusd lane.
TEST(QuantActs, OneRowHoldsTheDecodeKernelsForms) {
  Rng rng(7);
  const int in = 300;
  std::vector<float> x(in);
  for (float& v : x) v = static_cast<float>(rng.normal() * 3);
  QuantActs a;
  quantize_acts(x.data(), in, 1, in, nullptr, &a, ActsKinds::kPerUnit);
  ASSERT_EQ(a.q256_nibbles.size(), 2u * 256);
  for (int u = 0; u < 2; ++u) {
    const int8_t* q = a.q256_row(0) + 256 * u;
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 64; ++i) {
        // Byte i of Q4_K's k-th code vector: nibble k % 2 of qs byte 64 (k / 2) + i, value
        // 128 (k / 2) + 64 (i / 32) + 32 (k % 2) + i % 32.
        const int value = 128 * (k / 2) + 64 * (i / 32) + 32 * (k % 2) + i % 32;
        ASSERT_EQ(a.q256_nibbles[256 * u + 64 * k + i], q[value]) << u << " " << k << " " << i;
      }
    }
    for (int s = 0; s < 8; ++s) {
      int sum = 0;
      for (int j = 32 * s; j < 32 * s + 32; ++j) sum += q[j];
      ASSERT_EQ(a.bsum32[8 * u + s], sum);
    }
    for (int m = 0; m < 64; ++m) {  // a vpdpbusd lane: values 4m .. 4m + 3
      ASSERT_EQ(a.shift_lane[64 * u + m],
                -32 * (q[4 * m] + q[4 * m + 1] + q[4 * m + 2] + q[4 * m + 3]))
          << u << " " << m;
    }
  }
  QuantActs two;
  std::vector<float> x2(2 * in, 1.0f);
  quantize_acts(x2.data(), in, 2, in, nullptr, &two, ActsKinds::kPerUnit);
  EXPECT_TRUE(two.q256_nibbles.empty());  // only a single row's
}
// One block against its definition (d = max |x| / 127, q = nearest of x * (1 / d), ties to
// even, group sums; NaN scale and zero codes for a non-finite value) on every SIMD target
// this CPU runs, for blocks of 16, 32 and 256 values: ties placed on purpose (max |x| of 127
// makes 1 / d exactly 1), random values, zeros, NaN and infinities; poisoned codes.
TEST(QuantActs, BlockOnEveryTargetIsItsDefinition) {
  Rng rng(0x9ac7 ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (int n : {16, 32, 256}) {
      for (int trial = 0; trial < 40; ++trial) {
        std::vector<float> x(n);
        for (float& v : x) v = static_cast<float>(rng.normal() * std::exp(rng.uniform(-8, 8)));
        if (trial % 4 == 1) {  // ties: 1 / d is exactly 1
          for (int i = 0; i < n; ++i)
            x[i] = static_cast<float>(static_cast<int>(rng.uniform(-126, 126))) + 0.5f;
          x[rng.next() % n] = -127;
        }
        if (trial % 4 == 2) std::fill(x.begin(), x.end(), 0.0f);
        if (trial % 8 == 3) x[rng.next() % n] = (trial % 16 == 3) ? nan : -inf;
        std::vector<int8_t> q(n + 1, 0x55);
        std::vector<int32_t> sums(n / 16 + 1, 0x5555);
        const float d = quantize_block(x.data(), n, q.data(), sums.data());
        ASSERT_EQ(q[n], 0x55) << "wrote past the block";
        ASSERT_EQ(sums[n / 16], 0x5555) << "wrote past the sums";
        bool finite = true;
        float amax = 0;
        for (float v : x) {
          finite = finite && std::isfinite(v);
          amax = std::max(amax, std::fabs(v));
        }
        const std::string where = std::string(hwy::TargetName(target)) + " n " + std::to_string(n) +
                                  " trial " + std::to_string(trial);
        if (!finite) {
          ASSERT_TRUE(std::isnan(d)) << where;
          for (int i = 0; i < n; ++i) ASSERT_EQ(q[i], 0) << where;
          for (int g = 0; g < n / 16; ++g) ASSERT_EQ(sums[g], 0) << where;
          continue;
        }
        const float want_d = amax / 127;
        ASSERT_EQ(d, want_d) << where;
        const float id = want_d > 0 ? 1 / want_d : 0.0f;
        for (int g = 0; g < n / 16; ++g) {
          int sum = 0;
          for (int i = 16 * g; i < 16 * g + 16; ++i) {
            const int want = static_cast<int>(std::nearbyint(x[i] * id));
            ASSERT_EQ(q[i], want) << where << " value " << i << " " << x[i];
            sum += want;
          }
          ASSERT_EQ(sums[g], sum) << where << " group " << g;
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

std::vector<QuantKernel> kernels() {
  std::vector<QuantKernel> k = {QuantKernel::kScalar};
  if (quant_avx2_usable()) k.push_back(QuantKernel::kAvx2);
  if (quant_vnni_usable()) k.push_back(QuantKernel::kVnni);
  if (quant_neon_dot_usable()) k.push_back(QuantKernel::kNeonDot);
  return k;
}

// Shapes: 7 weight rows against activation rows 1..5 of 6 (prefill tiles of 4 and a tail), 5
// against rows 1..10 of 11 (the VNNI kernel's tile of 8 and a tail), and
// 38 weight rows against one activation row (decode: the VNNI kernel's interleaved streams of
// 9 rows each and a 2-row tail), and 39 adjacent rows against one (rows of 128 values read two
// to a unit: streams of 4 pairs, 3 pairs and a row left over).
struct GemmShape {
  int n;
  int64_t T, r0;
  bool adjacent = false;  // rows at their place in w (else through the table in reverse)
};

TEST(QuantGemm, EveryKernelMatchesFloat64WithinTheDerivedBound) {
  Rng rng(17);
  for (QuantKernel kernel : kernels()) {
    for (const QuantTypeInfo& info : quant_types()) {
      for (auto [in, shape] : [&] {
             std::vector<std::pair<int, GemmShape>> cases;
             for (int in : row_lengths(info.type)) {
               cases.push_back({in, {7, 6, 1}});
               cases.push_back({in, {5, 11, 1}});  // a tile of 8 (a batched decode), a tail of 2
               cases.push_back({in, {38, 1, 0}});
               cases.push_back({in, {39, 1, 0, true}});
             }
             return cases;
           }()) {
        const int n = shape.n;
        const int64_t T = shape.T, ldy = n + 3;
        const size_t row_bytes = static_cast<size_t>(in / info.block_elems) * info.bytes;
        const auto w = random_rows(info.type, n, in, rng);
        std::vector<float> x(T * in);
        for (float& v : x) v = static_cast<float>(rng.normal());
        QuantActs a;
        quantize_acts(x.data(), in, T, in, nullptr, &a);
        std::vector<float> y(T * ldy, std::numeric_limits<float>::quiet_NaN());
        const int64_t r0 = shape.r0, r1 = T;  // rows before r0 are left alone
        // Rows through the pointer table in reverse (output o is stored row n - 1 - o), or
        // in place.
        std::vector<const uint8_t*> ptrs(n);
        for (int o = 0; o < n; ++o)
          ptrs[o] = w.data() + (shape.adjacent ? o : n - 1 - o) * row_bytes;
        quant_gemm(info.type, ptrs.data(), n, a, r0, r1, y.data(), ldy, kernel);
        std::vector<float> wd(in);
        for (int o = 0; o < n; ++o) {
          const uint8_t* row = ptrs[o];
          dequantize_blocks(info.type, row, in / info.block_elems, wd.data());
          for (int64_t r = 0; r < T; ++r) {
            if (r < r0) {
              ASSERT_TRUE(std::isnan(y[r * ldy + o]));
              continue;
            }
            // The activations the kernel multiplied: per 32 values, or per unit where it
            // keeps a unit's sum in integers.
            const bool per_unit = quant_gemm_uses_unit_acts(info.type, n, r1 - r0, kernel);
            const RefDot dot = ref_dot(info.type, row, in, wd, a, r, per_unit);
            const double ref = dot.ref, mag = dot.mag;
            // f32 error: each group's scale product and multiply-add round once, the decoder
            // rounds its parts once or twice, and the sums of at most G group terms (G = in /
            // 16, fewer in lanes) round once per addition; all are relative to the magnitudes
            // of the parts, sum |scale code| |a| + |offset| |a| (mag), not to |ref|, because
            // the offset is subtracted after the products are summed.
            const double groups = std::ceil(in / 16.0);
            const double bound = (groups + 8) * std::ldexp(mag, -23);
            const float got = y[r * ldy + o];
            ASSERT_TRUE(std::isfinite(got)) << info.name;
            ASSERT_NEAR(got, ref, bound) << quant_kernel_name(kernel) << " " << info.name << " in "
                                         << in << " row " << o << " x row " << r;
          }
        }
      }
    }
  }
}

// Q4_K, Q6_K and Q5_0 rows repacked 16 to a group (quant_q4k_rows16.h, quant_q6k_rows16.h,
// quant_q5_0_rows16.h) against float64 within the same derived bound as the kernels above,
// and beside the blocks' VNNI decode kernel, over 1-5 units (Q5_0: blocks of 32), 16 rows of
// random blocks (the blocks' bytes a row), a poisoned output past the 16th; a NaN activation
// row gives NaN in every output.
TEST(QuantGemm, GroupsOfSixteenRowsMatchFloat64) {
  Rng rng(23 ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  const struct {
    QuantType type;
    int rows;
    size_t step_bytes;  // a group's bytes for `step` values
    int step;           // the kernel's count: units of 256, or Q5_0's blocks of 32
    bool usable, per_unit;
    void (*repack)(const uint8_t* const*, int, uint8_t*);
    void (*times_one)(const uint8_t*, int, const QuantActs&, float*);
  } kinds[] = {{QuantType::kQ4_K, kQ4kGroupRows, kQ4kGroupUnitBytes, kQuantUnit, q4k_group_usable(),
                true, q4k_group_rows, q4k_group_times_one},
               {QuantType::kQ6_K, kQ6kGroupRows, kQ6kGroupUnitBytes, kQuantUnit, q6k_group_usable(),
                true, q6k_group_rows, q6k_group_times_one},
               {QuantType::kQ5_0, kQ5_0GroupRows, kQ5_0GroupBlockBytes, 32, q5_0_group_usable(),
                false, q5_0_group_rows, q5_0_group_times_one}};
  for (const auto& k : kinds) {
    SCOPED_TRACE(quant_type_info(k.type).name);
    if (!k.usable) continue;  // no AVX512-VNNI (Q5_0: or BITALG)
    const QuantTypeInfo& info = quant_type_info(k.type);
    EXPECT_EQ(k.step_bytes, info.bytes * (k.step / info.block_elems) * k.rows);  // as GGUF's
    for (int steps = 1; steps <= 5; ++steps) {
      const int in = steps * k.step;
      const size_t row_bytes = static_cast<size_t>(in / info.block_elems) * info.bytes;
      const auto w = random_rows(k.type, k.rows, in, rng);
      std::vector<const uint8_t*> rows(k.rows);
      for (int r = 0; r < k.rows; ++r) rows[r] = w.data() + r * row_bytes;
      std::vector<uint8_t> group(steps * k.step_bytes);
      k.repack(rows.data(), in, group.data());
      std::vector<float> x(in);
      for (float& v : x) v = static_cast<float>(rng.normal());
      QuantActs a;
      const ActsKinds kinds = k.per_unit ? ActsKinds::kPerUnit : ActsKinds::kPer32;
      quantize_acts(x.data(), in, 1, in, nullptr, &a, kinds);
      std::vector<float> y(k.rows + 1, std::numeric_limits<float>::quiet_NaN()), blocks(k.rows);
      k.times_one(group.data(), steps, a, y.data());
      quant_gemm(k.type, rows.data(), k.rows, a, 0, 1, blocks.data(), k.rows, QuantKernel::kVnni);
      std::vector<float> wd(in);
      for (int r = 0; r < k.rows; ++r) {
        dequantize_blocks(k.type, rows[r], in / info.block_elems, wd.data());
        const RefDot dot = ref_dot(k.type, rows[r], in, wd, a, 0, k.per_unit);
        const double bound = (std::ceil(in / 16.0) + 8) * std::ldexp(dot.mag, -23);
        ASSERT_TRUE(std::isfinite(y[r]));
        ASSERT_NEAR(y[r], dot.ref, bound) << "in " << in << " row " << r;
        EXPECT_NEAR(y[r], blocks[r], 2 * bound) << "in " << in << " row " << r;
      }
      EXPECT_TRUE(std::isnan(y[k.rows])) << "wrote past the group";
      x[in / 3] = std::numeric_limits<float>::quiet_NaN();
      quantize_acts(x.data(), in, 1, in, nullptr, &a, kinds);
      k.times_one(group.data(), steps, a, y.data());
      for (int r = 0; r < k.rows; ++r) EXPECT_TRUE(std::isnan(y[r])) << "row " << r;
    }
  }
}

TEST(QuantGemm, NonFiniteActivationsGiveNaN) {
  Rng rng(2);
  for (QuantKernel kernel : kernels()) {
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      constexpr int in = 256, n = 3;
      const auto w = random_rows(QuantType::kQ4_K, n, in, rng);
      std::vector<float> x(in, 0.5f);
      x[77] = bad;
      QuantActs a;
      quantize_acts(x.data(), in, 1, in, nullptr, &a);
      std::vector<float> y(n, 0.0f);
      const uint8_t* ptrs[n] = {w.data(), w.data() + 144, w.data() + 288};
      quant_gemm(QuantType::kQ4_K, ptrs, n, a, 0, 1, y.data(), n, kernel);
      for (float v : y) EXPECT_TRUE(std::isnan(v)) << quant_kernel_name(kernel) << " " << v;
    }
  }
}

}  // namespace
}  // namespace hanpu::simd
