// One block of activations quantized to int8 on the vector unit: the step every quantized
// projection takes before its integer dot products (quant_dot.h's quantize_acts), which a
// decode step runs on one core between the pool's calls.
#pragma once

#include <cstdint>

namespace hanpu::simd {

// Quantizes x[0 .. n) (n a multiple of 16, at most 256) as llama.cpp's Q8_0 / Q8_K blocks do:
// d = max |x| / 127, q[i] = x[i] / d rounded to nearest (ties to even), through 1 / d as
// llama.cpp does. Returns d, or NaN with every q 0 when some x is NaN or infinite. sums[g]:
// the sum of q over group g of 16 values (n / 16 of them).
float quantize_block(const float* x, int n, int8_t* q, int32_t* sums);

}  // namespace hanpu::simd
