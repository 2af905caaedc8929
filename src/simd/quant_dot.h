// Products of GGUF-quantized weight rows with activations quantized to int8, the multiply of
// every quantized projection (cpu/nn/quant_linear.h), decode and prefill alike.
//
// Activations are quantized per block of 32 values (scale = max |x| / 127, values rounded to
// nearest), as llama.cpp's Q8_0 activation blocks are, with two differences that cost nothing
// in bandwidth: the scale stays f32 (llama.cpp rounds it to f16) and one block size serves
// every weight type (llama.cpp uses 256-value Q8_K blocks for its K types), because the
// kernels multiply per group of 16 (simd/quant_unpack.h) and a finer activation scale only
// lowers the error. Per group the kernels keep the activations' scale and scale times their
// sum, so a weight offset (a min, or a signed type's shift) costs one multiply-add per group:
//   sum_i w_i a_i = sum_g [scale_g da_g (sum_i code_i q_i) - offset_g (da_g sum_i q_i)].
// The integer sums are exact (|code| <= 255, |q| <= 127, 16 terms); the f32 ones round.
//
// Kernels, chosen at run time: "vnni" (AVX512-VNNI vpdpbusd on 64 codes at a time), "avx2"
// (vpmaddubsw + vpmaddwd on 32), "sdot" (ARM's dot-product extension on 16) and "scalar" (any
// CPU; the reference the others are tested against). Highway 1.0.3, the
// Debian version the build uses, has no 8-bit dot-product operation (it arrived in 1.2), so
// the VNNI, AVX2 and sdot kernels are written with intrinsics in functions compiled for their
// ISA only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/quant_blocks.h"
#include "simd/quant_unpack.h"

