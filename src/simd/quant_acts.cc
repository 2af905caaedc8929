// Activation blocks quantized on the vector unit (see quant_acts.h), per Highway target. The
// scalar loop it replaced called nearbyint through the C library for every value, on the one
// core that runs a decode step's serial work.
#include "simd/quant_acts.h"

#include <cstring>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/quant_acts.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

float QuantizeBlock(const float* x, int n, int8_t* q, int32_t* sums) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const int NL = static_cast<int>(hn::Lanes(df));
  // n is a multiple of 16; a target whose vectors are wider than n takes the masked path.
  auto amax = hn::Zero(df);
  auto finite = hn::FirstN(df, hn::Lanes(df));
  for (int i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(df, static_cast<size_t>(n - i));
    const auto v = hn::MaskedLoad(m, df, x + i);
    amax = hn::Max(amax, hn::Abs(v));
    finite = hn::And(finite, hn::IsFinite(v));
  }
  for (int g = 0; g < n / 16; ++g) sums[g] = 0;
  if (!hn::AllTrue(df, finite)) {
    for (int i = 0; i < n; ++i) q[i] = 0;
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float d = hn::GetLane(hn::MaxOfLanes(df, amax)) / 127;
  const float id = d > 0 ? 1 / d : 0.0f;
  const auto vid = hn::Set(df, id);
  for (int i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(df, static_cast<size_t>(n - i));
    // |x / d| <= 127 up to one rounding, so the int32 -> int8 narrowing never saturates.
    const auto qi = hn::NearestInt(hn::Mul(hn::MaskedLoad(m, df, x + i), vid));
    if (i + NL <= n) {
      hn::Store(hn::DemoteTo(d8, qi), d8, q + i);
    } else {  // vectors wider than the block
      int8_t part[HWY_MAX_BYTES];
      hn::Store(hn::DemoteTo(d8, qi), d8, part);
      std::memcpy(q + i, part, static_cast<size_t>(n - i));
    }
    if (NL <= 16) {  // a vector within one group of 16
      sums[i / 16] += hn::GetLane(hn::SumOfLanes(di, qi));
    } else {
      for (int j = i; j < n && j < i + NL; ++j) sums[j / 16] += q[j];
    }
  }
  return d;
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(QuantizeBlock);

float quantize_block(const float* x, int n, int8_t* q, int32_t* sums) {
  return HWY_DYNAMIC_DISPATCH(QuantizeBlock)(x, n, q, sums);
}
}  // namespace hanpu::simd
#endif
