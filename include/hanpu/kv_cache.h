// One attention layer's key/value cache: K and V as contiguous [capacity, Hkv, D] rows in one
// storage dtype, so the first length() rows are exactly the k/v tensors attn_prefill and
// attn_decode take, with no gather. A 16-bit cache (bf16/f16, as llama.cpp's f16 default)
// halves the bytes a decode step reads; the kernels widen its rows tile by tile. Grows by doubling: appending n tokens is amortised O(n)
// copies, never a reallocation per token.
#pragma once

#include <cstdint>
#include <vector>

#include "hanpu/status.h"
#include "hanpu/tensor.h"

namespace hanpu {

class KvCache {
 public:
  // Hkv >= 1, D >= 1; initial_capacity in tokens (>= 1).
  KvCache(int kv_heads, int head_dim, DType dtype, int64_t initial_capacity = 256);

  // Appends n tokens: k and v are [n, Hkv, D], both in the cache's dtype or both fp32 (rounded
  // to the cache's dtype on the way in, round-to-nearest-even). On error (naming the argument)
  // the cache is unchanged.
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

  // [length, Hkv, D] views, valid until the next append.
  TensorView keys() const { return {k_.data(), dtype_, {length_, kv_heads_, head_dim_}}; }
  TensorView values() const { return {v_.data(), dtype_, {length_, kv_heads_, head_dim_}}; }

 private:
  size_t token_bytes() const;
  Status grow_to(int64_t capacity, const char* who);
  int kv_heads_, head_dim_;
  DType dtype_;
  int64_t length_ = 0, capacity_ = 0;
  int growths_ = 0;
  std::vector<uint8_t> k_, v_;
};

}  // namespace hanpu
