// GGUF block decoding (see quant_blocks.h). Plain scalar code on purpose: it is the reference
// the vectorised quantized kernels are tested against, and it must round as numpy does, one
// f32 multiply (then one add for the types with a min), never a fused multiply-add.
#include "base/quant_blocks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "base/quant_block_fields.h"
#include "hanpu/dtype.h"

namespace hanpu {

namespace {

using namespace quant_fields;  // NOLINT: the block field readers

constexpr int kBlock = 32;   // values per block of the 32-value types
constexpr int kSuper = 256;  // values per block of the K types (ggml's QK_K)

constexpr QuantTypeInfo kTypes[] = {
    {QuantType::kQ4_0, "Q4_0", 2, kBlock, 18},      {QuantType::kQ4_1, "Q4_1", 3, kBlock, 20},
    {QuantType::kQ5_0, "Q5_0", 6, kBlock, 22},      {QuantType::kQ5_1, "Q5_1", 7, kBlock, 24},
    {QuantType::kQ8_0, "Q8_0", 8, kBlock, 34},      {QuantType::kQ4_K, "Q4_K", 12, kSuper, 144},
    {QuantType::kQ6_K, "Q6_K", 14, kSuper, 210},    {QuantType::kQ2_K, "Q2_K", 10, kSuper, 84},
    {QuantType::kQ3_K, "Q3_K", 11, kSuper, 110},    {QuantType::kQ5_K, "Q5_K", 13, kSuper, 176},
    {QuantType::kIQ4_NL, "IQ4_NL", 20, kBlock, 18}, {QuantType::kIQ4_XS, "IQ4_XS", 23, kSuper, 136},
};

// Where a block's f16 super-scale d is, and its f16 min (dmin) where the type has one (-1).
int d_offset(QuantType t) {
  switch (t) {
    case QuantType::kQ6_K:
      return 208;
    case QuantType::kQ3_K:
      return 108;
    case QuantType::kQ2_K:
      return 80;
    default:
      return 0;
  }
}
int min_offset(QuantType t) {
  switch (t) {
    case QuantType::kQ4_1:
    case QuantType::kQ5_1:
    case QuantType::kQ4_K:
    case QuantType::kQ5_K:
      return 2;
    case QuantType::kQ2_K:
      return 82;
    default:
      return -1;
  }
}

// d q (+ m): the product rounded to f32 on its own, as numpy computes it. `volatile` keeps a
// compiler from contracting the two into one fused multiply-add, which rounds once.
float scaled(float d, float q) {
  volatile float p = d * q;
  return p;
}

void decode_block(QuantType t, const uint8_t* b, float* x) {
  const float d = half_at(b + d_offset(t));
  switch (t) {
    case QuantType::kQ4_0:
      for (int j = 0; j < kBlock; ++j) x[j] = scaled(d, static_cast<float>(nibble(b + 2, j) - 8));
      return;
    case QuantType::kQ4_1: {
      const float m = half_at(b + 2);
      for (int j = 0; j < kBlock; ++j) x[j] = scaled(d, static_cast<float>(nibble(b + 4, j))) + m;
      return;
    }
    case QuantType::kQ5_0:
    case QuantType::kQ5_1: {
      const bool min = t == QuantType::kQ5_1;
      const uint8_t* qh_at = b + (min ? 4 : 2);
      uint32_t qh;
      std::memcpy(&qh, qh_at, sizeof(qh));
      const uint8_t* qs = qh_at + 4;
      const float m = min ? half_at(b + 2) : 0.0f;
      for (int j = 0; j < kBlock; ++j) {
        const int q = nibble(qs, j) | static_cast<int>(((qh >> j) & 1u) << 4);
        x[j] = min ? scaled(d, static_cast<float>(q)) + m : scaled(d, static_cast<float>(q - 16));
      }
      return;
    }
    case QuantType::kQ8_0:
      for (int j = 0; j < kBlock; ++j)
        x[j] = scaled(d, static_cast<float>(static_cast<int8_t>(b[2 + j])));
      return;
    case QuantType::kQ4_K: {
      // Sub-block 2g takes the low nibbles of qs bytes 32g..32g+31, sub-block 2g+1 their high
      // nibbles; each has its own scale and min, multiplied by d and dmin in f32 first.
      const float dmin = half_at(b + 2);
      const uint8_t* qs = b + 16;
      for (int sub = 0; sub < 8; ++sub) {
        int sc, m;
        q4k_scale_min(b + 4, sub, &sc, &m);
        const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(m);
        const uint8_t* q = qs + 32 * (sub / 2);
        const int shift = 4 * (sub % 2);
        for (int j = 0; j < 32; ++j)
          x[32 * sub + j] = scaled(ds, static_cast<float>((q[j] >> shift) & 0x0F)) - dm;
      }
      return;
    }
    case QuantType::kQ6_K: {
      // 6-bit codes (q6k_code) less 32; value i's scale is i / 16.
      const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
      for (int i = 0; i < kSuper; ++i) {
        const float ds = d * static_cast<float>(sc[i / 16]);
        x[i] = scaled(ds, static_cast<float>(q6k_code(b, b + 128, i) - 32));
      }
      return;
    }
    case QuantType::kQ5_K: {
      // Q4_K's scales, mins and nibbles, with a 5th bit per value from the 32 bytes of qh.
      const float dmin = half_at(b + 2);
      const uint8_t *qh = b + 16, *qs = b + 48;
      for (int sub = 0; sub < 8; ++sub) {
        int sc, m;
        q4k_scale_min(b + 4, sub, &sc, &m);
        const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(m);
        for (int j = 0; j < 32; ++j) {
          const int i = 32 * sub + j;
          const int q =
              ((qs[32 * (sub / 2) + j] >> (4 * (sub % 2))) & 0x0F) | (one_bit(qh, i) << 4);
          x[i] = scaled(ds, static_cast<float>(q)) - dm;
        }
      }
      return;
    }
    case QuantType::kQ3_K: {
      // 16 six-bit scales (offset 32): the low 4 bits are nibble s / 8 of byte s % 8, the high 2
      // bits pair s / 4 of byte 8 + s % 4. A value is its 2 low bits, less 4 where its hmask
      // bit is clear.
      const uint8_t *hmask = b, *qs = b + 32, *sb = b + 96;
      for (int i = 0; i < kSuper; ++i) {
        const int s = i / 16;
        const int scale = (((sb[s % 8] >> (4 * (s / 8))) & 0x0F) |
                           (((sb[8 + s % 4] >> (2 * (s / 4))) & 3) << 4)) -
                          32;
        const float dl = d * static_cast<float>(scale);
        x[i] = scaled(dl, static_cast<float>(two_bits(qs, i) - (one_bit(hmask, i) ? 0 : 4)));
      }
      return;
    }
    case QuantType::kQ2_K: {
      // 16 sub-blocks of 16: byte s of the first 16 holds sub-block s's 4-bit scale (low) and
      // min (high).
      const float dmin = half_at(b + 82);
      const uint8_t* qs = b + 16;
      for (int i = 0; i < kSuper; ++i) {
        const int s = i / 16;
        const float dl = d * static_cast<float>(b[s] & 0x0F),
                    ml = dmin * static_cast<float>(b[s] >> 4);
        x[i] = scaled(dl, static_cast<float>(two_bits(qs, i))) - ml;
      }
      return;
    }
    case QuantType::kIQ4_NL:
      for (int j = 0; j < kBlock; ++j)
        x[j] = scaled(d, static_cast<float>(kIq4Levels[nibble(b + 2, j)]));
      return;
    case QuantType::kIQ4_XS: {
      // 8 sub-blocks of 32 with six-bit scales (iq4xs_scale). Sub-block ib's values are the
      // 16 bytes at 8 + 16 ib, low nibbles first, mapped through the IQ4 levels.
      for (int ib = 0; ib < 8; ++ib) {
        const float dl = d * static_cast<float>(iq4xs_scale(b, ib));
        for (int j = 0; j < 32; ++j)
          x[32 * ib + j] = scaled(dl, static_cast<float>(kIq4Levels[nibble(b + 8 + 16 * ib, j)]));
      }
      return;
    }
  }
}

}  // namespace

std::span<const QuantTypeInfo> quant_types() { return kTypes; }

const QuantTypeInfo& quant_type_info(QuantType t) { return kTypes[static_cast<int>(t)]; }

std::optional<QuantType> quant_type_of_ggml(uint32_t ggml_type) {
  for (const QuantTypeInfo& i : kTypes) {
    if (i.ggml_type == ggml_type) return i.type;
  }
  return std::nullopt;
}

std::optional<QuantType> parse_quant_type(std::string_view name) {
  for (const QuantTypeInfo& i : kTypes) {
    if (i.name.size() == name.size() &&
        std::equal(name.begin(), name.end(), i.name.begin(),
                   [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; }))
      return i.type;
  }
  return std::nullopt;
}

std::string quant_type_names() {
  std::string s;
  for (const QuantTypeInfo& i : kTypes) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

int quant_scale_offset(QuantType t) { return d_offset(t); }
int quant_min_offset(QuantType t) { return min_offset(t); }

void dequantize_blocks(QuantType t, const uint8_t* src, size_t blocks, float* dst) {
  const QuantTypeInfo& info = quant_type_info(t);
  const size_t bytes = static_cast<size_t>(info.bytes),
               elems = static_cast<size_t>(info.block_elems);
  for (size_t i = 0; i < blocks; ++i) decode_block(t, src + i * bytes, dst + i * elems);
}

size_t first_block_with_bad_scale(QuantType t, const uint8_t* src, size_t blocks) {
  const size_t bytes = static_cast<size_t>(quant_type_info(t).bytes);
  for (size_t i = 0; i < blocks; ++i) {
    const uint8_t* b = src + i * bytes;
    const int m = min_offset(t);
    if (!std::isfinite(half_at(b + d_offset(t))) || (m >= 0 && !std::isfinite(half_at(b + m))))
      return i;
  }
  return blocks;
}

}  // namespace hanpu
