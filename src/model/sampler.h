// Next-token sampling: greedy (temperature 0), or temperature with top-k then top-p
// (nucleus) filtering, seeded so a run can be repeated — the order llama.cpp and
// transformers apply them in.
#pragma once

#include <cstdint>
#include <vector>

#include "base/rng.h"

namespace hanpu::model {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplingParams p) : p_(p), rng_(p.seed) {}
  int sample(const std::vector<float>& logits);

 private:
  SamplingParams p_;
  Rng rng_;
  std::vector<int> order_;
  std::vector<double> prob_;
};

}  // namespace hanpu::model
