// The tensors a model config implies, by name and shape, for a Hugging Face checkpoint and
// for a GGUF: checked against the checkpoint's tensors before any weight is converted or
// allocated, so a config whose sizes the file does not back is refused naming the first
// tensor that is missing or of another shape.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hanpu/status.h"
#include "hanpu/tensor.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace hanpu::model {

struct ExpectedTensor {
  std::string name;
  Shape shape;
};

// Hugging Face names (config.weight_prefix). `store` decides the layouts that vary between
// checkpoints of one architecture: an untied lm_head where the checkpoint has one, and
// transformers 5's fused expert tensors where it has them.
std::vector<ExpectedTensor> hf_weight_table(const ModelConfig& config, const WeightStore& store);
// llama.cpp's GGUF names for `qwen35` and `qwen3next`.
std::vector<ExpectedTensor> gguf_weight_table(const ModelConfig& config);

// Every entry present in `store` with exactly its shape; the error names the first that is not.
Status check_weight_table(const std::vector<ExpectedTensor>& table, const WeightStore& store);

}  // namespace hanpu::model
