// The GDN short convolution over a batch of tokens on CPU cores (channels split over cores).
#pragma once

#include <cstdint>
#include <vector>

namespace hanpu::cpu {

// x [T, C] <- silu(depthwise causal conv(x)) with taps w [kc, C] (tap-major); `state`
// [kc - 1, C] holds the inputs before row 0 and is replaced by the last kc - 1 inputs.
void causal_conv1d_silu(float* x, int64_t T, int C, const float* w, int kc, std::vector<float>* state, int threads);

// out [rows, I] = silu(gate_up[:, :I]) * gate_up[:, I:] for gate_up [rows, 2I] (SwiGLU).
void swiglu(const float* gate_up, int64_t rows, int I, float* out, int threads);

}  // namespace hanpu::cpu
