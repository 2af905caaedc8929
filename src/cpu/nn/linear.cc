// Threaded dense projection on the micro-kernels (see linear.h).
#include "cpu/nn/linear.h"

#include <algorithm>
#include <cstring>
#include <atomic>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/nn/blas_sgemm.h"
#include "simd/amx.h"
#include "simd/pairs_pack.h"
#include "cpu/nn/quant_linear.h"
#include "parallel/parallel_rows.h"
#include "parallel/speed_balance.h"
#include "parallel/thread_pool.h"
#include "simd/bf16_pairs.h"
#include "simd/fp_mode.h"
#include "simd/gemm.h"
#include "simd/gemm_bf16_dot.h"
#include "simd/gemm_bf16_pairs.h"
#include "simd/gemv.h"
#include "simd/vec_ops.h"

namespace hanpu::cpu {

using simd::kPairBlockDepth;
using simd::kPairBlockElems;
using simd::kPairStripCols;

PackedLinear PackedLinear::zeros(int in, int out, DType dtype) {
  PackedLinear l;
  l.in = in;
  l.out = out;
  l.dtype = dtype;
  if (dtype == DType::kF32) {
    l.data.assign(static_cast<size_t>(in) * out, 0.0f);
  } else if (l.pairs()) {
    l.half.assign(l.strip_offset(l.strips()), 0);
  } else {
    l.half.assign(static_cast<size_t>(in) * out, 0);
  }
  return l;
}

size_t PackedLinear::index(int i, int o) const {
  if (pairs()) {
    const int s = o / kPairStripCols, c = o % kPairStripCols, kt = i / kPairBlockDepth,
              k = i % kPairBlockDepth;
    return strip_offset(s) + static_cast<size_t>(kt) * kPairBlockElems +
           (c / 16) * (kPairBlockElems / 2) + (k / 2) * kPairStripCols + (c % 16) * 2 + (k % 2);
  }
  const int p = o / kLinearPanel;
  return panel_offset(p) + static_cast<size_t>(i) * panel_cols(p) + (o - p * kLinearPanel);
}

float PackedLinear::at(int i, int o) const {
  return dtype == DType::kF32 ? data[index(i, o)] : load_as_f32(half.data(), dtype, index(i, o));
}

void PackedLinear::set(int i, int o, float v) {
  if (dtype == DType::kF32) {
    data[index(i, o)] = v;
  } else {
    store_from_f32(half.data(), dtype, index(i, o), v);
  }
}

void PackedLinear::clear_padding() {
  if (!pairs()) return;  // the panels have none
  for (int o = 0; o < strips() * kPairStripCols; ++o) {
    for (int i = o < out ? in : 0; i < k_blocks() * kPairBlockDepth; ++i) half[index(i, o)] = 0;
  }
}

PackedLinear PackedLinear::from_rows(const float* w, int in, const std::vector<int>& rows,
                                     DType dtype) {
  return from_row_source(
      in, static_cast<int>(rows.size()),
      [&](int o, float*) { return w + static_cast<size_t>(rows[o]) * in; }, dtype);
}

PackedLinear PackedLinear::from_row_source(int in, int out, const RowSource& row, DType dtype) {
  PackedLinear l = zeros(in, out, dtype);
  l.fill_from_row_source(row);
  return l;
}

void PackedLinear::fill_from_row_source(const RowSource& row) {
  PackedLinear& l = *this;
  // Every projection of a checkpoint is packed here at load (a 0.8B's 750 M weights), so it
  // runs on the pool, one 32-column group (a pairs strip, inside one panel) at a time: its
  // source rows rounded to the dtype in vectorised calls, then written in layout order.
  const int groups = (l.out + kPairStripCols - 1) / kPairStripCols;
  parallel_rows(0, groups, int64_t{kPairStripCols} * in * 4, [&](int64_t g0, int64_t g1) {
    thread_local std::vector<uint16_t> rows16;  // kept: ranges may be a single group
    thread_local std::vector<float> bufs;
    rows16.resize(dtype == DType::kF32 ? 0 : static_cast<size_t>(kPairStripCols) * in);
    bufs.resize(static_cast<size_t>(kPairStripCols) * in);
    const float* srcs[kPairStripCols];
    for (int64_t g = g0; g < g1; ++g) {
      const int o0 = static_cast<int>(g) * kPairStripCols, n = std::min(kPairStripCols, l.out - o0);
      for (int c = 0; c < n; ++c) srcs[c] = row(o0 + c, bufs.data() + static_cast<size_t>(c) * in);
      const auto src = [&](int c) { return srcs[c]; };
      if (dtype != DType::kF32) {
        for (int c = 0; c < n; ++c)
          simd::store_f32(rows16.data() + static_cast<size_t>(c) * in, dtype, src(c), in);
      }
      const auto r16 = [&](int c, int i) { return rows16[static_cast<size_t>(c) * in + i]; };
      if (!l.pairs()) {  // panels: each reduction step's n columns are contiguous
        static_assert(kLinearPanel % kPairStripCols == 0, "a group lies inside one panel");
        const int p = o0 / kLinearPanel;
        const size_t first = l.panel_offset(p) + static_cast<size_t>(o0 - p * kLinearPanel);
        const size_t ld = static_cast<size_t>(l.panel_cols(p));
        for (int i = 0; i < in; ++i) {
          if (dtype == DType::kF32) {
            for (int c = 0; c < n; ++c) l.data[first + i * ld + c] = src(c)[i];
          } else {
            for (int c = 0; c < n; ++c) l.half[first + i * ld + c] = r16(c, i);
          }
        }
        continue;
      }
      // The strip in the order it is stored (amx.h): blocks of 32 reduction steps, each 16
      // pair rows of two 16-column halves; padding columns and steps stay zero.
      uint16_t* dst = l.half.data() + l.strip_offset(static_cast<int>(g));
      if (in % kPairBlockDepth == 0) {  // whole blocks: the packer, the padding rows zero
        std::fill(rows16.begin() + static_cast<ptrdiff_t>(n) * in, rows16.end(), uint16_t{0});
        simd::pack_strip_bf16(rows16.data(), in, in / kPairBlockDepth, dst);
        continue;
      }
      for (int i0 = 0; i0 < in; i0 += 2, dst += 2 * 16) {
        if (i0 % kPairBlockDepth == 0 && i0 > 0)
          dst += kPairBlockElems / 2;  // past the block's second half
        for (int c = 0; c < n; ++c) {
          uint16_t* pair = dst + (c / 16) * (kPairBlockElems / 2) + (c % 16) * 2;
          pair[0] = r16(c, i0);
          pair[1] = i0 + 1 < in ? r16(c, i0 + 1) : uint16_t{0};
        }
      }
    }
  });
}

std::pair<int64_t, int64_t> linear_row_range(int64_t T, int ranges, int range, int64_t granule) {
  const int64_t granules = (T + granule - 1) / granule;
  return {std::min(T, granules * range / ranges * granule),
          std::min(T, granules * (range + 1) / ranges * granule)};
}

int linear_row_ranges(int64_t T, int panels, int cores) {
  constexpr int kUnitsPerCore = 4;
  const int64_t slabs = (T + kLinearRowSlab - 1) / kLinearRowSlab;
  const int64_t wanted =
      (static_cast<int64_t>(kUnitsPerCore) * cores + panels - 1) / std::max(panels, 1);
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, std::max<int64_t>(slabs, 1)));
}

