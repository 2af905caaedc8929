// config.json of the KDA hybrids: Kimi Linear (model_type "kimi_linear") and Ling
// ("bailing_hybrid"), as their own checkpoints and transformers 5 write them (the same field
// under either name: num_experts_per_token / num_experts_per_tok, num_expert_group / n_group,
// ...; Kimi's layer pattern as layer_types or as linear_attn_config's 1-based lists).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "hanpu/status.h"
#include "model/model_config.h"

namespace hanpu::model {

// Fills every field of `c` a KDA hybrid has (c->arch and c->model_type already set).
Status parse_kda_hybrid_config(const nlohmann::json& root, const std::string& source,
                               ModelConfig* c);

// The KDA hybrids' part of validate_model_config: MLA dims, the router's groups against the
// experts, the gate's bound, the clipping lists; errors name the field and its value.
Status validate_kda_hybrid(const ModelConfig& c, const std::string& source);

}  // namespace hanpu::model
