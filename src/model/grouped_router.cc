// Grouped expert choice (see grouped_router.h).
#include "model/grouped_router.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace hanpu::model {

void route_grouped(const float* logits, const float* bias, int E, int top_k, const GroupedRouter& r,
                   bool norm_topk_prob, int* ids, float* weights) {
  std::vector<float> score(E), choice(E);
  for (int e = 0; e < E; ++e) {
    score[e] = 1.0f / (1.0f + std::exp(-logits[e]));
    choice[e] = score[e] + bias[e];
  }
  const int per = E / r.groups;
  std::vector<float> group_score(r.groups);
  for (int gi = 0; gi < r.groups; ++gi) {
    const float* c = choice.data() + gi * per;
    float best = -INFINITY, second = -INFINITY;
    for (int j = 0; j < per; ++j) {
      if (c[j] > best) {
        second = best;
        best = c[j];
      } else if (c[j] > second) {
        second = c[j];
      }
    }
    group_score[gi] = best + second;
  }
  // Higher first, the lower index on ties.
  const auto better = [](const std::vector<float>& v) {
    return [&v](int a, int b) { return v[a] > v[b] || (v[a] == v[b] && a < b); };
  };
  std::vector<int> groups(r.groups);
  std::iota(groups.begin(), groups.end(), 0);
  std::partial_sort(groups.begin(), groups.begin() + r.topk_groups, groups.end(),
                    better(group_score));
  std::vector<int> candidates;
  for (int i = 0; i < r.topk_groups; ++i) {
    for (int j = 0; j < per; ++j) candidates.push_back(groups[i] * per + j);
  }
  std::partial_sort(candidates.begin(), candidates.begin() + top_k, candidates.end(),
                    better(choice));
  float sum = 0.0f;
  for (int i = 0; i < top_k; ++i) {
    ids[i] = candidates[i];
    weights[i] = score[candidates[i]];
    sum += weights[i];
  }
  for (int i = 0; i < top_k; ++i) {
    if (norm_topk_prob) weights[i] /= sum + 1e-20f;
    weights[i] *= r.routed_scaling;
  }
}

}  // namespace hanpu::model
