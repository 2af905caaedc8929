// LayerKv: shared KV segments and the own rows (see layer_kv.h).
#include "model/layer_kv.h"

#include <algorithm>

#include <fmt/format.h>

namespace hanpu::model {

Status run_attention(const AttnArgs& args, int64_t R, const AttendRun& run) {
  if (R == 1) return attn_decode(args, run.threads);
  AttnOptions ao;
  ao.placement = run.placement;
  ao.threads = run.threads;
  ao.products = run.products;
  return attn_prefill(args, ao);
}

namespace {

// Appends rows [0, n) of `from` to `to`, through fp32 (exact for every storage dtype).
Status append_rows(const KvCache& from, KvCache* to, std::vector<float>* k, std::vector<float>* v) {
  const int64_t n = from.length();
  if (n == 0) return Status::Ok();
  const Shape shape{n, from.kv_heads(), from.head_dim()};
  const size_t values = static_cast<size_t>(n) * from.kv_heads() * from.head_dim();
  k->resize(values);
  v->resize(values);
  HANPU_RETURN_IF_ERROR(from.read_f32(0, n, k->data(), v->data()));
  return to->append({k->data(), DType::kF32, shape}, {v->data(), DType::kF32, shape});
}

}  // namespace

LayerKv::LayerKv(int kv_heads, int head_dim, DType dtype, int64_t initial_capacity, KvValues values)
    : own_(kv_heads, head_dim, dtype, initial_capacity, values) {}

Status LayerKv::reserve(int64_t tokens) {
  return own_.reserve(std::max<int64_t>(1, tokens - shared_length_));
}

Status LayerKv::read_f32(int64_t t0, int64_t n, float* k_out, float* v_out) const {
  if (t0 < 0 || n < 0 || t0 + n > length()) {
    return Status::Error(fmt::format("KV cache: tokens [{}, {}) are not within the {} cached", t0,
                                     t0 + n, length()));
  }
  const size_t row = static_cast<size_t>(kv_heads()) * head_dim();
  int64_t base = 0;  // first row of the segment
  const auto read = [&](const KvCache& seg) -> Status {
    const int64_t lo = std::max(t0, base), hi = std::min(t0 + n, base + seg.length());
    if (lo < hi) {
      const size_t at = static_cast<size_t>(lo - t0) * row;
      HANPU_RETURN_IF_ERROR(seg.read_f32(lo - base, hi - lo, k_out ? k_out + at : nullptr,
                                         v_out ? v_out + at : nullptr));
    }
    base += seg.length();
    return Status::Ok();
  };
  for (const auto& seg : shared_) HANPU_RETURN_IF_ERROR(read(*seg));
  return read(own_);
}

Status LayerKv::attend(const float* q, int64_t R, int Hq, float* o, const AttendRun& run,
                       float* scratch) const {
  const int D = head_dim();
  if (R < 1 || R > own_.length()) {
    return Status::Error(
        fmt::format("KV cache: {} query rows, but {} rows were appended since the last share", R,
                    own_.length()));
  }
  float* part_o = scratch;
  float* lse = scratch + static_cast<size_t>(R) * Hq * D;
  float* part_lse = lse + static_cast<size_t>(Hq) * R;
  AttnArgs own;  // the own rows, causal: the queries are their last R
  own.q = {q, DType::kF32, {R, Hq, D}};
  own_.attn_kv(&own);
  own.o = {o, DType::kF32, {R, Hq, D}};
  own.mask = AttnMask::kCausal;
  own.scale = run.scale;
  if (!shared_.empty()) own.lse = {lse, DType::kF32, {Hq, R}};
  HANPU_RETURN_IF_ERROR(run_attention(own, R, run));
  for (const auto& seg : shared_) {  // every shared row precedes the queries: seen whole
    AttnArgs a;
    a.q = own.q;
    seg->attn_kv(&a);
    a.o = {part_o, DType::kF32, {R, Hq, D}};
    a.lse = {part_lse, DType::kF32, {Hq, R}};
    a.mask = AttnMask::kNone;
    a.scale = run.scale;
    HANPU_RETURN_IF_ERROR(run_attention(a, R, run));
    attn_merge_splits(R, Hq, D, o, lse, part_o, part_lse);
  }
  return Status::Ok();
}

Status LayerKv::share(std::unique_ptr<LayerKv>* out) {
  if (own_.length() > 0) {
    // The trailing segments no longer than what is sealed so far join the new one.
    int64_t rows = own_.length();
    size_t keep = shared_.size();
    while (keep > 0 && shared_[keep - 1]->length() <= rows) rows += shared_[--keep]->length();
    auto seg = std::make_shared<KvCache>(kv_heads(), head_dim(), dtype(), rows, values());
    std::vector<float> k, v;
    for (size_t i = keep; i < shared_.size(); ++i)
      HANPU_RETURN_IF_ERROR(append_rows(*shared_[i], seg.get(), &k, &v));
    HANPU_RETURN_IF_ERROR(append_rows(own_, seg.get(), &k, &v));
    shared_.resize(keep);
    shared_.push_back(std::move(seg));
    shared_length_ += own_.length();
    own_.clear();  // its room stays for what comes next
  }
  auto s = std::make_unique<LayerKv>(kv_heads(), head_dim(), dtype(), 1, values());
  s->shared_ = shared_;
  s->shared_length_ = shared_length_;
  *out = std::move(s);
  return Status::Ok();
}

Status LayerKv::copy(std::unique_ptr<LayerKv>* out) const {
  auto c = std::make_unique<LayerKv>(kv_heads(), head_dim(), dtype(),
                                     std::max<int64_t>(own_.length(), 1), values());
  c->shared_ = shared_;
  c->shared_length_ = shared_length_;
  std::vector<float> k, v;
  HANPU_RETURN_IF_ERROR(append_rows(own_, &c->own_, &k, &v));
  *out = std::move(c);
  return Status::Ok();
}

int64_t LayerKv::bytes_of(const KvCache& c) {
  return (c.values_are_keys() ? 1 : 2) * c.capacity() * c.kv_heads() * c.head_dim() *
         static_cast<int64_t>(dtype_size(c.dtype()));
}

int64_t LayerKv::own_bytes() const { return bytes_of(own_); }

}  // namespace hanpu::model
