// Which type each tensor of a model gets when a file is quantized to one of llama.cpp's file
// types (Q4_K_M, ...): llama-quantize's per-tensor choices (llama-quant.cpp,
// llama_tensor_get_type without an importance matrix), so a file hanpu writes matches one
// llama-quantize writes tensor for tensor. Those choices: which tensors are quantized at all
// (2-D weights, not norms, not the router, not ssm_conv1d), the tied embedding / output head
// at Q6_K, the value projections (attn_v, and attn_qkv, which llama.cpp counts with them) and
// ffn_down of the first, last and every third middle layer one step up (use_more_bits), and
// the fallback to a 32-value type where a row is not whole 256-value blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/quant_blocks.h"

namespace hanpu::model {

// A llama.cpp file type: its name, the general.file_type value it writes, and the type most
// tensors get.
struct QuantFileType {
  std::string_view name;
  uint32_t ftype;
  QuantType base;
};

// Q4_0, Q8_0, Q4_K_M, Q5_K_M, Q6_K, IQ4_XS.
std::span<const QuantFileType> quant_file_types();
// The file type called `name` (case-insensitive), or null.
const QuantFileType* find_quant_file_type(std::string_view name);

// What the recipe needs of the model: layer count (llama.cpp's n_layer), query heads per KV
// head (head_count / head_count_kv) and routed experts (0 for a dense model).
struct RecipeModel {
  int n_layer = 0;
  int n_gqa = 0;
  int n_expert = 0;
};

struct RecipeTensor {
  std::string name;
  std::vector<int64_t> shape;  // row-major, outermost first
};

// A tensor's fate: kept as stored, quantized to `type`, or stored as F16 (a row fits no block
// type, as llama.cpp falls back).
struct TensorChoice {
  enum Kind { kKeep, kQuantize, kF16 } kind = kKeep;
  QuantType type = QuantType::kQ8_0;
};

// The choice for each tensor, in the order given; llama.cpp's choices depend on it (it counts
// value projections as it goes), so pass tensors in llama_tensor_order.
std::vector<TensorChoice> plan_quantization(const QuantFileType& ft, const RecipeModel& model,
                                            const std::vector<RecipeTensor>& tensors);

// Sorts tensor names as llama.cpp orders a model's weights: by layer ("blk.N." prefix; others
// first), then by name.
void llama_tensor_order(std::vector<std::string>* names);

}  // namespace hanpu::model
