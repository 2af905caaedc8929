// SwiGLU MLP and the sparse MoE blocks: Qwen3-Next's (transformers' Qwen3NextSparseMoeBlock)
// and the KDA hybrids' (KimiLinearMoE, BailingHybridMoE: grouped router, ungated shared MLP).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cpu/nn/conv1d.h"
#include "cpu/nn/linear.h"
#include "model/grouped_router.h"
#include "model/layer_ops.h"
#include "model/layers.h"

namespace hanpu::model {

void mlp_layer(const MlpWeights& w, int inter, const float* x, int64_t T, const ForwardOptions& opt,
               float* out, Workspace& ws, float limit) {
  const int hidden = w.gate_up.in;
  float* gu = ws.layer(0, static_cast<size_t>(T) * 2 * inter);
  cpu::linear(x, hidden, T, w.gate_up, gu, 2 * inter, opt.threads, opt.projection);
  // The activation over each row's gate half, read from there by the down projection: a
  // second [T, inter] buffer was the largest of a prefill's temporaries after gate_up.
  cpu::swiglu(gu, T, inter, gu, 2 * inter, opt.threads, limit);
  cpu::linear(gu, 2 * inter, T, w.down, out, hidden, opt.threads, opt.projection);
}

void moe_layer(const ModelConfig& c, const MoeWeights& w, const float* x, int64_t T,
               const ForwardOptions& opt, float* out, Workspace& ws) {
  const int E = c.num_experts, top = c.experts_per_token, hidden = c.hidden;
  std::vector<float> logits(static_cast<size_t>(T) * E);
  cpu::linear(x, hidden, T, w.router, logits.data(), E, opt.threads, opt.projection);
  // Per expert: the tokens routed to it and their weights.
  std::vector<std::vector<int64_t>> tokens(E);
  std::vector<std::vector<float>> weights(E);
  std::vector<int> order(E), ids(top);
  std::vector<float> prob(E), picked(top);
  const bool grouped = !w.router_bias.empty();  // the KDA hybrids' DeepSeek-style router
  for (int64_t t = 0; t < T; ++t) {
    const float* l = logits.data() + t * E;
    if (grouped) {
      route_grouped(l, w.router_bias.data(), E, top, c.router, c.norm_topk_prob, ids.data(),
                    picked.data());
      for (int i = 0; i < top; ++i) {
        tokens[ids[i]].push_back(t);
        weights[ids[i]].push_back(picked[i]);
      }
      continue;
    }
    const float mx = *std::max_element(l, l + E);
    float sum = 0;
    for (int e = 0; e < E; ++e) sum += (prob[e] = std::exp(l[e] - mx));
    for (int e = 0; e < E; ++e) prob[e] /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](int a, int b) {
      return prob[a] > prob[b] || (prob[a] == prob[b] && a < b);
    });
    float kept = 0;
    for (int i = 0; i < top; ++i) kept += prob[order[i]];
    for (int i = 0; i < top; ++i) {
      tokens[order[i]].push_back(t);
      weights[order[i]].push_back(c.norm_topk_prob ? prob[order[i]] / kept : prob[order[i]]);
    }
  }
  std::fill(out, out + T * hidden, 0.0f);
  std::vector<float> xs, ys;
  for (int e = 0; e < E; ++e) {
    const int64_t n = static_cast<int64_t>(tokens[e].size());
    if (n == 0) continue;
    xs.resize(static_cast<size_t>(n) * hidden);
    ys.resize(xs.size());
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(x + tokens[e][i] * hidden, hidden, xs.begin() + i * hidden);
    mlp_layer(w.experts[e], c.moe_intermediate, xs.data(), n, opt, ys.data(), ws, w.expert_limit);
    for (int64_t i = 0; i < n; ++i) {
      float* o = out + tokens[e][i] * hidden;
      const float wt = weights[e][i];
      for (int j = 0; j < hidden; ++j) o[j] += wt * ys[i * hidden + j];
    }
  }
  if (c.shared_expert_intermediate > 0 && w.shared_gate.in == 0) {  // an ungated shared MLP
    std::vector<float> shared(static_cast<size_t>(T) * hidden);
    mlp_layer(w.shared, c.shared_expert_intermediate, x, T, opt, shared.data(), ws, w.shared_limit);
    for (size_t j = 0; j < shared.size(); ++j) out[j] += shared[j];
  }
  if (w.shared_gate.in > 0) {
    std::vector<float> shared(static_cast<size_t>(T) * hidden), gate(static_cast<size_t>(T));
    mlp_layer(w.shared, c.shared_expert_intermediate, x, T, opt, shared.data(), ws);
    cpu::linear(x, hidden, T, w.shared_gate, gate.data(), 1, opt.threads, opt.projection);
    for (int64_t t = 0; t < T; ++t) {
      const float s = sigmoid(gate[t]);
      for (int j = 0; j < hidden; ++j) out[t * hidden + j] += s * shared[t * hidden + j];
    }
  }
}

}  // namespace hanpu::model