namespace hanpu::simd {

// Rows of x quantized for the kernels, each padded with zeros to whole 256-value units.
struct QuantActs {
  int in = 0, units = 0;
  int64_t rows = 0;
  std::vector<int8_t> q;     // [rows][units * 256]
  std::vector<float> dlane;  // [rows][units * 64]: the scale of the block of each vpdpbusd lane
  std::vector<float> dsum;   // [rows][units * 16]: scale times the sum of each group's q
  // The same rows quantized per whole unit instead (llama.cpp's Q8_K): one scale per 256
  // values, so a K-type kernel keeps a unit's sum in integers (its 6- or 8-bit sub-block
  // scales applied exactly) and scales it once. The decode kernels of Q4_K, Q5_K and Q6_K
  // use these.
  std::vector<int8_t> q256;     // [rows][units * 256]
  std::vector<float> d256;      // [rows][units]
  std::vector<int16_t> bsum16;  // [rows][units * 16]: the sum of each group of 16 of q256
  // Forms of q256 the VNNI decode kernels of Q4_K and Q6_K read, filled for a single row (a
  // decode step; no other call reads them). A 64-byte load of Q4_K's nibbles holds values
  // 0-31 and 64-95 in its low halves and 32-63 and 96-127 in its high ones, so q256_nibbles
  // lays each unit's values out in that order (vector k: values 128 (k / 2) + 32 (k % 2) +
  // 0..31, then the same + 64), and the codes multiply it without a shuffle. bsum32: the sum
  // over each 32 values of q256. shift_lane: per 4 values (a vpdpbusd lane), -32 times their
  // sum, where Q6_K's vpdpbusd start, so that each lane sums (code - 32) q: its offset of 32
  // at no instruction a row.
  std::vector<int8_t> q256_nibbles;  // [units * 256]
  std::vector<int16_t> bsum32;       // [units * 8]
  std::vector<int32_t> shift_lane;   // [units * 64]
  const int8_t* q_row(int64_t r) const { return q.data() + r * units * kQuantUnit; }
  const int8_t* q256_row(int64_t r) const { return q256.data() + r * units * kQuantUnit; }
  const float* d256_row(int64_t r) const { return d256.data() + r * units; }
  const int16_t* bsum16_row(int64_t r) const { return bsum16.data() + r * units * kQuantGroups; }
  const float* dlane_row(int64_t r) const { return dlane.data() + r * units * 64; }
  const float* dsum_row(int64_t r) const { return dsum.data() + r * units * kQuantGroups; }
};

// Quantizes rows [0, rows) of x (leading dim ldx, `in` values each) into `a`. With `order`
// (in entries), element i of a row is x[order[i]] (a permutation of the input columns). A row
// holding a NaN or an infinity gets a NaN scale in its blocks, so every output it reaches is
// NaN, never a finite wrong number.
// `kinds` says which of a's forms to fill: per 32 values (q, dlane, dsum), per unit (q256,
// d256, bsum16), or both; a kernel reads only the one quant_gemm_uses_unit_acts names.
enum class ActsKinds { kPer32, kPerUnit, kBoth };
void quantize_acts(const float* x, int64_t ldx, int64_t rows, int in, const int32_t* order,
                   QuantActs* a, ActsKinds kinds = ActsKinds::kBoth);

// quantize_acts in steps, so that threads can quantize rows of one set side by side: size
// `a` for `rows` rows of `in` values, then quantize rows [r0, r1) of x into it.
void size_acts(int64_t rows, int in, ActsKinds kinds, QuantActs* a);
void quantize_acts_rows(const float* x, int64_t ldx, int64_t r0, int64_t r1, const int32_t* order,
                        ActsKinds kinds, QuantActs* a);

enum class QuantKernel { kScalar, kAvx2, kVnni, kNeonDot };

// Whether this CPU runs the VNNI kernel (AVX512-VNNI and AVX512-BW), the AVX2 one (AVX2, FMA),
// the sdot one (64-bit ARM with the DotProd extension, as Linux reports it).
bool quant_vnni_usable();
bool quant_avx2_usable();
bool quant_neon_dot_usable();
// The fastest kernel this CPU has.
QuantKernel quant_kernel_default();
const char* quant_kernel_name(QuantKernel k);

// y[r][o] (leading dim ldy) = sum_i w_o[i] a_r[i] for weight rows o in [0, n) of type t (row o
// at rows[o], `a.in` values) and activation rows r in [r0, r1) of `a`.
void quant_gemm(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a, int64_t r0,
                int64_t r1, float* y, int64_t ldy, QuantKernel k);

// Whether quant_gemm multiplies rows of type t with a's per-unit activations (q256, d256)
// rather than the per-32 ones: the VNNI and AVX2 kernels' decode (one activation row) of Q4_K,
// Q5_K and Q6_K.
bool quant_gemm_uses_unit_acts(QuantType t, int n, int64_t rows, QuantKernel k);

// A row of `in` values of type t decoded to f32 (scale * code - offset per value: one
// rounding, where base/quant_blocks.h's reference rounds the product and the difference
// apart), on the VNNI unpackers where usable: how a prefill widens weights for the matrix unit.
void dequantize_row(QuantType t, const uint8_t* row, int in, float* out);
void dequantize_row_vnni(QuantType t, const uint8_t* row, int in, float* out);
// The same rounded to bf16 (to nearest even, as store_f32 does): in one pass on the VNNI
// unpackers where the CPU also has AVX512-BF16 (every CPU with AMX does), else decoded to f32
// and converted.
void dequantize_row_bf16(QuantType t, const uint8_t* row, int in, uint16_t* out);
bool quant_vnni_bf16_usable();
void dequantize_row_bf16_vnni(QuantType t, const uint8_t* row, int in, uint16_t* out);

// The kernels by name (quant_gemm dispatches to them).
void quant_gemm_scalar(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a,
                       int64_t r0, int64_t r1, float* y, int64_t ldy);
bool quant_vnni_unit_acts(QuantType t, int n, int64_t rows);  // as quant_gemm_uses_unit_acts
bool quant_avx2_unit_acts(QuantType t, int64_t rows);
void quant_gemm_vnni(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a, int64_t r0,
                     int64_t r1, float* y, int64_t ldy);
void quant_gemm_avx2(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a, int64_t r0,
                     int64_t r1, float* y, int64_t ldy);
void quant_gemm_neon_dot(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a,
                         int64_t r0, int64_t r1, float* y, int64_t ldy);

}  // namespace hanpu::simd
