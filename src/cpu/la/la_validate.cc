// Validation of an LA call: every check that names the argument, before anything is written.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "cpu/la/la_problem.h"
#include "simd/vec_ops.h"

namespace hanpu::cpu {

std::vector<int64_t> LaProblem::seq_lens() const {
  std::vector<int64_t> lens(N);
  for (int n = 0; n < N; ++n) lens[n] = seq_len(n);
  return lens;
}

namespace {

Status expect_shape(const char* name, const Shape& got, const Shape& want) {
  if (got != want) {
    return Status::Error(fmt::format("la_prefill: {} has shape {}, expected {}", name,
                                     shape_str(got), shape_str(want)));
  }
  return Status::Ok();
}

Status expect_dtype(const char* name, DType got, DType want) {
  if (got != want) {
    return Status::Error(fmt::format("la_prefill: {} has dtype {}, expected {}", name,
                                     dtype_name(got), dtype_name(want)));
  }
  return Status::Ok();
}

Status expect_data(const char* name, const void* p, int64_t numel) {
  if (numel > 0 && p == nullptr) {
    return Status::Error(fmt::format("la_prefill: {} has no data", name));
  }
  return Status::Ok();
}

}  // namespace

Status validate_la(const LaArgs& a, const LaOptions& opt, LaProblem* p) {
  if (a.q.shape.size() != 3) {
    return Status::Error(
        fmt::format("la_prefill: q must be [T, H, K], got {}", shape_str(a.q.shape)));
  }
  if (a.v.shape.size() != 3) {
    return Status::Error(
        fmt::format("la_prefill: v must be [T, HV, V], got {}", shape_str(a.v.shape)));
  }
  const int64_t T = a.q.shape[0], H = a.q.shape[1], K = a.q.shape[2];
  const int64_t HV = a.v.shape[1], V = a.v.shape[2];
  if (T < 0) return Status::Error("la_prefill: T (q.shape[0]) is negative");
  if (H < 1 || HV < 1) {
    return Status::Error(
        fmt::format("la_prefill: head counts must be >= 1, got H = {}, HV = {}", H, HV));
  }
  if (HV % H != 0) {
    return Status::Error(fmt::format(
        "la_prefill: value heads HV = {} must be a multiple of q/k heads H = {}", HV, H));
  }
  if (K < 1 || K > kLaMaxHeadDim || V < 1 || V > kLaMaxHeadDim) {
    return Status::Error(
        fmt::format("la_prefill: K = {} and V = {} must be in [1, {}]", K, V, kLaMaxHeadDim));
  }
  HANPU_RETURN_IF_ERROR(expect_shape("k", a.k.shape, {T, H, K}));
  HANPU_RETURN_IF_ERROR(expect_shape("v", a.v.shape, {T, HV, V}));
  HANPU_RETURN_IF_ERROR(expect_shape("o", a.o.shape, {T, HV, V}));
  const bool kda = a.mech == LaMech::kKda;
  HANPU_RETURN_IF_ERROR(
      expect_shape(kda ? "g (KDA)" : "g (GDN)", a.g.shape, kda ? Shape{T, HV, K} : Shape{T, HV}));
  HANPU_RETURN_IF_ERROR(expect_shape("beta", a.beta.shape, {T, HV}));
  HANPU_RETURN_IF_ERROR(expect_dtype("k", a.k.dtype, a.q.dtype));
  HANPU_RETURN_IF_ERROR(expect_dtype("v", a.v.dtype, a.q.dtype));
  HANPU_RETURN_IF_ERROR(expect_dtype("o", a.o.dtype, a.q.dtype));
  HANPU_RETURN_IF_ERROR(expect_dtype("g", a.g.dtype, DType::kF32));
  HANPU_RETURN_IF_ERROR(expect_dtype("beta", a.beta.dtype, DType::kF32));

  // Sequences.
  std::vector<int64_t> cu = a.cu_seqlens;
  if (cu.empty()) {
    cu = {0, T};
  } else {
    if (cu.size() < 2) return Status::Error("la_prefill: cu_seqlens needs at least 2 entries");
    if (cu.front() != 0) {
      return Status::Error(fmt::format("la_prefill: cu_seqlens[0] = {}, must be 0", cu.front()));
    }
    for (size_t i = 1; i < cu.size(); ++i) {
      if (cu[i] < cu[i - 1]) {
        return Status::Error(
            fmt::format("la_prefill: cu_seqlens is not non-decreasing at index {} ({} < {})", i,
                        cu[i], cu[i - 1]));
      }
    }
    if (cu.back() != T) {
      return Status::Error(
          fmt::format("la_prefill: cu_seqlens ends at {}, must end at T = {}", cu.back(), T));
    }
  }
  const int64_t N = static_cast<int64_t>(cu.size()) - 1;
  if (!a.initial_state.empty()) {
    HANPU_RETURN_IF_ERROR(expect_shape("initial_state", a.initial_state.shape, {N, HV, K, V}));
    HANPU_RETURN_IF_ERROR(expect_dtype("initial_state", a.initial_state.dtype, DType::kF32));
  }
  if (!a.final_state.empty()) {
    HANPU_RETURN_IF_ERROR(expect_shape("final_state", a.final_state.shape, {N, HV, K, V}));
    HANPU_RETURN_IF_ERROR(expect_dtype("final_state", a.final_state.dtype, DType::kF32));
  }
  HANPU_RETURN_IF_ERROR(expect_data("q", a.q.data, a.q.numel()));
  HANPU_RETURN_IF_ERROR(expect_data("k", a.k.data, a.k.numel()));
  HANPU_RETURN_IF_ERROR(expect_data("v", a.v.data, a.v.numel()));
  HANPU_RETURN_IF_ERROR(expect_data("g", a.g.data, a.g.numel()));
  HANPU_RETURN_IF_ERROR(expect_data("beta", a.beta.data, a.beta.numel()));
  HANPU_RETURN_IF_ERROR(expect_data("o", a.o.data, a.o.numel()));

  if (a.scale && !std::isfinite(*a.scale)) {
    return Status::Error(fmt::format("la_prefill: scale = {} is not finite", *a.scale));
  }
  bool chunk_ok = false;
  for (int c : kLaChunkSizes) chunk_ok |= (c == opt.chunk_size);
  if (!chunk_ok) {
    return Status::Error(
        fmt::format("la_prefill: chunk_size = {} is not one of 16, 32, 64, 128", opt.chunk_size));
  }
  if (opt.threads < 0) {
    return Status::Error(fmt::format("la_prefill: threads = {} must be >= 0", opt.threads));
  }

  // Gates must be finite and <= 0 (a positive gate makes the recurrence grow without bound);
  // beta must be finite.
  const float* g = static_cast<const float*>(a.g.data);
  const int64_t gn = a.g.numel();
  if (const int64_t i = static_cast<int64_t>(simd::find_bad_gate(g, gn)); i < gn) {
    const int64_t per_tok = kda ? HV * K : HV;
    return Status::Error(
        fmt::format("la_prefill: gate g[{}] (token {}, head {}) = {} must be finite and <= 0", i,
                    i / per_tok, (i % per_tok) / (kda ? K : 1), g[i]));
  }
  const float* beta = static_cast<const float*>(a.beta.data);
  if (const int64_t i = static_cast<int64_t>(simd::find_non_finite(beta, a.beta.numel()));
      i < a.beta.numel()) {
    return Status::Error(fmt::format("la_prefill: beta[{}] (token {}, head {}) = {} is not finite",
                                     i, i / HV, i % HV, beta[i]));
  }

  p->mech = a.mech;
  p->dtype = a.q.dtype;
  p->T = T;
  p->H = static_cast<int>(H);
  p->HV = static_cast<int>(HV);
  p->K = static_cast<int>(K);
  p->V = static_cast<int>(V);
  p->N = static_cast<int>(N);
  p->scale = a.scale ? *a.scale : 1.0f / std::sqrt(static_cast<float>(K));
  p->qk_l2norm = a.qk_l2norm;
  p->chunk = opt.chunk_size;
  p->q = a.q.data;
  p->k = a.k.data;
  p->v = a.v.data;
  p->g = static_cast<const float*>(a.g.data);
  p->beta = beta;
  p->initial_state = static_cast<const float*>(a.initial_state.data);
  p->o = a.o.data;
  p->final_state = static_cast<float*>(a.final_state.data);
  p->cu = std::move(cu);
  return Status::Ok();
}

}  // namespace hanpu::cpu
