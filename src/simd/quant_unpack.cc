// Scalar unpacking of GGUF blocks into codes, scales and offsets (see quant_unpack.h). The
// bit layouts are those base/quant_blocks.cc decodes; scales are formed as it forms them (d
// times the sub-scale, in f32), so scale * code - offset is the decoded value up to one
// rounding of the product.
#include "simd/quant_unpack.h"

#include <cstring>

#include "base/quant_block_fields.h"

namespace hanpu::simd {

namespace {

using namespace quant_fields;  // NOLINT: the block field readers

// One 32-value block into codes[32] and the scale and offset of its two groups.
void unpack_block32(QuantType t, const uint8_t* b, uint8_t* code, float* scale, float* offset) {
  const float d = half_at(b);
  float s = d, o = 0;
  switch (t) {
    case QuantType::kQ4_0:
      for (int j = 0; j < 32; ++j) code[j] = static_cast<uint8_t>(nibble(b + 2, j));
      o = 8 * d;
      break;
    case QuantType::kQ4_1:
      for (int j = 0; j < 32; ++j) code[j] = static_cast<uint8_t>(nibble(b + 4, j));
      o = -half_at(b + 2);
      break;
    case QuantType::kQ5_0:
    case QuantType::kQ5_1: {
      const bool min = t == QuantType::kQ5_1;
      uint32_t qh;
      std::memcpy(&qh, b + (min ? 4 : 2), sizeof(qh));
      const uint8_t* qs = b + (min ? 8 : 6);
      for (int j = 0; j < 32; ++j)
        code[j] = static_cast<uint8_t>(nibble(qs, j) | static_cast<int>(((qh >> j) & 1u) << 4));
      o = min ? -half_at(b + 2) : 16 * d;
      break;
    }
    case QuantType::kQ8_0:
      for (int j = 0; j < 32; ++j) code[j] = static_cast<uint8_t>(b[2 + j] ^ 0x80);
      o = 128 * d;
      break;
    case QuantType::kIQ4_NL:
      for (int j = 0; j < 32; ++j)
        code[j] = static_cast<uint8_t>(kIq4Levels[nibble(b + 2, j)] + 128);
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
      for (int i = 0; i < kQuantUnit; ++i)
        code[i] = static_cast<uint8_t>(two_bits(qs, i) + 4 * one_bit(hmask, i));
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
      for (int i = 0; i < kQuantUnit; ++i) code[i] = static_cast<uint8_t>(two_bits(b + 16, i));
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
