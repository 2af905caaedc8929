// Dense projections of a model layer on CPU cores: y = x W^T, with W^T held in hanpu's
// compute layout for them — column panels of kLinearPanel output columns, each panel
// [in, cols] row-major and contiguous — converted once at load. The micro-kernel reads a
// panel as its row-major B operand: sequential rows, no per-call packing, no page-strided
// reads (a plain [in, out] W^T puts consecutive B rows `out` floats apart, one page or more).
//
// Why not OpenBLAS (the Debian build, 0.3.21): side by side on the 2-core AVX-512 development
// machine, cblas_sgemm was slower than this kernel on the 0.8B model's projections, both
// at T = 512 and at T = 1 (a one-off comparison; see docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hanpu/dtype.h"

namespace hanpu::cpu {

inline constexpr int kLinearPanel = 256;  // output columns per panel
inline constexpr int kLinearDepth = 512;  // reduction slice: a [512 x 256] B block is 512 KB, in L2

// Weights are stored in fp32 or in 16 bits (bf16 / f16, the dtype most checkpoints ship in):
// 16-bit panels are widened to fp32 a [512 x 256] block at a time for the micro-kernel
// (prefill: the block is reused by every row of the batch), or in registers by a GEMV
// (decode: one row, where the weights' bytes are the whole cost).
struct PackedLinear {
  int in = 0, out = 0;
  DType dtype = DType::kF32;
  std::vector<float> data;      // fp32 panels back to back: panel p = [in, min(256, out - 256 p)]
  std::vector<uint16_t> half;   // the same layout in 16 bits when dtype is kBF16 or kF16

  // Builds the layout from W [out, in] rows (nn.Linear's weight): `rows[o]` is the source row
  // of output column o; values are rounded to `dtype` (nearest even).
  static PackedLinear from_rows(const float* w, int in, const std::vector<int>& rows, DType dtype = DType::kF32);
  int panels() const { return (out + kLinearPanel - 1) / kLinearPanel; }
  int panel_cols(int p) const { return out - p * kLinearPanel < kLinearPanel ? out - p * kLinearPanel : kLinearPanel; }
  size_t panel_offset(int p) const { return static_cast<size_t>(p) * kLinearPanel * in; }
  const float* panel(int p) const { return data.data() + panel_offset(p); }
  const uint16_t* panel_16(int p) const { return half.data() + panel_offset(p); }
  int64_t bytes() const { return static_cast<int64_t>(data.size() * sizeof(float) + half.size() * sizeof(uint16_t)); }
  // Element (i, o) of W^T, as stored (rounded to dtype).
  float at(int i, int o) const;
};

inline constexpr int64_t kLinearRowSlab = 192;  // rows of x per micro-kernel call

// Row ranges a panel is cut into so there are at least 4 units (panel, row range) per core
// to claim, whole 192-row slabs each. Example: T = 1024 (6 slabs), 4 panels, 2 cores -> 2;
// 24 panels -> 1; T = 100 -> 1.
int linear_row_ranges(int64_t T, int panels, int cores);

// y[T, out] (leading dim ldy) = x[T, in] (leading dim ldx) W^T. Units (panel, row range)
// are claimed by `threads` cores (0: the default pool) from a shared counter (with
// HANPU_BALANCE=0 dealt round-robin instead, core c taking units c, c + P, ...); a unit walks
// its panel in 512-deep slices, each slice against every 192-row slab of its rows, so the B
// block stays in L2 while x streams by.
void linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y, int64_t ldy, int threads);

}  // namespace hanpu::cpu
