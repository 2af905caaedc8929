// KvCache: per-layer head-major K/V rows grown by doubling (see kv_cache.h).
#include "hanpu/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "simd/vec_ops.h"

namespace hanpu {

KvCache::KvCache(int kv_heads, int head_dim, DType dtype, int64_t initial_capacity, KvValues values)
    : kv_heads_(std::max(kv_heads, 1)),
      head_dim_(std::max(head_dim, 1)),
      dtype_(dtype),
      values_(values),
      capacity_(std::max<int64_t>(initial_capacity, 1)) {
  k_.resize(static_cast<size_t>(capacity_) * kv_heads_ * row_bytes());
  if (!values_are_keys()) v_.resize(k_.size());
}

size_t KvCache::row_bytes() const { return static_cast<size_t>(head_dim_) * dtype_size(dtype_); }

Status KvCache::grow_to(int64_t cap, const char* who) {
  try {
    std::vector<uint8_t> nk(static_cast<size_t>(cap) * kv_heads_ * row_bytes()),
        nv(values_are_keys() ? 0 : nk.size());
    for (int h = 0; h < kv_heads_;
         ++h) {  // each head's block moves to its place in the larger buffer
      const size_t to = static_cast<size_t>(h) * cap * row_bytes(),
                   n = static_cast<size_t>(length_) * row_bytes();
      std::memcpy(nk.data() + to, k_.data() + row_offset(0, h), n);
      if (!values_are_keys()) std::memcpy(nv.data() + to, v_.data() + row_offset(0, h), n);
    }
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
    if (t->shape.size() != 3 || t->shape[1] != kv_heads_ || t->shape[2] != head_dim_ ||
        t->shape[0] < 0) {
      return Status::Error(fmt::format("KvCache::append: {} has shape {}, expected [n, {}, {}]",
                                       name, shape_str(t->shape), kv_heads_, head_dim_));
    }
    if (t->dtype != dtype_ && t->dtype != DType::kF32) {
      return Status::Error(
          fmt::format("KvCache::append: {} has dtype {}, the cache holds {} (and takes f32 rows)",
                      name, dtype_name(t->dtype), dtype_name(dtype_)));
    }
    if (t->shape[0] > 0 && t->data == nullptr) {
      return Status::Error(fmt::format("KvCache::append: {} has no data", name));
    }
  }
  if (k.dtype != v.dtype) {
    return Status::Error(fmt::format("KvCache::append: k has dtype {} but v has {}",
                                     dtype_name(k.dtype), dtype_name(v.dtype)));
  }
  if (k.shape[0] != v.shape[0]) {
    return Status::Error(
        fmt::format("KvCache::append: k has {} tokens but v has {}", k.shape[0], v.shape[0]));
  }
  const int64_t n = k.shape[0];
  if (length_ + n > capacity_) {
    int64_t cap = capacity_;
    while (cap < length_ + n) cap *= 2;
    HANPU_RETURN_IF_ERROR(grow_to(cap, "KvCache::append"));
  }
  // Token t's row of head h is at (t Hkv + h) D in k and v; it goes to row length + t of head h.
  const size_t in_row = static_cast<size_t>(head_dim_) * dtype_size(k.dtype);
  for (int64_t t = 0; t < n; ++t) {
    for (int h = 0; h < kv_heads_; ++h) {
      const size_t at = static_cast<size_t>(t * kv_heads_ + h) * in_row;
      for (auto [src, dst] : {std::pair{static_cast<const uint8_t*>(k.data) + at, &k_},
                              std::pair{static_cast<const uint8_t*>(v.data) + at, &v_}}) {
        if (dst->empty()) continue;  // a kAreKeys cache's values
        uint8_t* out = dst->data() + row_offset(length_ + t, h);
        if (k.dtype == dtype_) {
          std::memcpy(out, src, row_bytes());
        } else {  // fp32 rows into a 16-bit cache
          simd::store_f32(out, dtype_, reinterpret_cast<const float*>(src),
                          static_cast<size_t>(head_dim_));
        }
      }
    }
  }
  length_ += n;
  return Status::Ok();
}

void KvCache::attn_kv(AttnArgs* args) const {
  args->k = {k_.data(), dtype_, {length_, kv_heads_, head_dim_}};
  args->v = {values_are_keys() ? k_.data() : v_.data(), dtype_, {length_, kv_heads_, head_dim_}};
  args->kv_row_stride = head_dim_;
  args->kv_head_stride = capacity_ * head_dim_;
}

Status KvCache::read_f32(int64_t t0, int64_t n, float* k_out, float* v_out) const {
  if (t0 < 0 || n < 0 || t0 + n > length_) {
    return Status::Error(fmt::format(
        "KvCache::read_f32: tokens [{}, {}) are not within the {} cached", t0, t0 + n, length_));
  }
  for (int64_t t = 0; t < n; ++t) {
    for (int h = 0; h < kv_heads_; ++h) {
      const size_t at = static_cast<size_t>(t * kv_heads_ + h) * head_dim_;
      if (k_out)
        simd::load_f32(k_out + at, k_.data() + row_offset(t0 + t, h), dtype_,
                       static_cast<size_t>(head_dim_));
      if (v_out)
        simd::load_f32(v_out + at, (values_are_keys() ? k_ : v_).data() + row_offset(t0 + t, h),
                       dtype_, static_cast<size_t>(head_dim_));
    }
  }
  return Status::Ok();
}

Status KvCache::truncate(int64_t length) {
  if (length < 0 || length > length_) {
    return Status::Error(
        fmt::format("KvCache::truncate: length {} is not in [0, {}]", length, length_));
  }
  length_ = length;
  return Status::Ok();
}

}  // namespace hanpu
