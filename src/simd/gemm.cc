// FMA register-tile GEMM micro-kernel, compiled for every Highway target and dispatched once
// per call. Hand-written because it is the point of the project: the tile shape and the
// operand layouts are chosen to match the LA chunk dataflow (see gemm.h), which a BLAS call
// on 64x128 operands would re-pack every time.
#include "simd/gemm.h"

#include <algorithm>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gemm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// 32-register targets hold a 12 x 2-vector accumulator tile (24 accumulators, 2 B vectors,
// 1 broadcast: 14 loads feed 24 FMAs); 16-register ones 6 x 2.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64
constexpr int kMR = 12;
#else
constexpr int kMR = 6;
#endif

// Every loop over the tile's rows must be unrolled completely: one left rolled (GCC gives up
// on the 12-row epilogue) indexes the accumulator arrays at run time, which puts them in
// memory, and the reduction loop then stores all 24 accumulators to the stack on every step
// (seen in GCC 12's code for the 11- and 12-row AVX-512 tiles: 24 stores per 24 FMAs, on
// cores that retire one 512-bit store per cycle).
#define HANPU_UNROLL_ALL _Pragma("GCC unroll 16")

// How A is addressed, fixed at compile time so the reduction loop keeps every row offset in
// a register: with both strides at run time GCC runs out of general registers for the 12-row
// tile and, on every step, reloads a stride from the stack and moves one through a vector
// register (a port-0 uop that competes with the FMAs). In an interleaved A/B of the two
// builds on in-cache tiles (a one-off harness) the specialised loops were faster in every
// pair; row-major A (acs == 1) and transposed A (ars == 1) are all the LA and attention
// kernels use, the general form stays for any other stride.
enum class ALayout { kRowMajor, kTransposed, kStrided };

// A tile row's stored value: alpha acc, plus vb C when C is read (load_c loads it only then).
template <class LoadC>
HWY_INLINE VF ScaledOut(VF acc, VF va, VF vb, bool read_c, const LoadC& load_c) {
  return read_c ? hn::MulAdd(va, acc, hn::Mul(vb, load_c())) : hn::Mul(va, acc);
}

// C tile [MR x n] (n <= 2 lanes) = alpha * A[MR x kd] B[kd x n] (+ C).
template <int MR, bool kFullN, ALayout kA>
HWY_INLINE void Tile(const float* HWY_RESTRICT a, ptrdiff_t ars, ptrdiff_t acs,
                     const float* HWY_RESTRICT b, ptrdiff_t ldb, int kd, float* HWY_RESTRICT c,
                     ptrdiff_t ldc, size_t n, float alpha, float beta, const float* row_beta) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  if constexpr (kA == ALayout::kRowMajor) acs = 1;
  if constexpr (kA == ALayout::kTransposed) ars = 1;
  const auto m0 = hn::FirstN(d, kFullN ? NL : std::min(n, NL));
  const auto m1 = hn::FirstN(d, kFullN ? NL : (n > NL ? n - NL : 0));
  VF c0[MR], c1[MR];
  const bool read_c = row_beta != nullptr || beta != 0.0f;
  if (read_c) {
    HANPU_UNROLL_ALL
    for (int r = 0; r < MR; ++r) {
      hwy::Prefetch(c + r * ldc);
      hwy::Prefetch(c + r * ldc + NL);
    }
  }
  HANPU_UNROLL_ALL
  for (int r = 0; r < MR; ++r) {
    c0[r] = hn::Zero(d);
    c1[r] = hn::Zero(d);
  }
  for (int p = 0; p < kd; ++p) {
    const float* bp = b + p * ldb;
    VF b0, b1;
    if constexpr (kFullN) {
      b0 = hn::LoadU(d, bp);
      b1 = hn::LoadU(d, bp + NL);
    } else {
      b0 = hn::MaskedLoad(m0, d, bp);
      b1 = hn::MaskedLoad(m1, d, bp + NL);
    }
    const float* ap = a + p * acs;
    HANPU_UNROLL_ALL
    for (int r = 0; r < MR; ++r) {
      const VF av = hn::Set(d, ap[r * ars]);
      c0[r] = hn::MulAdd(av, b0, c0[r]);
      c1[r] = hn::MulAdd(av, b1, c1[r]);
    }
  }
  const VF va = hn::Set(d, alpha);
  HANPU_UNROLL_ALL
  for (int r = 0; r < MR; ++r) {
    float* cr = c + r * ldc;
    const VF vb = hn::Set(d, row_beta ? row_beta[r] : beta);
    if constexpr (kFullN) {
      hn::StoreU(ScaledOut(c0[r], va, vb, read_c, [&] { return hn::LoadU(d, cr); }), d, cr);
      hn::StoreU(ScaledOut(c1[r], va, vb, read_c, [&] { return hn::LoadU(d, cr + NL); }), d,
                 cr + NL);
    } else {
      hn::BlendedStore(ScaledOut(c0[r], va, vb, read_c, [&] { return hn::MaskedLoad(m0, d, cr); }),
                       m0, d, cr);
      hn::BlendedStore(
          ScaledOut(c1[r], va, vb, read_c, [&] { return hn::MaskedLoad(m1, d, cr + NL); }), m1, d,
          cr + NL);
    }
  }
}