int PackedLinear::k_blocks() const {
  return (in + simd::kPairBlockDepth - 1) / simd::kPairBlockDepth;
}
int PackedLinear::strips() const { return (out + simd::kPairStripCols - 1) / simd::kPairStripCols; }
size_t PackedLinear::strip_offset(int s) const {
  return static_cast<size_t>(s) * k_blocks() * simd::kPairBlockElems;
}

bool linear_uses_amx(ProjectionKernel ceiling) {
  return projection_kernel_allowed(ceiling, ProjectionKernel::kAmx);
}

namespace {

constexpr int kStripsPerPanel = kLinearPanel / kPairStripCols;
constexpr int64_t kAmxGranule = 32;  // rows of an AMX A tile block (x_as_tiles)

// Units smaller than these stay on the micro-kernel where OpenBLAS is in use: there its packing
// outweighs the product (`hanpu bench linear` on an AVX2 core: the micro-kernel ahead below 16
// rows and on 16-column projections; docs/performance.md, "Design measurements").
constexpr int64_t kBlasMinRows = 16;
constexpr int kBlasMinCols = 64;

// bf16 units run on hanpu's pairs kernel even where OpenBLAS is in use: OpenBLAS needs the
// weights widened to an fp32 block first and then packs both operands again on every call,
// the pairs kernel reads the weights as stored. Measured on a Zen 3 VM (docs/performance.md,
// "Prefill from bf16 weights without widening them"): one core, 256-column units, the two
// called in turn, median of the time ratios at depth 1024 / 3584: 64 rows 1.15x / 1.15x, 128
// rows 1.06-1.07x / 1.06-1.09x, 256 rows 1.01-1.06x / 1.03-1.04x, 512 rows 1.07x / 1.02-1.04x,
// 2048 rows 1.05-1.12x / 1.02-1.07x; on both cores with the caches evicted before each call
// (`hanpu bench linear --cold --projection all`, T 512) 1.04x summed over the projections, and
// whole 0.8B prefills (x packed once per call, below) 1.07-1.22x in four alternated pairs.
// Against the fallback without OpenBLAS (widened blocks on the fp32 micro-kernel): 1.35-1.53x.
// Narrower bf16 units (the 16-column gdn.in_b / in_a) stay on the fp32 micro-kernel: a unit
// of one 16-column group reads a whole packed row tile of x per 16 columns it computes
// (`hanpu bench linear --proj gdn.in_b --projection all` with this limit at 16 was slower at
// every T; docs/performance.md, "Design measurements").
constexpr int kPairsMinCols = 64;

enum class UnitKernel { kBlas, kPairs, kFma };

// The kernel of a unit of `rows` x `cols` of w on the FMA path, under the ceiling `ceiling`
// (projection_kernels.h): the pairs kernel for wide enough bf16 panels, OpenBLAS for units it
// takes, else the micro-kernel.
UnitKernel unit_kernel(const PackedLinear& w, int64_t rows, int cols, ProjectionKernel ceiling) {
  if (w.pairs() && cols >= kPairsMinCols &&
      projection_kernel_allowed(ceiling, ProjectionKernel::kPairs))
    return UnitKernel::kPairs;
  const bool blas = projection_kernel_allowed(ceiling, ProjectionKernel::kBlas);
  return blas && rows >= kBlasMinRows && cols >= kBlasMinCols ? UnitKernel::kBlas
                                                              : UnitKernel::kFma;
}

// Runs fn(u) for every unit u in [0, units) on the pool. Units are claimed from a shared
// counter rather than dealt: a core slowed by other load (or a LITTLE core) simply claims
// fewer, where a fixed deal would make the fast core wait.
void claim_each(int threads, int units, const std::function<void(int)>& fn) {
  ThreadPool& pool = ThreadPool::shared(threads);
  const int P = pool.size();
  std::atomic<int> next_unit{0};
  const bool claim = speed_balancing_enabled();  // HANPU_BALANCE=0: the fixed deal u = core mod P
  pool.run_on_all([&](int core) {
    int dealt = core;
    auto next = [&] { return claim ? next_unit.fetch_add(1) : std::exchange(dealt, dealt + P); };
    simd::ensure_flush_denormals();
    for (int u = next(); u < units; u = next()) fn(u);
  });
}

// Index j of the output that unit u of the concatenated outputs belongs to, given the
// prefix sums first[j] (units before output j).
size_t output_of(const std::vector<int>& first, int u) {
  return static_cast<size_t>(std::upper_bound(first.begin(), first.end(), u) - first.begin()) - 1;
}

// Runs body(out, panel, row_begin, row_end) for every unit (panel of one projection, row
// range of whole `granule`s) of `outs` on the pool (claimed, see claim_each).
void for_each_unit(int threads, int64_t T, const std::vector<LinearOut>& outs, int64_t granule,
                   const std::function<void(const LinearOut&, int, int64_t, int64_t)>& body) {
  std::vector<int> first_panel(outs.size() + 1, 0);  // panels of outs before j
  for (size_t j = 0; j < outs.size(); ++j)
    first_panel[j + 1] = first_panel[j] + outs[j].w->panels();
  const int panels = first_panel.back();
  const int ranges = T == 1 ? 1 : linear_row_ranges(T, panels, ThreadPool::shared(threads).size());
  claim_each(threads, panels * ranges, [&](int u) {
    const int g = u / ranges, range = u % ranges;
    const size_t j = output_of(first_panel, g);
    const auto [row_begin, row_end] = linear_row_range(T, ranges, range, granule);
    body(outs[j], g - first_panel[j], row_begin, row_end);
  });
}

// x rounded to bf16 in the AMX tiles' A layout (rows padded to 32, the reduction to whole
// blocks, zeros in the padding), in the caller's buffer kept between calls.
const uint16_t* x_as_tiles(const float* x, int64_t ldx, int64_t T, int in, int threads) {
  const int kt = (in + kPairBlockDepth - 1) / kPairBlockDepth;
  const int64_t padded_in = static_cast<int64_t>(kt) * kPairBlockDepth;
  const int64_t padded_rows = (T + 31) / 32 * 32;
  // Named through a reference: a lambda that names a thread_local directly would reach the
  // worker's own (empty) instance.
  // 64-byte aligned: a tile row is one line.
  thread_local std::vector<uint16_t, CacheAlignedAllocator<uint16_t>> caller_xb;
  auto& xb = caller_xb;
  xb.resize(static_cast<size_t>(padded_rows * padded_in));
  parallel_rows(threads, padded_rows, padded_in, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int b = 0; b < kt; ++b) {  // each 32-wide piece of the row straight into its tile row
        uint16_t* dst = xb.data() + simd::amx_a_index(r, b * kPairBlockDepth, kt);
        const int valid = r < T ? std::clamp(in - b * kPairBlockDepth, 0, kPairBlockDepth) : 0;
        if (valid > 0)
          simd::store_f32(dst, DType::kBF16, x + r * ldx + b * kPairBlockDepth,
                          static_cast<size_t>(valid));
        std::fill(dst + valid, dst + kPairBlockDepth, uint16_t{0});
      }
    }
  });
  return xb.data();
}

