// Dense projections of a model layer on CPU cores: y = x W^T with W^T stored row-major
// [in, out] (the compute layout the model converts weights into once, at load), so the
// FMA micro-kernel reads it as its row-major B operand with no per-call packing.
#pragma once

#include <cstdint>

namespace hanpu::cpu {

// y[T, out] (leading dim ldy) = x[T, in] (leading dim ldx) wt[in, out].
// The output columns are split over `threads` cores (0: the default pool), in blocks of
// kLinearColumnBlock so a block of W^T stays in the core's L2 while the rows of x go by.
void linear(const float* x, int64_t ldx, int64_t T, int in, const float* wt, int out, float* y, int64_t ldy,
            int threads);

inline constexpr int kLinearColumnBlock = 256;

}  // namespace hanpu::cpu
