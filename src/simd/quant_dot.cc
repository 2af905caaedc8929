// Activation quantization, the scalar kernel and the dispatch (see quant_dot.h).
#include "simd/quant_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "simd/quant_acts.h"
#include "simd/vec_ops.h"

namespace hanpu::simd {

void size_acts(int64_t rows, int in, ActsKinds kinds, QuantActs* a) {
  a->in = in;
  a->units = quant_units(in);
  a->rows = rows;
  const int padded = a->units * kQuantUnit;
  if (kinds != ActsKinds::kPer32) {
    a->q256.resize(static_cast<size_t>(rows) * padded);
    a->d256.resize(static_cast<size_t>(rows) * a->units);
    a->bsum16.resize(static_cast<size_t>(rows) * a->units * kQuantGroups);
    const size_t decode_units = rows == 1 ? a->units : 0;
    a->q256_nibbles.resize(decode_units * kQuantUnit);
    a->bsum32.resize(decode_units * 8);
    a->shift_lane.resize(decode_units * 64);
  }
  if (kinds != ActsKinds::kPerUnit) {
    a->q.assign(static_cast<size_t>(rows) * padded, 0);  // a partial last unit's rest stays 0
    a->dlane.assign(static_cast<size_t>(rows) * a->units * 64, 0.0f);
    a->dsum.assign(static_cast<size_t>(rows) * a->units * kQuantGroups, 0.0f);
  }
}

namespace {

// Unit u's q256_nibbles, bsum32 and shift_lane (quant_dot.h) from its q256 values and group
// sums.
void fill_decode_forms(const int8_t* q, const int32_t* sums, int u, QuantActs* a) {
  int8_t* nibbles = a->q256_nibbles.data() + u * kQuantUnit;
  for (int k = 0; k < 4; ++k) {
    const int first = 128 * (k / 2) + 32 * (k % 2);
    std::memcpy(nibbles + 64 * k, q + first, 32);
    std::memcpy(nibbles + 64 * k + 32, q + first + 64, 32);
  }
  for (int s = 0; s < 8; ++s) {
    a->bsum32[u * 8 + s] = static_cast<int16_t>(sums[2 * s] + sums[2 * s + 1]);
  }
  for (int m = 0; m < 64; ++m) {
    a->shift_lane[u * 64 + m] = -32 * (q[4 * m] + q[4 * m + 1] + q[4 * m + 2] + q[4 * m + 3]);
  }
}

// Rows [r0, r1) into a's q256, d256 and bsum16 (quant_dot.h): scale = max |x| / 127 over each
// 256-value unit (the padding zeros included), values rounded to nearest; NaN scales for a
// non-finite row.
void quantize_rows_per_unit(const float* x, int64_t ldx, int64_t r0, int64_t r1,
                            const int32_t* order, QuantActs* a) {
  const int in = a->in, padded = a->units * kQuantUnit;
  float unit[kQuantUnit];
  int32_t sums[kQuantGroups];
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * ldx;
    for (int u = 0; u < a->units; ++u) {
      const int i0 = u * kQuantUnit;
      const float* src = xr + i0;
      if (order != nullptr || i0 + kQuantUnit > in) {  // gathered, or padded with zeros
        for (int j = 0; j < kQuantUnit; ++j) {
          const int i = i0 + j;
          unit[j] = i < in ? (order ? xr[order[i]] : xr[i]) : 0.0f;
        }
        src = unit;
      }
      int16_t* bsum = a->bsum16.data() + (r * a->units + u) * kQuantGroups;
      a->d256[r * a->units + u] =
          quantize_block(src, kQuantUnit, a->q256.data() + r * padded + i0, sums);
      for (int g = 0; g < kQuantGroups; ++g) bsum[g] = static_cast<int16_t>(sums[g]);
      if (a->rows == 1) fill_decode_forms(a->q256.data() + i0, sums, u, a);
    }
  }
}

// Rows [r0, r1) into a's q, dlane and dsum: the same per block of 32 values.
void quantize_rows_per32(const float* x, int64_t ldx, int64_t r0, int64_t r1, const int32_t* order,
                         QuantActs* a) {
  const int in = a->in, padded = a->units * kQuantUnit;
  float block[32];
  int32_t sums[2];
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * ldx;
    int8_t* q = a->q.data() + r * padded;
    float* dlane = a->dlane.data() + r * a->units * 64;
    float* dsum = a->dsum.data() + r * a->units * kQuantGroups;
    for (int b0 = 0; b0 < in; b0 += 32) {
      const float* src = xr + b0;
      if (order != nullptr || b0 + 32 > in) {  // gathered, or padded with zeros
        for (int j = 0; j < 32; ++j) {
          const int i = b0 + j;
          block[j] = i < in ? (order ? xr[order[i]] : xr[i]) : 0.0f;
        }
        src = block;
      }
      const float d = quantize_block(src, 32, q + b0, sums);
      // Block b0 / 32 of unit u is lanes 8 (b0 / 32 % 8) .. + 7 of the unit's 64, groups
      // 2 (b0 / 32 % 8) and + 1.
      const int u = b0 / kQuantUnit, k = (b0 % kQuantUnit) / 32;
      for (int l = 0; l < 8; ++l) dlane[u * 64 + 8 * k + l] = d;
      dsum[u * kQuantGroups + 2 * k] = d * static_cast<float>(sums[0]);
      dsum[u * kQuantGroups + 2 * k + 1] = d * static_cast<float>(sums[1]);
    }
  }
}

}  // namespace

