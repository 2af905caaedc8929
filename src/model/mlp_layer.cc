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

namespace {

// One token's experts from its router logits l [E]: ids and weights [top], best first.
// prob and order are the softmax router's scratch [E], kept across a prefill's tokens.
void route_token(const ModelConfig& c, const MoeWeights& w, const float* l, int* ids,
                 float* weights, std::vector<float>& prob, std::vector<int>& order) {
  const int E = c.num_experts, top = c.experts_per_token;
  if (!w.router_bias.empty()) {  // the KDA hybrids' DeepSeek-style router
    route_grouped(l, w.router_bias.data(), E, top, c.router, c.norm_topk_prob, ids, weights);
    return;
  }
  prob.resize(E);
  order.resize(E);
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
    ids[i] = order[i];
    weights[i] = c.norm_topk_prob ? prob[order[i]] / kept : prob[order[i]];
  }
}

// A decode step's token: its experts' and the shared expert's gate/up projections in one call
// (one x), their down projections in another (cpu::linear_each), instead of two calls an
// expert; the sum in expert order as the general path adds.
void moe_token(const ModelConfig& c, const MoeWeights& w, const float* x, const float* logits,
               const ForwardOptions& opt, float* out, Workspace& ws) {
  const int top = c.experts_per_token, hidden = c.hidden;
  std::vector<int> ids(top);
  std::vector<float> weights(top), prob;
  std::vector<int> scratch;
  route_token(c, w, logits, ids.data(), weights.data(), prob, scratch);
  std::vector<int> order(top);  // experts in id order
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return ids[a] < ids[b]; });
  const bool shared = c.shared_expert_intermediate > 0;
  const int n = top + (shared ? 1 : 0);
  const int I = c.moe_intermediate, S = c.shared_expert_intermediate, wide = std::max(I, S);
  float* gu = ws.layer(0, static_cast<size_t>(n) * 2 * wide);  // row j: gate | up of mlps[j]
  float* y = ws.layer(1, static_cast<size_t>(n) * hidden + 1);
  float* shared_gate = y + static_cast<size_t>(n) * hidden;
  std::vector<cpu::LinearOut> ups;
  std::vector<const MlpWeights*> mlps;
  for (int i : order) mlps.push_back(&w.experts[ids[i]]);
  if (shared) mlps.push_back(&w.shared);
  for (int j = 0; j < n; ++j) ups.push_back({&mlps[j]->gate_up, gu + j * 2 * wide, 2 * wide});
  if (w.shared_gate.in > 0) ups.push_back({&w.shared_gate, shared_gate, 1});
  cpu::linear_many(x, hidden, 1, ups, opt.threads, opt.projection);
  std::vector<cpu::LinearRow> downs;
  for (int j = 0; j < n; ++j) {
    const bool is_shared = shared && j == top;
    const int inter = is_shared ? S : I;
    float* g = gu + j * 2 * wide;
    cpu::swiglu(g, 1, inter, g, 2 * inter, 1, is_shared ? w.shared_limit : w.expert_limit);
    downs.push_back({g, &mlps[j]->down, y + static_cast<size_t>(j) * hidden});
  }
  cpu::linear_each(downs, opt.threads, opt.projection);
  std::fill(out, out + hidden, 0.0f);
  for (int j = 0; j < top; ++j) {
    const float wt = weights[order[j]];
    for (int h = 0; h < hidden; ++h) out[h] += wt * y[j * hidden + h];
  }
  if (shared) {
    const float s = w.shared_gate.in > 0 ? sigmoid(*shared_gate) : 1.0f;
    for (int h = 0; h < hidden; ++h) out[h] += s * y[top * hidden + h];
  }
}

}  // namespace

void moe_layer(const ModelConfig& c, const MoeWeights& w, const float* x, int64_t T,
               const ForwardOptions& opt, float* out, Workspace& ws) {
  const int E = c.num_experts, top = c.experts_per_token, hidden = c.hidden;
  std::vector<float> logits(static_cast<size_t>(T) * E);
  cpu::linear(x, hidden, T, w.router, logits.data(), E, opt.threads, opt.projection);
  if (T == 1) return moe_token(c, w, x, logits.data(), opt, out, ws);
  // Per expert: the tokens routed to it and their weights.
  std::vector<std::vector<int64_t>> tokens(E);
  std::vector<std::vector<float>> weights(E);
  std::vector<int> ids(top), order;
  std::vector<float> picked(top), prob;
  for (int64_t t = 0; t < T; ++t) {
    route_token(c, w, logits.data() + t * E, ids.data(), picked.data(), prob, order);
    for (int i = 0; i < top; ++i) {
      tokens[ids[i]].push_back(t);
      weights[ids[i]].push_back(picked[i]);
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
  if (c.shared_expert_intermediate > 0) {  // Qwen3-Next's sigmoid-gated, the hybrids' ungated
    std::vector<float> shared(static_cast<size_t>(T) * hidden), gate(static_cast<size_t>(T));
    mlp_layer(w.shared, c.shared_expert_intermediate, x, T, opt, shared.data(), ws, w.shared_limit);
    if (w.shared_gate.in > 0)
      cpu::linear(x, hidden, T, w.shared_gate, gate.data(), 1, opt.threads, opt.projection);
    for (int64_t t = 0; t < T; ++t) {
      const float s = w.shared_gate.in > 0 ? sigmoid(gate[t]) : 1.0f;
      for (int j = 0; j < hidden; ++j) out[t * hidden + j] += s * shared[t * hidden + j];
    }
  }
}

}  // namespace hanpu::model
