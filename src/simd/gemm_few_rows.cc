// Few-row GEMM (see gemm_few_rows.h), compiled per Highway target. Hand-written for the same
// reason as gemm.cc: the register tile is shaped for decode attention's 1-8 query rows and B
// is widened from 16-bit storage inside the loop, which no BLAS call offers.
#include "simd/gemm_few_rows.h"

#include <algorithm>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gemm_few_rows.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Register tiles sized to the target's vector registers. x86 before AVX-512 has 16: a 4 x 4
// tile (16 accumulators, plus the B vectors and a broadcast) spilled 5 accumulators to the
// stack, and their store-to-load round trips paced the loop well above the FMA bound even in
// L1. 4 x 3 fits (12 + 3 + 1) and ran faster (docs/performance.md, "Design measurements").
constexpr int kVectorRegisters = (HWY_ARCH_X86 && HWY_TARGET >= HWY_AVX2) ? 16 : 32;
constexpr int kRows = 4;                                  // rows of A per register tile
constexpr int kVectors = kVectorRegisters >= 32 ? 4 : 3;  // vectors of B per register tile (P V)
constexpr int kKeys = kVectors;                           // rows of B per dot-product tile (scores)

#define HANPU_UNROLL_ALL _Pragma("GCC unroll 16")

// Walks the lines of a RowsToFetch, `per_step` prefetches per step() of the caller's loop.
class FetchCursor {
 public:
  // steps: how many times the caller will call step(); the lines are spread over them.
  FetchCursor(const RowsToFetch* f, int64_t steps) {
    if (f == nullptr || f->rows <= 0 || f->row_bytes == 0 || steps <= 0) return;
    row_ = static_cast<const char*>(f->first);
    at_ = row_;
    stride_ = f->row_stride;
    row_end_ = static_cast<ptrdiff_t>(f->row_bytes);
    const int64_t lines = f->rows * static_cast<int64_t>((f->row_bytes + 63) / 64);
    left_ = lines;
    per_step_ = static_cast<int>((lines + steps - 1) / steps);
  }
  HWY_INLINE void step() {
    for (int i = 0; i < per_step_ && left_ > 0; ++i, --left_) {
      __builtin_prefetch(at_, 0, 3);
      at_ += 64;
      if (at_ - row_ >= row_end_) {
        row_ += stride_;
        at_ = row_;
      }
    }
  }

 private:
  const char* row_ = nullptr;
  const char* at_ = nullptr;
  ptrdiff_t stride_ = 0, row_end_ = 0;
  int64_t left_ = 0;
  int per_step_ = 0;
};

// B element idx (a multiple of the lane count) widened to fp32: BT 0 = f32, 1 = f16, 2 = bf16
// (the upper half of an fp32). kMask: only the first `lanes` lanes (f32 only).
template <int BT, bool kMask>
HWY_INLINE VF LoadB(DF d, const void* b, size_t idx, size_t lanes) {
  if constexpr (BT == 0) {
    const float* p = static_cast<const float*>(b) + idx;
    if constexpr (kMask) return hn::MaskedLoad(hn::FirstN(d, lanes), d, p);
    return hn::LoadU(d, p);
  } else if constexpr (BT == 1) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, static_cast<const hwy::float16_t*>(b) + idx));
  } else {
    const hn::Rebind<uint16_t, DF> du16;
    const hn::RebindToUnsigned<DF> du32;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(
                              du32, hn::LoadU(du16, static_cast<const uint16_t*>(b) + idx))));
  }
}

template <int MR, int NV>
HWY_INLINE void ZeroAccumulators(VF (&acc)[MR][NV]) {
  HANPU_UNROLL_ALL
  for (int r = 0; r < MR; ++r) {
    HANPU_UNROLL_ALL
    for (int v = 0; v < NV; ++v) acc[r][v] = hn::Zero(DF());
  }
}

