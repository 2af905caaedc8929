// A validated attention call as every CPU kernel sees it: fp32 query and output rows (other
// storage dtypes are converted by attn_api.cc before and after), the key/value rows in their
// storage dtype (the fused and decode kernels widen 16-bit rows tile by tile, so a 16-bit KV
// cache is read at half the bytes and never converted whole), positions and visible key ranges.
#pragma once

#include <algorithm>
#include <cstdint>

#include "base/scratch.h"
#include "hanpu/attn.h"

namespace hanpu::cpu {

// Every kernel works in base 2 (STEEL: scale x log2(e) folded into Q, exp2); lse is reported
// in natural log.
inline constexpr float kLog2E = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

struct AttnProblem {
  DType dtype = DType::kF32;     // storage dtype of the caller's q and o
  DType kv_dtype = DType::kF32;  // storage dtype of k and v
  int64_t T = 0, Tk = 0;
  int Hq = 0, Hkv = 0, D = 0;
  int Dv = 0;  // the values' (and the output's) head dim; D unless the call says otherwise
  AttnMask mask = AttnMask::kCausal;
  int64_t q_offset = 0;  // key position of query row 0
  int64_t window = 0;
  float scale = 1.0f;
  const float* q = nullptr;           // [T, Hq, D]
  const void* k = nullptr;            // Tk x Hkv rows of D in kv_dtype, at kv_row()
  const void* v = nullptr;            // Tk x Hkv rows of Dv in kv_dtype, at v_row()
  int64_t kv_ld = 0, kv_head_ld = 0;  // elements between keys, between kv heads (AttnArgs strides)
  int64_t v_ld = 0, v_head_ld = 0;    // the same for the values (kv_ld, kv_head_ld where Dv = D)
  float* o = nullptr;                 // [T, Hq, Dv]
  float* lse = nullptr;               // [Hq, T] or null

  int group() const { return Hq / Hkv; }
  // Visible keys of query row i: [key_begin(i), key_end(i)), never empty for a valid call.
  int64_t key_begin(int64_t i) const {
    return mask == AttnMask::kSliding ? std::max<int64_t>(0, q_offset + i - window + 1) : 0;
  }
  int64_t key_end(int64_t i) const { return mask == AttnMask::kNone ? Tk : q_offset + i + 1; }
  size_t q_row(int64_t t, int h) const { return (static_cast<size_t>(t) * Hq + h) * D; }
  size_t kv_row(int64_t t, int hk) const {
    return static_cast<size_t>(t * kv_ld + hk * kv_head_ld);
  }
  size_t v_row(int64_t t, int hk) const { return static_cast<size_t>(t * v_ld + hk * v_head_ld); }
  size_t o_row(int64_t t, int h) const { return (static_cast<size_t>(t) * Hq + h) * Dv; }
};

// Checks every argument (naming it) before anything is written; fills p's shape fields
// (the data pointers are left to the caller, which may convert dtypes). `who` prefixes
// messages ("attn_prefill", "attn_decode").
Status validate_attn(const AttnArgs& args, const char* who, AttnProblem* p);

// What a kernel gets besides the problem.
struct AttnRunContext {
  int threads = 1;
  AttnTiles tiles;
  ScratchMeter* meter = nullptr;
  std::vector<double> busy_ms;
  // The fused prefill's products on the bf16 dot instruction (attn_tile_kernel.h); set by
  // attn_api.cc only where that can run (tiles.kv_rows even, bf16_dot_usable()).
  bool bf16_products = false;
};

}  // namespace hanpu::cpu
