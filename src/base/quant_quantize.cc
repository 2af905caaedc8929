// The 32-value quantizers (see quant_quantize.h) and the dispatch to the K ones. Written by
// hand because the only implementations are ggml's own (no packaged library offers them) and
// a file must come out byte for byte as llama.cpp's tools write it. The arithmetic follows
// ggml's reference order exactly: one rounding per operation, no fused multiply-add (this
// library is built without FMA in its baseline code, so none is contracted).
#include "base/quant_quantize.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/quant_quantize_k.h"
#include "hanpu/dtype.h"

namespace hanpu {

namespace {

constexpr int kBlock = 32;

void store_half(uint8_t* p, float x) {
  const uint16_t h = f32_to_f16_bits(x);
  std::memcpy(p, &h, sizeof(h));
}

// Q4_0 and Q5_0: the value of largest magnitude (the first, on ties) sets a negative-signed
// scale d = max / -2^(bits-1); q = trunc(x / d + 2^(bits-1) + 0.5), clipped to the top code.
void symmetric_codes(const float* x, int bits, float* d, uint8_t* q) {
  float amax = 0, max = 0;
  for (int j = 0; j < kBlock; ++j) {
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  }
  const float half = static_cast<float>(1 << (bits - 1));
  *d = max / -half;
  const float id = *d != 0 ? 1.0f / *d : 0.0f;
  const float top = static_cast<float>((1 << bits) - 1);
  for (int j = 0; j < kBlock; ++j)
    q[j] = static_cast<uint8_t>(std::min(top, std::trunc(x[j] * id + (half + 0.5f))));
}

// Q4_1 and Q5_1: d = (max - min) / (2^bits - 1), m = min; q = trunc((x - min) / d + 0.5).
void affine_codes(const float* x, int bits, float* d, float* m, uint8_t* q) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < kBlock; ++j) min = std::min(min, x[j]), max = std::max(max, x[j]);
  *d = (max - min) / static_cast<float>((1 << bits) - 1);
  *m = min;
  const float id = *d != 0 ? 1.0f / *d : 0.0f;
  const float top = static_cast<float>((1 << bits) - 1);
  for (int j = 0; j < kBlock; ++j)
    q[j] = static_cast<uint8_t>(std::min(top, std::trunc((x[j] - min) * id + 0.5f)));
}

// Low nibbles of values j and j + 16 in byte j; the 5th bits (if any) as a 32-bit word.
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kBlock / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kBlock / 2] & 0x0F) << 4));
}
void pack_fifth_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kBlock; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, sizeof(bits));
}

void quantize_block32(QuantType t, const float* x, uint8_t* b) {
  float d = 0, m = 0;
  uint8_t q[kBlock];
  switch (t) {
    case QuantType::kQ8_0: {
      float amax = 0;
      for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
      d = amax / 127;
      const float id = d != 0 ? 1.0f / d : 0.0f;
      for (int j = 0; j < kBlock; ++j)
        b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
      break;
    }
    case QuantType::kQ4_0:
      symmetric_codes(x, 4, &d, q);
      pack_nibbles(q, b + 2);
      break;
    case QuantType::kQ5_0:
      symmetric_codes(x, 5, &d, q);
      pack_fifth_bits(q, b + 2);
      pack_nibbles(q, b + 6);
      break;
    case QuantType::kQ4_1:
      affine_codes(x, 4, &d, &m, q);
      store_half(b + 2, m);
      pack_nibbles(q, b + 4);
      break;
    case QuantType::kQ5_1:
      affine_codes(x, 5, &d, &m, q);
      store_half(b + 2, m);
      pack_fifth_bits(q, b + 4);
      pack_nibbles(q, b + 8);
      break;
    default:
      return;
  }
  store_half(b, d);
}

}  // namespace

bool quant_type_quantizable(QuantType t) {
  switch (t) {
    case QuantType::kQ2_K:
    case QuantType::kQ3_K:
      return false;
    default:
      return true;
  }
}

int ggml_nearest_int(float x) {
  const float v = x + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &v, sizeof(i));
  return (i & 0x007FFFFF) - 0x00400000;
}

std::optional<QuantType> quant_type_for_row(QuantType t, int64_t in) {
  if (in % quant_type_info(t).block_elems != 0) {
    switch (t) {
      case QuantType::kQ4_K:
        t = QuantType::kQ5_0;
        break;
      case QuantType::kQ5_K:
        t = QuantType::kQ5_1;
        break;
      case QuantType::kQ6_K:
        t = QuantType::kQ8_0;
        break;
      case QuantType::kIQ4_XS:
        t = QuantType::kIQ4_NL;
        break;
      case QuantType::kQ2_K:
      case QuantType::kQ3_K:
        t = QuantType::kQ4_0;
        break;
      default:
        break;
    }
  }
  if (in % quant_type_info(t).block_elems != 0) return std::nullopt;
  return t;
}

std::vector<std::string> quantizable_type_names() {
  std::vector<std::string> out;
  for (const QuantTypeInfo& t : quant_types()) {
    if (!quant_type_quantizable(t.type)) continue;
    std::string& name = out.emplace_back();
    for (char c : t.name) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

void quantize_blocks(QuantType t, const float* src, size_t blocks, uint8_t* dst) {
  const QuantTypeInfo& info = quant_type_info(t);
  const size_t bytes = static_cast<size_t>(info.bytes),
               elems = static_cast<size_t>(info.block_elems);
  for (size_t i = 0; i < blocks; ++i) {
    const float* x = src + i * elems;
    uint8_t* b = dst + i * bytes;
    switch (t) {
      case QuantType::kQ4_K:
        quantize_q4_k_block(x, b);
        break;
      case QuantType::kQ5_K:
        quantize_q5_k_block(x, b);
        break;
      case QuantType::kQ6_K:
        quantize_q6_k_block(x, b);
        break;
      case QuantType::kIQ4_NL:
        quantize_iq4_nl_block(x, b);
        break;
      case QuantType::kIQ4_XS:
        quantize_iq4_xs_block(x, b);
        break;
      default:
        quantize_block32(t, x, b);
    }
  }
}

}  // namespace hanpu
