// A prefill's quantized projection as an int8 GEMM (AVX512-VNNI vpdpbusd) on packed panels:
// kPanelCols weight rows decoded once into their unsigned 8-bit codes, laid out so that one
// vector holds 4 consecutive codes of 16 rows, multiplied against 4 activation bytes broadcast
// (a vpdpbusd does 64 multiply-adds, twice the bf16 dot instruction's 32), with the
// activations quantized as the decode kernels quantize them for the type (QuantActs: per
// 256-value unit for Q4_K, Q5_K and Q6_K, llama.cpp's Q8_K; per 32 values for the rest, its
// Q8_0), so a prefill and the decode steps after it multiply the same numbers. Scales are
// applied in f32 once per group of values and pair of a row and 16 columns. Two layouts:
// - Types scaled per 32 values (Q4_0 ... Q8_0, IQ4_NL, IQ4_XS, Q4_K, Q5_K): unsigned codes
//   against the signed activations, the offsets (a min, or a signed type's shift) against the
//   activations' sums:
//     sum_i w_i a_i = sum_j d_j [scale_j (sum_{i in j} code_i q_i) - offset_j (sum_{i in j} q_i)]
//   (d_j the activations' scale of the 32 values j, one per unit for Q4_K and Q5_K).
// - Q6_K, scaled per 16 values with an offset of 32 times the scale: the codes made signed
//   (c = code - 32) against the activations made unsigned (q + 128), whose extra
//   128 sum_i c_i depends on the weights alone and is taken off once per unit and column:
//     sum_i w_i a_i = d [sum_g scale_g (sum_{i in g} c_i (q_i + 128)) - 128 sum_g scale_g sum_{i in
//     g} c_i]
// A group's integer sum is exact (32 products of a code <= 255 and |q| <= 127; 16 of |c| <= 32
// and q + 128 <= 255).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/quant_blocks.h"
#include "simd/quant_dot.h"

namespace hanpu::simd {

inline constexpr int kPanelCols = 32;  // weight rows (output columns) a panel holds

// Whether this CPU runs the panel kernel (AVX512-VNNI) for type t (one scaled per 32 values).
bool quant_panel_usable(QuantType t);

// Bytes of a panel of rows of `in` values of type t (whole 256-value units, the last one padded).
size_t quant_panel_bytes(QuantType t, int in);

// Packs weight rows rows[0 .. n) (n <= kPanelCols) of type t, `in` values each, into `panel`
// (quant_panel_bytes(in) bytes, 64-byte aligned); columns from n on are zero weights.
void pack_quant_panel(QuantType t, const uint8_t* const* rows, int n, int in, uint8_t* panel);

// The form of the activations the panels of type t read (quantize_acts' kinds).
ActsKinds quant_panel_acts(QuantType t);

// The activations as the kernels read them besides QuantActs, made once per projection: sized
// by size_panel_acts, then filled a range of rows at a time (threads side by side) by
// panel_acts_rows, from `a` quantized as quant_panel_acts(t) says.
struct PanelActs {
  std::vector<float> sums;       // [rows][units * 8]: per unit, the sum of q256 over each 32
                                 // values; per 32, d times the sum of q
  std::vector<float> d32;        // [rows][units * 8]: per 32, each block's d
  std::vector<uint8_t> shifted;  // [rows][units * 256]: Q6_K's q256 + 128
};
void size_panel_acts(QuantType t, const QuantActs& a, PanelActs* p);
void panel_acts_rows(QuantType t, const QuantActs& a, int64_t r0, int64_t r1, PanelActs* p);

// y[r][c] (leading dim ldy) = sum_i w_c[i] a_r[i] for activation rows r in [r0, r1) of a (its
// per-unit form) and the columns c in [0, n) of a panel of type t.
void quant_panel_gemm(QuantType t, const uint8_t* panel, int n, const QuantActs& a,
                      const PanelActs& p, int64_t r0, int64_t r1, float* y, int64_t ldy);

}  // namespace hanpu::simd
