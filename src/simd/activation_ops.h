// The "vector unit" work of a model layer outside the LA and attention kernels: SiLU-gated
// products, the GDN short convolution and the KDA forget gate, vectorised along channels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hanpu::simd {

// out[i] = silu(gate[i]) * up[i]  (SwiGLU; out may alias gate or up)
void silu_mul(const float* gate, const float* up, float* out, size_t n);
// out[i] = sigmoid(gate[i]) * up[i]  (an output gate; out may alias gate or up)
void sigmoid_mul(const float* gate, const float* up, float* out, size_t n);

// Depthwise causal convolution then SiLU for channels [c0, c1) of T rows:
//   out[t * ld_out + (c - c0)] = silu(sum_j w[j][c] * in[t + j][c]),  j < kc
// in: [T + kc - 1, ld_in] (the kc - 1 rows before the first output row, then one row per
// output), w: [kc, C] tap-major (leading dim C); out points at channel c0 of output row 0,
// so a channel range can land in a buffer of its own.
void causal_conv_silu(const float* in, ptrdiff_t ld_in, const float* w, int C, int kc, int64_t T,
                      int c0, int c1, float* out, ptrdiff_t ld_out);

// The KDA forget gate on n channels of one head (model/kda_gates.h), v = x[i] + bias[i]:
//   lower_bound NaN:  g[i] = -rate softplus(v), softplus(v) = v above 20 (torch's threshold);
//   lower_bound finite: g[i] = lower_bound sigmoid(rate v).
// g may alias x.
void kda_gate(const float* x, const float* bias, float rate, float lower_bound, float* g, size_t n);

}  // namespace hanpu::simd
