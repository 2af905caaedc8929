// One-row GEMV over 16-bit or fp32 weights (see gemv.h), per Highway target.
#include "simd/gemv.h"

#include <cstring>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gemv.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// The weights' storage: 16-bit (bf16 or f16) or fp32.
enum Kind { kF16, kBf16, kF32 };
template <int kKind>
using WeightOf = std::conditional_t<kKind == kF32, float, uint16_t>;

// NL weights at p in fp32: 16-bit values widened, fp32 as they are.
template <int kKind>
HWY_INLINE VF Widen(DF d, const WeightOf<kKind>* p) {
  if constexpr (kKind == kF32) {
    return hn::LoadU(d, p);
  } else {
    const hn::RebindToUnsigned<DF> du32;
    const hn::Rebind<uint16_t, DF> du16;
    const auto raw = hn::LoadU(du16, p);
    if constexpr (kKind == kBf16) {
      return hn::BitCast(
          d, hn::ShiftLeft<16>(hn::PromoteTo(du32, raw)));  // bf16 = the top half of an fp32
    } else {
      const hn::Rebind<hwy::float16_t, DF> dh;
      return hn::PromoteTo(d, hn::BitCast(dh, raw));
    }
  }
}

// The same for the last `valid` < NL values of a row, through a zeroed copy (Highway 1.0
// has no LoadN that stops at a count), so nothing past the row is read.
template <int kKind>
HWY_NOINLINE VF WidenTail(DF d, const WeightOf<kKind>* p, size_t valid) {
  HWY_ALIGN WeightOf<kKind> tail[hn::MaxLanes(DF())] = {};
  std::memcpy(tail, p, valid * sizeof(WeightOf<kKind>));
  return Widen<kKind>(d, tail);
}

// Rows are read whole and in order, in four streams, the way the prefetchers follow them;
// the partial sums of up to 256 columns live in an L1 buffer. Memory-bound by design: a
// load, an FMA and a store per vector of weights is far below what a core issues.
template <int kKind>
void GemvT(const float* x, int in, const WeightOf<kKind>* w, int n, float* y) {
  const DF d;
  const int NL = static_cast<int>(hn::Lanes(d));
  constexpr int kCols = 256;
  HWY_ALIGN float acc[kCols + hn::MaxLanes(DF())];
  for (int c0 = 0; c0 < n; c0 += kCols) {
    const int cols = n - c0 < kCols ? n - c0 : kCols;
    const int full = cols / NL * NL;  // whole vectors; the rest through WidenTail
    for (int j = 0; j < cols; ++j) acc[j] = 0.0f;
    // Four streams a quarter of the rows apart: one sequential stream per core left DRAM
    // idle between misses (docs/performance.md, "Design measurements").
    const int q = in / 4;
    for (int i = 0; i < q; ++i) {
      const VF x0 = hn::Set(d, x[i]), x1 = hn::Set(d, x[i + q]), x2 = hn::Set(d, x[i + 2 * q]),
               x3 = hn::Set(d, x[i + 3 * q]);
      const WeightOf<kKind>* r0 = w + static_cast<size_t>(i) * n + c0;
      const WeightOf<kKind>* r1 = r0 + static_cast<size_t>(q) * n;
      const WeightOf<kKind>* r2 = r1 + static_cast<size_t>(q) * n;
      const WeightOf<kKind>* r3 = r2 + static_cast<size_t>(q) * n;
      for (int j = 0; j < full; j += NL) {
        VF a = hn::Load(d, acc + j);
        a = hn::MulAdd(x0, Widen<kKind>(d, r0 + j), a);
        a = hn::MulAdd(x1, Widen<kKind>(d, r1 + j), a);
        a = hn::MulAdd(x2, Widen<kKind>(d, r2 + j), a);
        a = hn::MulAdd(x3, Widen<kKind>(d, r3 + j), a);
        hn::Store(a, d, acc + j);
      }
      if (full < cols) {
        const size_t valid = static_cast<size_t>(cols - full);
        VF a = hn::Load(d, acc + full);
        a = hn::MulAdd(x0, WidenTail<kKind>(d, r0 + full, valid), a);
        a = hn::MulAdd(x1, WidenTail<kKind>(d, r1 + full, valid), a);
        a = hn::MulAdd(x2, WidenTail<kKind>(d, r2 + full, valid), a);
        a = hn::MulAdd(x3, WidenTail<kKind>(d, r3 + full, valid), a);
        hn::Store(a, d, acc + full);
      }
    }
    for (int i = 4 * q; i < in; ++i) {
      const VF xv = hn::Set(d, x[i]);
      const WeightOf<kKind>* r = w + static_cast<size_t>(i) * n + c0;
      for (int j = 0; j < full; j += NL) {
        hn::Store(hn::MulAdd(xv, Widen<kKind>(d, r + j), hn::Load(d, acc + j)), d, acc + j);
      }
      if (full < cols) {
        const VF t = WidenTail<kKind>(d, r + full, static_cast<size_t>(cols - full));
        hn::Store(hn::MulAdd(xv, t, hn::Load(d, acc + full)), d, acc + full);
      }
    }
    std::memcpy(y + c0, acc, static_cast<size_t>(cols) * sizeof(float));
  }
}

void Gemv16(const float* x, int in, const uint16_t* w, int t, int n, float* y) {
  if (t == static_cast<int>(DType::kBF16)) {
    GemvT<kBf16>(x, in, w, n, y);
  } else {
    GemvT<kF16>(x, in, w, n, y);
  }
}

void GemvF32(const float* x, int in, const float* w, int n, float* y) {
  GemvT<kF32>(x, in, w, n, y);
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(Gemv16);
void gemv_16(const float* x, int in, const uint16_t* w, DType t, int n, float* y) {
  HWY_DYNAMIC_DISPATCH(Gemv16)(x, in, w, static_cast<int>(t), n, y);
}
HWY_EXPORT(GemvF32);
void gemv_f32(const float* x, int in, const float* w, int n, float* y) {
  HWY_DYNAMIC_DISPATCH(GemvF32)(x, in, w, n, y);
}
}  // namespace hanpu::simd
#endif
