// Dense projections of a model layer on CPU cores: y = x W^T, with W^T held in hanpu's
// compute layout for its dtype, converted once at load:
//   - fp32 and f16: column panels of kLinearPanel output columns, each panel [in, cols]
//     row-major and contiguous. The FMA micro-kernel reads a panel as its row-major B operand:
//     sequential rows, no per-call packing, no page-strided reads (a plain [in, out] W^T puts
//     consecutive B rows `out` floats apart, one page or more).
//   - bf16: the "pairs" layout of the matrix unit (simd/amx.h): strips of 32 columns, each
//     a run of 32-deep blocks whose rows hold (w[2r][c], w[2r+1][c]) pairs. On cores with AMX
//     a prefill multiplies it directly on bf16 tiles (x rounded to bf16, exact products,
//     fp32 sums: what PyTorch's and llama.cpp's bf16 matmuls do); without AMX (or with
//     a ceiling below amx, projection_kernels.h) on cores with AVX512-BF16, the same numerics on
//     its dot instruction (simd/gemm_bf16_dot.h, twice the multiply-adds an instruction); on cores
//     with neither (or a ceiling below dot) hanpu's pairs kernel widens them in registers
//     (simd/gemm_bf16_pairs.h; panels narrower than 64 columns are widened to fp32 blocks for
//     the FMA micro-kernel); decode widens in registers. One layout for all, so the weights
//     are held once.
//
// OpenBLAS (Debian's 0.3.21), measured side by side by `hanpu bench linear`: bf16 weights,
// what checkpoints ship and the default, run on the AMX tiles several times faster than any
// fp32 GEMM, and OpenBLAS has no bf16 GEMM in that build, so cores with AMX never call it.
// With fp32 / f16 weights each [512 x 256] weight block (widened from f16) is multiplied by
// OpenBLAS's sgemm where it runs AVX2-or-wider kernels, one call per unit on hanpu's own
// workers (its threads off): 1.3-1.5x hanpu's fp32 micro-kernel on the 0.8B's shapes on an
// AVX2 Zen 3 core (docs/performance.md "On an AVX2 core without a matrix unit"). bf16 weights
// do not go to OpenBLAS: the pairs kernel, which needs neither a widened copy nor OpenBLAS's
// packing, was at least as fast on the same shapes (linear.cc). Where OpenBLAS detects an
// old core (it takes cores it does not know for Prescott, SSE3 only) or the ceiling is fma, hanpu's
// kernels run everything (blas_sgemm.h decides).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <optional>

#include "base/aligned_vector.h"
#include "base/quant_blocks.h"
#include "cpu/nn/projection_kernels.h"
#include "hanpu/dtype.h"

namespace hanpu::cpu {

inline constexpr int kLinearPanel = 256;  // output columns per panel (8 strips of the pairs layout)
inline constexpr int kLinearDepth =
    512;  // reduction slice: a [512 x 256] fp32 B block is 512 KB, in L2

struct PackedLinear {
  int in = 0, out = 0;
  DType dtype = DType::kF32;
  std::vector<float> data;  // fp32: panels back to back, panel p = [in, min(256, out - 256 p)]
  // 64-byte aligned, as the tile loads and vector loads read them (whole lines).
  std::vector<uint16_t, CacheAlignedAllocator<uint16_t>>
      half;  // f16: the same panels in 16 bits; bf16: the pairs layout
  // Quantized (cpu/nn/quant_linear.h): GGUF blocks where the checkpoint stores them (its
  // mapping, kept alive by `qowner`), never copied: output column o is the row of W at
  // qrow(o), `qrow_bytes` long: qbase + o qrow_bytes where the rows lie evenly spaced (a
  // tensor's own rows; a pointer a row cost 2 MB for a 250k-word head), else qrows[o] (rows
  // picked from a tensor, or two joined). `x_order`, where set, permutes the input (kernel
  // input i is x[x_order[i]]). `dtype`, `data` and `half` are then unused.
  std::optional<QuantType> quant;
  const uint8_t* qbase = nullptr;
  std::vector<const uint8_t*> qrows;  // empty where qbase is set
  size_t qrow_bytes = 0;
  const uint8_t* qrow(int o) const {
    return qrows.empty() ? qbase + static_cast<size_t>(o) * qrow_bytes : qrows[o];
  }
  std::shared_ptr<const void> qowner;
  std::vector<int32_t> x_order;
  // Q4_K, Q6_K and Q5_0 rows also held repacked 16 to a group for their decode kernels
  // (simd/quant_q4k_rows16.h, quant_q6k_rows16.h, quant_q5_0_rows16.h), where the CPU runs them
  // (cpu/nn/quant_linear.h): group g, at qgroups[g], holds output columns qgroup_rows g ..
  // qgroup_rows (g + 1) - 1 (the last group's missing rows repeat its last). A pointer a
  // group, so that joined projections keep their parts' groups where they lie. Empty
  // otherwise.
  int qgroup_rows = 0;
  std::vector<const uint8_t*> qgroups;
  std::shared_ptr<const void> qgroups_owner;

