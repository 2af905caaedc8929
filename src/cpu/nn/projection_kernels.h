// The kernels a model's projections (cpu::linear) run on, listed once: `hanpu info`, the
// `--projection` flag, ModelRunOptions::projection, HANPU_PROJECTION, `hanpu bench linear`
// and the parity tests all read this table.
//
// The list is ordered fastest first where each is usable: amx > dot > pairs > blas > fma.
// Choosing one makes it the ceiling: a projection runs on the first kernel at or below it that
// this CPU has and that takes its weights' dtype and shape (the pairs kernel takes only bf16
// panels of 64 columns or more; OpenBLAS only units of 16 rows or more), so every choice runs
// every dtype. "auto" is the ceiling amx, i.e. the fastest this machine has. Decode (one row
// of 16-bit weights) always runs the GEMV, which streams the weights as stored.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "hanpu/status.h"

namespace hanpu::cpu {

enum class ProjectionKernel { kAuto, kAmx, kDot, kPairs, kBlas, kFma };

struct ProjectionKernelInfo {
  ProjectionKernel kernel;
  std::string_view name;     // "amx"
  std::string_view summary;  // what it runs
  bool (*usable)();          // on this CPU (and build)
};

// Every kernel, auto first.
std::span<const ProjectionKernelInfo> projection_kernels();
const ProjectionKernelInfo& projection_kernel_info(ProjectionKernel k);
std::optional<ProjectionKernel> parse_projection_kernel(std::string_view name);
// A kernel named by a user (a flag, ModelRunOptions::projection, HANPU_PROJECTION): the table's
// kernel, or an error naming `name` and what is wrong: not one of the table's names, or a
// kernel this CPU (or build) lacks, with the usable ones listed.
Status parse_usable_projection_kernel(std::string_view name, ProjectionKernel* out);

// What kAuto means in this process: HANPU_PROJECTION where it names a kernel, else kAuto.
ProjectionKernel projection_kernel_from_env();
// `requested` with kAuto replaced by the environment's choice (projection_kernel_from_env).
ProjectionKernel resolve_projection_kernel(ProjectionKernel requested);

// Whether a projection under ceiling `ceiling` may run on `k` (k at or below the ceiling and
// usable here). The ceiling is resolved (kAuto: the environment's choice, else amx).
bool projection_kernel_allowed(ProjectionKernel ceiling, ProjectionKernel k);

}  // namespace hanpu::cpu
