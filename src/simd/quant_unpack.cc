// Scalar unpacking of GGUF blocks into codes, scales and offsets (see quant_unpack.h). The
// bit layouts are those base/quant_blocks.cc decodes; scales are formed as it forms them (d
// times the sub-scale, in f32), so scale * code - offset is the decoded value up to one
// rounding of the product.
#include "simd/quant_unpack.h"

#include <array>
#include <cstring>

#include "base/quant_block_fields.h"

namespace hanpu::simd {

namespace {

using namespace quant_fields;  // NOLINT: the block field readers

// For each byte value v, the 8 bytes (little-endian) whose byte j is 0x10 where bit j of v is
// set: Q5_0's and Q5_1's fifth bits moved onto eight codes at once.
constexpr auto kBit4OfEachByte = [] {
  std::array<uint64_t, 256> t{};
  for (int v = 0; v < 256; ++v) {
    for (int j = 0; j < 8; ++j) {
      if ((v >> j) & 1) t[v] |= uint64_t{0x10} << (8 * j);
    }
  }
  return t;
}();

// The 32 nibbles of the 16 bytes at qs in value order (quant_fields::nibble): low halves are
// values 0-15, high halves 16-31. Two loops without a branch, which the compiler vectorises.
void nibbles(const uint8_t* qs, uint8_t* code) {
  for (int j = 0; j < 16; ++j) code[j] = static_cast<uint8_t>(qs[j] & 0x0F);
  for (int j = 0; j < 16; ++j) code[16 + j] = static_cast<uint8_t>(qs[j] >> 4);
}

// One 32-value block into codes[32] and the scale and offset of its two groups.
void unpack_block32(QuantType t, const uint8_t* b, uint8_t* code, float* scale, float* offset) {
  const float d = half_at(b);
  float s = d, o = 0;
  switch (t) {
    case QuantType::kQ4_0:
      nibbles(b + 2, code);
      o = 8 * d;
      break;
    case QuantType::kQ4_1:
      nibbles(b + 4, code);
      o = -half_at(b + 2);
      break;
    case QuantType::kQ5_0:
    case QuantType::kQ5_1: {
      const bool min = t == QuantType::kQ5_1;
      uint32_t qh;
      std::memcpy(&qh, b + (min ? 4 : 2), sizeof(qh));
      nibbles(b + (min ? 8 : 6), code);
      // Bit j of qh is bit 4 of code j: each byte of qh spread over 8 codes by a table.
      for (int k = 0; k < 4; ++k) {
        uint64_t codes8;
        std::memcpy(&codes8, code + 8 * k, sizeof(codes8));
        codes8 |= kBit4OfEachByte[(qh >> (8 * k)) & 0xFF];
        std::memcpy(code + 8 * k, &codes8, sizeof(codes8));
      }
      o = min ? -half_at(b + 2) : 16 * d;
      break;
    }
    case QuantType::kQ8_0:
      for (int j = 0; j < 32; ++j) code[j] = static_cast<uint8_t>(b[2 + j] ^ 0x80);
      o = 128 * d;
      break;
    case QuantType::kIQ4_NL:
      nibbles(b + 2, code);
      for (int j = 0; j < 32; ++j) code[j] = static_cast<uint8_t>(kIq4Levels[code[j]] + 128);
      o = 128 * d;
      break;
    default:
      break;  // not a 32-value type
  }
  scale[0] = scale[1] = s;
  offset[0] = offset[1] = o;
}

void unpack_k(QuantType t, const uint8_t* b, QuantUnit* out) {
  uint8_t* code = out->code;
  switch (t) {
    case QuantType::kQ4_K:
    case QuantType::kQ5_K: {
      const float d = half_at(b), dmin = half_at(b + 2);
      const bool five = t == QuantType::kQ5_K;
      const uint8_t *qh = b + 16, *qs = b + (five ? 48 : 16);
      for (int sub = 0; sub < 8; ++sub) {
        int sc, m;
        q4k_scale_min(b + 4, sub, &sc, &m);
        out->scale[2 * sub] = out->scale[2 * sub + 1] = d * static_cast<float>(sc);
        out->offset[2 * sub] = out->offset[2 * sub + 1] = dmin * static_cast<float>(m);
        for (int j = 0; j < 32; ++j) {
          const int i = 32 * sub + j;
          int q = (qs[32 * (sub / 2) + j] >> (4 * (sub % 2))) & 0x0F;
          if (five) q |= one_bit(qh, i) << 4;
          code[i] = static_cast<uint8_t>(q);
        }
      }
      return;
    }
    case QuantType::kQ6_K: {
      const float d = half_at(b + 208);
      const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
      for (int i = 0; i < kQuantUnit; ++i) code[i] = static_cast<uint8_t>(q6k_code(b, b + 128, i));
      for (int g = 0; g < kQuantGroups; ++g) {
        out->scale[g] = d * static_cast<float>(sc[g]);
        out->offset[g] = 32 * out->scale[g];
      }
      return;
    }
    case QuantType::kQ3_K: {
      const float d = half_at(b + 108);
      const uint8_t *hmask = b, *qs = b + 32, *sb = b + 96;
      // two_bits(qs, i) + 4 one_bit(hmask, i), as loops over 32 bytes with fixed shifts (the
      // compiler vectorises them; per value, this unpacker ran at well under 1 GB/s).
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < 4; ++k) {
          uint8_t* c = code + 128 * h + 32 * k;
          for (int l = 0; l < 32; ++l)
            c[l] = static_cast<uint8_t>(((qs[32 * h + l] >> (2 * k)) & 3) |
                                        (((hmask[l] >> (4 * h + k)) & 1) << 2));
        }
      }
      for (int s = 0; s < kQuantGroups; ++s) {
        const int scale = (((sb[s % 8] >> (4 * (s / 8))) & 0x0F) |
                           (((sb[8 + s % 4] >> (2 * (s / 4))) & 3) << 4)) -
                          32;
        out->scale[s] = d * static_cast<float>(scale);
        out->offset[s] = 4 * out->scale[s];
      }
      return;
    }
    case QuantType::kQ2_K: {
      const float d = half_at(b + 80), dmin = half_at(b + 82);
      for (int h = 0; h < 2; ++h) {  // two_bits(b + 16, i), 32 bytes at a time
        for (int k = 0; k < 4; ++k) {
          uint8_t* c = code + 128 * h + 32 * k;
          for (int l = 0; l < 32; ++l)
            c[l] = static_cast<uint8_t>((b[16 + 32 * h + l] >> (2 * k)) & 3);
        }
      }
      for (int s = 0; s < kQuantGroups; ++s) {
        out->scale[s] = d * static_cast<float>(b[s] & 0x0F);
        out->offset[s] = dmin * static_cast<float>(b[s] >> 4);
      }
      return;
    }
    case QuantType::kIQ4_XS: {
      const float d = half_at(b);
      for (int ib = 0; ib < 8; ++ib) {
        const float dl = d * static_cast<float>(iq4xs_scale(b, ib));
        out->scale[2 * ib] = out->scale[2 * ib + 1] = dl;
        out->offset[2 * ib] = out->offset[2 * ib + 1] = 128 * dl;
        for (int j = 0; j < 32; ++j)
          code[32 * ib + j] = static_cast<uint8_t>(kIq4Levels[nibble(b + 8 + 16 * ib, j)] + 128);
      }
      return;
    }
    default:
      return;  // a 32-value type
  }
}

}  // namespace

void unpack_unit(QuantType t, const uint8_t* row, int in, int u, QuantUnit* out) {
  const QuantTypeInfo& info = quant_type_info(t);
  if (info.block_elems == kQuantUnit) {
    unpack_k(t, row + static_cast<size_t>(u) * info.bytes, out);
    return;
  }
  const int first = u * (kQuantUnit / 32), blocks = in / 32;
  for (int k = 0; k < kQuantUnit / 32; ++k) {
    uint8_t* code = out->code + 32 * k;
    if (first + k < blocks) {
      unpack_block32(t, row + static_cast<size_t>(first + k) * info.bytes, code, out->scale + 2 * k,
                     out->offset + 2 * k);
    } else {
      std::memset(code, 0, 32);
      out->scale[2 * k] = out->scale[2 * k + 1] = 0;
      out->offset[2 * k] = out->offset[2 * k + 1] = 0;
    }
  }
}

}  // namespace hanpu::simd