// C tile [MR x NV vectors] at column j0 (the last vector masked to `last` lanes when kMask).
template <int MR, int NV, int BT, bool kMask>
HWY_INLINE void FewTile(const float* HWY_RESTRICT a, ptrdiff_t lda, const void* b, ptrdiff_t ldb,
                        size_t j0, int kd, float* HWY_RESTRICT c, ptrdiff_t ldc, size_t last,
                        const float* row_beta, FetchCursor& fetch) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  VF acc[MR][NV];
  ZeroAccumulators(acc);
  for (int p = 0; p < kd; ++p) {
    fetch.step();
    const size_t row = static_cast<size_t>(p) * ldb + j0;
    VF bv[NV];
    HANPU_UNROLL_ALL
    for (int v = 0; v < NV; ++v) {
      bv[v] = (kMask && v == NV - 1) ? LoadB<BT, kMask>(d, b, row + v * NL, last)
                                     : LoadB<BT, false>(d, b, row + v * NL, NL);
    }
    HANPU_UNROLL_ALL
    for (int r = 0; r < MR; ++r) {
      const VF av = hn::Set(d, a[r * lda + p]);
      HANPU_UNROLL_ALL
      for (int v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
    }
  }
  HANPU_UNROLL_ALL
  for (int r = 0; r < MR; ++r) {
    float* cr = c + r * ldc + j0;
    HANPU_UNROLL_ALL
    for (int v = 0; v < NV; ++v) {
      const bool masked = kMask && v == NV - 1;
      const auto m = hn::FirstN(d, masked ? last : NL);
      VF out = acc[r][v];
      if (row_beta)
        out = hn::MulAdd(hn::Set(d, row_beta[r]), hn::MaskedLoad(m, d, cr + v * NL), out);
      if (masked) {
        hn::BlendedStore(out, m, d, cr + v * NL);
      } else {
        hn::StoreU(out, d, cr + v * NL);
      }
    }
  }
}

template <int MR, int BT, bool kMask>
HWY_INLINE void FewTileN(int nv, const float* a, ptrdiff_t lda, const void* b, ptrdiff_t ldb,
                         size_t j0, int kd, float* c, ptrdiff_t ldc, size_t last,
                         const float* row_beta, FetchCursor& fetch) {
  switch (nv) {
    case 1:
      return FewTile<MR, 1, BT, kMask>(a, lda, b, ldb, j0, kd, c, ldc, last, row_beta, fetch);
    case 2:
      return FewTile<MR, 2, BT, kMask>(a, lda, b, ldb, j0, kd, c, ldc, last, row_beta, fetch);
    case 3:
      return FewTile<MR, 3, BT, kMask>(a, lda, b, ldb, j0, kd, c, ldc, last, row_beta, fetch);
    default:
      return FewTile<MR, 4, BT, kMask>(a, lda, b, ldb, j0, kd, c, ldc, last, row_beta, fetch);
  }
}

template <int BT, bool kMask>
HWY_INLINE void FewRowsTile(int mr, int nv, const float* a, ptrdiff_t lda, const void* b,
                            ptrdiff_t ldb, size_t j0, int kd, float* c, ptrdiff_t ldc, size_t last,
                            const float* row_beta, FetchCursor& fetch) {
  switch (mr) {
    case 1:
      return FewTileN<1, BT, kMask>(nv, a, lda, b, ldb, j0, kd, c, ldc, last, row_beta, fetch);
    case 2:
      return FewTileN<2, BT, kMask>(nv, a, lda, b, ldb, j0, kd, c, ldc, last, row_beta, fetch);
    case 3:
      return FewTileN<3, BT, kMask>(nv, a, lda, b, ldb, j0, kd, c, ldc, last, row_beta, fetch);
    default:
      return FewTileN<4, BT, kMask>(nv, a, lda, b, ldb, j0, kd, c, ldc, last, row_beta, fetch);
  }
}