// x packed once per call for a kernel that reads it in row tiles of `mr` rows, every panel's
// units reading the same copy (packed per unit, 24 panels packed the same x over again), in
// `buf`, the caller's buffer kept between calls.
template <class Word>
using AlignedWords = std::vector<Word, CacheAlignedAllocator<Word>>;  // whole lines per vector

template <class Word>
const Word* x_packed_once(AlignedWords<Word>& buf, const float* x, int64_t ldx, int64_t T, int in,
                          int threads, size_t words, int64_t mr,
                          void (*pack)(const float*, int64_t, int64_t, int64_t, int, Word*)) {
  buf.resize(words);
  parallel_rows(threads, (T + mr - 1) / mr, mr * in, [&](int64_t t0, int64_t t1) {
    pack(x, ldx, t0 * mr, std::min(T, t1 * mr), in, buf.data());
  });
  return buf.data();
}

// x for the pairs kernel (simd/gemm_bf16_pairs.h).
const float* x_as_pairs_tiles(const float* x, int64_t ldx, int64_t T, int in, int threads) {
  thread_local AlignedWords<float> caller_xp;  // named through a reference: see x_as_tiles
  return x_packed_once(caller_xp, x, ldx, T, in, threads, simd::pairs_packed_x_floats(T, in),
                       simd::gemm_bf16_pairs_tile_rows(), simd::pack_x_for_pairs);
}

