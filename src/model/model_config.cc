// config.json parsing and validation (see model_config.h).
#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"
#include "model/json_fields.h"
#include "model/kda_config.h"

namespace hanpu::model {

using nlohmann::json;

int ModelConfig::rotary_dims() const {
  const int d = static_cast<int>(head_dim * partial_rotary);
  return d - d % 2;
}

bool ModelConfig::layer_has_moe(int layer) const {
  if (num_experts <= 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end())
    return false;
  return (layer + 1) % decoder_sparse_step == 0;
}

namespace {

Status parse_config_fields(const std::string& json_text, const std::string& source,
                           ModelConfig* out) {
  json root;
  HANPU_RETURN_IF_ERROR(parse_json(json_text, source, &root));
  if (!root.is_object()) return Status::Error(fmt::format("{}: not a JSON object", source));
  ModelConfig c;
  if (root.contains("model_type") && !root["model_type"].is_string()) {
    return Status::Error(fmt::format("{}: \"model_type\" is {}, not a string", source,
                                     json_excerpt(root["model_type"])));
  }
  c.model_type = root.value("model_type", "");
  const json* text = &root;
  if (c.model_type == "qwen3_5") {
    if (!root.contains("text_config") || !root["text_config"].is_object()) {
      return Status::Error(
          fmt::format("{}: model_type qwen3_5 without a \"text_config\" object", source));
    }
    text = &root["text_config"];
    c.arch = Arch::kQwen35;
    c.weight_prefix = "model.language_model.";
  } else if (c.model_type == "qwen3_5_text") {
    c.arch = Arch::kQwen35;
  } else if (c.model_type == "qwen3_next") {
    c.arch = Arch::kQwen3Next;
  } else if (c.model_type == "kimi_linear" || c.model_type == "bailing_hybrid") {
    c.arch = c.model_type == "kimi_linear" ? Arch::kKimiLinear : Arch::kLing;
    HANPU_RETURN_IF_ERROR(parse_kda_hybrid_config(root, source, &c));
    HANPU_RETURN_IF_ERROR(validate_model_config(c, source));
    *out = std::move(c);
    return Status::Ok();
  } else {
    return Status::Error(
        fmt::format("{}: model_type \"{}\" is not supported (qwen3_5, qwen3_5_text, qwen3_next, "
                    "kimi_linear, bailing_hybrid)",
                    source, c.model_type));
  }
  Reader r{*text, source, Status::Ok()};
  c.vocab = r.get<int>("vocab_size", 0, true);
  c.hidden = r.get<int>("hidden_size", 0, true);
  c.intermediate = r.get<int>("intermediate_size", 0, true);
  c.layers = r.get<int>("num_hidden_layers", 0, true);
  c.rms_eps = r.get<float>("rms_norm_eps", 1e-6f, false);
  Reader top{root, source,
             Status::Ok()};  // some fields sit at the top level of an image-text config
  c.tie_embeddings =
      r.get<bool>("tie_word_embeddings", top.get<bool>("tie_word_embeddings", false, false), false);
  HANPU_RETURN_IF_ERROR(top.st);
  c.attn_heads = r.get<int>("num_attention_heads", 0, true);
  c.kv_heads = r.get<int>("num_key_value_heads", 0, true);
  c.head_dim = r.get<int>("head_dim", c.attn_heads > 0 ? c.hidden / c.attn_heads : 0, false);
  c.la_key_heads = r.get<int>("linear_num_key_heads", 0, true);
  c.la_value_heads = r.get<int>("linear_num_value_heads", 0, true);
  c.la_key_dim = r.get<int>("linear_key_head_dim", 0, true);
  c.la_value_dim = r.get<int>("linear_value_head_dim", 0, true);
  c.conv_kernel = r.get<int>("linear_conv_kernel_dim", 4, false);
  // RoPE: transformers 5 nests theta and the partial factor in rope_parameters; older
  // configs have them at the top level.
  c.rope_theta = r.get<double>("rope_theta", 10000.0, false);
  c.max_positions = r.get<int>("max_position_embeddings", 0, false);
  c.partial_rotary =
      r.get<float>("partial_rotary_factor", c.arch == Arch::kQwen35 ? 0.25f : 1.0f, false);
  if (text->contains("rope_parameters") && (*text)["rope_parameters"].is_object()) {
    Reader rp{(*text)["rope_parameters"], source, Status::Ok()};
    const std::string type = rp.get<std::string>("rope_type", "default", false);
    if (type != "default") {
      return Status::Error(
          fmt::format("{}: rope_type \"{}\" is not supported (default only)", source, type));
    }
    c.rope_theta = rp.get<double>("rope_theta", c.rope_theta, false);
    c.partial_rotary = rp.get<float>("partial_rotary_factor", c.partial_rotary, false);
    HANPU_RETURN_IF_ERROR(rp.st);
  }
  if (c.arch == Arch::kQwen3Next) {
    c.num_experts = r.get<int>("num_experts", 0, false);
    c.experts_per_token = r.get<int>("num_experts_per_tok", 0, c.num_experts > 0);
    c.moe_intermediate = r.get<int>("moe_intermediate_size", 0, c.num_experts > 0);
    c.shared_expert_intermediate = r.get<int>("shared_expert_intermediate_size", 0, false);
    c.decoder_sparse_step = r.get<int>("decoder_sparse_step", 1, false);
    c.norm_topk_prob = r.get<bool>("norm_topk_prob", true, false);
    c.mlp_only_layers = r.get<std::vector<int>>("mlp_only_layers", {}, false);
  }
  HANPU_RETURN_IF_ERROR(r.st);
  // eos may be an int or a list, at either level.
  append_token_ids(
      text->contains("eos_token_id") ? (*text)["eos_token_id"] : root.value("eos_token_id", json()),
      c.vocab, &c.eos_token_ids);

  if (c.layers > kMaxLayers) {  // checked before the layer list is built from it
    return Status::Error(
        fmt::format("{}: num_hidden_layers {} is more than {}", source, c.layers, kMaxLayers));
  }
  // Layer pattern: explicit layer_types, else every full_attention_interval-th layer is full.
  if (text->contains("layer_types") && (*text)["layer_types"].is_array()) {
    const json& lt = (*text)["layer_types"];
    if (lt.size() != static_cast<size_t>(c.layers)) {
      return Status::Error(
          fmt::format("{}: layer_types has {} entries for {} layers", source, lt.size(), c.layers));
    }
    for (size_t i = 0; i < lt.size(); ++i) {
      const std::string t = lt[i].is_string() ? lt[i].get<std::string>() : json_excerpt(lt[i]);
      if (t == "linear_attention")
        c.layer_kinds.push_back(LayerKind::kLinearAttention);
      else if (t == "full_attention")
        c.layer_kinds.push_back(LayerKind::kFullAttention);
      else
        return Status::Error(fmt::format("{}: layer_types[{}] is \"{}\"", source, i, t));
    }
  } else {
    Reader ri{*text, source, Status::Ok()};
    const int interval = ri.get<int>("full_attention_interval", 4, false);
    HANPU_RETURN_IF_ERROR(ri.st);
    if (interval <= 0)
      return Status::Error(fmt::format("{}: full_attention_interval must be positive", source));
    for (int i = 0; i < c.layers; ++i) {
      c.layer_kinds.push_back((i + 1) % interval == 0 ? LayerKind::kFullAttention
                                                      : LayerKind::kLinearAttention);
    }
  }
  HANPU_RETURN_IF_ERROR(validate_model_config(c, source));
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace

Status validate_model_config(const ModelConfig& c, const std::string& source) {
  const auto in_range = [&](const char* name, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi)
      return Status::Error(fmt::format("{}: {} is {}, not in [{}, {}]", source, name, v, lo, hi));
    return Status::Ok();
  };
  // The MoE fields first: layer_has_moe divides by decoder_sparse_step.
  if (c.num_experts < 0 || c.num_experts > kMaxExperts) {
    return Status::Error(
        fmt::format("{}: num_experts {} is not in [0, {}]", source, c.num_experts, kMaxExperts));
  }
  if (c.num_experts > 0 &&
      (c.experts_per_token <= 0 || c.experts_per_token > c.num_experts || c.moe_intermediate <= 0 ||
       c.moe_intermediate > kMaxProjectionRows || c.shared_expert_intermediate < 0 ||
       c.shared_expert_intermediate > kMaxProjectionRows || c.decoder_sparse_step <= 0)) {
    return Status::Error(
        fmt::format("{}: MoE fields inconsistent (num_experts {}, num_experts_per_tok {}, "
                    "moe_intermediate_size {}, shared_expert_intermediate_size {}, "
                    "decoder_sparse_step {})",
                    source, c.num_experts, c.experts_per_token, c.moe_intermediate,
                    c.shared_expert_intermediate, c.decoder_sparse_step));
  }
  const bool any_dense = [&] {
    for (int i = 0; i < c.layers; ++i) {
      if (!c.layer_has_moe(i)) return true;
    }
    return false;
  }();
  for (auto [name, v, hi] : {std::tuple{"layers", c.layers, kMaxLayers},
                             {"vocab_size", c.vocab, kMaxVocab},
                             {"hidden_size", c.hidden, kMaxHidden},
                             {"num_attention_heads", c.attn_heads, kMaxHeads},
                             {"num_key_value_heads", c.kv_heads, kMaxHeads},
                             {"head_dim", c.head_dim, kMaxHeadDim},
                             {"linear_num_key_heads", c.la_key_heads, kMaxHeads},
                             {"linear_num_value_heads", c.la_value_heads, kMaxHeads},
                             {"linear_key_head_dim", c.la_key_dim, kMaxHeadDim},
                             {"linear_value_head_dim", c.la_value_dim, kMaxHeadDim},
                             {"linear_conv_kernel_dim", c.conv_kernel, 64}}) {
    HANPU_RETURN_IF_ERROR(in_range(name, v, 1, hi));
  }
  HANPU_RETURN_IF_ERROR(
      in_range("intermediate_size", c.intermediate, any_dense ? 1 : 0, kMaxProjectionRows));
  HANPU_RETURN_IF_ERROR(
      in_range("max_position_embeddings", c.max_positions, 0, std::numeric_limits<int>::max()));
  for (int l : c.mlp_only_layers) {
    if (l < 0 || l >= c.layers)
      return Status::Error(fmt::format("{}: mlp_only_layers holds {}, not a layer", source, l));
  }
  if (c.layer_kinds.size() != static_cast<size_t>(c.layers)) {
    return Status::Error(
        fmt::format("{}: {} layer kinds for {} layers", source, c.layer_kinds.size(), c.layers));
  }
  if (!(std::isfinite(c.rms_eps) && c.rms_eps > 0.0f && c.rms_eps < 1.0f)) {
    return Status::Error(fmt::format("{}: rms_norm_eps {} must be in (0, 1)", source, c.rms_eps));
  }
  if (!(std::isfinite(c.rope_theta) && c.rope_theta > 0.0)) {
    return Status::Error(
        fmt::format("{}: rope_theta {} must be finite and positive", source, c.rope_theta));
  }
  if (c.kda_hybrid()) return validate_kda_hybrid(c, source);
  // Rows of the projections the model forms, in int64: none may pass kMaxProjectionRows.
  const int64_t Hq = c.attn_heads, Hkv = c.kv_heads, D = c.head_dim, H = c.la_key_heads,
                HV = c.la_value_heads;
  const int64_t K = c.la_key_dim, V = c.la_value_dim;
  for (auto [name, v] :
       {std::pair{"num_attention_heads x 2 x head_dim", Hq * 2 * D},
        {"num_key_value_heads x head_dim", Hkv * D},
        {"linear q|k|v channels (2 x key heads x key dim + value heads x value dim)",
         2 * H * K + HV * V},
        {"linear_num_value_heads x linear_value_head_dim", HV * V}}) {
    HANPU_RETURN_IF_ERROR(in_range(name, v, 1, kMaxProjectionRows));
  }
  if (c.attn_heads % c.kv_heads != 0) {
    return Status::Error(
        fmt::format("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                    source, c.attn_heads, c.kv_heads));
  }
  if (c.la_value_heads % c.la_key_heads != 0) {
    return Status::Error(
        fmt::format("{}: linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
                    source, c.la_value_heads, c.la_key_heads));
  }
  if (!(c.partial_rotary > 0.0f && c.partial_rotary <= 1.0f) || c.rotary_dims() < 2 ||
      c.rotary_dims() > c.head_dim) {
    return Status::Error(
        fmt::format("{}: rotary dims {} (partial_rotary_factor {}) must be even, at least 2 and at "
                    "most head_dim {}",
                    source, c.rotary_dims(), c.partial_rotary, c.head_dim));
  }
  return Status::Ok();
}

Status parse_model_config(const std::string& json_text, const std::string& source,
                          ModelConfig* out) {
  try {  // a field of the wrong JSON type throws from deep inside nlohmann's accessors
    return parse_config_fields(json_text, source, out);
  } catch (const nlohmann::json::exception& e) {
    return Status::Error(fmt::format("{}: a field has the wrong type: {}", source, e.what()));
  }
}

Status check_gguf_writable(const ModelConfig& c, const std::string& source) {
  if (c.arch != Arch::kLing) return Status::Ok();
  return Status::Error(fmt::format(
      "{}: a {} checkpoint runs from its safetensors, but has no GGUF form to write: llama.cpp "
      "has no converter or architecture for it (hanpu writes Qwen3.5, Qwen3-Next and Kimi "
      "Linear)",
      source, c.model_type));
}

Status load_model_config(const std::string& path, ModelConfig* out) {
  std::string text;
  HANPU_RETURN_IF_ERROR(read_regular_file(path, kMaxJsonFileBytes, "config.json", &text));
  return parse_model_config(text, path, out);
}

}  // namespace hanpu::model
