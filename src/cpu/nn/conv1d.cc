// Short convolution and SwiGLU over cores (see conv1d.h).
#include "cpu/nn/conv1d.h"

#include <algorithm>

#include "parallel/thread_pool.h"
#include "simd/activation_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

void causal_conv1d_silu(float* x, int64_t T, int C, const float* w, int kc, std::vector<float>* state, int threads) {
  const int hist = kc - 1;
  // The window: kc - 1 remembered inputs, then this call's inputs (kept while x is overwritten).
  std::vector<float> in(static_cast<size_t>(hist + T) * C);
  std::copy(state->begin(), state->end(), in.begin());
  std::copy(x, x + T * C, in.begin() + static_cast<int64_t>(hist) * C);
  ThreadPool& pool = ThreadPool::shared(threads);
  const int P = pool.size();
  const int per = ((C + P - 1) / P + 15) / 16 * 16;  // whole vectors per core
  pool.run_on_all([&](int core) {
    simd::ensure_flush_denormals();
    const int c0 = std::min(C, core * per), c1 = std::min(C, c0 + per);
    if (c0 < c1) simd::causal_conv_silu(in.data(), C, w, C, kc, T, c0, c1, x, C);
  });
  std::copy(in.end() - static_cast<int64_t>(hist) * C, in.end(), state->begin());
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
