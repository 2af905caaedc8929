// llama-quantize's per-tensor type choices (see quant_recipe.h), for the file types hanpu
// writes; the branches for other file types are left out.
#include "model/quant_recipe.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "base/quant_quantize.h"

namespace hanpu::model {

namespace {

constexpr QuantFileType kFileTypes[] = {
    {"Q4_0", 2, QuantType::kQ4_0},    {"Q8_0", 7, QuantType::kQ8_0},
    {"Q4_K_M", 15, QuantType::kQ4_K}, {"Q5_K_M", 17, QuantType::kQ5_K},
    {"Q6_K", 18, QuantType::kQ6_K},   {"IQ4_XS", 30, QuantType::kIQ4_XS},
};

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}
bool ends_with(const std::string& s, std::string_view end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

enum class Category {
  kTokenEmbd,
  kAttnQ,
  kAttnV,
  kAttnK,
  kAttnQkv,
  kAttnKvB,
  kAttnOut,
  kFfnUp,
  kFfnGate,
  kFfnDown,
  kOutput,
  kOther
};

Category category_of(const std::string& n) {
  if (n == "output.weight") return Category::kOutput;
  if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") return Category::kTokenEmbd;
  if (contains(n, "attn_qkv.weight")) return Category::kAttnQkv;
  if (contains(n, "attn_kv_b.weight")) return Category::kAttnKvB;
  if (contains(n, "attn_v.weight")) return Category::kAttnV;
  if (contains(n, "attn_k.weight")) return Category::kAttnK;
  if (contains(n, "attn_q.weight")) return Category::kAttnQ;
  if (contains(n, "attn_output.weight")) return Category::kAttnOut;
  if (contains(n, "ffn_up")) return Category::kFfnUp;
  if (contains(n, "ffn_gate")) return Category::kFfnGate;
  if (contains(n, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

bool is_value_projection(Category c) {
  return c == Category::kAttnV || c == Category::kAttnQkv || c == Category::kAttnKvB;
}

// ggml's dimension count: the index of the last dimension above 1, plus one (a [1, n] matrix
// is one-dimensional to it).
int ggml_dims(const std::vector<int64_t>& shape) {
  int dims = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[shape.size() - 1 - i] > 1) dims = static_cast<int>(i) + 1;
  }
  return dims;
}

// llama.cpp's tensor_allows_quantization, for the names these architectures use.
bool allows_quantization(const RecipeTensor& t) {
  if (ggml_dims(t.shape) < 2) return false;
  const std::string& n = t.name;
  return ends_with(n, "weight") && !contains(n, "_norm.weight") &&
         !contains(n, "ffn_gate_inp.weight") && !contains(n, "ssm_conv1d") &&
         !contains(n, "shortconv.conv.weight") && n != "position_embd.weight" &&
         n != "token_types.weight";
}

// The layers that get one step more in the K mixes: the first and last eighth and every
// third layer between.
bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

int layer_of(const std::string& name, int fallback) {
  int layer = fallback;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return fallback;
  return layer;
}

}  // namespace

std::span<const QuantFileType> quant_file_types() { return kFileTypes; }

const QuantFileType* find_quant_file_type(std::string_view name) {
  for (const QuantFileType& f : kFileTypes) {
    if (f.name.size() != name.size()) continue;
    if (std::equal(name.begin(), name.end(), f.name.begin(),
                   [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; }))
      return &f;
  }
  return nullptr;
}

std::vector<TensorChoice> plan_quantization(const QuantFileType& ft, const RecipeModel& m,
                                            const std::vector<RecipeTensor>& tensors) {
  const std::string_view f = ft.name;
  const bool k_mix = f == "Q4_K_M" || f == "Q5_K_M", iq4 = f == "IQ4_XS";
  int n_attention_wv = 0;
  bool tied = true;
  for (const RecipeTensor& t : tensors) {
    const Category c = category_of(t.name);
    if (is_value_projection(c)) ++n_attention_wv;
    if (c == Category::kOutput) tied = false;
  }
  const int n_ffn_down = m.n_layer;
  int i_attention_wv = 0, i_ffn_down = 0;
  std::vector<TensorChoice> out;
  for (const RecipeTensor& t : tensors) {
    TensorChoice choice;
    if (!allows_quantization(t)) {
      out.push_back(choice);
      continue;
    }
    QuantType type = ft.base;
    const Category c = category_of(t.name);
    const int64_t row = t.shape.back();
    if (c == Category::kOutput || (tied && c == Category::kTokenEmbd)) {
      if (row % quant_type_info(type).block_elems != 0)
        type = QuantType::kQ8_0;
      else if (type != QuantType::kQ8_0)
        type = QuantType::kQ6_K;
    } else if (c == Category::kTokenEmbd) {
      // an untied embedding keeps the base type in these mixes
    } else if (is_value_projection(c)) {
      if (iq4 && m.n_gqa >= 4)
        type = QuantType::kQ5_K;
      else if (k_mix && use_more_bits(i_attention_wv, n_attention_wv))
        type = QuantType::kQ6_K;
      if (m.n_expert == 8) type = QuantType::kQ8_0;
      ++i_attention_wv;
    } else if (c == Category::kAttnK) {
      if (m.n_expert == 8) type = QuantType::kQ8_0;
    } else if (c == Category::kFfnDown) {
      const int i_layer = m.n_expert > 1 ? layer_of(t.name, i_ffn_down) : i_ffn_down;
      if (f == "Q4_K_M" && use_more_bits(i_layer, n_ffn_down))
        type = QuantType::kQ6_K;
      else if (iq4 && i_layer < n_ffn_down / 8)
        type = QuantType::kQ5_K;
      else if (f == "Q5_K_M" && use_more_bits(i_layer, n_ffn_down))
        type = QuantType::kQ6_K;
      ++i_ffn_down;
    } else if (c == Category::kAttnOut) {
      if (m.n_expert == 8 && (f == "Q4_K_M" || iq4)) type = QuantType::kQ5_K;
    }
    if (std::optional<QuantType> fits = quant_type_for_row(type, row)) {
      choice.kind = TensorChoice::kQuantize;
      choice.type = *fits;
    } else {
      choice.kind = TensorChoice::kF16;
    }
    out.push_back(choice);
  }
  return out;
}

void llama_tensor_order(std::vector<std::string>* names) {
  std::sort(names->begin(), names->end(), [](const std::string& a, const std::string& b) {
    const int la = layer_of(a, -1), lb = layer_of(b, -1);
    if (la != lb) return la < lb;
    return a < b;
  });
}

}  // namespace hanpu::model
