// KL divergence against a base's log-probabilities (see kl_divergence.h): llama.cpp's
// arithmetic (tools/perplexity), f32 where it uses f32, so the figures mean what its do.
#include "model/kl_divergence.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hanpu::model {

KlTerms compare_logprobs(const float* logits, int vocab, const uint16_t* base_record, int next) {
  float max_logit = logits[0];
  int imax = 0;
  for (int i = 1; i < vocab; ++i) {
    if (logits[i] > max_logit) max_logit = logits[i], imax = i;
  }
  double sum_exp = 0.0;
  for (int i = 0; i < vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  float scale, min_log_prob;
  std::memcpy(&scale, base_record, 4);
  std::memcpy(&min_log_prob, base_record + 2, 4);
  const uint16_t* base = base_record + 4;
  KlTerms t;
  t.nll = max_logit + log_sum_exp - logits[next];
  t.nll_base = -(scale * base[next] + min_log_prob);
  max_logit += log_sum_exp;
  double sum = 0;
  int imax_base = -1;
  float p_log_base_max = 0;
  for (int i = 0; i < vocab; ++i) {
    const float p_log_base = scale * base[i] + min_log_prob;
    if (i == 0 || p_log_base > p_log_base_max) p_log_base_max = p_log_base, imax_base = i;
    if (p_log_base > -16.f) {
      const float p_base = std::exp(p_log_base);
      sum += p_base * (p_log_base - logits[i] + max_logit);
    }
  }
  t.kld = sum;
  t.same_top = imax == imax_base;
  t.p_diff = std::exp(-t.nll) - std::exp(-t.nll_base);
  return t;
}

void accumulate(const KlTerms& t, KlDivergenceStats* s) {
  s->nll_base_sum += t.nll_base;
  s->nll_base2_sum += static_cast<double>(t.nll_base) * t.nll_base;
  s->nll_nll_base_sum += static_cast<double>(t.nll) * t.nll_base;
  s->kld_sum += t.kld;
  s->kld2_sum += t.kld * t.kld;
  s->p_diff_sum += t.p_diff;
  const double p2 = static_cast<double>(t.p_diff) * t.p_diff;
  s->p_diff2_sum += p2;
  s->p_diff4_sum += p2 * p2;
  s->max_p_diff = std::max(s->max_p_diff, std::fabs(t.p_diff));
  s->same_top += t.same_top;
  ++s->count;
  s->kld.push_back(static_cast<float>(t.kld));
  s->p_diff.push_back(t.p_diff);
}

}  // namespace hanpu::model
