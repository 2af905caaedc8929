// safetensors checkpoints: one file, or shards listed by model.safetensors.index.json.
// Format: u64 little-endian header length N, N bytes of JSON {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {...}}, then the data (offsets relative to it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hanpu/status.h"
#include "model/weight_store.h"

namespace hanpu::model {

// Largest header accepted: real checkpoints have headers of a few hundred KB.
inline constexpr uint64_t kMaxSafetensorsHeader = uint64_t{100} << 20;

// Validates the header of a safetensors file held in `bytes` (a whole file) and adds its
// tensors to `store`, pointing into `bytes`. Every field is checked: header length inside the
// file, JSON well formed, dtypes supported (F32/F16/BF16; others, e.g. quantised ones, are
// named and refused), shapes non-negative and not absurd, byte ranges inside the data and
// matching the shape, tensors not overlapping. `file` names the file in errors.
Status parse_safetensors(const uint8_t* bytes, size_t size, const std::string& file,
                         WeightStore* store);

// Maps and parses `path`: a .safetensors file, a model.safetensors.index.json, or a folder
// holding either (the index wins). Every tensor the index names must be in its shard.
Status load_safetensors(const std::string& path, WeightStore* store);

}  // namespace hanpu::model