template <int BT>
void FewRows(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b, ptrdiff_t ldb,
             float* c, ptrdiff_t ldc, const float* row_beta, const RowsToFetch* to_fetch) {
  const size_t NL = hn::Lanes(DF());
  const size_t full = N / NL, tail = N % NL;  // whole vectors, then lanes of a last one
  const int64_t row_tiles = (M + kRows - 1) / kRows;
  // The tail tile steps only for fp32 B (16-bit tails are scalar code).
  const int64_t col_tiles =
      static_cast<int64_t>((full + kVectors - 1) / kVectors + (tail && BT == 0 ? 1 : 0));
  FetchCursor fetch(to_fetch, row_tiles * col_tiles * Kd);
  for (int i0 = 0; i0 < M; i0 += kRows) {
    const int mr = std::min(kRows, M - i0);
    const float* ai = a + i0 * lda;
    float* ci = c + i0 * ldc;
    const float* rb = row_beta ? row_beta + i0 : nullptr;
    for (size_t v0 = 0; v0 < full; v0 += kVectors) {
      const int nv = static_cast<int>(std::min<size_t>(kVectors, full - v0));
      FewRowsTile<BT, false>(mr, nv, ai, lda, b, ldb, v0 * NL, Kd, ci, ldc, NL, rb, fetch);
    }
    if (tail == 0) continue;
    if constexpr (BT == 0) {  // the last columns: one masked vector
      FewRowsTile<BT, true>(mr, 1, ai, lda, b, ldb, full * NL, Kd, ci, ldc, tail, rb, fetch);
    } else {  // 16-bit B has no masked widening load here: scalar (decode's D is a multiple of 16)
      for (int i = 0; i < mr; ++i) {
        for (size_t j = full * NL; j < static_cast<size_t>(N); ++j) {
          float sum = 0.0f;
          for (int p = 0; p < Kd; ++p) {
            sum += ai[i * lda + p] *
                   load_as_f32(b, static_cast<DType>(BT), static_cast<size_t>(p) * ldb + j);
          }
          float* cij = ci + i * ldc + j;
          *cij = rb ? rb[i] * *cij + sum : sum;
        }
      }
    }
  }
}

void GemmFewRows(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b, int bt,
                 ptrdiff_t ldb, float* c, ptrdiff_t ldc, const float* row_beta,
                 const RowsToFetch* fetch) {
  if (bt == static_cast<int>(DType::kF32))
    return FewRows<0>(M, N, Kd, a, lda, b, ldb, c, ldc, row_beta, fetch);
  if (bt == static_cast<int>(DType::kF16))
    return FewRows<1>(M, N, Kd, a, lda, b, ldb, c, ldc, row_beta, fetch);
  return FewRows<2>(M, N, Kd, a, lda, b, ldb, c, ldc, row_beta, fetch);
}

// C tile [MR x NB]: rows of A against NB rows of B, vector accumulators along Kd (whole
// vectors: kd_full elements), reduced to scalars at the end; the Kd tail in scalar code.
template <int MR, int NB, int BT>
HWY_INLINE void DotTile(const float* HWY_RESTRICT a, ptrdiff_t lda, const void* b, ptrdiff_t ldb,
                        size_t j0, int kd, size_t kd_full, float* HWY_RESTRICT c, ptrdiff_t ldc,
                        FetchCursor& fetch) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  VF acc[MR][NB];
  ZeroAccumulators(acc);
  for (size_t p = 0; p < kd_full; p += NL) {
    fetch.step();
    VF bv[NB];
    HANPU_UNROLL_ALL
    for (int k = 0; k < NB; ++k) bv[k] = LoadB<BT, false>(d, b, (j0 + k) * ldb + p, NL);
    HANPU_UNROLL_ALL
    for (int r = 0; r < MR; ++r) {
      const VF av = hn::LoadU(d, a + r * lda + p);
      HANPU_UNROLL_ALL
      for (int k = 0; k < NB; ++k) acc[r][k] = hn::MulAdd(av, bv[k], acc[r][k]);
    }
  }
  HANPU_UNROLL_ALL
  for (int r = 0; r < MR; ++r) {
    HANPU_UNROLL_ALL
    for (int k = 0; k < NB; ++k) c[r * ldc + j0 + k] = hn::GetLane(hn::SumOfLanes(d, acc[r][k]));
  }
  // The Kd tail after every accumulator is stored: a call with vectors live across it made
  // the compiler spill all of them around the (usually empty) tail loop on every tile.
  if (kd_full == static_cast<size_t>(kd)) return;
  for (int r = 0; r < MR; ++r) {
    for (int k = 0; k < NB; ++k) {
      float sum = 0.0f;
      for (int p = static_cast<int>(kd_full); p < kd; ++p) {
        sum += a[r * lda + p] * load_as_f32(b, static_cast<DType>(BT), (j0 + k) * ldb + p);
      }
      c[r * ldc + j0 + k] += sum;
    }
  }
}

