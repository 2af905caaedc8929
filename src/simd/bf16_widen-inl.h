// Per-target widening of bf16 "pairs" (simd/amx.h), shared by the decode GEMV
// (bf16_pairs.cc) and the prefill GEMM (gemm_bf16_pairs.cc). A pairs lane holds two bf16
// weights, w[2r][c] in the low half and w[2r + 1][c] in the high half; a bf16 is the top half
// of an fp32, so the two are (lane << 16) and (lane & 0xffff0000) reinterpreted: two integer
// ops, no shuffles. Include after <hwy/highway.h> inside a foreach_target translation unit.

// Highway's per-target include guard: toggled once per target pass.
#if defined(HANPU_SIMD_BF16_WIDEN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HANPU_SIMD_BF16_WIDEN_INL_H_
#undef HANPU_SIMD_BF16_WIDEN_INL_H_
#else
#define HANPU_SIMD_BF16_WIDEN_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {

// The mask OddWeights takes, made once outside the loops that widen.
template <class DF>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<hwy::HWY_NAMESPACE::RebindToUnsigned<DF>> HighHalves(DF) {
  return hwy::HWY_NAMESPACE::Set(hwy::HWY_NAMESPACE::RebindToUnsigned<DF>(), 0xffff0000u);
}

// w[2r][c] of each lane as fp32.
template <class DF, class VU>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<DF> EvenWeights(DF d, VU pairs) {
  return hwy::HWY_NAMESPACE::BitCast(d, hwy::HWY_NAMESPACE::ShiftLeft<16>(pairs));
}

// w[2r + 1][c] of each lane as fp32 (high: HighHalves(d)).
template <class DF, class VU>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<DF> OddWeights(DF d, VU pairs, VU high) {
  return hwy::HWY_NAMESPACE::BitCast(d, hwy::HWY_NAMESPACE::And(pairs, high));
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // HANPU_SIMD_BF16_WIDEN_INL_H_ toggle