void quantize_acts_rows(const float* x, int64_t ldx, int64_t r0, int64_t r1, const int32_t* order,
                        ActsKinds kinds, QuantActs* a) {
  if (kinds != ActsKinds::kPer32) quantize_rows_per_unit(x, ldx, r0, r1, order, a);
  if (kinds != ActsKinds::kPerUnit) quantize_rows_per32(x, ldx, r0, r1, order, a);
}

void quantize_acts(const float* x, int64_t ldx, int64_t rows, int in, const int32_t* order,
                   QuantActs* a, ActsKinds kinds) {
  size_acts(rows, in, kinds, a);
  quantize_acts_rows(x, ldx, 0, rows, order, kinds, a);
}

void quant_gemm_scalar(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a,
                       int64_t r0, int64_t r1, float* y, int64_t ldy) {
  QuantUnit unit;
  for (int o = 0; o < n; ++o) {
    const uint8_t* row = rows[o];
    for (int64_t r = r0; r < r1; ++r) y[r * ldy + o] = 0;
    for (int u = 0; u < a.units; ++u) {
      unpack_unit(t, row, a.in, u, &unit);
      for (int64_t r = r0; r < r1; ++r) {
        const int8_t* q = a.q_row(r) + u * kQuantUnit;
        const float* dlane = a.dlane_row(r) + u * 64;
        const float* dsum = a.dsum_row(r) + u * kQuantGroups;
        float acc = 0;
        for (int g = 0; g < kQuantGroups; ++g) {
          int32_t isum = 0;
          for (int i = 16 * g; i < 16 * g + 16; ++i) isum += unit.code[i] * q[i];
          acc += unit.scale[g] * dlane[4 * g] * static_cast<float>(isum) - unit.offset[g] * dsum[g];
        }
        y[r * ldy + o] += acc;
      }
    }
  }
}

void dequantize_row(QuantType t, const uint8_t* row, int in, float* out) {
  if (quant_vnni_usable()) return dequantize_row_vnni(t, row, in, out);
  QuantUnit unit;
  for (int u = 0; u < quant_units(in); ++u) {
    unpack_unit(t, row, in, u, &unit);
    for (int j = 0; j < kQuantUnit && u * kQuantUnit + j < in; ++j)
      out[u * kQuantUnit + j] = std::fma(unit.scale[j / 16], unit.code[j], -unit.offset[j / 16]);
  }
}

void dequantize_row_bf16(QuantType t, const uint8_t* row, int in, uint16_t* out) {
  if (quant_vnni_bf16_usable()) return dequantize_row_bf16_vnni(t, row, in, out);
  thread_local std::vector<float> f32;
  f32.resize(static_cast<size_t>(in));
  dequantize_row(t, row, in, f32.data());
  store_f32(out, DType::kBF16, f32.data(), static_cast<size_t>(in));
}

QuantKernel quant_kernel_default() {
  if (quant_vnni_usable()) return QuantKernel::kVnni;
  if (quant_avx2_usable()) return QuantKernel::kAvx2;
  return quant_neon_dot_usable() ? QuantKernel::kNeonDot : QuantKernel::kScalar;
}

const char* quant_kernel_name(QuantKernel k) {
  switch (k) {
    case QuantKernel::kVnni:
      return "vnni";
    case QuantKernel::kAvx2:
      return "avx2";
    case QuantKernel::kNeonDot:
      return "sdot";
    case QuantKernel::kScalar:
      break;
  }
  return "scalar";
}

bool quant_gemm_uses_unit_acts(QuantType t, int n, int64_t rows, QuantKernel k) {
  if (k == QuantKernel::kVnni && quant_vnni_usable()) return quant_vnni_unit_acts(t, n, rows);
  if (k == QuantKernel::kAvx2 && quant_avx2_usable()) return quant_avx2_unit_acts(t, rows);
  return false;
}

void quant_gemm(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a, int64_t r0,
                int64_t r1, float* y, int64_t ldy, QuantKernel k) {
  if (k == QuantKernel::kVnni && quant_vnni_usable()) {
    quant_gemm_vnni(t, rows, n, a, r0, r1, y, ldy);
  } else if (k == QuantKernel::kAvx2 && quant_avx2_usable()) {
    quant_gemm_avx2(t, rows, n, a, r0, r1, y, ldy);
  } else if (k == QuantKernel::kNeonDot && quant_neon_dot_usable()) {
    quant_gemm_neon_dot(t, rows, n, a, r0, r1, y, ldy);
  } else {
    quant_gemm_scalar(t, rows, n, a, r0, r1, y, ldy);
  }
}

}  // namespace hanpu::simd
