// The operator-by-operator program of a hybrid model's layer on the simulated Ascend cores,
// shared by the prefill and the decode step: GM tensors on seeded data (activations, weights
// in NZ order, per-channel parameters), each operator a region of its own dispatched by the
// host, and the operators every layer kind has (add + RMSNorm, the SwiGLU MLP).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

class LayerProgram {
 public:
  LayerProgram(NpuSim& sim, int64_t T, uint64_t seed) : sim_(sim), T_(T), rng_(seed) {}

  // A [T x cols] activation (fp16 unless told), zero.
  GmTensor* act(const std::string& name, int64_t cols, bool fp16 = true);
  // The same, unit-normal.
  GmTensor* random_act(const std::string& name, int64_t cols);
  // A projection's weight [in, out] in NZ order, scaled so activations keep unit size.
  GmTensor* weight(const std::string& name, int64_t in, int64_t out);
  // A [rows x cols] fp32 parameter, normal(mean, sd).
  GmTensor* param(const std::string& name, int64_t cols, float mean, float sd, int64_t rows = 1);
  // One operator: a region of its own, dispatched by the host as one eager operator.
  Status op(const std::string& name, const std::function<Status()>& body);
  Status gemm(const std::string& name, GmTensor* x, GmTensor* w, GmTensor* y);
  // h = a + b; hn = RMSNorm(h) (1 + w), as one operator (vLLM-Ascend's add_rms_norm).
  Status add_norm(const std::string& name, GmTensor* a, GmTensor* b, GmTensor* h, GmTensor* hn);
  // gate_up, SwiGLU, down: the MLP's output into `y`.
  Status mlp(GmTensor* hn, int ffn, GmTensor* y);

  NpuSim& sim() { return sim_; }
  int64_t T() const { return T_; }

 private:
  NpuSim& sim_;
  int64_t T_;
  std::mt19937_64 rng_;
};

}  // namespace hanpu::npu
