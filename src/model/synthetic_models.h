// Real architecture shapes for benchmarking with random weights (`--synthetic NAME`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace hanpu::model {

std::vector<std::string> synthetic_model_names();
std::optional<ModelConfig> synthetic_model_config(const std::string& name);

}  // namespace hanpu::model
