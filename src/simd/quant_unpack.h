// GGUF blocks (base/quant_blocks.h) in the one form every quantized dot kernel multiplies:
// 256 values of a row as unsigned 8-bit codes with a scale and an offset per group of 16,
//   w_i = scale[i / 16] * code_i - offset[i / 16],
// so the integer part of a dot product is always u8 codes times the int8 activations (the
// operand order of x86's vpdpbusd / vpmaddubsw) whatever the type: a signed type is shifted
// up (Q8_0: code = q + 128, offset = 128 d), a type with a min puts it in the offset. Groups
// of 16 are the finest any type scales (Q2_K, Q3_K, Q6_K); the 32-value types give both of a
// block's groups its scale.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/quant_blocks.h"

namespace hanpu::simd {

inline constexpr int kQuantUnit = 256;  // values per unpacked unit
inline constexpr int kQuantGroup = 16;  // values per scale
inline constexpr int kQuantGroups = kQuantUnit / kQuantGroup;

struct QuantUnit {
  alignas(64) uint8_t code[kQuantUnit];
  alignas(64) float scale[kQuantGroups];
  alignas(64) float offset[kQuantGroups];
};

// Bytes of a whole unit of type t: one 256-value block, or eight 32-value ones.
constexpr int quant_unit_bytes(QuantType t) {
  switch (t) {
    case QuantType::kQ4_0:
    case QuantType::kIQ4_NL:
      return 8 * 18;
    case QuantType::kQ4_1:
      return 8 * 20;
    case QuantType::kQ5_0:
      return 8 * 22;
    case QuantType::kQ5_1:
      return 8 * 24;
    case QuantType::kQ8_0:
      return 8 * 34;
    case QuantType::kQ4_K:
      return 144;
    case QuantType::kQ6_K:
      return 210;
    case QuantType::kQ2_K:
      return 84;
    case QuantType::kQ3_K:
      return 110;
    case QuantType::kQ5_K:
      return 176;
    case QuantType::kIQ4_XS:
      return 136;
  }
  return 0;
}

// Units in a row of `in` values (the last one partly past the row's end for a 32-value type).
inline int quant_units(int in) { return (in + kQuantUnit - 1) / kQuantUnit; }

// Unit u (values 256 u .. 256 u + 255) of a row of `in` values stored as blocks of type t at
// `row`. Values past the row's end get code 0, scale 0 and offset 0. Plain scalar code: the
// reference of the vector unpackers, and the path of types without one.
void unpack_unit(QuantType t, const uint8_t* row, int in, int u, QuantUnit* out);

// The types stored in 32-value blocks, eight to a unit (a row's last unit may be partial).
template <QuantType T>
inline constexpr bool kBlocks32 =
    T == QuantType::kQ4_0 || T == QuantType::kQ4_1 || T == QuantType::kQ5_0 ||
    T == QuantType::kQ5_1 || T == QuantType::kQ8_0 || T == QuantType::kIQ4_NL;

// Unit u of a row of `in` values of a 32-value block type T, as a whole unit's bytes for the
// vector unpackers: in place where the unit is whole; a partial last unit (a row of 128 values
// has no whole one) copied in front of zero bytes into `buf`, whose blocks are then all-zero
// weights (scale 0) against the activations' zero padding.
template <QuantType T>
inline const uint8_t* unit_of_blocks(const uint8_t* row, int in, int u,
                                     uint8_t (&buf)[quant_unit_bytes(T)]) {
  constexpr int kBlockBytes = quant_unit_bytes(T) / (kQuantUnit / 32);
  const uint8_t* at = row + static_cast<size_t>(u) * quant_unit_bytes(T);
  const int have = in - u * kQuantUnit;
  if (have >= kQuantUnit) return at;
  const size_t kept = static_cast<size_t>(have / 32) * kBlockBytes;
  std::memcpy(buf, at, kept);
  std::memset(buf + kept, 0, sizeof(buf) - kept);
  return buf;
}

// The weights stream from DRAM once per decode step: the kernels ask for the lines of unit
// u + 1 of a row kQuantPrefetchBytes further on, beyond what the hardware prefetcher runs ahead
// of one core's demand (docs/performance.md, "Design measurements": 1024 and 2048 measured
// best, 4096 and 8192 worse).
inline constexpr int kQuantPrefetchBytes = 2048;
template <QuantType T>
inline void prefetch_ahead(const uint8_t* row, int u) {
  constexpr int kBytes = quant_unit_bytes(T);
  const uint8_t* ahead = row + (u + 1) * kBytes + kQuantPrefetchBytes;
  for (int l = 0; l < kBytes; l += 64) __builtin_prefetch(ahead + l, 0, 3);
}

// Activation rows [r0, r1) in tiles of 4 and one tail tile: f(std::integral_constant<int, R>,
// first row) per tile, so a kernel's accumulators for R rows are sized at compile time.
template <class F>
void for_row_tiles(int64_t r0, int64_t r1, F f) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) f(std::integral_constant<int, 4>{}, r);
  switch (r1 - r) {
    case 3:
      return f(std::integral_constant<int, 3>{}, r);
    case 2:
      return f(std::integral_constant<int, 2>{}, r);
    case 1:
      return f(std::integral_constant<int, 1>{}, r);
    default:
      return;
  }
}

// Calls f with std::integral_constant<QuantType, t>: one instantiation of a kernel per type.
template <class F>
void for_quant_type(QuantType t, F f) {
  switch (t) {
    case QuantType::kQ4_0:
      return f(std::integral_constant<QuantType, QuantType::kQ4_0>{});
    case QuantType::kQ4_1:
      return f(std::integral_constant<QuantType, QuantType::kQ4_1>{});
    case QuantType::kQ5_0:
      return f(std::integral_constant<QuantType, QuantType::kQ5_0>{});
    case QuantType::kQ5_1:
      return f(std::integral_constant<QuantType, QuantType::kQ5_1>{});
    case QuantType::kQ8_0:
      return f(std::integral_constant<QuantType, QuantType::kQ8_0>{});
    case QuantType::kQ4_K:
      return f(std::integral_constant<QuantType, QuantType::kQ4_K>{});
    case QuantType::kQ6_K:
      return f(std::integral_constant<QuantType, QuantType::kQ6_K>{});
    case QuantType::kQ2_K:
      return f(std::integral_constant<QuantType, QuantType::kQ2_K>{});
    case QuantType::kQ3_K:
      return f(std::integral_constant<QuantType, QuantType::kQ3_K>{});
    case QuantType::kQ5_K:
      return f(std::integral_constant<QuantType, QuantType::kQ5_K>{});
    case QuantType::kIQ4_NL:
      return f(std::integral_constant<QuantType, QuantType::kIQ4_NL>{});
    case QuantType::kIQ4_XS:
      return f(std::integral_constant<QuantType, QuantType::kIQ4_XS>{});
  }
}

}  // namespace hanpu::simd
