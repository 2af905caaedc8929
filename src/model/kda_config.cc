// KDA hybrid configs (see kda_config.h).
#include "model/kda_config.h"

#include <cmath>
#include <initializer_list>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "hanpu/attn.h"
#include "model/json_fields.h"

namespace hanpu::model {

using nlohmann::json;

namespace {

// The first of `keys` the config has (a field written under its checkpoint's name or under
// transformers' attribute name), else the fallback; missing and required is an error naming
// the first key.
template <class T>
T get_any(Reader& r, std::initializer_list<const char*> keys, T fallback, bool required) {
  for (const char* k : keys) {
    if (r.j.contains(k) && !r.j[k].is_null()) return r.get<T>(k, fallback, false);
  }
  if (required && r.st.ok())
    r.st = Status::Error(fmt::format("{}: missing \"{}\"", r.source, *keys.begin()));
  return fallback;
}

// A per-layer list of non-negative floats (Ling's SwiGLU limits), or empty when absent.
Status read_limits(const json& root, std::initializer_list<const char*> keys, int layers,
                   const std::string& source, std::vector<float>* out) {
  for (const char* k : keys) {
    if (!root.contains(k) || root[k].is_null()) continue;
    const json& v = root[k];
    if (!v.is_array() || v.size() != static_cast<size_t>(layers)) {
      return Status::Error(fmt::format("{}: \"{}\" is {}, not a list of {} numbers (one a layer)",
                                       source, k, json_excerpt(v), layers));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      const double d = v[i].is_number() ? v[i].get<double>() : -1.0;
      if (!(d >= 0.0 && d < 1e30)) {
        return Status::Error(fmt::format("{}: {}[{}] is {}, not a limit (0: none, else positive)",
                                         source, k, i, json_excerpt(v[i])));
      }
      out->push_back(static_cast<float>(d));
    }
    return Status::Ok();
  }
  return Status::Ok();
}

// Layer kinds from layer_types, else Kimi's linear_attn_config lists (1-based), else each
// model's default pattern.
Status read_layer_kinds(const json& root, const json& lin, const std::string& source,
                        ModelConfig* c) {
  c->layer_kinds.assign(c->layers, LayerKind::kLinearAttention);
  if (root.contains("layer_types") && root["layer_types"].is_array()) {
    const json& lt = root["layer_types"];
    if (lt.size() != static_cast<size_t>(c->layers)) {
      return Status::Error(fmt::format("{}: layer_types has {} entries for {} layers", source,
                                       lt.size(), c->layers));
    }
    for (size_t i = 0; i < lt.size(); ++i) {
      const std::string t = lt[i].is_string() ? lt[i].get<std::string>() : json_excerpt(lt[i]);
      if (t == "full_attention") {
        c->layer_kinds[i] = LayerKind::kFullAttention;
      } else if (t != "linear_attention") {
        return Status::Error(fmt::format("{}: layer_types[{}] is \"{}\"", source, i, t));
      }
    }
    return Status::Ok();
  }
  if (lin.is_object() && lin.contains("full_attn_layers")) {
    const json& full = lin["full_attn_layers"];
    if (!full.is_array()) {
      return Status::Error(fmt::format("{}: linear_attn_config.full_attn_layers is {}, not a list",
                                       source, json_excerpt(full)));
    }
    for (const json& e : full) {
      const int64_t l = e.is_number_integer() ? e.get<int64_t>() : 0;
      if (l < 1 || l > c->layers) {
        return Status::Error(
            fmt::format("{}: linear_attn_config.full_attn_layers holds {}, not a layer in 1..{}",
                        source, json_excerpt(e), c->layers));
      }
      c->layer_kinds[l - 1] = LayerKind::kFullAttention;
    }
    return Status::Ok();
  }
  Reader r{root, source, Status::Ok()};
  const int group = r.get<int>("layer_group_size", 6, false);
  HANPU_RETURN_IF_ERROR(r.st);
  if (group <= 0)
    return Status::Error(fmt::format("{}: layer_group_size {} must be positive", source, group));
  for (int i = 0; i < c->layers; ++i) {
    const bool full = c->arch == Arch::kLing ? (i + 1) % group == 0 : i > 0 && i % 4 == 0;
    if (full) c->layer_kinds[i] = LayerKind::kFullAttention;
  }
  return Status::Ok();
}

// MoE layers from mlp_layer_types ("dense" / "sparse"), else the first first_k_dense_replace
// layers dense: kept as mlp_only_layers with every other layer sparse.
Status read_mlp_layers(const json& root, const std::string& source, ModelConfig* c) {
  c->decoder_sparse_step = 1;
  c->mlp_only_layers.clear();
  if (root.contains("mlp_layer_types") && root["mlp_layer_types"].is_array()) {
    const json& mt = root["mlp_layer_types"];
    if (mt.size() != static_cast<size_t>(c->layers)) {
      return Status::Error(fmt::format("{}: mlp_layer_types has {} entries for {} layers", source,
                                       mt.size(), c->layers));
    }
    for (size_t i = 0; i < mt.size(); ++i) {
      const std::string t = mt[i].is_string() ? mt[i].get<std::string>() : json_excerpt(mt[i]);
      if (t == "dense") {
        c->mlp_only_layers.push_back(static_cast<int>(i));
      } else if (t != "sparse") {
        return Status::Error(fmt::format("{}: mlp_layer_types[{}] is \"{}\"", source, i, t));
      }
    }
    return Status::Ok();
  }
  Reader r{root, source, Status::Ok()};
  const int dense = r.get<int>("first_k_dense_replace", c->arch == Arch::kLing ? 2 : 1, false);
  HANPU_RETURN_IF_ERROR(r.st);
  if (dense < 0 || dense > c->layers) {
    return Status::Error(
        fmt::format("{}: first_k_dense_replace {} is not in [0, {}]", source, dense, c->layers));
  }
  for (int i = 0; i < dense; ++i) c->mlp_only_layers.push_back(i);
  return Status::Ok();
}

}  // namespace

Status parse_kda_hybrid_config(const json& root, const std::string& source, ModelConfig* c) {
  const bool ling = c->arch == Arch::kLing;
  static const json kNone;
  const json& lin = root.contains("linear_attn_config") ? root["linear_attn_config"] : kNone;
  Reader r{root, source, Status::Ok()};
  c->vocab = r.get<int>("vocab_size", 0, true);
  c->hidden = r.get<int>("hidden_size", 0, true);
  c->intermediate = r.get<int>("intermediate_size", 0, true);
  c->layers = r.get<int>("num_hidden_layers", 0, true);
  c->rms_eps = r.get<float>("rms_norm_eps", ling ? 1e-6f : 1e-5f, false);
  c->tie_embeddings = r.get<bool>("tie_word_embeddings", false, false);
  c->attn_heads = r.get<int>("num_attention_heads", 0, true);
  c->kv_heads = r.get<int>("num_key_value_heads", c->attn_heads, false);
  c->max_positions = get_any<int>(r, {"model_max_length", "max_position_embeddings"}, 0, false);
  // MLA.
  MlaShape& m = c->mla;
  m.q_lora_rank = r.get<int>("q_lora_rank", 0, false);  // null: full rank
  m.kv_lora_rank = r.get<int>("kv_lora_rank", 0, true);
  m.qk_nope_dim = r.get<int>("qk_nope_head_dim", 0, true);
  m.qk_rope_dim = r.get<int>("qk_rope_head_dim", 0, true);
  m.v_dim = r.get<int>("v_head_dim", 0, true);
  m.rope = ling;
  c->head_dim = m.qk_dim();
  c->rope_theta = r.get<double>("rope_theta", ling ? 6e6 : 10000.0, false);
  if (root.contains("rope_parameters") && root["rope_parameters"].is_object()) {
    Reader rp{root["rope_parameters"], source, Status::Ok()};
    const std::string type = rp.get<std::string>("rope_type", "default", false);
    if (type != "default") {
      return Status::Error(
          fmt::format("{}: rope_type \"{}\" is not supported (default only)", source, type));
    }
    c->rope_theta = rp.get<double>("rope_theta", c->rope_theta, false);
    HANPU_RETURN_IF_ERROR(rp.st);
  }
  // KDA: Kimi's heads and dims sit in linear_attn_config in its own checkpoints; Ling's are its
  // attention heads and head_dim unless transformers wrote linear_* beside them.
  Reader rl{lin.is_object() ? lin : root, source, Status::Ok()};
  const int heads = lin.is_object()
                        ? rl.get<int>("num_heads", 0, true)
                        : get_any<int>(r, {"linear_num_heads"}, ling ? c->attn_heads : 0, !ling);
  const int dim = lin.is_object() ? rl.get<int>("head_dim", 0, true)
                                  : get_any<int>(r, {"linear_head_dim", "head_dim"}, 0, true);
  c->conv_kernel =
      lin.is_object()
          ? rl.get<int>("short_conv_kernel_size", 4, false)
          : get_any<int>(r, {"linear_conv_kernel_dim", "short_conv_kernel_size"}, 4, false);
  HANPU_RETURN_IF_ERROR(rl.st);
  c->la_key_heads = c->la_value_heads = heads;
  c->la_key_dim = c->la_value_dim = dim;
  if (ling && r.get<bool>("kda_safe_gate", true, false))
    c->kda_gate_lower_bound = r.get<float>("kda_lower_bound", -5.0f, false);
  // MoE.
  c->num_experts =
      get_any<int>(r, {"num_experts", "num_local_experts", "n_routed_experts"}, 0, false);
  c->experts_per_token =
      get_any<int>(r, {"num_experts_per_token", "num_experts_per_tok"}, 0, c->num_experts > 0);
  c->moe_intermediate = r.get<int>("moe_intermediate_size", 0, c->num_experts > 0);
  c->norm_topk_prob = get_any<bool>(r, {"moe_renormalize", "norm_topk_prob"}, true, false);
  c->router.groups = get_any<int>(r, {"num_expert_group", "n_group"}, 1, false);
  c->router.topk_groups = r.get<int>("topk_group", 1, false);
  c->router.routed_scaling = r.get<float>("routed_scaling_factor", 1.0f, false);
  c->router.shared_experts = get_any<int>(r, {"num_shared_experts", "n_shared_experts"}, 0, false);
  c->shared_expert_intermediate = c->moe_intermediate * c->router.shared_experts;
  const std::string act = r.get<std::string>("moe_router_activation_func", "sigmoid", false);
  HANPU_RETURN_IF_ERROR(r.st);
  if (act != "sigmoid") {
    return Status::Error(fmt::format(
        "{}: moe_router_activation_func \"{}\" is not supported (sigmoid, as both models' code)",
        source, act));
  }
  if (c->layers < 0 || c->layers > kMaxLayers) {  // checked before lists are sized from it
    return Status::Error(
        fmt::format("{}: num_hidden_layers {} is not in [0, {}]", source, c->layers, kMaxLayers));
  }
  HANPU_RETURN_IF_ERROR(read_layer_kinds(root, lin, source, c));
  HANPU_RETURN_IF_ERROR(read_mlp_layers(root, source, c));
  HANPU_RETURN_IF_ERROR(read_limits(root, {"expert_swiglu_limit_list", "swiglu_limits"}, c->layers,
                                    source, &c->expert_swiglu_limit));
  HANPU_RETURN_IF_ERROR(read_limits(root,
                                    {"share_expert_swiglu_limit_list", "swiglu_limits_shared"},
                                    c->layers, source, &c->shared_swiglu_limit));
  append_token_ids(root.value("eos_token_id", json()), c->vocab, &c->eos_token_ids);
  return Status::Ok();
}

Status validate_kda_hybrid(const ModelConfig& c, const std::string& source) {
  const auto in_range = [&](const char* name, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi)
      return Status::Error(fmt::format("{}: {} is {}, not in [{}, {}]", source, name, v, lo, hi));
    return Status::Ok();
  };
  const MlaShape& m = c.mla;
  for (auto [name, v, lo, hi] :
       {std::tuple{"q_lora_rank", m.q_lora_rank, 0, kMaxProjectionRows},
        {"kv_lora_rank", m.kv_lora_rank, 1, kMaxProjectionRows},
        {"qk_nope_head_dim", m.qk_nope_dim, 0, kMaxHeadDim},
        {"qk_rope_head_dim", m.qk_rope_dim, 0, kMaxHeadDim},
        {"qk_nope_head_dim + qk_rope_head_dim", m.qk_dim(), 1, kMaxHeadDim},
        {"v_head_dim", m.v_dim, 1, kMaxHeadDim},
        {"linear head count", c.la_key_heads, 1, kMaxHeads},
        {"linear head_dim", c.la_key_dim, 1, kMaxHeadDim},
        {"moe_intermediate_size", c.moe_intermediate, c.num_experts > 0 ? 1 : 0,
         kMaxProjectionRows},
        {"num_shared_experts", c.router.shared_experts, 0, 64}}) {
    HANPU_RETURN_IF_ERROR(in_range(name, v, lo, hi));
  }
  const int64_t Hq = c.attn_heads;
  for (auto [name, v] :
       {std::pair{"num_attention_heads x (qk_nope_head_dim + qk_rope_head_dim)", Hq * m.qk_dim()},
        {"num_attention_heads x (qk_nope_head_dim + v_head_dim)", Hq * (m.qk_nope_dim + m.v_dim)},
        {"linear heads x head_dim", int64_t{c.la_key_heads} * c.la_key_dim},
        {"shared expert rows", int64_t{c.moe_intermediate} * c.router.shared_experts}}) {
    HANPU_RETURN_IF_ERROR(in_range(name, v, 0, kMaxProjectionRows));
  }
  if (m.rope && (m.qk_rope_dim < 2 || m.qk_rope_dim % 2 != 0)) {
    return Status::Error(fmt::format(
        "{}: qk_rope_head_dim {} must be even and at least 2 (its dims rotate in pairs)", source,
        m.qk_rope_dim));
  }
  // The attention kernel's head dims (hanpu/attn.h), each rounded up to 16 as MLA runs them
  // (mla_layer.h): absorbed decode's cached rows of C + R, decompressed keys and values.
  for (auto [name, d] :
       {std::pair{"kv_lora_rank + qk_rope_head_dim", int64_t{m.kv_lora_rank} + m.qk_rope_dim},
        {"qk_nope_head_dim + qk_rope_head_dim", int64_t{m.qk_dim()}},
        {"v_head_dim", int64_t{m.v_dim}}}) {
    if ((d + 15) / 16 * 16 > kAttnMaxHeadDim) {
      return Status::Error(
          fmt::format("{}: {} is {}: MLA's attention takes head dims up to {} (multiples of 16)",
                      source, name, d, kAttnMaxHeadDim));
    }
  }
  if (c.kv_heads != c.attn_heads) {
    return Status::Error(fmt::format(
        "{}: num_key_value_heads {} differs from num_attention_heads {}: MLA up-projects keys and "
        "values for every head",
        source, c.kv_heads, c.attn_heads));
  }
  if (!std::isnan(c.kda_gate_lower_bound) &&
      !(std::isfinite(c.kda_gate_lower_bound) && c.kda_gate_lower_bound < 0.0f)) {
    return Status::Error(fmt::format("{}: kda_lower_bound {} must be finite and negative", source,
                                     c.kda_gate_lower_bound));
  }
  if (c.num_experts > 0) {
    const GroupedRouter& g = c.router;
    if (g.groups < 1 || c.num_experts % g.groups != 0) {
      return Status::Error(fmt::format("{}: num_expert_group {} does not divide num_experts {}",
                                       source, g.groups, c.num_experts));
    }
    const int per_group = c.num_experts / g.groups;
    if (per_group < 2) {
      return Status::Error(fmt::format(
          "{}: num_expert_group {} leaves {} expert a group; the router scores a group by its "
          "best two",
          source, g.groups, per_group));
    }
    if (g.topk_groups < 1 || g.topk_groups > g.groups) {
      return Status::Error(fmt::format("{}: topk_group {} is not in [1, num_expert_group {}]",
                                       source, g.topk_groups, g.groups));
    }
    if (c.experts_per_token > g.topk_groups * per_group) {
      return Status::Error(fmt::format(
          "{}: num_experts_per_token {} is more than the {} experts of topk_group {} groups",
          source, c.experts_per_token, g.topk_groups * per_group, g.topk_groups));
    }
    if (!(std::isfinite(g.routed_scaling) && g.routed_scaling > 0.0f)) {
      return Status::Error(fmt::format("{}: routed_scaling_factor {} must be finite and positive",
                                       source, g.routed_scaling));
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::model
