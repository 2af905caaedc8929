// A hybrid model's shape, read from a Hugging Face config.json: Qwen3.5 (model_type
// "qwen3_5" with a text_config, or "qwen3_5_text"), Qwen3-Next ("qwen3_next"), and the KDA
// hybrids Kimi Linear ("kimi_linear") and Ling ("bailing_hybrid"; their fields: kda_config.h).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hanpu/status.h"

namespace hanpu::model {

enum class Arch { kQwen35, kQwen3Next, kKimiLinear, kLing };

// Multi-head latent attention, the full-attention layers of the KDA hybrids: queries from
// q_proj (or q_a_proj -> norm -> q_b_proj when q_lora_rank is set), each token's keys and
// values from one latent of kv_lora_rank (normed, then up-projected per head) and one rope
// key shared by every head. Query/key heads are nope + rope dims, value heads v_dim.
struct MlaShape {
  int q_lora_rank = 0;  // 0: a full-rank q_proj
  int kv_lora_rank = 0;
  int qk_nope_dim = 0, qk_rope_dim = 0, v_dim = 0;
  // Ling rotates the rope dims (DeepSeek's interleaved pairs); Kimi Linear's attention code
  // applies no position encoding at all (the "rope" key part is used as it is).
  bool rope = false;
  int qk_dim() const { return qk_nope_dim + qk_rope_dim; }
};

// DeepSeek-style routing of the KDA hybrids' MoE layers: sigmoid scores plus a learned
// correction bias choose the experts, within the topk_groups groups (of groups) whose two
// best experts score highest; the chosen experts' sigmoid scores, renormalised where
// norm_topk_prob says, times routed_scaling weight their outputs. Beside them, a shared MLP
// of moe_intermediate x shared_experts rows.
struct GroupedRouter {
  int groups = 1, topk_groups = 1;
  float routed_scaling = 1.0f;
  int shared_experts = 0;
};
enum class LayerKind { kLinearAttention, kFullAttention };

struct ModelConfig {
  Arch arch = Arch::kQwen35;
  std::string model_type;
  int vocab = 0, hidden = 0, intermediate = 0, layers = 0;
  std::vector<LayerKind> layer_kinds;  // [layers]
  float rms_eps = 1e-6f;
  bool tie_embeddings = false;
  // Full attention: q [T, Hq, D] (q_proj also carries the output gate), k/v [T, Hkv, D].
  int attn_heads = 0, kv_heads = 0, head_dim = 0;
  double rope_theta = 10000.0;
  // The context the model was trained for (max_position_embeddings; a GGUF's context_length);
  // 0: the checkpoint does not say. Longer sequences run, with a warning.
  int max_positions = 0;
  float partial_rotary = 1.0f;  // rotary dims = head_dim * partial_rotary (even)
  // Gated DeltaNet: H key heads of K, HV value heads of V, depthwise causal conv of conv_kernel.
  int la_key_heads = 0, la_value_heads = 0, la_key_dim = 0, la_value_dim = 0, conv_kernel = 4;
  // Qwen3-Next mixture of experts (num_experts == 0: every layer has a dense MLP).
  int num_experts = 0, experts_per_token = 0, moe_intermediate = 0, shared_expert_intermediate = 0;
  int decoder_sparse_step = 1;
  bool norm_topk_prob = true;
  std::vector<int> mlp_only_layers;
  // KDA hybrids (Arch::kKimiLinear, kLing): the LA layers are KDA with la_key_heads ==
  // la_value_heads heads of la_key_dim == la_value_dim; full attention is MLA.
  MlaShape mla;
  GroupedRouter router;
  // Ling's bounded forget gate (kda_safe_gate): g = bound * sigmoid(exp(A_log) * x) in
  // (bound, 0); NaN for Kimi Linear's unbounded -exp(A_log) * softplus(x).
  float kda_gate_lower_bound = std::numeric_limits<float>::quiet_NaN();
  // Ling's per-layer SwiGLU clipping of the experts and of the shared expert (gate <= limit,
  // |up| <= limit); empty, or 0 for a layer: none.
  std::vector<float> expert_swiglu_limit, shared_swiglu_limit;
  std::vector<int> eos_token_ids;
  // Where the text model's tensors live: "model." (causal-LM checkpoints) or
  // "model.language_model." (Qwen3.5 image-text checkpoints).
  std::string weight_prefix = "model.";

  int rotary_dims() const;
  int la_conv_channels() const {
    return 2 * la_key_heads * la_key_dim + la_value_heads * la_value_dim;
  }
  // Floats of one LA layer's per-sequence state: the conv window [kernel - 1, channels] and
  // the recurrent state [HV, K, V].
  int64_t la_conv_state_floats() const { return int64_t{conv_kernel - 1} * la_conv_channels(); }
  int64_t la_recurrent_floats() const {
    return int64_t{la_value_heads} * la_key_dim * la_value_dim;
  }
  bool layer_has_moe(int layer) const;
  bool kda_hybrid() const { return arch == Arch::kKimiLinear || arch == Arch::kLing; }
};

// Bounds of a model's shape that no released hybrid model comes near: a config past one
// is corrupt or hostile, and is refused before anything is sized from it.
inline constexpr int kMaxLayers = 4096;
inline constexpr int kMaxVocab = 1 << 24;
inline constexpr int kMaxHidden = 1 << 16;
inline constexpr int kMaxHeads = 1 << 12;
inline constexpr int kMaxHeadDim = 1 << 12;
inline constexpr int kMaxExperts = 1 << 12;
// Rows of one projection (e.g. intermediate_size, Hq x 2 x head_dim): kept far below 2^31 so
// every product of two sizes the model forms in int64 is exact and every int dimension fits.
inline constexpr int kMaxProjectionRows = 1 << 24;

// The one validator of a model's shape, for a config.json and a GGUF alike: every size
// positive and bounded, head counts dividing, rotary dims within the head, RoPE base and
// RMSNorm epsilon finite and positive, a layer kind per layer, MoE fields consistent. Errors
// name `source` and the field, with the values as read (sizes multiplied in int64).
Status validate_model_config(const ModelConfig& c, const std::string& source);

// Parses config.json text; `source` names the file in errors. Every field the model needs
// must be present and sane (positive sizes, divisible head counts, a layer type per layer).
Status parse_model_config(const std::string& json_text, const std::string& source,
                          ModelConfig* out);
Status load_model_config(const std::string& path, ModelConfig* out);

// Whether `hanpu quantize` can write the config's architecture as a GGUF: every one but Ling
// (bailing_hybrid), which llama.cpp neither converts nor runs; converting one is an error
// naming the checkpoint.
Status check_gguf_writable(const ModelConfig& c, const std::string& source);

}  // namespace hanpu::model
