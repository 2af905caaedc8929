// Penalties, then greedy / temperature / top-k / top-p / min-p sampling (see sampler.h).
#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cpu/nn/elementwise.h"

namespace hanpu::model {

void Sampler::remember(int token, std::vector<bool>* mask, std::vector<int>* list) {
  if (token < 0) return;
  if (static_cast<size_t>(token) >= mask->size())
    mask->resize(static_cast<size_t>(token) + 1, false);
  if ((*mask)[token]) return;
  (*mask)[token] = true;
  list->push_back(token);
}

void Sampler::observe_prompt(int token) {
  if (p_.repetition_penalty != 1.0f) remember(token, &seen_mask_, &seen_);
}

void Sampler::observe_output(int token) {
  observe_prompt(token);
  if (p_.presence_penalty == 0.0f && p_.frequency_penalty == 0.0f) return;
  remember(token, &output_mask_, &output_);
  if (token < 0) return;
  if (static_cast<size_t>(token) >= output_count_.size()) output_count_.resize(token + 1, 0);
  ++output_count_[token];
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
    if (static_cast<size_t>(id) < n)
      penalised_[id] -= p_.presence_penalty + p_.frequency_penalty * output_count_[id];
  }
  return penalised_;
}

namespace {

// Buckets of z = (logit - max) / temperature, 64 per unit of z, for the nucleus: bucket b
// holds z in (-(b + 1) / 64, -b / 64]; z at or below -40 (weights under 4e-18), and NaN, go
// to the last (branch-free, so the loop over a vocabulary vectorizes). Monotone in the logit,
// so walking buckets walks the ranking in coarse steps.
constexpr int kBucketsPerUnit = 64;
constexpr int kBuckets = 40 * kBucketsPerUnit + 1;
inline uint16_t bucket_of(float z) {
  const float b = -z * kBucketsPerUnit;
  return static_cast<uint16_t>(b < kBuckets - 1 ? b
                                                : kBuckets - 1);  // NaN fails the test: the last
}

// Greedy's pick; ties go to the lowest id, as torch.argmax does (NaNs passed over).
int argmax(const std::vector<float>& logits) {
  return static_cast<int>(cpu::argmax(logits.data(), logits.size()));
}

}  // namespace

void Sampler::keep_nucleus(const std::vector<float>& logits, double total) {
  // The ranking's smallest prefix whose mass reaches top_p: whole buckets while they fit,
  // then the boundary bucket's ids sorted (ties: the lower id first). O(n), where a sort of
  // a Qwen vocabulary (248k tokens) for each token took longer than the decode step.
  const double need = static_cast<double>(p_.top_p) * total;
  bucket_mass_.assign(kBuckets, 0.0);
  for (int id : candidates_) bucket_mass_[bucket_[id]] += weight_[id];
  double acc = 0;
  int boundary = 0;
  while (boundary < kBuckets && acc + bucket_mass_[boundary] < need)
    acc += bucket_mass_[boundary++];
  if (boundary == kBuckets) return;  // rounding: every candidate stays
  std::vector<int>& edge = scratch_;
  edge.clear();
  size_t kept = 0;
  for (int id : candidates_) {
    if (bucket_[id] < boundary) candidates_[kept++] = id;
    if (bucket_[id] == boundary) edge.push_back(id);
  }
  std::sort(edge.begin(), edge.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (int id : edge) {
    candidates_[kept++] = id;
    if ((acc += weight_[id]) >= need) break;
  }
  candidates_.resize(kept);
}

int Sampler::sample(const std::vector<float>& raw_logits) {
  const std::vector<float>& logits = penalised(raw_logits);
  if (p_.temperature <= 0.0f) return argmax(logits);
  filter(logits);
  double mass = 0;
  for (int id : candidates_) mass += weight_[id];
  double u = rng_.uniform() * mass;
  for (int id : candidates_) {
    u -= weight_[id];
    if (u < 0) return id;
  }
  return candidates_.back();  // rounding left u >= 0
}

std::vector<int> Sampler::candidates(const std::vector<float>& raw_logits) {
  const std::vector<float>& logits = penalised(raw_logits);
  if (p_.temperature <= 0.0f) return {argmax(logits)};
  filter(logits);
  std::vector<int> ids = candidates_;
  std::sort(ids.begin(), ids.end());
  return ids;
}

void Sampler::filter(const std::vector<float>& logits) {
  const int n = static_cast<int>(logits.size());
  const auto before = [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  // Candidates: the top-k ids, or every id. A small k is selected through a heap of k (one
  // comparison for most ids), a large one by nth_element.
  candidates_.resize(n);
  std::iota(candidates_.begin(), candidates_.end(), 0);
  const bool top_k = p_.top_k > 0 && p_.top_k < n;
  if (top_k && p_.top_k <= n / 16) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + p_.top_k, candidates_.end(),
                      before);
  } else if (top_k) {
    std::nth_element(candidates_.begin(), candidates_.begin() + p_.top_k, candidates_.end(),
                     before);
  }
  if (top_k) candidates_.resize(p_.top_k);
  // Weights relative to the most likely token, w = exp(z), z = (l - max) / T (the top one 1);
  // the nucleus's buckets of z. Only the candidates' are made: over the whole vocabulary
  // (no top-k) in loops the compiler vectorizes and one exp call on the vector unit.
  float mx = logits[candidates_[0]];  // the top-k path reads only its candidates
  if (top_k) {
    for (int id : candidates_) mx = std::max(mx, logits[id]);
  } else {
    mx = *std::max_element(logits.begin(), logits.end());
  }
  const float inv_t = 1.0f / p_.temperature;
  const bool nucleus = p_.top_p < 1.0f;
  weight_.resize(n);
  if (nucleus) bucket_.resize(n);
  if (top_k) {
    for (int id : candidates_) {
      const float z = (logits[id] - mx) * inv_t;
      if (nucleus) bucket_[id] = bucket_of(z);
      weight_[id] = std::exp(z);
    }
  } else {
    for (int i = 0; i < n; ++i) weight_[i] = (logits[i] - mx) * inv_t;
    if (nucleus) {
      for (int i = 0; i < n; ++i) bucket_[i] = bucket_of(weight_[i]);
    }
    cpu::exp_inplace(weight_.data(), weight_.size());
  }
  double total = 0;
  for (int id : candidates_) total += weight_[id];
  if (nucleus) keep_nucleus(logits, total);
  // Min-p: the tokens at least min_p times as likely as the top one (always kept;
  // renormalising over the kept ones does not change the ratio).
  if (p_.min_p > 0.0f) {
    candidates_.erase(
        std::remove_if(candidates_.begin(), candidates_.end(),
                       [&](int id) { return weight_[id] < p_.min_p && logits[id] < mx; }),
        candidates_.end());
  }
}

}  // namespace hanpu::model
