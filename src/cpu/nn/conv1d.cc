// Short convolution and SwiGLU over cores (see conv1d.h).
#include "cpu/nn/conv1d.h"

#include <algorithm>

#include "parallel/parallel_rows.h"
#include "parallel/thread_pool.h"
#include "simd/activation_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

void causal_conv1d_silu(float* x, int64_t T, int C, const float* w, int kc, std::vector<float>* state, int threads) {
  const int hist = kc - 1;
  // The window: kc - 1 remembered inputs, then this call's inputs (kept while x is overwritten).
  // A per-thread buffer kept between calls (a prefill step's window is ~25 MB), filled by
  // the workers, each for the channels it convolves: the convolution is depthwise, so a
  // block of channels needs no other.
  thread_local std::vector<float> window;
  if (window.size() < static_cast<size_t>(hist + T) * C) window.resize(static_cast<size_t>(hist + T) * C);
  float* in = window.data();
  constexpr int kBlock = 256;  // channels per block: whole vectors
  const int blocks = (C + kBlock - 1) / kBlock;
  // Blocks claimed by the cores (parallel_rows); a decode step's few thousand operations per
  // layer run on the caller instead of waking the pool.
  parallel_rows(threads, blocks, static_cast<int64_t>(hist + T) * kBlock * (kc + 1), [&](int64_t b0, int64_t b1) {
    simd::ensure_flush_denormals();
    for (int64_t b = b0; b < b1; ++b) {
      const int c0 = static_cast<int>(b) * kBlock, c1 = std::min(C, c0 + kBlock);
      for (int j = 0; j < hist; ++j) std::copy(state->data() + j * C + c0, state->data() + j * C + c1, in + j * C + c0);
      for (int64_t t = 0; t < T; ++t) std::copy(x + t * C + c0, x + t * C + c1, in + (hist + t) * C + c0);
      simd::causal_conv_silu(in, C, w, C, kc, T, c0, c1, x, C);
    }
  });
  std::copy(in + static_cast<int64_t>(T) * C, in + static_cast<int64_t>(hist + T) * C, state->begin());
}

void swiglu(const float* gate_up, int64_t rows, int I, float* out, int threads) {
  ThreadPool& pool = ThreadPool::shared(threads);
  const int P = pool.size();
  pool.run_on_all([&](int core) {
    simd::ensure_flush_denormals();
    for (int64_t r = core; r < rows; r += P) {
      simd::silu_mul(gate_up + r * 2 * I, gate_up + r * 2 * I + I, out + r * I, static_cast<size_t>(I));
    }
  });
}

}  // namespace hanpu::cpu
