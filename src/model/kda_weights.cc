// The KDA hybrids' checkpoints (Kimi Linear, Ling) in hanpu's compute layout: the tensor
// names of each model's own release (which transformers' classes also save) and their
// conversion (see weight_converter.h and weight_table.h).
#include <cmath>

#include <fmt/format.h>

#include "model/weight_converter.h"
#include "model/weight_table.h"

namespace hanpu::model {

namespace {

// Where each architecture keeps a layer's parts.
struct HybridNames {
  const char* embed;   // under the weight prefix
  const char* mixer;   // both token mixers, under the layer's prefix
  const char* ffn;     // the dense MLP and the MoE block
  const char* o_proj;  // both mixers' output projection
  const char* router_bias;
  std::array<const char*, 3> expert;  // an expert's gate, up and down projections
};

HybridNames names_of(const ModelConfig& c) {
  if (c.arch == Arch::kKimiLinear) {
    return {"embed_tokens.weight",
            "self_attn.",
            "block_sparse_moe.",
            "o_proj.weight",
            "gate.e_score_correction_bias",
            {"w1.weight", "w3.weight", "w2.weight"}};
  }
  return {"word_embeddings.weight",
          "attention.",
          "mlp.",
          "dense.weight",
          "gate.expert_bias",
          {"gate_proj.weight", "up_proj.weight", "down_proj.weight"}};
}

bool low_rank_gates(const ModelConfig& c) { return c.arch == Arch::kKimiLinear; }

// Kimi keeps A_log as [1, 1, H, 1] (broadcast over [B, T, H, K]); Ling as [H].
Shape a_log_shape(const ModelConfig& c) {
  const int64_t H = c.la_key_heads;
  return c.arch == Arch::kKimiLinear ? Shape{1, 1, H, 1} : Shape{H};
}

}  // namespace

std::string hybrid_embedding_name(const ModelConfig& c) {
  return c.weight_prefix + names_of(c).embed;
}

std::vector<ExpectedTensor> kda_hybrid_weight_table(const ModelConfig& c,
                                                    const WeightStore& store) {
  const HybridNames n = names_of(c);
  std::vector<ExpectedTensor> t;
  const auto add = [&](std::string name, Shape shape) {
    t.push_back({std::move(name), std::move(shape)});
  };
  const int64_t hidden = c.hidden, H = c.la_key_heads, K = c.la_key_dim, HK = H * K;
  const MlaShape& m = c.mla;
  const int64_t Hq = c.attn_heads;
  const std::string& P = c.weight_prefix;
  add(P + "norm.weight", {hidden});
  add(P + n.embed, {c.vocab, hidden});
  if (!c.tie_embeddings || store.find("lm_head.weight") != nullptr)
    add("lm_head.weight", {c.vocab, hidden});
  const auto mlp = [&](const std::string& p, int64_t inter, const std::array<const char*, 3>& e) {
    add(p + e[0], {inter, hidden});
    add(p + e[1], {inter, hidden});
    add(p + e[2], {hidden, inter});
  };
  const std::array<const char*, 3> plain = {"gate_proj.weight", "up_proj.weight",
                                            "down_proj.weight"};
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = fmt::format("{}layers.{}.", P, i), a = p + n.mixer;
    add(p + "input_layernorm.weight", {hidden});
    add(p + "post_attention_layernorm.weight", {hidden});
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      for (const char* x : {"q", "k", "v"}) {
        add(fmt::format("{}{}_proj.weight", a, x), {HK, hidden});
        add(fmt::format("{}{}_conv1d.weight", a, x), {HK, 1, c.conv_kernel});
      }
      if (low_rank_gates(c)) {
        for (const char* x : {"f", "g"}) {
          add(fmt::format("{}{}_a_proj.weight", a, x), {K, hidden});
          add(fmt::format("{}{}_b_proj.weight", a, x), {HK, K});
        }
      } else {
        add(a + "f_proj.weight", {HK, hidden});
        add(a + "g_proj.weight", {HK, hidden});
      }
      add(a + "b_proj.weight", {H, hidden});
      add(a + "A_log", a_log_shape(c));
      add(a + "dt_bias", {HK});
      add(a + "o_norm.weight", {K});
      add(a + n.o_proj, {hidden, HK});
    } else {
      if (m.q_lora_rank > 0) {
        add(a + "q_a_proj.weight", {m.q_lora_rank, hidden});
        add(a + "q_a_layernorm.weight", {m.q_lora_rank});
        add(a + "q_b_proj.weight", {Hq * m.qk_dim(), m.q_lora_rank});
      } else {
        add(a + "q_proj.weight", {Hq * m.qk_dim(), hidden});
      }
      add(a + "kv_a_proj_with_mqa.weight", {m.kv_lora_rank + m.qk_rope_dim, hidden});
      add(a + "kv_a_layernorm.weight", {m.kv_lora_rank});
      add(a + "kv_b_proj.weight", {Hq * (m.qk_nope_dim + m.v_dim), m.kv_lora_rank});
      add(a + n.o_proj, {hidden, Hq * m.v_dim});
      if (c.arch == Arch::kLing) add(a + "g_proj.weight", {Hq, hidden});
    }
    const std::string f = p + n.ffn;
    if (!c.layer_has_moe(i)) {
      mlp(f, c.intermediate, plain);
      continue;
    }
    add(f + "gate.weight", {c.num_experts, hidden});
    add(f + n.router_bias, {c.num_experts});
    for (int e = 0; e < c.num_experts; ++e)
      mlp(fmt::format("{}experts.{}.", f, e), c.moe_intermediate, n.expert);
    if (c.shared_expert_intermediate > 0)
      mlp(f + "shared_experts.", c.shared_expert_intermediate, plain);
  }
  return t;
}

