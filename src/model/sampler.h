// Next-token sampling: greedy (temperature 0), or temperature then top-k, top-p (nucleus)
// and min-p filtering, seeded so a run can be repeated — the order transformers applies its
// warpers in. Penalties come first and apply to greedy too: the repetition penalty
// (transformers' processor: the logit of every token of the prompt and output so far divided
// by it, multiplied where negative), then the presence and frequency penalties (vLLM's /
// OpenAI's: presence + frequency x count subtracted from the logit of each token the output
// already holds count times).
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
  float repetition_penalty = 1.0f;  // 1: off; > 1 discourages tokens of the prompt and output
  float min_p = 0.0f;              // 0: off; drops tokens below min_p x the top token's probability
  float presence_penalty = 0.0f;   // 0: off; > 0 discourages tokens the output holds
  float frequency_penalty = 0.0f;  // 0: off; > 0 discourages them by how often it holds each
};

class Sampler {
 public:
  explicit Sampler(SamplingParams p) : p_(p), rng_(p.seed) {}
  int sample(const std::vector<float>& logits);
  // The ids sample() may return for these logits, ascending (penalties and filters applied;
  // greedy: the argmax). For tests and diagnostics; draws nothing.
  std::vector<int> candidates(const std::vector<float>& logits);
  // Tokens of the sequence the penalties see from now on: a prompt token (the repetition
  // penalty's) or an output token (both penalties'). Ids outside the logits' range are never
  // penalised.
  void observe_prompt(int token);
  void observe_output(int token);

 private:
  // The ids in `mask` / `list` (distinct, in order of first sight), with `token` added.
  static void remember(int token, std::vector<bool>* mask, std::vector<int>* list);
  // logits with the penalties applied (the input itself when none applies).
  const std::vector<float>& penalised(const std::vector<float>& logits);
  // candidates_ and weight_ for penalised logits at temperature > 0: top-k, top-p, min-p.
  void filter(const std::vector<float>& logits);
  // Shrinks candidates_ to top-p's nucleus over them (total: their weights' sum).
  void keep_nucleus(const std::vector<float>& logits, double total);

  SamplingParams p_;
  Rng rng_;
  std::vector<int> seen_, output_;             // distinct ids of prompt + output, of the output
  std::vector<bool> seen_mask_, output_mask_;  // by id, grown on demand
  std::vector<int> output_count_;              // by id: times the output holds it
  std::vector<float> penalised_;
  std::vector<float> weight_;     // exp((logit - max) / temperature) by id
  std::vector<uint16_t> bucket_;  // the nucleus's coarse rank of each id (sampler.cc)
  std::vector<double> bucket_mass_;
  std::vector<int> candidates_, scratch_;  // ids a draw may return; the nucleus's boundary ids
};

}  // namespace hanpu::model
