// A projection on the simulated Ascend cores: y [M, N] = x [M, K] w [K, N] on the cube, fp16
// operands and fp32 sums, y written as fp16. The weight lives in GM in the cube's fractal
// order (GmTensor::nz), as the runtime casts weights once at load; x and y are row-major
// activations. The building block of the whole prefill (projections and MLP) next to the LA
// and attention kernels.
#pragma once

#include <cstdint>
#include <optional>

#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

// How the product is cut: output tiles of bm x bn (dealt round robin to the cores, each
// accumulating in L0C), the reduction staged through L1 in panels of bk_l1 (x's rows then
// move in bursts of at least bk_l1 halves) and fed to L0 in steps of bk_l0. Every shape below
// fits two panels of each operand in L1 and two steps in L0A / L0B, so loads overlap the cube.
struct GemmTiling {
  int bm = 128, bn = 256, bk_l1 = 512, bk_l0 = 64;
};

// The output tile for y [M, N] = x [M, K] w [K, N] on `m`, decided from the shape as an
// operator library's tiling function decides it (before the kernel runs, not by running it):
// among 128 x 128, 128 x 256 and 256 x 128 the one whose larger bound is least —
// the cube time of the busiest core (tiles dealt round robin) or the GM time of every tile's
// panels (x re-read per column tile, w per row tile) at the chip's GM rate.
GemmTiling gemm_tiling(const NpuMachine& m, int64_t M, int64_t K, int64_t N);

// One launch's worth of work inside the current launch (the caller calls launch()); `x`, `w`,
// `y` fp16 with matching shapes, `w` in NZ order. Without a tiling, gemm_tiling's.
Status cube_gemm(NpuSim& sim, GmTensor* x, GmTensor* w, GmTensor* y,
                 std::optional<GemmTiling> tiling = std::nullopt);

}  // namespace hanpu::npu
