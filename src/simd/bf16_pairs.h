// bf16 weights in the "pairs" layout (simd/amx.h): two of the ways to use them without the
// matrix unit. Decode multiplies one fp32 row by them (widening in registers; at one token
// per step the weights' bytes are the whole cost), and a prefill's panels too narrow for the
// pairs GEMM (simd/gemm_bf16_pairs.h, which reads them in place) are widened to row-major
// fp32 blocks for the FMA micro-kernel.
#pragma once

#include <cstdint>

namespace hanpu::simd {

// Strips gemv_bf16_pairs reads at once, one sequential stream each (see bf16_pairs.cc).
inline constexpr int kGemvPairStreams = 4;

// y[n_cols] = x[in] W for W stored as `strips` pairs-layout strips of kt_blocks blocks each
// (n_cols <= 32 strips; x is read for k < in only, so W's padding rows are never used).
void gemv_bf16_pairs(const float* x, int in, const uint16_t* w, int kt_blocks, int strips,
                     int n_cols, float* y);

// out[k][c] (fp32, leading dimension ldo) = W[32 kt0 + k][c] for k < 32 kt_count and c < 32
// strips: blocks kt0 .. kt0 + kt_count - 1 of each strip, widened.
void widen_bf16_pairs(const uint16_t* w, int kt_blocks, int kt0, int kt_count, int strips,
                      float* out, int64_t ldo);

}  // namespace hanpu::simd