  // Builds the layout from W [out, in] rows (nn.Linear's weight): `rows[o]` is the source row
  // of output column o; values are rounded to `dtype` (nearest even).
  static PackedLinear from_rows(const float* w, int in, const std::vector<int>& rows,
                                DType dtype = DType::kF32);
  // The same from rows made on demand: row(o, buf) returns the `in` source values of output
  // column o, pointing into memory of its own or into buf[in], which it may fill. Called
  // once per column, from the pool's threads at once.
  using RowSource = std::function<const float*(int o, float* buf)>;
  static PackedLinear from_row_source(int in, int out, const RowSource& row, DType dtype);
  // Storage for the layout, zero-filled (padding included).
  static PackedLinear zeros(int in, int out, DType dtype);

  bool pairs() const { return dtype == DType::kBF16; }
  int panels() const { return (out + kLinearPanel - 1) / kLinearPanel; }
  int panel_cols(int p) const {
    return out - p * kLinearPanel < kLinearPanel ? out - p * kLinearPanel : kLinearPanel;
  }
  size_t panel_offset(int p) const { return static_cast<size_t>(p) * kLinearPanel * in; }
  const float* panel(int p) const { return data.data() + panel_offset(p); }
  const uint16_t* panel_16(int p) const { return half.data() + panel_offset(p); }
  // Pairs layout: reduction blocks per strip, strips, and where strip s starts.
  // (simd/amx.h's block sizes; defined in linear.cc, so users of this header need no simd/).
  int k_blocks() const;
  int strips() const;
  size_t strip_offset(int s) const;
  // The weights at their stored size (a decode from the repacked groups reads as many bytes).
  int64_t bytes() const {
    return static_cast<int64_t>(data.size() * sizeof(float) + half.size() * sizeof(uint16_t) +
                                (quant ? static_cast<size_t>(out) : 0) * qrow_bytes);
  }
  // The decode copy's bytes (qgroups: the blocks' bytes a row, the last group whole).
  int64_t decode_copy_bytes() const {
    return static_cast<int64_t>(qgroups.size()) * qgroup_rows * static_cast<int64_t>(qrow_bytes);
  }
  // Position of element (i, o) of W^T in `data` (fp32) or `half`.
  size_t index(int i, int o) const;
  // Element (i, o) of W^T, as stored (rounded to dtype).
  float at(int i, int o) const;
  void set(int i, int o, float v);
  // Zeroes what the layout holds beyond [in, out] (the pairs layout's padding), after a
  // fill of the whole buffer.
  void clear_padding();

 private:
  // Writes the rows into storage sized for the shape (what the padding holds is left).
  void fill_from_row_source(const RowSource& row);

 public:
};

inline constexpr int64_t kLinearRowSlab =
    192;  // rows of x per micro-kernel call (a multiple of 32)

// Row ranges a panel is cut into so there are at least 4 units (panel, row range) per core
// to claim, no more ranges than 192-row slabs. Example: T = 1024 (6 slabs), 4 panels,
// 2 cores -> 2; 24 panels -> 1; T = 100 -> 1.
int linear_row_ranges(int64_t T, int panels, int cores);

// Rows [first, second) of range `range` of `ranges`: T cut as evenly as whole granules of
// `granule` rows allow (32: the AMX tiles' row blocks; the FMA path with the pairs kernel
// uses whole row blocks of its tiles, see linear.cc). Whole 192-row slabs, as before, cut
// T = 512 into 192 + 320 rows, and the core left with the 320-row unit at the end kept the
// other idle.
std::pair<int64_t, int64_t> linear_row_range(int64_t T, int ranges, int range,
                                             int64_t granule = 32);

// y[T, out] (leading dim ldy) = x[T, in] (leading dim ldx) W^T. Units (panel, row range)
// are claimed by `threads` cores (0: the default pool) from a shared counter (with
// HANPU_BALANCE=0 dealt round-robin instead, core c taking units c, c + P, ...). On the FMA
// path a unit walks its panel in 512-deep slices, each slice multiplied by one OpenBLAS call
// over all its rows (blas_sgemm.h; 16 rows or more) or by the micro-kernel against every
// 192-row slab of them, so the B block stays in L2 while x streams by; on the AMX path it walks its
// strips, each against every 32-row block of its rows.
// `ceiling`: the fastest kernel the call may use (projection_kernels.h; kAuto: HANPU_PROJECTION,
// else the fastest this CPU has).
void linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y, int64_t ldy,
            int threads, ProjectionKernel ceiling = ProjectionKernel::kAuto);

