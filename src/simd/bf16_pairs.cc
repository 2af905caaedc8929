// Decode GEMV and fp32 widening over the bf16 pairs layout (see bf16_pairs.h), per Highway
// target; a lane's two weights are widened as bf16_widen-inl.h says.
#include "simd/bf16_pairs.h"

#include <algorithm>
#include <cstring>

#include "simd/amx.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/bf16_pairs.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "simd/bf16_widen-inl.h"

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using DU = hn::RebindToUnsigned<DF>;

constexpr int kHalfRowPairs = kPairHalfCols;  // 32-bit lanes per row of a 16-column half

// x W for `streams` strips (one sequential stream each) into out (32 floats per strip), with
// the sums in registers for the whole reduction: 2 vectors per strip on AVX-512, so four
// streams hold 8 accumulators (keeping them in an L1 array instead cost a load and a store
// per two FMAs and ran below the panel GEMV it replaced).
template <int kStreams>
HWY_INLINE void GemvStrips(const float* x, int in, const uint16_t* const* strips, int kt_blocks,
                           float* out) {
  const DF d;
  const DU du;
  constexpr int kNL = static_cast<int>(hn::MaxLanes(DF()));
  constexpr int kVecs = kHalfRowPairs / kNL > 0 ? kHalfRowPairs / kNL : 1;  // vectors per half row
  VF acc[kStreams][2][kVecs];
  for (int s = 0; s < kStreams; ++s)
    for (int h = 0; h < 2; ++h)
      for (int v = 0; v < kVecs; ++v) acc[s][h][v] = hn::Zero(d);
  HWY_ALIGN float xtail[kPairBlockDepth];
  for (int kt = 0; kt < kt_blocks; ++kt) {
    const float* xb = x + kt * kPairBlockDepth;
    if ((kt + 1) * kPairBlockDepth > in) {  // the last, partial block: x past `in` reads as 0
      std::fill(xtail, xtail + kPairBlockDepth, 0.0f);
      std::memcpy(xtail, xb, static_cast<size_t>(in - kt * kPairBlockDepth) * sizeof(float));
      xb = xtail;
    }
    const int64_t block = static_cast<int64_t>(kt) * kPairBlockElems;
    // Half by half, so every strip is read in ascending address order. Rows of the two halves
    // interleaved (line r, then line r + 16, then r + 1, ...) held a decode GEMV to about half
    // the rate it reads in order (docs/performance.md, "Design measurements"): the hardware
    // prefetchers did not follow the +16 / -15 line strides.
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < kPairRows; ++r) {
        const VF xe = hn::Set(d, xb[2 * r]), xo = hn::Set(d, xb[2 * r + 1]);
        for (int s = 0; s < kStreams; ++s) {
          const uint32_t* row = reinterpret_cast<const uint32_t*>(
              strips[s] + block + h * kPairHalfElems + r * kPairStripCols);
          for (int v = 0; v < kVecs; ++v) {
            const auto p = hn::LoadU(du, row + v * kNL);
            acc[s][h][v] = hn::MulAdd(xo, OddWeights(d, p, HighHalves(d)),
                                      hn::MulAdd(xe, EvenWeights(d, p), acc[s][h][v]));
          }
        }
      }
    }
  }
  for (int s = 0; s < kStreams; ++s)
    for (int h = 0; h < 2; ++h)
      for (int v = 0; v < kVecs; ++v)
        hn::StoreU(acc[s][h][v], d, out + s * kPairStripCols + h * kHalfRowPairs + v * kNL);
}

// Four strips at a time: four sequential streams keep DRAM busy (one stream per core left it
// idle between misses, see gemv.cc).
void GemvPairs(const float* x, int in, const uint16_t* w, int kt_blocks, int strips, int n_cols,
               float* y) {
  constexpr int kStreams = kGemvPairStreams;
  const int64_t strip_elems = static_cast<int64_t>(kt_blocks) * kPairBlockElems;
  HWY_ALIGN float acc[kStreams * kPairStripCols + hn::MaxLanes(DF())];
  for (int s0 = 0; s0 < strips; s0 += kStreams) {
    const int streams = std::min(kStreams, strips - s0);
    const uint16_t* starts[kStreams];
    for (int s = 0; s < kStreams; ++s) starts[s] = w + (s0 + s) * strip_elems;
    if (streams == kStreams) {
      GemvStrips<kStreams>(x, in, starts, kt_blocks, acc);
    } else {
      for (int s = 0; s < streams; ++s)
        GemvStrips<1>(x, in, starts + s, kt_blocks, acc + s * kPairStripCols);
    }
    for (int s = 0; s < streams; ++s) {
      const int col0 = (s0 + s) * kPairStripCols;
      const int cols = std::min(kPairStripCols, n_cols - col0);
      if (cols > 0)
        std::memcpy(y + col0, acc + s * kPairStripCols, static_cast<size_t>(cols) * sizeof(float));
    }
  }
}

void WidenPairs(const uint16_t* w, int kt_blocks, int kt0, int kt_count, int strips, float* out,
                int64_t ldo) {
  const DF d;
  const DU du;
  const int NL = static_cast<int>(hn::Lanes(d));
  const int64_t strip_elems = static_cast<int64_t>(kt_blocks) * kPairBlockElems;
  for (int s = 0; s < strips; ++s) {
    for (int kt = kt0; kt < kt0 + kt_count; ++kt) {
      const uint16_t* block = w + s * strip_elems + static_cast<int64_t>(kt) * kPairBlockElems;
      float* o = out + static_cast<int64_t>(kt - kt0) * kPairBlockDepth * ldo + s * kPairStripCols;
      for (int h = 0; h < 2; ++h) {
        for (int r = 0; r < kPairRows; ++r) {
          const uint32_t* row =
              reinterpret_cast<const uint32_t*>(block + h * kPairHalfElems + r * kPairStripCols);
          float* even = o + (2 * r) * ldo + h * kHalfRowPairs;
          for (int v = 0; v < kHalfRowPairs; v += NL) {
            const auto p = hn::LoadU(du, row + v);
            hn::StoreU(EvenWeights(d, p), d, even + v);
            hn::StoreU(OddWeights(d, p, HighHalves(d)), d, even + ldo + v);
          }
        }
      }
    }
  }
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(GemvPairs);
HWY_EXPORT(WidenPairs);
void gemv_bf16_pairs(const float* x, int in, const uint16_t* w, int kt_blocks, int strips,
                     int n_cols, float* y) {
  HWY_DYNAMIC_DISPATCH(GemvPairs)(x, in, w, kt_blocks, strips, n_cols, y);
}
void widen_bf16_pairs(const uint16_t* w, int kt_blocks, int kt0, int kt_count, int strips,
                      float* out, int64_t ldo) {
  HWY_DYNAMIC_DISPATCH(WidenPairs)(w, kt_blocks, kt0, kt_count, strips, out, ldo);
}
}  // namespace hanpu::simd
#endif
