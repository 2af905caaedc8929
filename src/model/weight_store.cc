// WeightStore bookkeeping and dtype conversion (see weight_store.h).
#include "model/weight_store.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace hanpu::model {

namespace {

// fp32 of every f16 bit pattern (256 KB, built once): f16 checkpoints, llama.cpp's default
// GGUF type, widen by lookup rather than by the branchy conversion per element.
const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < t.size(); ++h) t[h] = f16_bits_to_f32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

Shape squeezed(const Shape& s) {
  Shape out;
  for (int64_t d : s) {
    if (d != 1) out.push_back(d);
  }
  return out;
}

}  // namespace

std::shared_ptr<const MappedFile> WeightStore::keep(MappedFile file) {
  files_.push_back(std::make_shared<const MappedFile>(std::move(file)));
  return files_.back();
}

void WeightStore::set_owner(const std::string& file, const std::shared_ptr<const void>& owner) {
  for (auto& [name, t] : tensors_) {
    if (t.file == file && !t.owner) t.owner = owner;
  }
}

Status WeightStore::add(const std::string& name, StoredTensor t) {
  if (tensors_.count(name) != 0) {
    return Status::Error(fmt::format("{}: tensor '{}' appears twice (also in {})", t.file, name,
                                     tensors_.at(name).file));
  }
  tensors_.emplace(name, std::move(t));
  return Status::Ok();
}

const StoredTensor* WeightStore::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Status WeightStore::get(const std::string& name, const Shape& shape,
                        const StoredTensor** out) const {
  const StoredTensor* t = find(name);
  if (t == nullptr) return Status::Error(fmt::format("checkpoint has no tensor '{}'", name));
  if (squeezed(t->shape) != squeezed(shape)) {
    return Status::Error(fmt::format("tensor '{}' in {} has shape {}, the config implies {}", name,
                                     t->file, shape_str(t->shape), shape_str(shape)));
  }
  *out = t;
  return Status::Ok();
}

Status WeightStore::get_f32(const std::string& name, const Shape& shape,
                            std::vector<float>* out) const {
  const StoredTensor* t = nullptr;
  HANPU_RETURN_IF_ERROR(get(name, shape, &t));
  out->resize(static_cast<size_t>(shape_numel(shape)));
  stored_to_f32(*t, out->data());
  copied_.insert(name);
  const size_t i = first_non_finite(out->data(), out->size());
  if (i < out->size()) {
    return Status::Error(
        fmt::format("tensor '{}' in {} holds a non-finite value at element {}", name, t->file, i));
  }
  return Status::Ok();
}

void WeightStore::release_copied() const {
  for (const auto& file : files_) {
    const uint8_t* base = file->data();
    const size_t size = file->size();
    if (base == nullptr) continue;
    // The byte ranges of this file's tensors still read in place, in file order; every gap
    // between them (headers, padding, copied tensors) is released.
    std::vector<std::pair<size_t, size_t>> live;
    for (const auto& [name, t] : tensors_) {
      if (t.data < base || t.data >= base + size || copied_.count(name) != 0) continue;
      const size_t begin = static_cast<size_t>(t.data - base);
      const uint64_t numel = static_cast<uint64_t>(shape_numel(t.shape));  // checked at load
      live.emplace_back(begin, begin + static_cast<size_t>(stored_bytes(t, numel)));
    }
    std::sort(live.begin(), live.end());
    size_t at = 0;
    for (const auto& [begin, end] : live) {
      if (begin > at) file->release(at, begin);
      at = std::max(at, end);
    }
    file->release(at, size);
  }
}

size_t first_non_finite(const float* x, size_t n) {
  // An OR over the exponent test first (it vectorises: this runs over every weight of a
  // checkpoint), the index only when something is bad.
  bool bad = false;
  for (size_t i = 0; i < n; ++i)
    bad |= (std::bit_cast<uint32_t>(x[i]) & 0x7f800000u) == 0x7f800000u;
  if (!bad) return n;
  return static_cast<size_t>(std::find_if(x, x + n, [](float v) { return !std::isfinite(v); }) - x);
}

void stored_to_f32(const StoredTensor& t, float* out) {
  stored_to_f32(t, 0, shape_numel(t.shape), out);
}

uint64_t stored_bytes(const StoredTensor& t, uint64_t numel) {
  if (!t.quant) return numel * dtype_size(t.dtype);
  const QuantTypeInfo& q = quant_type_info(*t.quant);
  return numel / static_cast<uint64_t>(q.block_elems) * static_cast<uint64_t>(q.bytes);
}

void stored_to_f32(const StoredTensor& t, int64_t first, int64_t n, float* out) {
  if (t.quant) {
    const QuantTypeInfo& q = quant_type_info(*t.quant);
    dequantize_blocks(*t.quant, t.data + stored_bytes(t, static_cast<uint64_t>(first)),
                      static_cast<size_t>(n / q.block_elems), out);
    return;
  }
  if (t.dtype == DType::kF32) {
    std::memcpy(out, t.data + 4 * first,
                static_cast<size_t>(n) * sizeof(float));  // data may be unaligned
    return;
  }
  // 16-bit values may sit at odd addresses in a mapped file: read through memcpy. The bf16
  // loop (the common checkpoint dtype) is a shift the compiler vectorises.
  const uint8_t* src = t.data + 2 * first;
  if (t.dtype == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, sizeof(h));
      out[i] = std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
    }
    return;
  }
  const float* f16 = f16_table();
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, sizeof(h));
    out[i] = f16[h];
  }
}

std::optional<uint64_t> checked_numel(const std::vector<uint64_t>& dims) {
  constexpr uint64_t kLimit = uint64_t{1} << 60;
  uint64_t numel = 1, extent = 1;  // extent: the product of the non-zero dimensions
  for (uint64_t d : dims) {
    if (d != 0 && extent > kLimit / d) return std::nullopt;
    if (d != 0) extent *= d;
    numel *= d;
  }
  return numel;
}

}  // namespace hanpu::model