// x rounded to bf16 for the dot kernel (simd/gemm_bf16_dot.h).
const uint32_t* x_as_dot_tiles(const float* x, int64_t ldx, int64_t T, int in, int threads) {
  thread_local AlignedWords<uint32_t> caller_xd;  // named through a reference: see x_as_tiles
  return x_packed_once(caller_xd, x, ldx, T, in, threads, simd::dot_packed_x_words(T, in),
                       simd::gemm_bf16_dot_tile_rows(), simd::pack_x_for_dot);
}

// Row granule of units on the pairs kernel: a whole row block of its tiles (8 of them), so a
// unit starts a tile of the packed x.
int64_t pairs_granule() { return 8 * static_cast<int64_t>(simd::gemm_bf16_pairs_tile_rows()); }

// bf16 prefill on the dot instruction: rows [r0, r1) of the packed x (r0 starts a tile) times
// panel p's strips, the unit's whole depth in one call.
void dot_unit(const uint32_t* xd, const LinearOut& o, int p, int64_t r0, int64_t r1) {
  const PackedLinear& w = *o.w;
  const int s0 = p * kStripsPerPanel;
  const int64_t tile = r0 / simd::gemm_bf16_dot_tile_rows();
  const int64_t tile_words = static_cast<int64_t>(simd::dot_packed_x_words(1, w.in));
  simd::gemm_bf16_dot_packed(static_cast<int>(r1 - r0), xd + tile * tile_words, w.in,
                             w.half.data() + w.strip_offset(s0), w.k_blocks(), 0, w.k_blocks(),
                             std::min(kStripsPerPanel, w.strips() - s0), w.panel_cols(p),
                             o.y + r0 * o.ldy + p * kLinearPanel, o.ldy, false);
}

// Row granule of units on the dot kernel: a whole row block of its tiles.
int64_t dot_granule() { return 8 * static_cast<int64_t>(simd::gemm_bf16_dot_tile_rows()); }

