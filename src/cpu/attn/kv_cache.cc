// KvCache: contiguous per-layer K/V rows grown by doubling (see kv_cache.h).
#include "hanpu/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "simd/vec_ops.h"

namespace hanpu {

KvCache::KvCache(int kv_heads, int head_dim, DType dtype, int64_t initial_capacity)
    : kv_heads_(std::max(kv_heads, 1)),
      head_dim_(std::max(head_dim, 1)),
      dtype_(dtype),
      capacity_(std::max<int64_t>(initial_capacity, 1)) {
  k_.resize(static_cast<size_t>(capacity_) * token_bytes());
  v_.resize(k_.size());
}

size_t KvCache::token_bytes() const {
  return static_cast<size_t>(kv_heads_) * head_dim_ * dtype_size(dtype_);
}

Status KvCache::grow_to(int64_t cap, const char* who) {
  try {
    std::vector<uint8_t> nk(static_cast<size_t>(cap) * token_bytes()), nv(nk.size());
    std::memcpy(nk.data(), k_.data(), static_cast<size_t>(length_) * token_bytes());
    std::memcpy(nv.data(), v_.data(), static_cast<size_t>(length_) * token_bytes());
    k_.swap(nk);
    v_.swap(nv);
  } catch (const std::bad_alloc&) {
    return Status::Error(fmt::format("{}: out of memory growing to {} tokens", who, cap));
  }
  capacity_ = cap;
  ++growths_;
  return Status::Ok();
}

Status KvCache::reserve(int64_t tokens) {
  if (tokens <= capacity_) return Status::Ok();
  return grow_to(tokens, "KvCache::reserve");
}

Status KvCache::append(const TensorView& k, const TensorView& v) {
  for (const auto& [name, t] : {std::pair{"k", &k}, std::pair{"v", &v}}) {
    if (t->shape.size() != 3 || t->shape[1] != kv_heads_ || t->shape[2] != head_dim_ || t->shape[0] < 0) {
      return Status::Error(fmt::format("KvCache::append: {} has shape {}, expected [n, {}, {}]", name,
                                       shape_str(t->shape), kv_heads_, head_dim_));
    }
    if (t->dtype != dtype_ && t->dtype != DType::kF32) {
      return Status::Error(fmt::format("KvCache::append: {} has dtype {}, the cache holds {} (and takes f32 rows)",
                                       name, dtype_name(t->dtype), dtype_name(dtype_)));
    }
    if (t->shape[0] > 0 && t->data == nullptr) {
      return Status::Error(fmt::format("KvCache::append: {} has no data", name));
    }
  }
  if (k.dtype != v.dtype) {
    return Status::Error(fmt::format("KvCache::append: k has dtype {} but v has {}", dtype_name(k.dtype),
                                     dtype_name(v.dtype)));
  }
  if (k.shape[0] != v.shape[0]) {
    return Status::Error(fmt::format("KvCache::append: k has {} tokens but v has {}", k.shape[0], v.shape[0]));
  }
  const int64_t n = k.shape[0];
  if (length_ + n > capacity_) {
    int64_t cap = capacity_;
    while (cap < length_ + n) cap *= 2;
    HANPU_RETURN_IF_ERROR(grow_to(cap, "KvCache::append"));
  }
  const size_t off = static_cast<size_t>(length_) * token_bytes(), bytes = static_cast<size_t>(n) * token_bytes();
  if (bytes > 0 && k.dtype == dtype_) {
    std::memcpy(k_.data() + off, k.data, bytes);
    std::memcpy(v_.data() + off, v.data, bytes);
  } else if (bytes > 0) {  // fp32 rows into a 16-bit cache
    const size_t elems = static_cast<size_t>(n) * kv_heads_ * head_dim_;
    simd::store_f32(k_.data() + off, dtype_, static_cast<const float*>(k.data), elems);
    simd::store_f32(v_.data() + off, dtype_, static_cast<const float*>(v.data), elems);
  }
  length_ += n;
  return Status::Ok();
}

Status KvCache::truncate(int64_t length) {
  if (length < 0 || length > length_) {
    return Status::Error(fmt::format("KvCache::truncate: length {} is not in [0, {}]", length, length_));
  }
  length_ = length;
  return Status::Ok();
}

}  // namespace hanpu
