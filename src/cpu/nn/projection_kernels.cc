// The projection kernels' table (see projection_kernels.h).
#include "cpu/nn/projection_kernels.h"

#include <string>

#include "base/env_settings.h"
#include "cpu/nn/blas_sgemm.h"
#include "hanpu/machine.h"
#include "simd/amx.h"
#include "simd/gemm_bf16_dot.h"

namespace hanpu::cpu {

namespace {

bool always() { return true; }

constexpr ProjectionKernelInfo kKernels[] = {
    {ProjectionKernel::kAuto, "auto", "the fastest kernel this CPU has (the first usable below)",
     always},
    {ProjectionKernel::kAmx, "amx", "bf16 weights on the AMX tiles (x rounded to bf16, fp32 sums)",
     simd::amx_bf16_usable},
    {ProjectionKernel::kDot, "dot",
     "bf16 weights on the AVX512-BF16 dot instruction (x rounded to bf16, fp32 sums)",
     simd::bf16_dot_usable},
    {ProjectionKernel::kPairs, "pairs",
     "bf16 weights widened in registers, fp32 x (hanpu's pairs kernel)", always},
    {ProjectionKernel::kBlas, "blas",
     "OpenBLAS sgemm on hanpu's workers (16-bit weights widened per block)", blas_sgemm_in_use},
    {ProjectionKernel::kFma, "fma",
     "hanpu's fp32 FMA micro-kernel (16-bit weights widened per block)", always},
};

int rank(ProjectionKernel k) { return k == ProjectionKernel::kAuto ? 1 : static_cast<int>(k); }

}  // namespace

std::span<const ProjectionKernelInfo> projection_kernels() { return kKernels; }

const ProjectionKernelInfo& projection_kernel_info(ProjectionKernel k) {
  return kKernels[static_cast<int>(k)];  // the table is in the enum's order
}

std::optional<ProjectionKernel> parse_projection_kernel(std::string_view name) {
  for (const ProjectionKernelInfo& k : kKernels) {
    if (k.name == name) return k.kernel;
  }
  return std::nullopt;
}

Status parse_usable_projection_kernel(std::string_view name, ProjectionKernel* out) {
  std::string names, usable;
  for (const ProjectionKernelInfo& k : kKernels) {
    names += (names.empty() ? "" : ", ") + std::string(k.name);
    if (k.usable()) usable += (usable.empty() ? "" : ", ") + std::string(k.name);
  }
  const std::optional<ProjectionKernel> k = parse_projection_kernel(name);
  if (!k) return Status::Error(std::string(name) + " is not one of " + names);
  if (!projection_kernel_info(*k).usable())
    return Status::Error(std::string(name) +
                         ": this CPU (or build) does not have it; usable here: " + usable);
  *out = *k;
  return Status::Ok();
}

ProjectionKernel projection_kernel_from_env() {
  // Read once: every projection of every layer asks.
  static const ProjectionKernel k = [] {
    const char* text = env_text(EnvVar::kProjection);
    const auto parsed = text ? parse_projection_kernel(text) : std::nullopt;
    return parsed.value_or(ProjectionKernel::kAuto);
  }();
  return k;
}

ProjectionKernel resolve_projection_kernel(ProjectionKernel requested) {
  return requested == ProjectionKernel::kAuto ? projection_kernel_from_env() : requested;
}

bool projection_kernel_allowed(ProjectionKernel ceiling, ProjectionKernel k) {
  return rank(k) >= rank(resolve_projection_kernel(ceiling)) && projection_kernel_info(k).usable();
}

}  // namespace hanpu::cpu

namespace hanpu {

std::vector<ProjectionKernelSummary> projection_kernel_summaries() {
  std::vector<ProjectionKernelSummary> out;
  for (const cpu::ProjectionKernelInfo& k : cpu::projection_kernels()) {
    out.push_back({std::string(k.name), std::string(k.summary), k.usable()});
  }
  return out;
}

}  // namespace hanpu
