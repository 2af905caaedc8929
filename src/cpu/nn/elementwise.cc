// The model's element-wise kernels (see elementwise.h).
#include "cpu/nn/elementwise.h"

#include "simd/activation_ops.h"
#include "simd/vec_ops.h"

namespace hanpu::cpu {

void exp_inplace(float* x, size_t n) { simd::exp_inplace(x, n); }

void silu_mul(const float* gate, const float* up, float* out, size_t n) {
  simd::silu_mul(gate, up, out, n);
}

void sigmoid_mul(const float* gate, const float* up, float* out, size_t n) {
  simd::sigmoid_mul(gate, up, out, n);
}

double sum_squares_f64(const float* x, size_t n) { return simd::sum_squares_f64(x, n); }

size_t argmax(const float* x, size_t n) { return simd::argmax(x, n); }

void kda_gate(const float* x, const float* bias, float rate, float lower_bound, float* g,
              size_t n) {
  simd::kda_gate(x, bias, rate, lower_bound, g, n);
}

}  // namespace hanpu::cpu
