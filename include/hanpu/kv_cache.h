// One attention layer's key/value cache: K and V each as Hkv blocks of [capacity, D] rows
// (head-major: each kv head's rows contiguous) in one storage dtype. attn_kv() hands the
// first length() rows to attn_prefill / attn_decode through AttnArgs' strides, with no
// gather. Head-major because decode reads the whole cache every step, cold (the weights
// stream through the caches in between), and one head's keys in address order read ~1.4x
// faster than the token-major layout's half rows a head apart (docs/performance.md). A 16-bit
// cache (bf16/f16, as llama.cpp's f16 default) halves the bytes a decode step reads; the
// kernels widen its rows tile by tile. Grows by doubling: appending n tokens is amortised
// O(n) copies, never a reallocation per token.
#pragma once

#include <cstdint>
#include <vector>

#include "hanpu/attn.h"
#include "hanpu/status.h"
#include "hanpu/tensor.h"

namespace hanpu {

// What a cache holds per token: keys and values, or keys alone where the values are the keys
// (MLA's compressed cache: one latent row per token is both, for the absorbed decode).
enum class KvValues : uint8_t { kStored, kAreKeys };

class KvCache {
 public:
  // Hkv >= 1, D >= 1; initial_capacity in tokens (>= 1).
  KvCache(int kv_heads, int head_dim, DType dtype, int64_t initial_capacity = 256,
          KvValues values = KvValues::kStored);

  // Appends n tokens: k and v are [n, Hkv, D], both in the cache's dtype or both fp32 (rounded
  // to the cache's dtype on the way in, round-to-nearest-even). On error (naming the argument)
  // the cache is unchanged. A kAreKeys cache checks v's shape and keeps k alone.
  Status append(const TensorView& k, const TensorView& v);
  // Makes room for `tokens` tokens in all (no-op if there is): one reallocation now instead of
  // the doublings (and their copies) appends would make on the way. On error the cache is
  // unchanged.
  Status reserve(int64_t tokens);
  // Keeps the first `length` tokens (e.g. to drop rejected speculative tokens).
  Status truncate(int64_t length);
  void clear() { length_ = 0; }

  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  int growths() const { return growths_; }  // reallocations so far
  int kv_heads() const { return kv_heads_; }
  int head_dim() const { return head_dim_; }
  DType dtype() const { return dtype_; }
  KvValues values() const { return values_; }
  bool values_are_keys() const { return values_ == KvValues::kAreKeys; }

  // Sets args->k, args->v and their strides to the first length() rows ([length, Hkv, D]
  // in shape; v = k in a kAreKeys cache), valid until the next append or reserve.
  void attn_kv(AttnArgs* args) const;
  // Tokens [t0, t0 + n) widened to fp32 in token-major [n, Hkv, D] rows (k_out and v_out
  // may be null; a kAreKeys cache gives its keys as values); an error (nothing written)
  // unless 0 <= t0 and t0 + n <= length().
  Status read_f32(int64_t t0, int64_t n, float* k_out, float* v_out) const;

 private:
  size_t row_bytes() const;  // one head's row of D values
  // Head h's row of token t in k_ or v_.
  size_t row_offset(int64_t t, int h) const {
    return (static_cast<size_t>(h) * capacity_ + static_cast<size_t>(t)) * row_bytes();
  }
  Status grow_to(int64_t capacity, const char* who);
  int kv_heads_, head_dim_;
  DType dtype_;
  KvValues values_;
  int64_t length_ = 0, capacity_ = 0;
  int growths_ = 0;
  std::vector<uint8_t> k_, v_;  // v_ empty in a kAreKeys cache
};

}  // namespace hanpu