Status Converter::kda(const std::string& p, KdaWeights* w) {
  const int hidden = c_.hidden, H = c_.la_key_heads, K = c_.la_key_dim, HK = H * K;
  HANPU_RETURN_IF_ERROR(linear(p + "q_proj.weight", HK, hidden, &w->q));
  HANPU_RETURN_IF_ERROR(linear(p + "k_proj.weight", HK, hidden, &w->k));
  HANPU_RETURN_IF_ERROR(linear(p + "v_proj.weight", HK, hidden, &w->v));
  int first = 0;
  for (const char* x : {"q", "k", "v"}) {
    HANPU_RETURN_IF_ERROR(
        conv(fmt::format("{}{}_conv1d.weight", p, x), HK, first, 3 * HK, &w->conv));
    first += HK;
  }
  if (low_rank_gates(c_)) {
    HANPU_RETURN_IF_ERROR(linear(p + "f_a_proj.weight", K, hidden, &w->f_a));
    HANPU_RETURN_IF_ERROR(linear(p + "f_b_proj.weight", HK, K, &w->f_b));
    HANPU_RETURN_IF_ERROR(linear(p + "g_a_proj.weight", K, hidden, &w->g_a));
    HANPU_RETURN_IF_ERROR(linear(p + "g_b_proj.weight", HK, K, &w->g_b));
  } else {
    HANPU_RETURN_IF_ERROR(linear(p + "f_proj.weight", HK, hidden, &w->f_a));
    HANPU_RETURN_IF_ERROR(linear(p + "g_proj.weight", HK, hidden, &w->g_a));
  }
  HANPU_RETURN_IF_ERROR(linear(p + "b_proj.weight", H, hidden, &w->b));
  HANPU_RETURN_IF_ERROR(f32(p + "A_log", a_log_shape(c_), &w->a_rate));
  for (float& a : w->a_rate) a = std::exp(a);
  HANPU_RETURN_IF_ERROR(f32(p + "dt_bias", {HK}, &w->dt_bias));
  HANPU_RETURN_IF_ERROR(f32(p + "o_norm.weight", {K}, &w->o_norm));
  w->gate_lower_bound = c_.kda_gate_lower_bound;
  return linear(p + names_of(c_).o_proj, hidden, HK, &w->out);
}

Status Converter::mla(const std::string& p, MlaWeights* w) {
  const MlaShape& m = c_.mla;
  const int hidden = c_.hidden, Hq = c_.attn_heads;
  if (m.q_lora_rank > 0) {
    HANPU_RETURN_IF_ERROR(linear(p + "q_a_proj.weight", m.q_lora_rank, hidden, &w->q));
    HANPU_RETURN_IF_ERROR(plain_norm(p + "q_a_layernorm.weight", m.q_lora_rank, &w->q_a_norm));
    HANPU_RETURN_IF_ERROR(linear(p + "q_b_proj.weight", Hq * m.qk_dim(), m.q_lora_rank, &w->q_b));
  } else {
    HANPU_RETURN_IF_ERROR(linear(p + "q_proj.weight", Hq * m.qk_dim(), hidden, &w->q));
  }
  HANPU_RETURN_IF_ERROR(
      linear(p + "kv_a_proj_with_mqa.weight", m.kv_lora_rank + m.qk_rope_dim, hidden, &w->kv_a));
  HANPU_RETURN_IF_ERROR(plain_norm(p + "kv_a_layernorm.weight", m.kv_lora_rank, &w->kv_a_norm));
  const int N = m.qk_nope_dim, Dv = m.v_dim, C = m.kv_lora_rank;
  std::vector<float> kv_b;  // [H (N + Dv), C]
  HANPU_RETURN_IF_ERROR(f32(p + "kv_b_proj.weight", {Hq * (N + Dv), C}, &kv_b));
  pack_mla_up_projection(c_, kv_b, dt_, quantize_, w);
  if (c_.arch == Arch::kLing)
    HANPU_RETURN_IF_ERROR(linear(p + "g_proj.weight", Hq, hidden, &w->gate));
  return linear(p + names_of(c_).o_proj, hidden, Hq * m.v_dim, &w->o);
}