// bf16 prefill on the AMX tiles: rows [r0, r1) of the tiled x times panel p's strips.
void amx_unit(const uint16_t* xb, const LinearOut& o, int p, int64_t r0, int64_t r1) {
  const PackedLinear& w = *o.w;
  const int s0 = p * kStripsPerPanel;
  const int strips = std::min(kStripsPerPanel, w.strips() - s0);
  simd::amx_gemm_bf16(xb + simd::amx_a_index(r0, 0, w.k_blocks()), static_cast<int>(r1 - r0),
                      w.half.data() + w.strip_offset(s0), w.k_blocks(), strips, w.panel_cols(p),
                      o.y + r0 * o.ldy + p * kLinearPanel, o.ldy);
}

// Without a matrix unit, bf16 weights on hanpu's own kernel: the pairs layout times x (packed
// by x_as_pairs_tiles; r0 starts a tile) with the weights widened in registers
// (simd/gemm_bf16_pairs.h), the unit's whole depth in one call.
void pairs_unit(const float* xp, const LinearOut& o, int p, int64_t r0, int64_t r1) {
  const PackedLinear& w = *o.w;
  const int s0 = p * kStripsPerPanel;
  const int64_t tile = r0 / simd::gemm_bf16_pairs_tile_rows();
  const int64_t tile_floats =
      static_cast<int64_t>(simd::pairs_packed_x_floats(1, w.in));  // one tile
  simd::gemm_bf16_pairs_packed(static_cast<int>(r1 - r0), xp + tile * tile_floats, w.in,
                               w.half.data() + w.strip_offset(s0), w.k_blocks(), 0, w.k_blocks(),
                               std::min(kStripsPerPanel, w.strips() - s0), w.panel_cols(p),
                               o.y + r0 * o.ldy + p * kLinearPanel, o.ldy, false);
}

// Without a matrix unit: bf16 units on pairs_unit where unit_kernel says so; otherwise
// 512-deep slices of panel p, 16-bit weights widened to one fp32 [512 x 256] block per
// (unit, slice), each slice multiplied by OpenBLAS (where the ceiling allows, blas_sgemm.h) or by
// the FMA micro-kernel against 192-row slabs of x.
void fma_unit(const float* x, int64_t ldx, const float* xp, const LinearOut& o, int p, int64_t r0,
              int64_t r1, ProjectionKernel ceiling) {
  const PackedLinear& w = *o.w;
  const int n = w.panel_cols(p);
  const UnitKernel kernel = unit_kernel(w, r1 - r0, n, ceiling);
  if (kernel == UnitKernel::kPairs) return pairs_unit(xp, o, p, r0, r1);
  thread_local std::vector<float> block;
  for (int k0 = 0; k0 < w.in; k0 += kLinearDepth) {
    const int kd = std::min(kLinearDepth, w.in - k0);
    const float* b = nullptr;
    int64_t ldb = n;
    if (w.dtype == DType::kF32) {
      b = w.panel(p) + static_cast<size_t>(k0) * n;
    } else if (w.pairs()) {
      block.resize(static_cast<size_t>(kLinearDepth) * kLinearPanel);
      const int s0 = p * kStripsPerPanel;
      const int strips = std::min(kStripsPerPanel, w.strips() - s0);
      ldb = static_cast<int64_t>(strips) * kPairStripCols;
      simd::widen_bf16_pairs(w.half.data() + w.strip_offset(s0), w.k_blocks(), k0 / kPairBlockDepth,
                             (kd + kPairBlockDepth - 1) / kPairBlockDepth, strips, block.data(),
                             ldb);
      b = block.data();
    } else {
      block.resize(static_cast<size_t>(kLinearDepth) * kLinearPanel);
      simd::load_f32(block.data(), w.panel_16(p) + static_cast<size_t>(k0) * n, w.dtype,
                     static_cast<size_t>(kd) * n);
      b = block.data();
    }
    const float beta = k0 == 0 ? 0.0f : 1.0f;
    float* y = o.y + p * kLinearPanel;
    // OpenBLAS packs and blocks the slice itself: all of the unit's rows in one call.
    if (kernel == UnitKernel::kBlas) {
      blas_sgemm(static_cast<int>(r1 - r0), n, kd, x + r0 * ldx + k0, ldx, b, ldb, y + r0 * o.ldy,
                 o.ldy, beta);
      continue;
    }
    for (int64_t s = r0; s < r1; s += kLinearRowSlab) {
      const int rows = static_cast<int>(std::min(kLinearRowSlab, r1 - s));
      simd::gemm(rows, n, kd, simd::row_major(x + s * ldx + k0, ldx), b, ldb, y + s * o.ldy, o.ldy,
                 1.0f, beta);
    }
  }
}

