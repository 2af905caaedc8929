// The GDN short convolution over a batch of tokens on CPU cores (channels split over cores).
#pragma once

#include <cstdint>
#include <vector>

namespace hanpu::cpu {

// Where output channels [first, first + count) go: channel c of row t to
// data[t * ld + (c - first)]. The GDN layer sends q, k and v to three buffers this way.
struct ConvOutput {
  int first = 0, count = 0;
  float* data = nullptr;
  int64_t ld = 0;
};

// silu(depthwise causal conv(x)) for x [T, C] with taps w [kc, C] (tap-major), written to
// `outs` (together they must cover [0, C); none may overlap x); `state` [kc - 1, C] holds
// the inputs before row 0 and is replaced by the last kc - 1 inputs. Reads x in place: only
// the first kc - 1 output rows, whose taps reach into the state, go through a small window.
void causal_conv1d_silu(const float* x, int64_t T, int C, const float* w, int kc,
                        std::vector<float>* state, const std::vector<ConvOutput>& outs,
                        int threads);

// out [rows, I] (row r at out + r * ld_out) = silu(gate_up[:, :I]) * gate_up[:, I:] for
// gate_up [rows, 2I] (SwiGLU). out may be gate_up itself with ld_out = 2I: each row's result
// then replaces its gate half, so an MLP needs no second buffer.
// limit > 0 clips as Ling's experts do (transformers' BailingHybridExperts._apply_gate):
// min(silu(gate), limit) * clamp(up, -limit, limit).
void swiglu(const float* gate_up, int64_t rows, int I, float* out, int64_t ld_out, int threads,
            float limit = 0.0f);

}  // namespace hanpu::cpu
