// GGUF checkpoints (llama.cpp's format), F32/F16/BF16 tensors and the block types of
// base/quant_blocks.h in any mix, architectures `qwen35`, `qwen3next` and `kimi-linear`.
// Layout: "GGUF", u32 version (2 or 3), u64 tensor count, u64 metadata count, metadata (key
// string, u32 type, value), tensor infos (name, u32 n_dims, u64 ne[n_dims] innermost first,
// u32 ggml type, u64 offset into the data section), then the data section at the next
// multiple of general.alignment (default 32).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "hanpu/status.h"
#include "model/weight_store.h"

namespace hanpu::model {

// GGUF's metadata value types, as they are numbered on the wire.
enum GgufType : uint32_t {
  kGgufU8 = 0,
  kGgufI8 = 1,
  kGgufU16 = 2,
  kGgufI16 = 3,
  kGgufU32 = 4,
  kGgufI32 = 5,
  kGgufF32 = 6,
  kGgufBool = 7,
  kGgufString = 8,
  kGgufArray = 9,
  kGgufU64 = 10,
  kGgufI64 = 11,
  kGgufF64 = 12,
};

// A metadata value: integers (any width, as int64 / uint64), floats, bools, strings, arrays.
// `type` is the type it had in the file (for an array, `elem_type` its elements'), so that a
// file written back says what it read: llama.cpp checks a key's type, not just its value.
// Values made in code leave `type` unset and are written as the variant's widest type.
struct GgufValue {
  std::variant<int64_t, uint64_t, double, bool, std::string, std::vector<GgufValue>> v;
  std::optional<GgufType> type = std::nullopt;
  GgufType elem_type = kGgufU8;
  bool is_int() const {
    return std::holds_alternative<int64_t>(v) || std::holds_alternative<uint64_t>(v);
  }
  int64_t as_int() const;  // callers check is_int()
  bool operator==(const GgufValue&) const = default;
};

using GgufMetadata = std::map<std::string, GgufValue>;

// The string value of `key`, or null where it is missing or not a string.
const std::string* gguf_string(const GgufMetadata& meta, const std::string& key);
// The integer at `key` into `out`; where it is missing, `fallback`, or an error when
// `required`. A value of another type is an error naming `file` and the key.
Status gguf_int(const GgufMetadata& meta, const std::string& key, const std::string& file,
                bool required, int64_t fallback, int64_t* out);
// The number (float or integer) at `key`, or `fallback` where it is missing.
Status gguf_number(const GgufMetadata& meta, const std::string& key, const std::string& file,
                   double fallback, double* out);

// Limits that keep a corrupt header from making the parser allocate or loop without bound.
inline constexpr uint64_t kGgufMaxTensors = 1u << 20;
inline constexpr uint64_t kGgufMaxMetadata = 1u << 20;
inline constexpr uint64_t kGgufMaxString = 1u << 24;
inline constexpr uint64_t kGgufMaxArray = 1u << 26;

// Validates the header of a whole GGUF file held in `bytes`; fills `meta` and adds the
// tensors to `store` under their GGUF names (shape reversed to row-major, outermost first).
// Errors name the file and the byte offset: truncation, bad magic or version, absurd counts
// or lengths, unknown value types, tensor types hanpu does not load (named, with the list it
// does), rows that are not whole blocks of their type, blocks whose scale is NaN or infinite
// (named by block, row and offset), data ranges past the end or overlapping. Nothing is added
// on error.
Status parse_gguf(const uint8_t* bytes, size_t size, const std::string& file, GgufMetadata* meta,
                  WeightStore* store);

// Maps and parses a .gguf file.
Status load_gguf(const std::string& path, GgufMetadata* meta, WeightStore* store);

}  // namespace hanpu::model
