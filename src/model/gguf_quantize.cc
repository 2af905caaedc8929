// quantize_model (hanpu/quantize.h): a GGUF or a Hugging Face checkpoint folder in (the folder
// seen as llama.cpp's converter would write it: model/hf_gguf_metadata.h, hf_gguf_tensors.h),
// the same model out with llama-quantize's per-tensor types (model/quant_recipe.h), written by
// model/gguf_writer.h.
#include "hanpu/quantize.h"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/quant_quantize.h"
#include "model/model_config.h"
#include "model/gathered_tensor.h"
#include "model/gguf.h"
#include "model/gguf_writer.h"
#include "model/hf_gguf_metadata.h"
#include "model/hf_gguf_tensors.h"
#include "model/model_config.h"
#include "model/quant_recipe.h"
#include "model/safetensors.h"
#include "model/weight_store.h"
#include "parallel/parallel_rows.h"

namespace hanpu {

namespace {

using model::GatheredTensor;
using model::GgufMetadata;
using model::GgufValue;
using model::StoredTensor;

int64_t meta_int(const GgufMetadata& meta, const std::string& key) {
  const auto it = meta.find(key);
  if (it == meta.end()) return 0;
  if (it->second.is_int()) return it->second.as_int();
  // Per-layer arrays (head_count_kv in some hybrids): llama.cpp's n_gqa reads layer 0's.
  if (const auto* items = std::get_if<std::vector<GgufValue>>(&it->second.v);
      items && !items->empty() && items->front().is_int())
    return items->front().as_int();
  return 0;
}

std::string plain_type_name(DType d) {
  return d == DType::kF32 ? "F32" : d == DType::kF16 ? "F16" : "BF16";
}

uint32_t ggml_type_of(DType d) { return d == DType::kF32 ? 0 : d == DType::kF16 ? 1 : 30; }

// The file a gathered tensor's rows come from, for errors.
const std::string& source_file(const GatheredTensor& g) { return g.rows.front().from->file; }

// Runs `row_fn(r, values)` on every row of `g` in fp32, in parallel; refuses a non-finite value
// (by element of the output tensor) and a row `row_fn` rejects (it returns false; by row).
Status for_each_row(const GatheredTensor& g, const std::string& bad_row_why,
                    const std::function<bool(int64_t, const float*)>& row_fn) {
  const int64_t rows = static_cast<int64_t>(g.rows.size()), in = g.row_len();
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::atomic<int64_t> bad_value{kNone}, bad_row{kNone};
  const auto note = [](std::atomic<int64_t>& first, int64_t at) {
    int64_t seen = first.load();
    while (at < seen && !first.compare_exchange_weak(seen, at)) {
    }
  };
  parallel_rows(0, rows, in * 64, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(in));
    for (int64_t r = r0; r < r1; ++r) {
      g.read_row(r, buf.data());
      if (size_t i = model::first_non_finite(buf.data(), buf.size()); i < buf.size()) {
        note(bad_value, r * in + static_cast<int64_t>(i));
        continue;
      }
      if (!row_fn(r, buf.data())) note(bad_row, r);
    }
  });
  if (bad_value.load() != kNone)
    return Status::Error(fmt::format("tensor '{}' in {} holds a non-finite value at element {}",
                                     g.name, source_file(g), bad_value.load()));
  if (bad_row.load() != kNone)
    return Status::Error(fmt::format("tensor '{}' in {}: row {} {}", g.name, source_file(g),
                                     bad_row.load(), bad_row_why));
  return Status::Ok();
}

// The rows of `g` quantized to `type` into `dst`; a scale that overflowed f16 is refused.
Status quantize_tensor(const GatheredTensor& g, QuantType type, uint8_t* dst) {
  const QuantTypeInfo& info = quant_type_info(type);
  const size_t blocks = static_cast<size_t>(g.row_len() / info.block_elems),
               row_bytes = blocks * static_cast<size_t>(info.bytes);
  return for_each_row(
      g, fmt::format("holds values too large for {} (a block scale overflows f16)", info.name),
      [&](int64_t r, const float* x) {
        uint8_t* out = dst + static_cast<size_t>(r) * row_bytes;
        quantize_blocks(type, x, blocks, out);
        return first_block_with_bad_scale(type, out, blocks) >= blocks;
      });
}

