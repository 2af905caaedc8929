// Validation of an attention call: every check names the argument, before anything is written.
#include <cmath>

#include <fmt/format.h>

#include "cpu/attn/attn_problem.h"

namespace hanpu::cpu {

namespace {

Status expect_data(const char* who, const char* name, const void* p, int64_t numel) {
  if (numel > 0 && p == nullptr) return Status::Error(fmt::format("{}: {} has no data", who, name));
  return Status::Ok();
}

// Rows of D elements at j ld + hk head_ld (j < Tk, hk < Hkv) must not overlap: one stride
// nests the other, as in token-major [Tk, Hkv, D] or head-major [Hkv, capacity, D] storage.
Status check_kv_strides(const char* who, int64_t Tk, int64_t Hkv, int64_t D, int64_t ld,
                        int64_t head_ld) {
  if (ld < 0 || head_ld < 0) {
    return Status::Error(
        fmt::format("{}: kv strides must be >= 0 (0: contiguous), got kv_row_stride {} and "
                    "kv_head_stride {}",
                    who, ld, head_ld));
  }
  const bool keys_outer = head_ld >= D && (Tk <= 1 || ld >= (Hkv - 1) * head_ld + D);
  const bool heads_outer = ld >= D && (Hkv <= 1 || head_ld >= (Tk - 1) * ld + D);
  if (Tk > 0 && !keys_outer && !heads_outer) {
    return Status::Error(
        fmt::format("{}: k/v rows of D = {} overlap at kv_row_stride {} and kv_head_stride {} "
                    "(Tk = {}, Hkv = {})",
                    who, D, ld, head_ld, Tk, Hkv));
  }
  return Status::Ok();
}

}  // namespace

Status validate_attn(const AttnArgs& a, const char* who, AttnProblem* p) {
  for (const auto& [name, shape] : {std::pair{"q", &a.q.shape}, std::pair{"k", &a.k.shape},
                                    std::pair{"v", &a.v.shape}, std::pair{"o", &a.o.shape}}) {
    if (shape->size() != 3) {
      return Status::Error(fmt::format("{}: {} must have 3 dims [tokens, heads, D], got {}", who,
                                       name, shape_str(*shape)));
    }
  }
  const int64_t T = a.q.shape[0], Hq = a.q.shape[1], D = a.q.shape[2];
  const int64_t Tk = a.k.shape[0], Hkv = a.k.shape[1];
  if (T < 0 || Tk < 0) return Status::Error(fmt::format("{}: negative token count", who));
  if (Hq < 1 || Hkv < 1) {
    return Status::Error(
        fmt::format("{}: head counts must be >= 1, got Hq = {}, Hkv = {}", who, Hq, Hkv));
  }
  if (Hq % Hkv != 0) {
    return Status::Error(fmt::format(
        "{}: query heads Hq = {} must be a multiple of key/value heads Hkv = {}", who, Hq, Hkv));
  }
  if (D < 16 || D > kAttnMaxHeadDim || D % 16 != 0) {
    return Status::Error(
        fmt::format("{}: head dim D = {} is not supported (a multiple of 16 in [16, {}])", who, D,
                    kAttnMaxHeadDim));
  }
  if (a.k.shape[2] != D) {
    return Status::Error(fmt::format("{}: k has shape {}, its head dim must equal q's D = {}", who,
                                     shape_str(a.k.shape), D));
  }
  const int64_t Dv = a.v.shape[2];
  if (a.v.shape[0] != Tk || a.v.shape[1] != Hkv) {
    return Status::Error(fmt::format("{}: v has shape {}, expected [{}, {}, Dv] as k's {}", who,
                                     shape_str(a.v.shape), Tk, Hkv, shape_str(a.k.shape)));
  }
  if (Dv < 16 || Dv > kAttnMaxHeadDim || Dv % 16 != 0) {
    return Status::Error(
        fmt::format("{}: value head dim Dv = {} is not supported (a multiple of 16 in [16, {}])",
                    who, Dv, kAttnMaxHeadDim));
  }
  if (Dv != D && (a.kv_row_stride != 0 || a.kv_head_stride != 0)) {
    return Status::Error(fmt::format(
        "{}: values of head dim Dv = {} beside keys of D = {} must be contiguous (kv strides 0, "
        "got {} and {})",
        who, Dv, D, a.kv_row_stride, a.kv_head_stride));
  }
  if (a.o.shape != Shape{T, Hq, Dv}) {
    return Status::Error(fmt::format("{}: o has shape {}, expected [T, Hq, Dv] = {}", who,
                                     shape_str(a.o.shape), shape_str(Shape{T, Hq, Dv})));
  }
  if (a.o.dtype != a.q.dtype) {
    return Status::Error(fmt::format("{}: o has dtype {}, expected q's dtype {}", who,
                                     dtype_name(a.o.dtype), dtype_name(a.q.dtype)));
  }
  if (a.v.dtype != a.k.dtype) {
    return Status::Error(
        fmt::format("{}: k has dtype {} and v has dtype {}: keys and values must share a dtype",
                    who, dtype_name(a.k.dtype), dtype_name(a.v.dtype)));
  }
  if (!a.lse.empty() || !a.lse.shape.empty()) {
    if (a.lse.shape != Shape{Hq, T}) {
      return Status::Error(fmt::format("{}: lse has shape {}, expected [Hq, T] = {}", who,
                                       shape_str(a.lse.shape), shape_str(Shape{Hq, T})));
    }
    if (a.lse.dtype != DType::kF32) {
      return Status::Error(
          fmt::format("{}: lse has dtype {}, expected f32", who, dtype_name(a.lse.dtype)));
    }
    HANPU_RETURN_IF_ERROR(expect_data(who, "lse", a.lse.data, Hq * T));
  }
  HANPU_RETURN_IF_ERROR(expect_data(who, "q", a.q.data, a.q.numel()));
  HANPU_RETURN_IF_ERROR(expect_data(who, "k", a.k.data, a.k.numel()));
  HANPU_RETURN_IF_ERROR(expect_data(who, "v", a.v.data, a.v.numel()));
  HANPU_RETURN_IF_ERROR(expect_data(who, "o", a.o.data, a.o.numel()));
  const int64_t kv_ld = a.kv_row_stride != 0 ? a.kv_row_stride : Hkv * D;
  const int64_t kv_head_ld = a.kv_head_stride != 0 ? a.kv_head_stride : D;
  HANPU_RETURN_IF_ERROR(check_kv_strides(who, Tk, Hkv, D, kv_ld, kv_head_ld));
  if (a.scale && !std::isfinite(*a.scale)) {
    return Status::Error(fmt::format("{}: scale = {} is not finite", who, *a.scale));
  }
  if (a.mask == AttnMask::kSliding && a.window < 1) {
    return Status::Error(fmt::format("{}: sliding window = {} must be >= 1", who, a.window));
  }
  const int64_t q_offset = a.q_offset ? *a.q_offset : Tk - T;
  if (T > 0 && a.mask != AttnMask::kNone && (q_offset < 0 || q_offset + T > Tk)) {
    return Status::Error(fmt::format(
        "{}: {} mask needs 0 <= q_offset and q_offset + T <= Tk (every query sees a key), got "
        "q_offset = {}, T = {}, Tk = {}",
        who, attn_mask_name(a.mask), q_offset, T, Tk));
  }
  if (T > 0 && a.mask == AttnMask::kNone && Tk == 0) {
    return Status::Error(fmt::format("{}: no keys (Tk = 0) for {} queries", who, T));
  }
  p->dtype = a.q.dtype;
  p->kv_dtype = a.k.dtype;
  p->kv_ld = kv_ld;
  p->kv_head_ld = kv_head_ld;
  p->T = T;
  p->Tk = Tk;
  p->Hq = static_cast<int>(Hq);
  p->Hkv = static_cast<int>(Hkv);
  p->D = static_cast<int>(D);
  p->Dv = static_cast<int>(Dv);
  p->v_ld = Dv == D ? kv_ld : Hkv * Dv;
  p->v_head_ld = Dv == D ? kv_head_ld : Dv;
  p->mask = a.mask;
  p->q_offset = q_offset;
  p->window = a.window;
  p->scale = a.scale ? *a.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  return Status::Ok();
}

}  // namespace hanpu::cpu
