// Kimi Linear GGUF metadata (see gguf_kda_config.h). The converter's choices undone here:
// head_count_kv is one per layer, 0 for a KDA layer (llama.cpp's recurrent-layer mark) and 1
// for an MLA layer (run as MQA over the latent); key_length is the latent row C + R, the
// query/key head dim is key_length_mla and the value head value_length_mla; the KDA heads are
// the attention heads (llama.cpp takes n_head for both).
#include "model/gguf_kda_config.h"

#include <fmt/format.h>

namespace hanpu::model {

namespace {

// llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID: both KDA hybrids route with sigmoid scores.
constexpr int kGatingSigmoid = 2;

}  // namespace

Status kimi_linear_gguf_fields(const GgufFields& f, ModelConfig* c) {
  const std::string& file = f.file();
  HANPU_RETURN_IF_ERROR(f.count("block_count", true, 0, &c->layers));
  if (c->layers > kMaxLayers) {  // checked before the per-layer lists are built from it
    return Status::Error(fmt::format("{}: metadata '{}' = {} is more than {}", file,
                                     f.name("block_count"), c->layers, kMaxLayers));
  }
  HANPU_RETURN_IF_ERROR(f.count("embedding_length", true, 0, &c->hidden));
  HANPU_RETURN_IF_ERROR(f.count("context_length", false, 0, &c->max_positions));
  HANPU_RETURN_IF_ERROR(f.count("attention.head_count", true, 0, &c->attn_heads));
  std::vector<int> kv_heads;
  HANPU_RETURN_IF_ERROR(f.per_layer("attention.head_count_kv", c->layers, true, 0, &kv_heads));
  c->layer_kinds.clear();
  for (int h : kv_heads) {
    c->layer_kinds.push_back(h == 0 ? LayerKind::kLinearAttention : LayerKind::kFullAttention);
  }
  c->kv_heads = c->attn_heads;  // MLA up-projects keys and values for every head
  double eps = 1e-5;
  HANPU_RETURN_IF_ERROR(f.number("attention.layer_norm_rms_epsilon", 1e-5, &eps));
  c->rms_eps = static_cast<float>(eps);
  // KDA.
  int kda_dim = 0;
  HANPU_RETURN_IF_ERROR(f.count("kda.head_dim", true, 0, &kda_dim));
  HANPU_RETURN_IF_ERROR(f.count("ssm.conv_kernel", true, 0, &c->conv_kernel));
  c->la_key_heads = c->la_value_heads = c->attn_heads;
  c->la_key_dim = c->la_value_dim = kda_dim;
  // MLA (Kimi Linear's applies no position encoding: the rope dims are used as they are).
  MlaShape& m = c->mla;
  int key_dim = 0;
  HANPU_RETURN_IF_ERROR(f.count("attention.q_lora_rank", false, 0, &m.q_lora_rank));
  HANPU_RETURN_IF_ERROR(f.count("attention.kv_lora_rank", true, 0, &m.kv_lora_rank));
  HANPU_RETURN_IF_ERROR(f.count("rope.dimension_count", true, 0, &m.qk_rope_dim));
  HANPU_RETURN_IF_ERROR(f.count("attention.key_length_mla", true, 0, &key_dim));
  HANPU_RETURN_IF_ERROR(f.count("attention.value_length_mla", true, 0, &m.v_dim));
  if (key_dim < m.qk_rope_dim) {
    return Status::Error(fmt::format("{}: metadata '{}' = {} is less than '{}' = {}", file,
                                     f.name("attention.key_length_mla"), key_dim,
                                     f.name("rope.dimension_count"), m.qk_rope_dim));
  }
  m.qk_nope_dim = key_dim - m.qk_rope_dim;
  m.rope = false;
  c->head_dim = m.qk_dim();
  // MoE.
  HANPU_RETURN_IF_ERROR(f.count("feed_forward_length", false, 0, &c->intermediate));
  HANPU_RETURN_IF_ERROR(f.count("expert_count", false, 0, &c->num_experts));
  const bool moe = c->num_experts > 0;
  HANPU_RETURN_IF_ERROR(f.count("expert_used_count", moe, 0, &c->experts_per_token));
  std::vector<int> expert_rows;
  HANPU_RETURN_IF_ERROR(f.per_layer("expert_feed_forward_length", c->layers, moe, 0, &expert_rows));
  int dense = 0;
  HANPU_RETURN_IF_ERROR(f.count("leading_dense_block_count", false, 0, &dense));
  if (dense > c->layers) {
    return Status::Error(fmt::format("{}: metadata '{}' = {} is more than the {} layers", file,
                                     f.name("leading_dense_block_count"), dense, c->layers));
  }
  c->mlp_only_layers.clear();
  for (int i = 0; i < (moe ? dense : c->layers); ++i) c->mlp_only_layers.push_back(i);
  // One expert size for every sparse layer (a list may hold anything for the dense ones).
  c->moe_intermediate = 0;
  for (int i = dense; moe && i < c->layers; ++i) {
    if (c->moe_intermediate != 0 && expert_rows[i] != c->moe_intermediate) {
      return Status::Error(fmt::format("{}: metadata '{}' differs between sparse layers ({}, {})",
                                       file, f.name("expert_feed_forward_length"),
                                       c->moe_intermediate, expert_rows[i]));
    }
    c->moe_intermediate = expert_rows[i];
  }
  GroupedRouter& r = c->router;
  HANPU_RETURN_IF_ERROR(f.count("expert_shared_count", false, 0, &r.shared_experts));
  c->shared_expert_intermediate = c->moe_intermediate * r.shared_experts;
  HANPU_RETURN_IF_ERROR(f.count("expert_group_count", false, 1, &r.groups));
  HANPU_RETURN_IF_ERROR(f.count("expert_group_used_count", false, 1, &r.topk_groups));
  double scale = 1.0;
  HANPU_RETURN_IF_ERROR(f.number("expert_weights_scale", 1.0, &scale));
  r.routed_scaling = static_cast<float>(scale);
  // llama.cpp renormalises Kimi Linear's chosen weights unconditionally.
  HANPU_RETURN_IF_ERROR(f.flag("expert_weights_norm", true, &c->norm_topk_prob));
  int gating = kGatingSigmoid;
  HANPU_RETURN_IF_ERROR(f.count("expert_gating_func", false, kGatingSigmoid, &gating));
  if (moe && gating != kGatingSigmoid) {
    return Status::Error(fmt::format(
        "{}: metadata '{}' = {} is not supported (2, sigmoid, as the model's code routes)", file,
        f.name("expert_gating_func"), gating));
  }
  return Status::Ok();
}

}  // namespace hanpu::model
