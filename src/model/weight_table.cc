// The tensors each layout needs (see weight_table.h). Sizes are products of a validated
// config (model_config.h bounds each factor), formed in int64.
#include "model/weight_table.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace hanpu::model {

namespace {

struct Sizes {
  int64_t hidden, vocab, inter, H, HV, K, V, g, conv_channels, kernel, Hq, Hkv, D, E, I, S;
  explicit Sizes(const ModelConfig& c)
      : hidden(c.hidden),
        vocab(c.vocab),
        inter(c.intermediate),
        H(c.la_key_heads),
        HV(c.la_value_heads),
        K(c.la_key_dim),
        V(c.la_value_dim),
        g(c.la_value_heads / c.la_key_heads),
        conv_channels(c.la_conv_channels()),
        kernel(c.conv_kernel),
        Hq(c.attn_heads),
        Hkv(c.kv_heads),
        D(c.head_dim),
        E(c.num_experts),
        I(c.moe_intermediate),
        S(c.shared_expert_intermediate) {}
};

// A full-attention layer's six tensors under `names` (q, k, v, o, q norm, k norm), as both
// layouts hold them: q carries the output gate (Hq x 2D rows).
void add_attention(std::vector<ExpectedTensor>* t, const Sizes& s, const std::string& prefix,
                   const std::array<const char*, 6>& names) {
  const std::array<Shape, 6> shapes = {Shape{s.Hq * 2 * s.D, s.hidden},
                                       Shape{s.Hkv * s.D, s.hidden},
                                       Shape{s.Hkv * s.D, s.hidden},
                                       Shape{s.hidden, s.Hq * s.D},
                                       Shape{s.D},
                                       Shape{s.D}};
  for (size_t i = 0; i < names.size(); ++i) t->push_back({prefix + names[i], shapes[i]});
}

}  // namespace

std::vector<ExpectedTensor> hf_weight_table(const ModelConfig& c, const WeightStore& store) {
  const Sizes s(c);
  std::vector<ExpectedTensor> t;
  const auto add = [&](std::string name, Shape shape) {
    t.push_back({std::move(name), std::move(shape)});
  };
  const std::string& P = c.weight_prefix;
  add(P + "norm.weight", {s.hidden});
  add(P + "embed_tokens.weight", {s.vocab, s.hidden});
  if (!c.tie_embeddings || store.find("lm_head.weight") != nullptr)
    add("lm_head.weight", {s.vocab, s.hidden});
  const auto mlp = [&](const std::string& p, int64_t inter) {
    add(p + "gate_proj.weight", {inter, s.hidden});
    add(p + "up_proj.weight", {inter, s.hidden});
    add(p + "down_proj.weight", {s.hidden, inter});
  };
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = fmt::format("{}layers.{}.", P, i);
    add(p + "input_layernorm.weight", {s.hidden});
    add(p + "post_attention_layernorm.weight", {s.hidden});
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      const std::string a = p + "linear_attn.";
      if (c.arch == Arch::kQwen35) {
        add(a + "in_proj_qkv.weight", {s.conv_channels, s.hidden});
        add(a + "in_proj_z.weight", {s.HV * s.V, s.hidden});
        add(a + "in_proj_b.weight", {s.HV, s.hidden});
        add(a + "in_proj_a.weight", {s.HV, s.hidden});
      } else {  // per key head [q K | k K | v gV | z gV] and [b g | a g]
        add(a + "in_proj_qkvz.weight", {s.H * (2 * s.K + 2 * s.g * s.V), s.hidden});
        add(a + "in_proj_ba.weight", {s.H * 2 * s.g, s.hidden});
      }
      add(a + "out_proj.weight", {s.hidden, s.HV * s.V});
      add(a + "conv1d.weight", {s.conv_channels, 1, s.kernel});
      add(a + "A_log", {s.HV});
      add(a + "dt_bias", {s.HV});
      add(a + "norm.weight", {s.V});
    } else {
      add_attention(&t, s, p + "self_attn.",
                    {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight",
                     "q_norm.weight", "k_norm.weight"});
    }
    if (!c.layer_has_moe(i)) {
      mlp(p + "mlp.", s.inter);
      continue;
    }
    add(p + "mlp.gate.weight", {s.E, s.hidden});
    if (store.find(p + "mlp.experts.gate_up_proj") != nullptr) {  // transformers 5's fused layout
      add(p + "mlp.experts.gate_up_proj", {s.E, 2 * s.I, s.hidden});
      add(p + "mlp.experts.down_proj", {s.E, s.hidden, s.I});
    } else {
      for (int e = 0; e < c.num_experts; ++e) mlp(fmt::format("{}mlp.experts.{}.", p, e), s.I);
    }
    if (s.S > 0) {
      mlp(p + "mlp.shared_expert.", s.S);
      add(p + "mlp.shared_expert_gate.weight", {1, s.hidden});
    }
  }
  return t;
}