// Rows of the one-vector tile that takes a column remainder of at most one vector: 16 (8)
// accumulators, one B load and one broadcast per FMA row. On the two-vector tile such a
// remainder leaves the second vector's FMAs all masked: the 16-column diagonal blocks of the
// LA chunk (K K^T, Q K^T at N = 16 and 48) spent a sixth of their FMAs on nothing. In a
// per-stage cycle count of the GDN chunk (`hanpu bench la --stages`) those products' share of
// the chunk's cycles fell.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64
constexpr int kMR1 = 16;
#else
constexpr int kMR1 = 8;
#endif

// C tile [MR x n] (n <= 1 lane group) = alpha * A[MR x kd] B[kd x n] (+ C), masked to n.
template <int MR, ALayout kA>
HWY_INLINE void TileOneVector(const float* HWY_RESTRICT a, ptrdiff_t ars, ptrdiff_t acs,
                              const float* HWY_RESTRICT b, ptrdiff_t ldb, int kd,
                              float* HWY_RESTRICT c, ptrdiff_t ldc, size_t n, float alpha,
                              float beta, const float* row_beta) {
  const DF d;
  if constexpr (kA == ALayout::kRowMajor) acs = 1;
  if constexpr (kA == ALayout::kTransposed) ars = 1;
  const auto m = hn::FirstN(d, n);
  VF acc[MR];
  HANPU_UNROLL_ALL
  for (int r = 0; r < MR; ++r) acc[r] = hn::Zero(d);
  for (int p = 0; p < kd; ++p) {
    const VF bv = hn::MaskedLoad(m, d, b + p * ldb);
    const float* ap = a + p * acs;
    HANPU_UNROLL_ALL
    for (int r = 0; r < MR; ++r) acc[r] = hn::MulAdd(hn::Set(d, ap[r * ars]), bv, acc[r]);
  }
  const VF va = hn::Set(d, alpha);
  const bool read_c = row_beta != nullptr || beta != 0.0f;
  HANPU_UNROLL_ALL
  for (int r = 0; r < MR; ++r) {
    float* cr = c + r * ldc;
    const VF vb = hn::Set(d, row_beta ? row_beta[r] : beta);
    hn::BlendedStore(ScaledOut(acc[r], va, vb, read_c, [&] { return hn::MaskedLoad(m, d, cr); }), m,
                     d, cr);
  }
}

template <ALayout kA>
HWY_INLINE void TileOneVectorRows(int m, const float* a, ptrdiff_t ars, ptrdiff_t acs,
                                  const float* b, ptrdiff_t ldb, int kd, float* c, ptrdiff_t ldc,
                                  size_t n, float alpha, float beta, const float* row_beta) {
  switch (m) {
#define HANPU_TILE1_CASE(R) \
  case R:                   \
    return TileOneVector<R, kA>(a, ars, acs, b, ldb, kd, c, ldc, n, alpha, beta, row_beta);
    HANPU_TILE1_CASE(1)
    HANPU_TILE1_CASE(2)
    HANPU_TILE1_CASE(3)
    HANPU_TILE1_CASE(4)
    HANPU_TILE1_CASE(5)
    HANPU_TILE1_CASE(6)
    HANPU_TILE1_CASE(7)
    HANPU_TILE1_CASE(8)
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64
    HANPU_TILE1_CASE(9)
    HANPU_TILE1_CASE(10)
    HANPU_TILE1_CASE(11)
    HANPU_TILE1_CASE(12)
    HANPU_TILE1_CASE(13)
    HANPU_TILE1_CASE(14)
    HANPU_TILE1_CASE(15)
    HANPU_TILE1_CASE(16)
#endif
#undef HANPU_TILE1_CASE
    default:
      return;
  }
}

