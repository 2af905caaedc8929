// Quantizing a checkpoint into a GGUF llama.cpp loads, as llama-quantize does: the input's
// metadata and tokenizer carried over, each tensor given llama-quantize's type for the chosen
// mix (Q4_K_M: most projections Q4_K, the value projections and ffn_down of some layers and
// the tied head Q6_K, ...), quantized with ggml's own algorithms, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hanpu/status.h"

namespace hanpu {

// The mixes quantize_model writes: "Q4_0", "Q8_0", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS".
std::vector<std::string> quantize_file_type_names();

struct QuantizedTensorReport {
  size_t index = 0, count = 0;  // this tensor's place in the file, and the tensor count
  std::string name;
  std::vector<int64_t> shape;  // row-major
  std::string from, to;        // "BF16" -> "Q4_K"; equal when kept as stored
  uint64_t bytes_in = 0, bytes_out = 0;
};

struct QuantizeSummary {
  size_t tensors = 0, quantized = 0;
  uint64_t bytes_in = 0, bytes_out = 0;  // of the tensors' data
  uint64_t elements = 0;                 // values in all tensors
};

// Reads `in` (an F32 / F16 / BF16 GGUF of a qwen35 or qwen3next model, or a Hugging Face
// checkpoint folder of one: config.json, safetensors, tokenizer.json, tokenizer_config.json,
// seen as llama.cpp's convert_hf_to_gguf.py --no-mtp converts it: its tensor names and
// layouts, metadata and tokenizer keys) and writes `out` quantized to `file_type` (any of
// quantize_file_type_names, case-insensitive).
// `on_tensor` is called as each tensor is written. Errors name the problem: an unknown type,
// an input that is already quantized, a tensor holding NaN or infinity (by element), values
// too large for the type's f16 scales (by row). `out` is written whole or not at all.
Status quantize_model(const std::string& in, const std::string& out, const std::string& file_type,
                      const std::function<void(const QuantizedTensorReport&)>& on_tensor = {},
                      QuantizeSummary* summary = nullptr);

}  // namespace hanpu
