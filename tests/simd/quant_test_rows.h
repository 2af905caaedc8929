// Random GGUF rows and float64 products for the quantized kernels' tests (quant_dot_test.cc,
// quant_panel_test.cc).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/quant_blocks.h"
#include "base/rng.h"
#include "hanpu/dtype.h"
#include "simd/quant_dot.h"

namespace hanpu::simd {

// `rows` rows of `in` values of random blocks of type t, with finite random scales.
inline std::vector<uint8_t> random_rows(QuantType t, int rows, int in, Rng& rng) {
  const QuantTypeInfo& q = quant_type_info(t);
  const size_t blocks = static_cast<size_t>(rows) * (in / q.block_elems);
  std::vector<uint8_t> b(blocks * q.bytes);
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng.next());
  for (size_t i = 0; i < blocks; ++i) {
    for (int off : {quant_scale_offset(t), quant_min_offset(t)}) {
      if (off < 0) continue;
      const uint16_t h = f32_to_f16_bits(static_cast<float>(rng.uniform(-0.02, 0.02)));
      std::memcpy(b.data() + i * q.bytes + off, &h, 2);
    }
  }
  return b;
}

// Row lengths: whole units, and for the 32-value types rows ending inside a unit.
inline std::vector<int> row_lengths(QuantType t) {
  if (quant_type_info(t).block_elems == 256) return {256, 768};
  return {32, 128, 256, 352, 800};  // 128: no whole unit (the KDA gates' second halves)
}

// Activation i of row r as a kernel multiplies it: quantized per unit (q256, d256) or per 32.
inline double act_value(const QuantActs& a, int64_t r, int i, bool per_unit) {
  return per_unit ? double(a.d256_row(r)[i / 256]) * a.q256_row(r)[i]
                  : double(a.dlane_row(r)[(i / 256) * 64 + (i % 256) / 4]) * a.q_row(r)[i];
}

// A weight row (`wd`: its values by the reference decoder) times activation row r in float64,
// and the sum of its parts' magnitudes |scale code a| + |offset a| (quant_unpack.h's form),
// against which the kernels' f32 roundings are bounded: the offset is subtracted after the
// products are summed, so the error is relative to these, not to the result.
struct RefDot {
  double ref = 0, mag = 0;
};
inline RefDot ref_dot(QuantType t, const uint8_t* row, int in, const std::vector<float>& wd,
                      const QuantActs& a, int64_t r, bool per_unit) {
  RefDot d;
  QuantUnit unit;
  for (int i = 0; i < in; ++i) {
    const double act = act_value(a, r, i, per_unit);
    d.ref += double(wd[i]) * act;
    if (i % 256 == 0) unpack_unit(t, row, in, i / 256, &unit);
    const int j = i % 256;
    d.mag += (std::abs(double(unit.scale[j / 16]) * unit.code[j]) +
              std::abs(double(unit.offset[j / 16]))) *
             std::abs(act);
  }
  return d;
}

}  // namespace hanpu::simd
