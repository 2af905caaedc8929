// Decode-time products: one activation row against weights stored in 16 bits (bf16 or f16),
// widened to fp32 in registers, or in fp32. At one token per step the weights' bytes are the whole
// cost, so halving them halves the step; nothing is converted to memory first.
#pragma once

#include <cstddef>

#include "hanpu/dtype.h"

namespace hanpu::simd {

// y[n] = sum_i x[i] w[i][n] for w [in, n] row-major 16-bit (t = kBF16 or kF16), y fp32.
void gemv_16(const float* x, int in, const uint16_t* w, DType t, int n, float* y);
// The same for w [in, n] row-major fp32.
void gemv_f32(const float* x, int in, const float* w, int n, float* y);

}  // namespace hanpu::simd
