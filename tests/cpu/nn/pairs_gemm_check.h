// The parity check the two prefill kernels on the pairs layout share (gemm_bf16_pairs_test,
// gemm_bf16_dot_test): weights laid out by PackedLinear (the layout's one definition), strided
// x whose columns past `in` hold NaN (which must never reach C), C poisoned with NaN past each
// row's `out` columns (which must stay NaN) and, when accumulating, random sums to add to;
// the result against a double-precision product of the weights as stored.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/rng.h"
#include "cpu/nn/linear.h"
#include "hanpu/dtype.h"

namespace hanpu::cpu {

struct PairsGemmCase {
  int rows, in, out;
  int kt0, kt_count;  // kt_count < 0: every block from kt0
  bool accumulate;
};

// A kernel with gemm_bf16_pairs's signature.
using PairsGemm = void (*)(int rows, const float* a, int64_t lda, int in, const uint16_t* w,
                           int kt_blocks, int kt0, int kt_count, int strips, int n_cols, float* c,
                           int64_t ldc, bool accumulate);

// NMSE of `gemm` on a random case against float64, with x rounded to bf16 (nearest even) in
// the reference when `round_x`; INFINITY (and a test failure) if C is not finite where written
// or was written past its row.
inline double pairs_gemm_nmse(PairsGemm gemm, const PairsGemmCase& k, Rng& rng, bool round_x) {
  std::vector<float> w(static_cast<size_t>(k.out) * k.in);
  for (float& v : w) v = static_cast<float>(rng.normal());
  std::vector<int> order(k.out);
  std::iota(order.begin(), order.end(), 0);
  const PackedLinear p = PackedLinear::from_rows(w.data(), k.in, order, DType::kBF16);
  const int kt_count = k.kt_count < 0 ? p.k_blocks() - k.kt0 : k.kt_count;
  const int64_t lda = k.in + 5, ldc = k.out + 3;
  std::vector<float> a(static_cast<size_t>(k.rows) * lda);
  for (int64_t i = 0; i < k.rows; ++i) {
    for (int64_t j = 0; j < lda; ++j)
      a[i * lda + j] = j < k.in ? static_cast<float>(rng.normal()) : NAN;
  }
  std::vector<float> c(static_cast<size_t>(k.rows) * ldc, NAN);
  for (int64_t i = 0; i < k.rows; ++i) {
    for (int o = 0; o < k.out && k.accumulate; ++o)
      c[i * ldc + o] = static_cast<float>(rng.normal());
  }
  const std::vector<float> before = c;
  gemm(k.rows, a.data(), lda, k.in, p.half.data(), p.k_blocks(), k.kt0, kt_count, p.strips(), k.out,
       c.data(), ldc, k.accumulate);
  const int k_begin = 32 * k.kt0, k_end = std::min(k.in, 32 * (k.kt0 + kt_count));
  double err = 0, ref = 0;
  for (int64_t i = 0; i < k.rows; ++i) {
    for (int o = 0; o < k.out; ++o) {
      double want = k.accumulate ? before[i * ldc + o] : 0.0;
      for (int j = k_begin; j < k_end; ++j) {
        const float x = a[i * lda + j];
        want +=
            static_cast<double>(round_x ? bf16_bits_to_f32(f32_to_bf16_bits(x)) : x) * p.at(j, o);
      }
      const float got = c[i * ldc + o];
      EXPECT_TRUE(std::isfinite(got)) << "row " << i << " col " << o;
      if (!std::isfinite(got)) return INFINITY;
      err += (got - want) * (got - want);
      ref += want * want;
    }
    for (int64_t o = k.out; o < ldc; ++o) {
      EXPECT_TRUE(std::isnan(c[i * ldc + o])) << "wrote past its row";
      if (!std::isnan(c[i * ldc + o])) return INFINITY;
    }
  }
  return err / std::max(ref, 1e-30);
}

// Odd rows around the register tile (`tile_rows`), depths that end inside a block, column
// counts that end inside a tile.
inline void check_pairs_gemm_odd_shapes(PairsGemm gemm, int tile_rows, Rng& rng, bool round_x) {
  for (int rows :
       {1, tile_rows - 1, tile_rows, tile_rows + 1, 2 * tile_rows + 3, 8 * tile_rows + 5}) {
    for (const auto& [in, out] : std::vector<std::pair<int, int>>{
             {1, 1}, {31, 17}, {33, 16}, {100, 40}, {512, 256}, {700, 97}}) {
      const PairsGemmCase k{std::max(rows, 1), in, out, 0, -1, false};
      EXPECT_LE(pairs_gemm_nmse(gemm, k, rng, round_x), 1e-12)
          << "rows=" << k.rows << " in=" << in << " out=" << out;
    }
  }
}

// Reduction sub-ranges and accumulation: blocks 3.. of 22 (the last one partial), blocks
// 1..2, a range past `in` (C unchanged when accumulating, zero otherwise), and longer than one
// L2 slice of blocks.
inline void check_pairs_gemm_ranges(PairsGemm gemm, Rng& rng, bool round_x) {
  for (const PairsGemmCase k :
       {PairsGemmCase{13, 700, 70, 3, -1, true}, PairsGemmCase{7, 700, 33, 1, 2, true},
        PairsGemmCase{5, 64, 32, 2, 3, true}, PairsGemmCase{5, 64, 32, 2, 3, false},
        PairsGemmCase{9, 1100, 48, 0, -1, true}, PairsGemmCase{50, 1024, 256, 4, 20, false}}) {
    EXPECT_LE(pairs_gemm_nmse(gemm, k, rng, round_x), 1e-12)
        << "rows=" << k.rows << " in=" << k.in << " out=" << k.out << " kt0=" << k.kt0
        << " kt_count=" << k.kt_count;
  }
}

}  // namespace hanpu::cpu
