// Readers of the fields inside GGUF's quantized blocks (base/quant_blocks.h), shared by the
// reference decoder and the kernels' scalar unpacker so both read one definition of each
// layout.
#pragma once

#include <cstdint>
#include <cstring>

#include "hanpu/dtype.h"

namespace hanpu::quant_fields {

// IQ4_NL's and IQ4_XS's 16 levels (ggml's kvalues_iq4nl): a non-uniform 4-bit grid.
inline constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// The f16 at p (any alignment) as f32.
inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return f16_bits_to_f32(h);
}

// Value j's nibble (0..15) of the 16 bytes at `qs`: byte j holds value j in its low half and
// value j + 16 in its high half.
inline int nibble(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4; }

// Value i (of 256) of a plane of 2-bit fields (Q2_K's and Q3_K's 64 bytes): byte 32g + j holds
// values 128g + 32k + j in its bit pairs k = 0..3.
inline int two_bits(const uint8_t* q, int i) {
  return (q[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
}

// Value i's bit in a 32-byte plane of single bits (Q3_K's hmask, Q5_K's qh): bit i / 32 of
// byte i % 32.
inline int one_bit(const uint8_t* q, int i) { return (q[i % 32] >> (i / 32)) & 1; }

// Value i's 6-bit code (0..63) of a Q6_K block's 128 bytes of low nibbles `ql` and 64 bytes of
// 2-bit highs `qh`: of half h = i / 128 (r = i % 128), the low 4 bits are nibble r / 64 of ql
// byte 64h + r % 64, the high 2 bits pair r / 32 of qh byte 32h + r % 32.
inline int q6k_code(const uint8_t* ql, const uint8_t* qh, int i) {
  const int h = i / 128, r = i % 128;
  const int lo = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0F;
  const int hi = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 0x03;
  return lo | (hi << 4);
}

// IQ4_XS's signed six-bit scale of sub-block ib (of 8), offset by 32: its low 4 bits are
// nibble ib % 2 of byte 4 + ib / 2, its high 2 bits pair ib of the 16-bit word at byte 2.
inline int iq4xs_scale(const uint8_t* b, int ib) {
  uint16_t high;
  std::memcpy(&high, b + 2, sizeof(high));
  return (((b[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((high >> (2 * ib)) & 3) << 4)) - 32;
}

// Q4_K's (and Q5_K's) 12 scale bytes hold 8 six-bit scales and 8 six-bit mins: bytes 0-3 the
// low 6 bits of scales 0-3 (their top 2 bits: the high bits of scales 4-7), bytes 4-7 likewise
// for mins 0-3, bytes 8-11 the low 4 bits of scales 4-7 (low half) and of mins 4-7 (high half).
inline void q4k_scale_min(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 0x3F;
    *m = s[j + 4] & 0x3F;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 2) & 0x30);
    *m = (s[j + 4] >> 4) | ((s[j] >> 2) & 0x30);
  }
}

// The same for all eight sub-blocks at once, with ggml's 32-bit word operations: four words
// whose bytes are scales 0-7 then mins 0-7 (what the vector unpackers widen).
inline void q4k_scales_mins_words(const uint8_t* s, uint32_t w[4]) {
  std::memcpy(w, s, 12);
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kTop2 = 0x03030303;
  w[3] = ((w[2] >> 4) & kLow4) | (((w[1] >> 6) & kTop2) << 4);
  const uint32_t mins_lo = w[1] & kLow6;
  w[1] = (w[2] & kLow4) | (((w[0] >> 6) & kTop2) << 4);
  w[2] = mins_lo;
  w[0] &= kLow6;
}

}  // namespace hanpu::quant_fields
