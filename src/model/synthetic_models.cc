// Synthetic model shapes (see synthetic_models.h). Qwen3.5-0.8B / 2B: layer counts, hidden
// 1024 for 0.8B, GDN 16/16 heads of 128, vocab 248320, rope theta 1e7 and partial rotary
// 0.25 as the models' published config.json files give them; the fields not published there
// (intermediate size, attention heads, 2B's hidden) are our assumptions, chosen to land on
// the models' nominal parameter counts.
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

}  // namespace

std::vector<std::string> synthetic_model_names() {
  return {"qwen3.5-0.8b", "qwen3.5-2b", "qwen3-next-tiny"};
}

std::optional<ModelConfig> synthetic_model_config(const std::string& name) {
  if (name == "qwen3.5-0.8b") return qwen35(1024, 3584, 24);
  if (name == "qwen3.5-2b") return qwen35(2048, 6144, 24);
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
  return std::nullopt;
}

}  // namespace hanpu::model
