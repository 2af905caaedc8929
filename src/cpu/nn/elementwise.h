// The element-wise kernels the model's layers call (src/model reaches kernels through src/cpu,
// never src/simd: this is the door to the vectorised bodies in simd/vec_ops.h and
// simd/activation_ops.h).
#pragma once

#include <cstddef>

namespace hanpu::cpu {

// x[i] = exp(x[i]).
void exp_inplace(float* x, size_t n);
// out[i] = silu(gate[i]) * up[i] (SwiGLU); out may alias either input.
void silu_mul(const float* gate, const float* up, float* out, size_t n);
// out[i] = sigmoid(gate[i]) * up[i]; out may alias either input.
void sigmoid_mul(const float* gate, const float* up, float* out, size_t n);
// sum x[i]^2, summed in double (an RMS norm's).
double sum_squares_f64(const float* x, size_t n);
// Index of the first largest x[i], NaNs passed over (0 when n is 0 or every x is NaN): a
// greedy pick over a vocabulary, on the one core between two decode steps.
size_t argmax(const float* x, size_t n);
// One head's KDA forget gate over n channels (simd/activation_ops.h, simd::kda_gate).
void kda_gate(const float* x, const float* bias, float rate, float lower_bound, float* g, size_t n);

}  // namespace hanpu::cpu