// Decode: one row, 16-bit weights widened in registers (fp32 read as they are), each
// weight read once. A bf16 unit is a group of kGemvPartStrips strips (128 columns, the
// streams GemvPairs reads at once) rather than a whole 256-column panel: the [3584 x 1024]
// mlp.down has 4 panels of 1.8 MB, so with panels as units the core that took the last one
// read alone at the end. (Measured in alternation: docs/performance.md, "Design
// measurements"; 2-strip parts, two streams a call, were slower.)
constexpr int kGemvPartStrips = simd::kGemvPairStreams;

// A 16-bit or fp32 projection of fewer than kGemvMinParts panels (an MoE router of 64
// experts is one) is also cut along its inputs, into slices of its panels, so that every core
// reads a share of it: as one unit, one core read it alone while the other waited. The
// slices' sums are added in slice order afterwards, so the result depends neither on which
// core took which slice nor on the pool's size.
constexpr int kGemvMinParts = 4;
constexpr int kGemvMinSliceInputs = 64;
int gemv_slices(const PackedLinear& w) {
  if (w.pairs() || w.panels() == 0) return 1;
  return std::clamp(kGemvMinParts / w.panels(), 1, std::max(1, w.in / kGemvMinSliceInputs));
}
int gemv_parts(const PackedLinear& w) {
  return w.pairs() ? (w.strips() + kGemvPartStrips - 1) / kGemvPartStrips
                   : w.panels() * gemv_slices(w);
}

// Part `part` of x times w: into y, or, for a sliced projection, its slice's sums into
// partial [parts, kLinearPanel].
void gemv_part(const float* x, const PackedLinear& w, float* y, int part, float* partial) {
  if (w.pairs()) {
    const int s0 = part * kGemvPartStrips;
    const int col0 = s0 * simd::kPairStripCols;
    simd::gemv_bf16_pairs(x, w.in, w.half.data() + w.strip_offset(s0), w.k_blocks(),
                          std::min(kGemvPartStrips, w.strips() - s0),
                          std::min(kGemvPartStrips * simd::kPairStripCols, w.out - col0), y + col0);
    return;
  }
  const int slices = gemv_slices(w);
  const int p = part / slices, slice = part % slices, cols = w.panel_cols(p);
  const int k0 = static_cast<int>(int64_t{w.in} * slice / slices);
  const int k1 = static_cast<int>(int64_t{w.in} * (slice + 1) / slices);
  float* dst = slices == 1 ? y + p * kLinearPanel : partial + part * kLinearPanel;
  const size_t at = static_cast<size_t>(k0) * cols;  // a panel is [in, cols] row-major
  if (w.dtype == DType::kF32) {
    simd::gemv_f32(x + k0, k1 - k0, w.panel(p) + at, cols, dst);
  } else {
    simd::gemv_16(x + k0, k1 - k0, w.panel_16(p) + at, w.dtype, cols, dst);
  }
}

// Each row's x times its projection, every part of every row claimed on the pool.
void gemv_rows(const std::vector<LinearRow>& rows, int threads) {
  std::vector<int> first(rows.size() + 1, 0);    // parts of rows before j
  std::vector<int> partial_at(rows.size(), -1);  // where row j's slices' sums start
  int partial_parts = 0;
  for (size_t j = 0; j < rows.size(); ++j) {
    const int parts = gemv_parts(*rows[j].w);
    first[j + 1] = first[j] + parts;
    if (gemv_slices(*rows[j].w) > 1) {
      partial_at[j] = partial_parts;
      partial_parts += parts;
    }
  }
  // The caller's, kept between calls; named through a reference (inside the pool's threads
  // the thread_local would be their own).
  thread_local AlignedFloats caller_partial;
  AlignedFloats& partial = caller_partial;
  partial.resize(static_cast<size_t>(partial_parts) * kLinearPanel);
  claim_each(threads, first.back(), [&](int u) {
    const size_t j = output_of(first, u);
    float* slices = partial_at[j] < 0 ? nullptr : partial.data() + partial_at[j] * kLinearPanel;
    gemv_part(rows[j].x, *rows[j].w, rows[j].y, u - first[j], slices);
  });
  for (size_t j = 0; j < rows.size(); ++j) {
    if (partial_at[j] < 0) continue;
    const PackedLinear& w = *rows[j].w;
    const int slices = gemv_slices(w);
    for (int p = 0; p < w.panels(); ++p) {
      const float* sums = partial.data() + (partial_at[j] + p * slices) * kLinearPanel;
      float* y = rows[j].y + p * kLinearPanel;
      std::copy_n(sums, w.panel_cols(p), y);
      for (int s = 1; s < slices; ++s) {
        for (int c = 0; c < w.panel_cols(p); ++c) y[c] += sums[s * kLinearPanel + c];
      }
    }
  }
}