// The rows of `g` in the plain type `to` (F32, F16 or BF16) into `dst`.
Status convert_tensor(const GatheredTensor& g, DType to, uint8_t* dst) {
  const int64_t n = g.row_len();
  return for_each_row(g, "holds values too large for F16", [&](int64_t r, const float* x) {
    bool fits = true;
    for (int64_t i = 0; i < n; ++i) {
      const size_t at = static_cast<size_t>(r * n + i);
      if (to == DType::kF32) {
        std::memcpy(dst + 4 * at, &x[i], 4);
        continue;
      }
      const uint16_t h = to == DType::kF16 ? f32_to_f16_bits(x[i]) : f32_to_bf16_bits(x[i]);
      fits = fits && (to != DType::kF16 || (h & 0x7c00) != 0x7c00);
      std::memcpy(dst + 2 * at, &h, 2);
    }
    return fits;
  });
}

// What quantize_model reads: the metadata and tensors of a GGUF file, or of a checkpoint
// folder as llama.cpp's converter would have written it.
struct Input {
  GgufMetadata meta;
  model::WeightStore store;
  std::vector<GatheredTensor> tensors;
};

Status read_input(const std::string& in, Input* out) {
  std::error_code ec;
  if (std::filesystem::is_directory(in, ec)) {
    model::ModelConfig config;
    HANPU_RETURN_IF_ERROR(
        model::load_model_config((std::filesystem::path(in) / "config.json").string(), &config));
    HANPU_RETURN_IF_ERROR(model::check_gguf_writable(config, in));
    HANPU_RETURN_IF_ERROR(model::load_safetensors(in, &out->store));
    HANPU_RETURN_IF_ERROR(model::hf_gguf_metadata(in, config, &out->meta));
    return model::hf_gguf_tensors(config, out->store, &out->tensors);
  }
  HANPU_RETURN_IF_ERROR(model::load_gguf(in, &out->meta, &out->store));
  for (const auto& [name, t] : out->store.tensors()) {
    if (t.quant)
      return Status::Error(fmt::format(
          "{}: tensor '{}' is already quantized ({}); quantize from an F32, F16 or BF16 GGUF", in,
          name, quant_type_info(*t.quant).name));
    if (shape_numel(t.shape) == 0)
      return Status::Error(fmt::format("{}: tensor '{}' has no elements", in, name));
    out->tensors.push_back(model::gathered_as_stored(name, t));
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> quantize_file_type_names() {
  std::vector<std::string> out;
  for (const model::QuantFileType& f : model::quant_file_types()) out.emplace_back(f.name);
  return out;
}

Status quantize_model(const std::string& in, const std::string& out, const std::string& file_type,
                      const std::function<void(const QuantizedTensorReport&)>& on_tensor,
                      QuantizeSummary* summary) {
  const model::QuantFileType* ft = model::find_quant_file_type(file_type);
  if (!ft)
    return Status::Error(fmt::format("quantization type '{}' is not one of {}", file_type,
                                     fmt::join(quantize_file_type_names(), ", ")));
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec))
    return Status::Error(fmt::format("{}: the output would overwrite the input", out));
  Input input;
  HANPU_RETURN_IF_ERROR(read_input(in, &input));
  GgufMetadata& meta = input.meta;
  const std::string* arch = model::gguf_string(meta, "general.architecture");
  if (!arch || (*arch != "qwen35" && *arch != "qwen3next" && *arch != "kimi-linear"))
    return Status::Error(fmt::format(
        "{}: architecture '{}' is not one hanpu quantizes (qwen35, qwen3next, kimi-linear)", in,
        arch ? *arch : std::string("(missing)")));
  std::map<std::string, const GatheredTensor*> by_name;
  for (const GatheredTensor& g : input.tensors) by_name[g.name] = &g;
  std::vector<std::string> names;
  for (const auto& [name, g] : by_name) names.push_back(name);
  model::llama_tensor_order(&names);
  const model::RecipeModel rm{
      .n_layer = static_cast<int>(meta_int(meta, *arch + ".block_count")),
      .n_gqa = meta_int(meta, *arch + ".attention.head_count_kv") > 0
                   ? static_cast<int>(meta_int(meta, *arch + ".attention.head_count") /
                                      meta_int(meta, *arch + ".attention.head_count_kv"))
                   : 0,
      .n_expert = static_cast<int>(meta_int(meta, *arch + ".expert_count"))};
  std::vector<model::RecipeTensor> recipe;
  for (const std::string& n : names) recipe.push_back({n, by_name[n]->shape});
  const std::vector<model::TensorChoice> choices = model::plan_quantization(*ft, rm, recipe);

  std::vector<model::GgufTensorOut> tensors;
  std::vector<QuantizedTensorReport> reports;
  QuantizeSummary sum;
  for (size_t i = 0; i < names.size(); ++i) {
    const GatheredTensor& g = *by_name[names[i]];
    const StoredTensor& src = *g.rows.front().from;
    const int64_t numel = static_cast<int64_t>(shape_numel(g.shape));
    const model::TensorChoice& c = choices[i];
    model::GgufTensorOut o{.name = g.name, .shape = g.shape};
    QuantizedTensorReport r{.index = i,
                            .count = names.size(),
                            .name = g.name,
                            .shape = g.shape,
                            .from = plain_type_name(src.dtype)};
    r.bytes_in = model::stored_bytes(src, static_cast<uint64_t>(numel));
    if (c.kind == model::TensorChoice::kQuantize) {
      const QuantTypeInfo& q = quant_type_info(c.type);
      o.ggml_type = q.ggml_type;
      o.bytes = static_cast<uint64_t>(numel / q.block_elems) * static_cast<uint64_t>(q.bytes);
      o.fill = [&g, type = c.type](uint8_t* dst) { return quantize_tensor(g, type, dst); };
      r.to = q.name;
      ++sum.quantized;
    } else {
      const DType to = c.kind == model::TensorChoice::kF16 ? DType::kF16 : g.kept;
      o.ggml_type = ggml_type_of(to);
      o.bytes = static_cast<uint64_t>(numel) * dtype_size(to);
      if (g.whole && g.whole->dtype == to) {
        o.fill = [&g, bytes = o.bytes](uint8_t* dst) {
          std::memcpy(dst, g.whole->data, bytes);
          return Status::Ok();
        };
      } else {
        o.fill = [&g, to](uint8_t* dst) { return convert_tensor(g, to, dst); };
      }
      r.to = plain_type_name(to);
    }
    r.bytes_out = o.bytes;
    sum.bytes_in += r.bytes_in;
    sum.bytes_out += r.bytes_out;
    sum.elements += static_cast<uint64_t>(numel);
    tensors.push_back(std::move(o));
    reports.push_back(std::move(r));
  }
  sum.tensors = names.size();

  // llama-quantize's bookkeeping: the mix and the block-format version, no split keys.
  meta["general.file_type"] = GgufValue{.v = uint64_t{ft->ftype}, .type = model::kGgufU32};
  meta["general.quantization_version"] = GgufValue{.v = uint64_t{2}, .type = model::kGgufU32};
  for (const char* key : {"split.no", "split.count", "split.tensors.count"}) meta.erase(key);
  HANPU_RETURN_IF_ERROR(model::write_gguf(out, meta, tensors, [&](size_t i) {
    if (on_tensor) on_tensor(reports[i]);
  }));
  if (summary) *summary = sum;
  return Status::Ok();
}

}  // namespace hanpu
