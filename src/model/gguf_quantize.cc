// quantize_model (hanpu/quantize.h): a GGUF in, the same model out with llama-quantize's
// per-tensor types (model/quant_recipe.h), written by model/gguf_writer.h.
#include "hanpu/quantize.h"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/quant_quantize.h"
#include "model/gguf.h"
#include "model/gguf_writer.h"
#include "model/quant_recipe.h"
#include "model/weight_store.h"
#include "parallel/parallel_rows.h"

namespace hanpu {

namespace {

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

std::string stored_type_name(const StoredTensor& t) {
  if (t.quant) return std::string(quant_type_info(*t.quant).name);
  switch (t.dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    default:
      return "BF16";
  }
}

uint32_t stored_ggml_type(const StoredTensor& t) {
  return t.dtype == DType::kF32 ? 0 : t.dtype == DType::kF16 ? 1 : 30;
}

// The rows of `t` ([rows, in] after flattening outer dimensions) quantized to `type` into
// `dst`, in parallel; refuses a non-finite input value (by element) and a scale that
// overflowed f16 (by row).
Status quantize_tensor(const std::string& name, const StoredTensor& t, int64_t rows, int64_t in,
                       QuantType type, uint8_t* dst) {
  const QuantTypeInfo& info = quant_type_info(type);
  const size_t blocks = static_cast<size_t>(in / info.block_elems),
               row_bytes = blocks * static_cast<size_t>(info.bytes);
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
      model::stored_to_f32(t, r * in, in, buf.data());
      if (size_t i = model::first_non_finite(buf.data(), buf.size()); i < buf.size()) {
        note(bad_value, r * in + static_cast<int64_t>(i));
        continue;
      }
      uint8_t* out = dst + static_cast<size_t>(r) * row_bytes;
      quantize_blocks(type, buf.data(), blocks, out);
      if (first_block_with_bad_scale(type, out, blocks) < blocks) note(bad_row, r);
    }
  });
  if (bad_value.load() != kNone)
    return Status::Error(fmt::format("tensor '{}' in {} holds a non-finite value at element {}",
                                     name, t.file, bad_value.load()));
  if (bad_row.load() != kNone)
    return Status::Error(fmt::format(
        "tensor '{}' in {}: row {} holds values too large for {} (a block scale overflows f16)",
        name, t.file, bad_row.load(), info.name));
  return Status::Ok();
}

Status to_f16(const std::string& name, const StoredTensor& t, int64_t numel, uint8_t* dst) {
  std::vector<float> x(static_cast<size_t>(numel));
  model::stored_to_f32(t, x.data());
  if (size_t i = model::first_non_finite(x.data(), x.size()); i < x.size())
    return Status::Error(
        fmt::format("tensor '{}' in {} holds a non-finite value at element {}", name, t.file, i));
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t h = f32_to_f16_bits(x[i]);
    std::memcpy(dst + 2 * i, &h, sizeof(h));
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
  if (std::filesystem::is_directory(in, ec))
    return Status::Error(fmt::format(
        "{} is a folder: hanpu quantize reads an F32, F16 or BF16 GGUF (convert a safetensors "
        "folder with llama.cpp's convert_hf_to_gguf.py first)",
        in));
  if (std::filesystem::equivalent(in, out, ec))
    return Status::Error(fmt::format("{}: the output would overwrite the input", out));
  GgufMetadata meta;
  model::WeightStore store;
  HANPU_RETURN_IF_ERROR(model::load_gguf(in, &meta, &store));
  const std::string* arch = model::gguf_string(meta, "general.architecture");
  if (!arch || (*arch != "qwen35" && *arch != "qwen3next"))
    return Status::Error(
        fmt::format("{}: architecture '{}' is not one hanpu quantizes (qwen35, qwen3next)", in,
                    arch ? *arch : std::string("(missing)")));
  std::vector<std::string> names;
  for (const auto& [name, t] : store.tensors()) {
    if (t.quant)
      return Status::Error(fmt::format(
          "{}: tensor '{}' is already quantized ({}); quantize from an F32, F16 or BF16 GGUF", in,
          name, quant_type_info(*t.quant).name));
    names.push_back(name);
  }
  model::llama_tensor_order(&names);
  const model::RecipeModel rm{
      .n_layer = static_cast<int>(meta_int(meta, *arch + ".block_count")),
      .n_gqa = meta_int(meta, *arch + ".attention.head_count_kv") > 0
                   ? static_cast<int>(meta_int(meta, *arch + ".attention.head_count") /
                                      meta_int(meta, *arch + ".attention.head_count_kv"))
                   : 0,
      .n_expert = static_cast<int>(meta_int(meta, *arch + ".expert_count"))};
  std::vector<model::RecipeTensor> recipe;
  for (const std::string& n : names) recipe.push_back({n, store.find(n)->shape});
  const std::vector<model::TensorChoice> choices = model::plan_quantization(*ft, rm, recipe);

  std::vector<model::GgufTensorOut> tensors;
  std::vector<QuantizedTensorReport> reports;
  QuantizeSummary sum;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const StoredTensor& t = *store.find(name);
    const int64_t numel = static_cast<int64_t>(shape_numel(t.shape));
    const int64_t row = t.shape.empty() ? 1 : t.shape.back();
    const model::TensorChoice& c = choices[i];
    model::GgufTensorOut o{.name = name, .shape = t.shape};
    QuantizedTensorReport r{.index = i,
                            .count = names.size(),
                            .name = name,
                            .shape = t.shape,
                            .from = stored_type_name(t)};
    r.bytes_in = model::stored_bytes(t, static_cast<uint64_t>(numel));
    if (c.kind == model::TensorChoice::kQuantize) {
      const QuantTypeInfo& q = quant_type_info(c.type);
      o.ggml_type = q.ggml_type;
      o.bytes = static_cast<uint64_t>(numel / q.block_elems) * static_cast<uint64_t>(q.bytes);
      o.fill = [&t, name, numel, row, type = c.type](uint8_t* dst) {
        return quantize_tensor(name, t, numel / row, row, type, dst);
      };
      r.to = q.name;
      ++sum.quantized;
    } else if (c.kind == model::TensorChoice::kF16 && t.dtype != DType::kF16) {
      o.ggml_type = 1;
      o.bytes = static_cast<uint64_t>(numel) * 2;
      o.fill = [&t, name, numel](uint8_t* dst) { return to_f16(name, t, numel, dst); };
      r.to = "F16";
    } else {
      o.ggml_type = stored_ggml_type(t);
      o.bytes = r.bytes_in;
      o.fill = [&t, bytes = o.bytes](uint8_t* dst) {
        std::memcpy(dst, t.data, bytes);
        return Status::Ok();
      };
      r.to = r.from;
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