// A prefill's bf16 projections: AMX tiles where usable, else the AVX512-BF16 dot kernel,
// else the FMA path (pairs kernel, OpenBLAS or micro-kernel per unit, unit_kernel). The dot
// kernel against the pairs kernel on a Zen 4 VM (docs/performance.md, "Prefill on the bf16 dot
// instruction"): 1.86-1.97x on every 0.8B projection at T 512 and 2048 in `hanpu bench linear
// --projection all`, whole 0.8B prefills 1.72-1.84x; OpenBLAS on widened blocks was slower
// than both. It rounds x to bf16 as the AMX tiles do.
enum class Path { kGemv, kAmx, kDot, kFma };

Path path_of(const PackedLinear& w, int64_t T, ProjectionKernel ceiling) {
  if (T == 1) return Path::kGemv;
  if (w.pairs() && linear_uses_amx(ceiling)) return Path::kAmx;
  if (w.pairs() && linear_uses_dot(ceiling)) return Path::kDot;
  return Path::kFma;
}

}  // namespace

void linear_many(const float* x, int64_t ldx, int64_t T, const std::vector<LinearOut>& outs,
                 int threads, ProjectionKernel ceiling) {
  if (T <= 0 || outs.empty()) return;
  if (std::any_of(outs.begin(), outs.end(), [](const LinearOut& o) { return o.w->quant; })) {
    const bool together = std::all_of(outs.begin(), outs.end(), [&](const LinearOut& o) {
      return o.w->quant && o.w->in == outs[0].w->in && o.w->x_order == outs[0].w->x_order &&
             !quant_prefill_widens(*o.w, T, ceiling) && !quant_prefill_panels(*o.w, T, ceiling);
    });
    if (together) return quant_linear_many(x, ldx, T, outs, threads);
    for (const LinearOut& o : outs) {  // each quantizes x for itself (its own x_order)
      if (o.w->quant)
        quant_linear(x, ldx, T, *o.w, o.y, o.ldy, threads, ceiling);
      else
        linear_many(x, ldx, T, {o}, threads, ceiling);
    }
    return;
  }
  ceiling = resolve_projection_kernel(ceiling);
  const Path path = path_of(*outs[0].w, T, ceiling);
  const bool together = std::all_of(outs.begin(), outs.end(), [&](const LinearOut& o) {
    return o.w->in == outs[0].w->in && path_of(*o.w, T, ceiling) == path;
  });
  if (!together) {  // different inputs sizes or kernels: one call each
    for (const LinearOut& o : outs) linear_many(x, ldx, T, {o}, threads, ceiling);
    return;
  }
  switch (path) {
    case Path::kGemv: {
      std::vector<LinearRow> rows;
      for (const LinearOut& o : outs) rows.push_back({x, o.w, o.y});
      return gemv_rows(rows, threads);
    }
    case Path::kAmx: {
      const uint16_t* xb = x_as_tiles(x, ldx, T, outs[0].w->in, threads);
      return for_each_unit(
          threads, T, outs, kAmxGranule,
          [&](const LinearOut& o, int p, int64_t r0, int64_t r1) { amx_unit(xb, o, p, r0, r1); });
    }
    case Path::kDot: {
      const uint32_t* xd = x_as_dot_tiles(x, ldx, T, outs[0].w->in, threads);
      return for_each_unit(
          threads, T, outs, dot_granule(),
          [&](const LinearOut& o, int p, int64_t r0, int64_t r1) { dot_unit(xd, o, p, r0, r1); });
    }
    case Path::kFma: {
      const bool pairs = std::any_of(outs.begin(), outs.end(), [&](const LinearOut& o) {
        return unit_kernel(*o.w, T, o.w->panel_cols(0), ceiling) == UnitKernel::kPairs;
      });
      const float* xp = pairs ? x_as_pairs_tiles(x, ldx, T, outs[0].w->in, threads) : nullptr;
      return for_each_unit(threads, T, outs, pairs ? pairs_granule() : kAmxGranule,
                           [&](const LinearOut& o, int p, int64_t r0, int64_t r1) {
                             fma_unit(x, ldx, xp, o, p, r0, r1, ceiling);
                           });
    }
  }
}