template <bool kFullN, ALayout kA>
HWY_INLINE void TileRows(int m, const float* a, ptrdiff_t ars, ptrdiff_t acs, const float* b,
                         ptrdiff_t ldb, int kd, float* c, ptrdiff_t ldc, size_t n, float alpha,
                         float beta, const float* row_beta) {
  switch (m) {
#define HANPU_TILE_CASE(R) \
  case R:                  \
    return Tile<R, kFullN, kA>(a, ars, acs, b, ldb, kd, c, ldc, n, alpha, beta, row_beta);
    HANPU_TILE_CASE(1)
    HANPU_TILE_CASE(2)
    HANPU_TILE_CASE(3)
    HANPU_TILE_CASE(4)
    HANPU_TILE_CASE(5)
    HANPU_TILE_CASE(6)
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64
    HANPU_TILE_CASE(7)
    HANPU_TILE_CASE(8)
    HANPU_TILE_CASE(9)
    HANPU_TILE_CASE(10)
    HANPU_TILE_CASE(11)
    HANPU_TILE_CASE(12)
#endif
#undef HANPU_TILE_CASE
    default:
      return;
  }
}

// Rows of the next register tile when `left` rows remain: full tiles while at least two
// remain, then the last 13..2*MR-1 rows as two balanced tiles, so the 16-row sub-chunk
// blocks of the LA chunk run as 8 + 8 rather than 12 + 4 (a 4-row tile reaches a third of
// the FMA rate of a full one). Examples with MR = 12: 128 -> 12 x 10 + 8; 16 -> 8 + 8;
// 64 -> 12 x 4 + 8 + 8; 12 -> 12; 5 -> 5.
inline int TileHeight(int left) {
  if (left >= 2 * kMR || left <= kMR) return std::min(left, kMR);
  return (left + 1) / 2;
}

template <ALayout kA>
void GemmLayout(int M, int N, int Kd, const float* a, ptrdiff_t ars, ptrdiff_t acs, const float* b,
                ptrdiff_t ldb, float* c, ptrdiff_t ldc, float alpha, float beta,
                const float* row_beta) {
  const size_t NL = hn::Lanes(DF()), NR = 2 * NL;
  // A column remainder of at most one vector goes to the one-vector tile, after the rest.
  const size_t rem = N % NR;
  const int N2 = rem != 0 && rem <= NL ? N - static_cast<int>(rem) : N;
  // Row panels outermost: the A panel [MR x Kd] (MR broadcast streams) stays in L1 while the
  // B panels, read as contiguous vectors the prefetcher follows, stream past it.
  for (int i0 = 0; i0 < M;) {
    const int m = TileHeight(M - i0);
    const float* ai = a + i0 * ars;
    const float* rb = row_beta ? row_beta + i0 : nullptr;
    for (int j0 = 0; j0 < N2; j0 += static_cast<int>(NR)) {
      const size_t n = std::min<size_t>(NR, N - j0);
      float* ci = c + i0 * ldc + j0;
      if (n == NR) {
        TileRows<true, kA>(m, ai, ars, acs, b + j0, ldb, Kd, ci, ldc, n, alpha, beta, rb);
      } else {
        TileRows<false, kA>(m, ai, ars, acs, b + j0, ldb, Kd, ci, ldc, n, alpha, beta, rb);
      }
    }
    i0 += m;
  }
  if (N2 == N) return;
  for (int i0 = 0; i0 < M; i0 += kMR1) {
    const int m = std::min(kMR1, M - i0);
    TileOneVectorRows<kA>(m, a + i0 * ars, ars, acs, b + N2, ldb, Kd, c + i0 * ldc + N2, ldc, rem,
                          alpha, beta, row_beta ? row_beta + i0 : nullptr);
  }
}

