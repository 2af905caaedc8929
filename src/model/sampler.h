// Next-token sampling: greedy (temperature 0), or temperature with top-k then top-p
// (nucleus) filtering, seeded so a run can be repeated — the order llama.cpp and
// transformers apply them in. A repetition penalty first, as transformers' logits
// processor does, greedy included: the logit of every token seen so far is divided by it
// (multiplied, where negative).
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
  float repetition_penalty = 1.0f;  // 1: off; > 1 discourages tokens already seen
};

class Sampler {
 public:
  explicit Sampler(SamplingParams p) : p_(p), rng_(p.seed) {}
  int sample(const std::vector<float>& logits);
  // A token of the sequence (prompt or generated) the repetition penalty applies to from
  // now on; ids outside the logits' range are never penalised.
  void observe(int token);

 private:
  // logits with the repetition penalty applied (the input itself when it is off).
  const std::vector<float>& penalised(const std::vector<float>& logits);

  SamplingParams p_;
  Rng rng_;
  std::vector<int> seen_;            // distinct observed ids, in order of first sight
  std::vector<bool> seen_mask_;      // by id, grown on demand
  std::vector<float> penalised_;
  std::vector<int> order_;
  std::vector<double> prob_;
};

}  // namespace hanpu::model