std::vector<ExpectedTensor> gguf_weight_table(const ModelConfig& c) {
  const Sizes s(c);
  std::vector<ExpectedTensor> t;
  const auto add = [&](std::string name, Shape shape) {
    t.push_back({std::move(name), std::move(shape)});
  };
  add("output_norm.weight", {s.hidden});
  add("token_embd.weight", {s.vocab, s.hidden});
  if (!c.tie_embeddings) add("output.weight", {s.vocab, s.hidden});
  const auto ffn = [&](const std::string& b, const char* suffix, int64_t inter) {
    add(fmt::format("{}ffn_gate{}.weight", b, suffix), {inter, s.hidden});
    add(fmt::format("{}ffn_up{}.weight", b, suffix), {inter, s.hidden});
    add(fmt::format("{}ffn_down{}.weight", b, suffix), {s.hidden, inter});
  };
  for (int i = 0; i < c.layers; ++i) {
    const std::string b = fmt::format("blk.{}.", i);
    add(b + "attn_norm.weight", {s.hidden});
    add(b + "post_attention_norm.weight", {s.hidden});
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      add(b + "attn_qkv.weight", {s.conv_channels, s.hidden});
      add(b + "attn_gate.weight", {s.HV * s.V, s.hidden});
      if (c.arch == Arch::kQwen35) {
        add(b + "ssm_beta.weight", {s.HV, s.hidden});
        add(b + "ssm_alpha.weight", {s.HV, s.hidden});
      } else {
        add(b + "ssm_ba.weight", {2 * s.HV, s.hidden});
      }
      add(b + "ssm_out.weight", {s.hidden, s.HV * s.V});
      add(b + "ssm_conv1d.weight", {s.conv_channels, s.kernel});
      add(b + "ssm_a", {s.HV});
      add(b + "ssm_dt.bias", {s.HV});
      add(b + "ssm_norm.weight", {s.V});
    } else {
      add_attention(&t, s, b,
                    {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                     "attn_q_norm.weight", "attn_k_norm.weight"});
    }
    if (!c.layer_has_moe(i)) {
      ffn(b, "", s.inter);
      continue;
    }
    add(b + "ffn_gate_inp.weight", {s.E, s.hidden});
    add(b + "ffn_gate_exps.weight", {s.E, s.I, s.hidden});
    add(b + "ffn_up_exps.weight", {s.E, s.I, s.hidden});
    add(b + "ffn_down_exps.weight", {s.E, s.hidden, s.I});
    if (s.S > 0) {
      ffn(b, "_shexp", s.S);
      add(b + "ffn_gate_inp_shexp.weight", {s.hidden});
    }
  }
  return t;
}

Status check_weight_table(const std::vector<ExpectedTensor>& table, const WeightStore& store) {
  for (const ExpectedTensor& e : table) {
    const StoredTensor* t = nullptr;
    HANPU_RETURN_IF_ERROR(store.get(e.name, e.shape, &t));
  }
  return Status::Ok();
}

}  // namespace hanpu::model