void Gemm(int M, int N, int Kd, const float* a, ptrdiff_t ars, ptrdiff_t acs, const float* b,
          ptrdiff_t ldb, float* c, ptrdiff_t ldc, float alpha, float beta, const float* row_beta) {
  if (acs == 1) {
    GemmLayout<ALayout::kRowMajor>(M, N, Kd, a, ars, acs, b, ldb, c, ldc, alpha, beta, row_beta);
  } else if (ars == 1) {
    GemmLayout<ALayout::kTransposed>(M, N, Kd, a, ars, acs, b, ldb, c, ldc, alpha, beta, row_beta);
  } else {
    GemmLayout<ALayout::kStrided>(M, N, Kd, a, ars, acs, b, ldb, c, ldc, alpha, beta, row_beta);
  }
}

int TileRowsCount() { return kMR; }
int TileColsCount() { return static_cast<int>(2 * hn::Lanes(DF())); }
int64_t CurrentTarget() { return HWY_TARGET; }

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {

HWY_EXPORT(Gemm);
HWY_EXPORT(TileRowsCount);
HWY_EXPORT(TileColsCount);
HWY_EXPORT(CurrentTarget);

void gemm(int M, int N, int Kd, MatA A, const float* B, ptrdiff_t ldb, float* C, ptrdiff_t ldc,
          float alpha, float beta) {
  if (M <= 0 || N <= 0) return;
  HWY_DYNAMIC_DISPATCH(Gemm)
  (M, N, Kd, A.data, A.row_stride, A.col_stride, B, ldb, C, ldc, alpha, beta, nullptr);
}

void gemm_row_scaled(int M, int N, int Kd, MatA A, const float* B, ptrdiff_t ldb, float* C,
                     ptrdiff_t ldc, const float* row_beta) {
  if (M <= 0 || N <= 0) return;
  HWY_DYNAMIC_DISPATCH(Gemm)
  (M, N, Kd, A.data, A.row_stride, A.col_stride, B, ldb, C, ldc, 1.0f, 0.0f, row_beta);
}

void gemm_repacking(int M, int N, int Kd, MatA A, const float* B, ptrdiff_t ldb, float* C,
                    ptrdiff_t ldc, float alpha, float beta) {
  if (M <= 0 || N <= 0) return;
  // Pack A as k-major panels of MR rows, B contiguous [Kd x N], compute into a packed C, then
  // scatter C back: the per-call transforms a library GEMM pays when layouts are not planned.
  const int mr = gemm_tile_rows();
  const int panels = (M + mr - 1) / mr;
  // Per-thread packing buffers that only grow, as a BLAS keeps its pack buffers: the cost
  // measured is the packing, not an allocation per call.
  thread_local std::vector<float> ap, bp, cp;
  ap.resize(std::max(ap.size(), static_cast<size_t>(panels) * mr * Kd));
  bp.resize(std::max(bp.size(), static_cast<size_t>(Kd) * N));
  cp.resize(std::max(cp.size(), static_cast<size_t>(panels) * mr * N));
  for (int pnl = 0; pnl < panels; ++pnl)
    for (int p = 0; p < Kd; ++p)
      for (int r = 0; r < mr; ++r) {
        const int i = pnl * mr + r;
        ap[(static_cast<size_t>(pnl) * Kd + p) * mr + r] =
            i < M ? A.data[i * A.row_stride + p * A.col_stride] : 0.0f;
      }
  for (int p = 0; p < Kd; ++p) std::copy(B + p * ldb, B + p * ldb + N, bp.begin() + p * N);
  for (int pnl = 0; pnl < panels; ++pnl) {
    HWY_DYNAMIC_DISPATCH(Gemm)
    (mr, N, Kd, ap.data() + static_cast<size_t>(pnl) * Kd * mr, 1, mr, bp.data(), N,
     cp.data() + static_cast<size_t>(pnl) * mr * N, N, 1.0f, 0.0f, nullptr);
  }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const float v = alpha * cp[static_cast<size_t>(i) * N + j];
      C[i * ldc + j] = beta != 0.0f ? beta * C[i * ldc + j] + v : v;
    }
}

int gemm_tile_rows() { return HWY_DYNAMIC_DISPATCH(TileRowsCount)(); }
int gemm_tile_cols() { return HWY_DYNAMIC_DISPATCH(TileColsCount)(); }

const char* simd_target_name() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(CurrentTarget)()); }

}  // namespace hanpu::simd
#endif
