// 16-bit-weight GEMV (see gemv.h), per Highway target.
#include "simd/gemv.h"

#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gemv.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// NL 16-bit values at p widened to fp32.
template <bool kBf16>
HWY_INLINE VF Widen(DF d, const uint16_t* p) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::Rebind<uint16_t, DF> du16;
  const auto raw = hn::LoadU(du16, p);
  if constexpr (kBf16) {
    return hn::BitCast(
        d, hn::ShiftLeft<16>(hn::PromoteTo(du32, raw)));  // bf16 = the top half of an fp32
  } else {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(d, hn::BitCast(dh, raw));
  }
}

// The same for the last `valid` < NL values of a row, through a zeroed copy (Highway 1.0
// has no LoadN that stops at a count), so nothing past the row is read.
template <bool kBf16>
HWY_NOINLINE VF WidenTail(DF d, const uint16_t* p, size_t valid) {
  HWY_ALIGN uint16_t tail[hn::MaxLanes(DF())] = {};
  std::memcpy(tail, p, valid * sizeof(uint16_t));
  return Widen<kBf16>(d, tail);
}

// Rows are read whole and in order, in four streams, the way the prefetchers follow them;
// the partial sums of up to 256 columns live in an L1 buffer. Memory-bound by design: a
// load, an FMA and a store per vector of 16-bit weights is far below what a core issues.
template <bool kBf16>
void Gemv16T(const float* x, int in, const uint16_t* w, int n, float* y) {
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
      const uint16_t* r0 = w + static_cast<size_t>(i) * n + c0;
      const uint16_t* r1 = r0 + static_cast<size_t>(q) * n;
      const uint16_t* r2 = r1 + static_cast<size_t>(q) * n;
      const uint16_t* r3 = r2 + static_cast<size_t>(q) * n;
      for (int j = 0; j < full; j += NL) {
        VF a = hn::Load(d, acc + j);
        a = hn::MulAdd(x0, Widen<kBf16>(d, r0 + j), a);
        a = hn::MulAdd(x1, Widen<kBf16>(d, r1 + j), a);
        a = hn::MulAdd(x2, Widen<kBf16>(d, r2 + j), a);
        a = hn::MulAdd(x3, Widen<kBf16>(d, r3 + j), a);
        hn::Store(a, d, acc + j);
      }
      if (full < cols) {
        const size_t valid = static_cast<size_t>(cols - full);
        VF a = hn::Load(d, acc + full);
        a = hn::MulAdd(x0, WidenTail<kBf16>(d, r0 + full, valid), a);
        a = hn::MulAdd(x1, WidenTail<kBf16>(d, r1 + full, valid), a);
        a = hn::MulAdd(x2, WidenTail<kBf16>(d, r2 + full, valid), a);
        a = hn::MulAdd(x3, WidenTail<kBf16>(d, r3 + full, valid), a);
        hn::Store(a, d, acc + full);
      }
    }
    for (int i = 4 * q; i < in; ++i) {
      const VF xv = hn::Set(d, x[i]);
      const uint16_t* r = w + static_cast<size_t>(i) * n + c0;
      for (int j = 0; j < full; j += NL) {
        hn::Store(hn::MulAdd(xv, Widen<kBf16>(d, r + j), hn::Load(d, acc + j)), d, acc + j);
      }
      if (full < cols) {
        const VF t = WidenTail<kBf16>(d, r + full, static_cast<size_t>(cols - full));
        hn::Store(hn::MulAdd(xv, t, hn::Load(d, acc + full)), d, acc + full);
      }
    }
    std::memcpy(y + c0, acc, static_cast<size_t>(cols) * sizeof(float));
  }
}

void Gemv16(const float* x, int in, const uint16_t* w, int t, int n, float* y) {
  if (t == static_cast<int>(DType::kBF16)) {
    Gemv16T<true>(x, in, w, n, y);
  } else {
    Gemv16T<false>(x, in, w, n, y);
  }
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(Gemv16);
void gemv_16(const float* x, int in, const uint16_t* w, DType t, int n, float* y) {
  HWY_DYNAMIC_DISPATCH(Gemv16)(x, in, w, static_cast<int>(t), n, y);
}
}  // namespace hanpu::simd
#endif
