// Random GGUF rows for the quantized kernels' tests (quant_dot_test.cc, quant_panel_test.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/quant_blocks.h"
#include "base/rng.h"
#include "hanpu/dtype.h"

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

}  // namespace hanpu::simd