template <int MR, int BT>
HWY_INLINE void DotRows(int N, const float* a, ptrdiff_t lda, const void* b, ptrdiff_t ldb, int kd,
                        size_t kd_full, float* c, ptrdiff_t ldc, FetchCursor& fetch) {
  size_t j = 0;
  for (; j + kKeys <= static_cast<size_t>(N); j += kKeys)
    DotTile<MR, kKeys, BT>(a, lda, b, ldb, j, kd, kd_full, c, ldc, fetch);
  for (; j < static_cast<size_t>(N); ++j)
    DotTile<MR, 1, BT>(a, lda, b, ldb, j, kd, kd_full, c, ldc, fetch);
}

template <int BT>
void FewRowsBt(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b, ptrdiff_t ldb,
               float* c, ptrdiff_t ldc, const RowsToFetch* to_fetch) {
  const size_t NL = hn::Lanes(DF());
  const size_t kd_full = Kd / NL * NL;
  const int64_t key_tiles =
      N / kKeys + N % kKeys;  // DotRows' tiles: kKeys keys, then one at a time
  FetchCursor fetch(to_fetch,
                    (M + kRows - 1) / kRows * key_tiles * static_cast<int64_t>(kd_full / NL));
  for (int i0 = 0; i0 < M; i0 += kRows) {
    const float* ai = a + i0 * lda;
    float* ci = c + i0 * ldc;
    switch (std::min(kRows, M - i0)) {
      case 1:
        DotRows<1, BT>(N, ai, lda, b, ldb, Kd, kd_full, ci, ldc, fetch);
        break;
      case 2:
        DotRows<2, BT>(N, ai, lda, b, ldb, Kd, kd_full, ci, ldc, fetch);
        break;
      case 3:
        DotRows<3, BT>(N, ai, lda, b, ldb, Kd, kd_full, ci, ldc, fetch);
        break;
      default:
        DotRows<4, BT>(N, ai, lda, b, ldb, Kd, kd_full, ci, ldc, fetch);
        break;
    }
  }
}

void GemmFewRowsBt(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b, int bt,
                   ptrdiff_t ldb, float* c, ptrdiff_t ldc, const RowsToFetch* fetch) {
  if (bt == static_cast<int>(DType::kF32))
    return FewRowsBt<0>(M, N, Kd, a, lda, b, ldb, c, ldc, fetch);
  if (bt == static_cast<int>(DType::kF16))
    return FewRowsBt<1>(M, N, Kd, a, lda, b, ldb, c, ldc, fetch);
  return FewRowsBt<2>(M, N, Kd, a, lda, b, ldb, c, ldc, fetch);
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {

HWY_EXPORT(GemmFewRows);
HWY_EXPORT(GemmFewRowsBt);

void gemm_few_rows(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b,
                   DType b_dtype, ptrdiff_t ldb, float* c, ptrdiff_t ldc, const float* row_beta,
                   const RowsToFetch* fetch) {
  if (M <= 0 || N <= 0) return;
  HWY_DYNAMIC_DISPATCH(GemmFewRows)
  (M, N, Kd, a, lda, b, static_cast<int>(b_dtype), ldb, c, ldc, row_beta, fetch);
}

void gemm_few_rows_bt(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b,
                      DType b_dtype, ptrdiff_t ldb, float* c, ptrdiff_t ldc,
                      const RowsToFetch* fetch) {
  if (M <= 0 || N <= 0) return;
  HWY_DYNAMIC_DISPATCH(GemmFewRowsBt)
  (M, N, Kd, a, lda, b, static_cast<int>(b_dtype), ldb, c, ldc, fetch);
}

}  // namespace hanpu::simd
#endif
