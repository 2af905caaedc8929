// Short convolution and SwiGLU over cores (see conv1d.h).
#include "cpu/nn/conv1d.h"

#include <algorithm>
#include <cmath>

#include "parallel/parallel_rows.h"
#include "simd/activation_ops.h"
#include "simd/fp_mode.h"

namespace hanpu::cpu {

void causal_conv1d_silu(const float* x, int64_t T, int C, const float* w, int kc,
                        std::vector<float>* state, const std::vector<ConvOutput>& outs,
                        int threads) {
  const int hist = kc - 1;
  const int64_t head = std::min<int64_t>(hist, T);  // output rows whose taps reach into the state
  // Their window: the state, then the first `head` inputs. The caller's buffer, named through
  // a reference (a lambda naming a thread_local directly would reach the worker's own).
  thread_local std::vector<float> head_buf;
  std::vector<float>& head_window = head_buf;
  head_window.resize(static_cast<size_t>(hist + head) * C);
  float* st = state->data();
  constexpr int kBlock = 256;  // channels per block: whole vectors
  const int blocks = (C + kBlock - 1) / kBlock;
  // Blocks claimed by the cores (parallel_rows); a decode step's few thousand operations per
  // layer run on the caller instead of waking the pool. Depthwise: a block needs no other, so
  // each copies its own channels of the window and of the new state (a decode step's state
  // copies were most of a layer's serial work).
  parallel_rows(
      threads, blocks, static_cast<int64_t>(hist + T) * kBlock * (kc + 1),
      [&](int64_t b0, int64_t b1) {
        simd::ensure_flush_denormals();
        for (int64_t b = b0; b < b1; ++b) {
          const int c0 = static_cast<int>(b) * kBlock, c1 = std::min(C, c0 + kBlock);
          for (int64_t r = 0; r < hist + head; ++r) {
            const float* src = r < hist ? st + r * C : x + (r - hist) * C;
            std::copy(src + c0, src + c1, head_window.data() + r * C + c0);
          }
          for (const ConvOutput& o : outs) {
            const int s0 = std::max(c0, o.first), s1 = std::min(c1, o.first + o.count);
            if (s0 >= s1) continue;
            float* dst = o.data + (s0 - o.first);
            simd::causal_conv_silu(head_window.data(), C, w, C, kc, head, s0, s1, dst, o.ld);
            // Row t >= hist reads inputs t - hist .. t: straight from x.
            if (T > head)
              simd::causal_conv_silu(x, C, w, C, kc, T - head, s0, s1, dst + head * o.ld, o.ld);
          }
          // The new state: inputs T .. T + hist - 1 of the sequence (state rows, then x
          // rows), in place: row j comes from position T + j > j, which ascending j has not
          // overwritten yet.
          for (int j = 0; j < hist; ++j) {
            const int64_t i = T + j;  // position in the sequence
            const float* src = i < hist ? st + i * C : x + (i - hist) * C;
            std::copy(src + c0, src + c1, st + static_cast<int64_t>(j) * C + c0);
          }
        }
      });
}

void swiglu(const float* gate_up, int64_t rows, int I, float* out, int64_t ld_out, int threads,
            float limit) {
  // Rows claimed by the cores (parallel_rows): a decode step's one row runs on the caller
  // rather than waking the pool for a few thousand values.
  parallel_rows(threads, rows, int64_t{8} * I, [&](int64_t r0, int64_t r1) {
    simd::ensure_flush_denormals();
    for (int64_t r = r0; r < r1; ++r) {
      const float* g = gate_up + r * 2 * I;
      if (limit > 0.0f) {  // a few layers of one model: the plain loop
        for (int i = 0; i < I; ++i) {
          const float s = std::min(g[i] / (1.0f + std::exp(-g[i])), limit);
          out[r * ld_out + i] = s * std::clamp(g[I + i], -limit, limit);
        }
        continue;
      }
      simd::silu_mul(g, g + I, out + r * ld_out, static_cast<size_t>(I));
    }
  });
}

}  // namespace hanpu::cpu
