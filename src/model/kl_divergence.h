// The KL divergence of a model against llama-perplexity's log-probability file of its base
// (model/logprob_file.h), position by position, with llama.cpp's arithmetic.
#pragma once

#include "hanpu/engine.h"

namespace hanpu::model {

// One position's terms, computed as llama-perplexity does (f32 logits, double sums).
struct KlTerms {
  float nll = 0, nll_base = 0;
  double kld = 0;
  float p_diff = 0;
  bool same_top = false;
};
KlTerms compare_logprobs(const float* logits, int vocab, const uint16_t* base_record, int next);

// Adds one position's terms to the running figures.
void accumulate(const KlTerms& t, KlDivergenceStats* s);

}  // namespace hanpu::model
