// Synthetic model shapes (see synthetic_models.h). Qwen3.5-0.8B / 2B: layer counts, hidden
// 1024 for 0.8B, GDN 16/16 heads of 128, vocab 248320, rope theta 1e7 and partial rotary
// 0.25 as the models' published config.json files give them; the fields not published there
// (intermediate size, attention heads, 2B's hidden) are our assumptions, chosen to land on
// the models' nominal parameter counts. Qwen3.5-4B: 32 layers, hidden 2560, FFN 9216, GDN
// with 16 q/k heads over 32 value heads, attention 16/4 heads of 256 — our reading of the
// family's layout at that size (not checked against a published config here), for the NPU
// model's prefill (`hanpu sim --op prefill`).
#include "model/synthetic_models.h"

namespace hanpu::model {

namespace {

ModelConfig qwen35(int hidden, int intermediate, int layers) {
  ModelConfig c;
  c.arch = Arch::kQwen35;
  c.model_type = "qwen3_5_text";
  c.vocab = 248320;
  c.hidden = hidden;
  c.intermediate = intermediate;
  c.layers = layers;
  for (int i = 0; i < layers; ++i) {
    c.layer_kinds.push_back((i + 1) % 4 == 0 ? LayerKind::kFullAttention
                                             : LayerKind::kLinearAttention);
  }
  c.attn_heads = 8;
  c.kv_heads = 2;
  c.head_dim = 256;
  c.rope_theta = 1e7;
  c.max_positions = 262144;  // Qwen3.5's and Qwen3-Next's config.json
  c.partial_rotary = 0.25f;
  c.la_key_heads = 16;
  c.la_value_heads = 16;
  c.la_key_dim = 128;
  c.la_value_dim = 128;
  c.tie_embeddings = true;
  return c;
}

// The KDA hybrids' shared layout at this machine's scale: hidden 1280, KDA with 16 heads of
// 128, MLA with 16 heads (latent 512, nope 128 + rope 64, values 128, full-rank queries), 64
// experts of 512 (4 routed + 1 shared a token), a dense first layer. About 2.5B parameters,
// 0.55B of them read a token (the head's 0.21B included).
ModelConfig kda_hybrid_2b(Arch arch, int layers, int vocab) {
  ModelConfig c;
  c.arch = arch;
  c.vocab = vocab;
  c.hidden = 1280;
  c.intermediate = 3584;
  c.layers = layers;
  c.rms_eps = 1e-5f;
  c.attn_heads = c.kv_heads = 16;
  c.mla.kv_lora_rank = 512;
  c.mla.qk_nope_dim = 128;
  c.mla.qk_rope_dim = 64;
  c.mla.v_dim = 128;
  c.head_dim = c.mla.qk_dim();
  c.la_key_heads = c.la_value_heads = 16;
  c.la_key_dim = c.la_value_dim = 128;
  c.conv_kernel = 4;
  c.num_experts = 64;
  c.experts_per_token = 4;
  c.moe_intermediate = 512;
  c.router.shared_experts = 1;
  c.shared_expert_intermediate = 512;
  c.mlp_only_layers = {0};
  c.max_positions = 131072;
  return c;
}

}  // namespace

std::vector<std::string> synthetic_model_names() {
  return {"qwen3.5-0.8b",    "qwen3.5-2b",     "qwen3.5-4b", "qwen3.5-9b",
          "qwen3-next-tiny", "kimi-linear-2b", "ling-2b"};
}

std::optional<ModelConfig> synthetic_model_config(const std::string& name) {
  if (name == "qwen3.5-0.8b") return qwen35(1024, 3584, 24);
  if (name == "qwen3.5-2b") return qwen35(2048, 6144, 24);
  if (name == "qwen3.5-4b") {
    ModelConfig c = qwen35(2560, 9216, 32);
    c.la_value_heads = 32;
    c.attn_heads = 16;
    c.kv_heads = 4;
    return c;
  }
  if (name == "qwen3.5-9b") {
    // Qwen3.5-9B's model card: 32 layers of hidden 4096 (8 x (3 GDN + 1 attention)), GDN 16
    // q/k and 32 value heads of 128, attention 16/4 heads of 256, FFN 12288; its 8.95 B
    // parameters count a separate LM head.
    ModelConfig c = qwen35(4096, 12288, 32);
    c.la_value_heads = 32;
    c.attn_heads = 16;
    c.kv_heads = 4;
    c.tie_embeddings = false;
    return c;
  }
  if (name == "qwen3-next-tiny") {  // Qwen3-Next's layout at a size a 2-core board can run
    ModelConfig c = qwen35(512, 1536, 8);
    c.arch = Arch::kQwen3Next;
    c.model_type = "qwen3_next";
    c.vocab = 32000;
    c.la_key_heads = 4;
    c.la_value_heads = 8;
    c.attn_heads = 4;
    c.kv_heads = 2;
    c.num_experts = 16;
    c.experts_per_token = 4;
    c.moe_intermediate = 256;
    c.shared_expert_intermediate = 256;
    c.tie_embeddings = false;
    return c;
  }
  if (name == "kimi-linear-2b") {
    // Kimi-Linear-48B-A3B's layout (config.json: 27 layers, hidden 2304, KDA and MLA with 32
    // heads, MLA at 1-based layers 4, 8, .., 24 and 27 without RoPE, 256 experts of 1024 with
    // 8 routed + 1 shared, router groups 1, routed scaling 2.446, vocab 163840) in 16 layers,
    // MLA every fourth.
    ModelConfig c = kda_hybrid_2b(Arch::kKimiLinear, 16, 163840);
    c.model_type = "kimi_linear";
    for (int i = 0; i < c.layers; ++i) {
      c.layer_kinds.push_back((i + 1) % 4 == 0 ? LayerKind::kFullAttention
                                               : LayerKind::kLinearAttention);
    }
    c.router.routed_scaling = 2.446f;
    return c;
  }
  if (name == "ling-2b") {
    // Ling's layout (transformers' BailingHybridConfig defaults: 42 layers in groups of 6, five
    // KDA then one MLA with interleaved RoPE at theta 6e6; hidden 2560; 512 experts of 768
    // with 8 routed in 4 of 8 groups + 1 shared; the forget gate bounded at -5; vocab 157184)
    // in 18 layers.
    ModelConfig c = kda_hybrid_2b(Arch::kLing, 18, 157184);
    c.model_type = "bailing_hybrid";
    c.rms_eps = 1e-6f;
    for (int i = 0; i < c.layers; ++i) {
      c.layer_kinds.push_back((i + 1) % 6 == 0 ? LayerKind::kFullAttention
                                               : LayerKind::kLinearAttention);
    }
    c.mla.rope = true;
    c.rope_theta = 6e6;
    c.router.groups = 8;
    c.router.topk_groups = 4;
    c.router.routed_scaling = 2.5f;
    c.kda_gate_lower_bound = -5.0f;
    return c;
  }
  return std::nullopt;
}

}  // namespace hanpu::model