StripProduct::StripProduct(const float* x, int64_t ldx, int64_t T, int in, int threads,
                           ProjectionKernel ceiling)
    : T_(T), in_(in) {
  ceiling = resolve_projection_kernel(ceiling);
  if (linear_uses_amx(ceiling)) {
    kernel_ = Kernel::kAmx;
    x_ = x_as_tiles(x, ldx, T, in, threads);
  } else if (linear_uses_dot(ceiling)) {
    kernel_ = Kernel::kDot;
    x_ = x_as_dot_tiles(x, ldx, T, in, threads);
  } else {
    kernel_ = Kernel::kPairs;
    x_ = x_as_pairs_tiles(x, ldx, T, in, threads);
  }
}

void StripProduct::multiply(const uint16_t* w, int strips, int n_cols, float* y,
                            int64_t ldy) const {
  const int kt = (in_ + kPairBlockDepth - 1) / kPairBlockDepth;
  const int rows = static_cast<int>(T_);
  switch (kernel_) {
    case Kernel::kAmx:
      return simd::amx_gemm_bf16(static_cast<const uint16_t*>(x_), rows, w, kt, strips, n_cols, y,
                                 ldy);
    case Kernel::kDot:
      return simd::gemm_bf16_dot_packed(rows, static_cast<const uint32_t*>(x_), in_, w, kt, 0, kt,
                                        strips, n_cols, y, ldy, false);
    case Kernel::kPairs:
      return simd::gemm_bf16_pairs_packed(rows, static_cast<const float*>(x_), in_, w, kt, 0, kt,
                                          strips, n_cols, y, ldy, false);
  }
}

const char* linear_kernel_name(const PackedLinear& w, int64_t T, int threads,
                               ProjectionKernel ceiling) {
  if (w.quant) {
    if (quant_prefill_panels(w, T, ceiling)) return "int8-panel";
    if (!quant_prefill_widens(w, T, ceiling)) return quant_linear_kernel_name();
    return linear_uses_amx(ceiling)   ? "widen+amx"
           : linear_uses_dot(ceiling) ? "widen+dot"
                                      : "widen+pairs";
  }
  ceiling = resolve_projection_kernel(ceiling);
  switch (path_of(w, T, ceiling)) {
    case Path::kGemv:
      return "gemv";
    case Path::kAmx:
      return "amx";
    case Path::kDot:
      return "dot";
    case Path::kFma:
      break;
  }
  // The kernel of the first unit (rows of units differ by at most one 32-row granule).
  const int ranges =
      T == 1 ? 1 : linear_row_ranges(T, w.panels(), ThreadPool::shared(threads).size());
  const auto [r0, r1] = linear_row_range(T, ranges, 0);
  switch (unit_kernel(w, r1 - r0, w.panel_cols(0), ceiling)) {
    case UnitKernel::kBlas:
      return "blas";
    case UnitKernel::kPairs:
      return "pairs";
    case UnitKernel::kFma:
      break;
  }
  return "fma";
}

bool linear_uses_dot(ProjectionKernel ceiling) {
  return !linear_uses_amx(ceiling) && projection_kernel_allowed(ceiling, ProjectionKernel::kDot);
}
bool linear_rounds_x_to_bf16(ProjectionKernel ceiling) {
  return linear_uses_amx(ceiling) || linear_uses_dot(ceiling);
}

void linear_each(const std::vector<LinearRow>& rows, int threads, ProjectionKernel ceiling) {
  if (std::all_of(rows.begin(), rows.end(), [](const LinearRow& r) { return r.w->quant; }))
    return quant_linear_each(rows, threads);  // a decode row never widens the blocks
  ceiling = resolve_projection_kernel(ceiling);
  const bool gemvs = std::all_of(rows.begin(), rows.end(), [&](const LinearRow& r) {
    return !r.w->quant && path_of(*r.w, 1, ceiling) == Path::kGemv;
  });
  if (!gemvs) {
    for (const LinearRow& r : rows) linear(r.x, r.w->in, 1, *r.w, r.y, r.w->out, threads, ceiling);
    return;
  }
  gemv_rows(rows, threads);
}

void linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y, int64_t ldy,
            int threads, ProjectionKernel ceiling) {
  if (w.out > 0) linear_many(x, ldx, T, {LinearOut{&w, y, ldy}}, threads, ceiling);
}

}  // namespace hanpu::cpu