// The kernel linear() runs w's units on for T rows and `threads` cores (0: all), as `hanpu
// bench linear` labels its rows: "gemv" (one row of 16-bit weights), "amx", "dot", "blas"
// (OpenBLAS, blas_sgemm.h), "pairs" (bf16 weights on simd/gemm_bf16_pairs.h) or "fma" (fp32 and f16
// on the micro-kernel). Units of fewer rows or columns than OpenBLAS takes (see linear.cc) say
// "pairs" or "fma".
const char* linear_kernel_name(const PackedLinear& w, int64_t T, int threads = 0,
                               ProjectionKernel ceiling = ProjectionKernel::kAuto);

// Several projections of the same x (a GDN layer's qkv, z, b and a): one pass rounding x
// to bf16 for the tiles, one pool dispatch whose units span them all (so the 16-column ones
// do not each wake the pool and idle a core). Projections of different `in` or kernels
// run one after another.
struct LinearOut {
  const PackedLinear* w;
  float* y;
  int64_t ldy;
};
void linear_many(const float* x, int64_t ldx, int64_t T, const std::vector<LinearOut>& outs,
                 int threads, ProjectionKernel ceiling = ProjectionKernel::kAuto);

// One row each through several projections with inputs of their own: y_j [w_j.out] =
// x_j [w_j.in] W_j. A decode step's per-head and per-expert products (MLA's absorbed halves,
// a token's experts) are many small ones; where all are 16-bit gemvs they run as one job on
// the pool, its parts claimed across every product, instead of one job (and one wake-up of
// every core) each.
struct LinearRow {
  const float* x;
  const PackedLinear* w;
  float* y;
};
void linear_each(const std::vector<LinearRow>& rows, int threads,
                 ProjectionKernel ceiling = ProjectionKernel::kAuto);

// x packed once for the bf16 prefill kernel linear() runs under `ceiling` (the AMX tiles, the
// bf16 dot instruction, or the pairs kernel), then multiplied by runs of pairs-layout strips
// (simd/amx.h) the caller makes: quant_linear.cc decodes them from blocks, a few at a time on
// each core. The packed x is a buffer of the calling thread (valid until its next call).
class StripProduct {
 public:
  StripProduct(const float* x, int64_t ldx, int64_t T, int in, int threads,
               ProjectionKernel ceiling);
  // y[T, n_cols] (leading dim ldy) = x W for W the `strips` strips at w (in whole blocks of
  // simd::kPairBlockDepth each, n_cols <= 32 strips): every row of x, on the calling thread.
  void multiply(const uint16_t* w, int strips, int n_cols, float* y, int64_t ldy) const;

 private:
  enum class Kernel { kAmx, kDot, kPairs } kernel_;
  const void* x_;
  int64_t T_;
  int in_;
};

// Whether linear() multiplies bf16 weights on the AMX tiles on this machine (see above).
bool linear_uses_amx(ProjectionKernel ceiling = ProjectionKernel::kAuto);
// Whether it multiplies them with the bf16 dot instruction instead (AVX512-BF16, no usable
// AMX tiles under the ceiling, not below dot).
bool linear_uses_dot(ProjectionKernel ceiling = ProjectionKernel::kAuto);
// Whether a prefill (T > 1) of bf16 weights rounds x to bf16 on this machine: on the AMX
// tiles or the dot kernel (simd/gemm_bf16_dot.h), not on the pairs kernel.
bool linear_rounds_x_to_bf16(ProjectionKernel ceiling = ProjectionKernel::kAuto);

}  // namespace hanpu::cpu