void pack_mla_up_projection(const ModelConfig& c, const std::vector<float>& kv_b, DType dtype,
                            std::optional<QuantType> quantize, MlaWeights* w, bool pack_uk,
                            bool pack_uv) {
  const MlaShape& m = c.mla;
  const int H = c.attn_heads, N = m.qk_nope_dim, Dv = m.v_dim, C = m.kv_lora_rank;
  w->kv_b = pack_rows(kv_b.data(), C, iota_rows(H * (N + Dv)), dtype, quantize);
  w->uk.resize(H);
  w->uv.resize(H);
  std::vector<float> uk_t(static_cast<size_t>(C) * N);  // [C, N]: W_uk[h] transposed
  for (int h = 0; h < H; ++h) {
    const float* head = kv_b.data() + static_cast<size_t>(h) * (N + Dv) * C;
    if (pack_uk) {
      for (int n = 0; n < N; ++n) {
        for (int j = 0; j < C; ++j) uk_t[static_cast<size_t>(j) * N + n] = head[n * C + j];
      }
      w->uk[h] = pack_rows(uk_t.data(), N, iota_rows(C), dtype, quantize);
    }
    if (pack_uv)
      w->uv[h] = pack_rows(kv_b.data(), C, iota_rows(Dv, h * (N + Dv) + N), dtype, quantize);
  }
}

Status Converter::grouped_moe(const std::string& p, MoeWeights* m) {
  const HybridNames n = names_of(c_);
  const int E = c_.num_experts;
  HANPU_RETURN_IF_ERROR(linear(p + "gate.weight", E, c_.hidden, &m->router));
  HANPU_RETURN_IF_ERROR(f32(p + n.router_bias, {E}, &m->router_bias));
  m->experts.resize(E);
  for (int e = 0; e < E; ++e) {
    HANPU_RETURN_IF_ERROR(
        mlp(fmt::format("{}experts.{}.", p, e), c_.moe_intermediate, &m->experts[e], n.expert));
  }
  if (c_.shared_expert_intermediate > 0)
    HANPU_RETURN_IF_ERROR(mlp(p + "shared_experts.", c_.shared_expert_intermediate, &m->shared));
  return Status::Ok();
}

Status convert_kda_hybrid_layer(Converter& cv, int i, LayerWeights* l) {
  const ModelConfig& c = cv.config();
  const HybridNames n = names_of(c);
  const std::string p = fmt::format("{}layers.{}.", c.weight_prefix, i);
  l->kind = c.layer_kinds[i];
  // Plain RMSNorm weights (KimiLinearRMSNorm): held zero-centred as the stack applies them.
  HANPU_RETURN_IF_ERROR(cv.plain_norm(p + "input_layernorm.weight", c.hidden, &l->input_norm));
  HANPU_RETURN_IF_ERROR(
      cv.plain_norm(p + "post_attention_layernorm.weight", c.hidden, &l->post_norm));
  if (l->kind == LayerKind::kLinearAttention) {
    HANPU_RETURN_IF_ERROR(cv.kda(p + n.mixer, &l->kda));
  } else {
    HANPU_RETURN_IF_ERROR(cv.mla(p + n.mixer, &l->mla));
  }
  l->moe = c.layer_has_moe(i);
  if (!l->moe) return cv.mlp(p + n.ffn, c.intermediate, &l->mlp);
  HANPU_RETURN_IF_ERROR(cv.grouped_moe(p + n.ffn, &l->moe_w));
  const auto limit = [&](const std::vector<float>& v) {
    return i < static_cast<int>(v.size()) ? v[i] : 0.0f;
  };
  l->moe_w.expert_limit = limit(c.expert_swiglu_limit);
  l->moe_w.shared_limit = limit(c.shared_swiglu_limit);
  return Status::Ok();
}

}  // namespace hanpu::model
