// Penalties, then greedy / temperature / top-k / top-p / min-p sampling (see sampler.h).
#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hanpu::model {

void Sampler::remember(int token, std::vector<bool>* mask, std::vector<int>* list) {
  if (token < 0) return;
  if (static_cast<size_t>(token) >= mask->size()) mask->resize(static_cast<size_t>(token) + 1, false);
  if ((*mask)[token]) return;
  (*mask)[token] = true;
  list->push_back(token);
}

void Sampler::observe_prompt(int token) {
  if (p_.repetition_penalty != 1.0f) remember(token, &seen_mask_, &seen_);
}

void Sampler::observe_output(int token) {
  observe_prompt(token);
  if (p_.presence_penalty != 0.0f) remember(token, &output_mask_, &output_);
}

const std::vector<float>& Sampler::penalised(const std::vector<float>& logits) {
  if (seen_.empty() && output_.empty()) return logits;
  penalised_ = logits;  // a copy of the vocabulary's logits: ~1 MB, microseconds against a step
  const size_t n = penalised_.size();
  for (int id : seen_) {
    if (static_cast<size_t>(id) >= n) continue;
    float& v = penalised_[id];
    v = v < 0 ? v * p_.repetition_penalty : v / p_.repetition_penalty;
  }
  for (int id : output_) {
    if (static_cast<size_t>(id) < n) penalised_[id] -= p_.presence_penalty;
  }
  return penalised_;
}

int Sampler::sample(const std::vector<float>& raw_logits) {
  const std::vector<float>& logits = penalised(raw_logits);
  const int n = static_cast<int>(logits.size());
  if (p_.temperature <= 0.0f) {  // ties go to the lowest id, as torch.argmax does
    return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  const int k = p_.top_k > 0 ? std::min(p_.top_k, n) : n;
  std::partial_sort(order_.begin(), order_.begin() + k, order_.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  order_.resize(k);
  prob_.resize(k);
  const double mx = logits[order_[0]];
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += (prob_[i] = std::exp((logits[order_[i]] - mx) / p_.temperature));
  // Nucleus: the smallest prefix (by probability) whose mass reaches top_p.
  int keep = k;
  if (p_.top_p < 1.0f) {
    double acc = 0;
    for (int i = 0; i < k; ++i) {
      acc += prob_[i] / sum;
      if (acc >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  // Min-p: the tokens at least min_p times as likely as the top one (prob_[0], the largest;
  // renormalising over the kept ones does not change the ratio).
  if (p_.min_p > 0.0f) {
    int above = 1;
    while (above < keep && prob_[above] >= p_.min_p * prob_[0]) ++above;
    keep = above;
  }
  double mass = 0;
  for (int i = 0; i < keep; ++i) mass += prob_[i];
  double u = rng_.uniform() * mass;
  for (int i = 0; i < keep; ++i) {
    u -= prob_[i];
    if (u < 0) return order_[i];
  }
  return order_[keep - 1];
}

}  // namespace hanpu::model
