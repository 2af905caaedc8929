// SiLU products and the causal short convolution (see activation_ops.h), per Highway target.
#include "simd/activation_ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/activation_ops.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// silu(x) = x / (1 + exp(-x))
HWY_INLINE VF Silu(DF d, VF x) {
  return hn::Div(x, hn::Add(hn::Set(d, 1.0f), hn::CallExp(d, hn::Neg(x))));
}

void SiluMul(const float* gate, const float* up, float* out, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  for (size_t i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(d, n - i);
    const VF g = hn::MaskedLoad(m, d, gate + i), u = hn::MaskedLoad(m, d, up + i);
    hn::BlendedStore(hn::Mul(Silu(d, g), u), m, d, out + i);
  }
}

void CausalConvSilu(const float* in, ptrdiff_t ld_in, const float* w, int C, int kc, int64_t T,
                    int c0, int c1, float* out, ptrdiff_t ld_out) {
  const DF d;
  const int NL = static_cast<int>(hn::Lanes(d));
  // Rows outermost, the channel range across each row: the inputs and outputs stream in
  // order and the taps ([kc, c1 - c0], 4 KB for a 256-channel block) stay in L1. Walking one
  // vector of channels down all rows instead kept the taps in registers but touched a new
  // line, rows C floats apart, on every load: the prefill's rows are 24 KB apart, so each
  // load missed the TLB and the prefetchers, and the convolution took a share of a long
  // prefill (perf) many times its share of the FLOPs.
  for (int64_t t = 0; t < T; ++t) {
    const float* src = in + t * ld_in;
    float* dst = out + t * ld_out;
    for (int c = c0; c < c1; c += NL) {
      const auto m = hn::FirstN(d, static_cast<size_t>(c1 - c));
      VF acc = hn::Zero(d);
      for (int j = 0; j < kc; ++j) {
        acc = hn::MulAdd(hn::MaskedLoad(m, d, w + static_cast<ptrdiff_t>(j) * C + c),
                         hn::MaskedLoad(m, d, src + j * ld_in + c), acc);
      }
      hn::BlendedStore(Silu(d, acc), m, d, dst + (c - c0));
    }
  }
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(SiluMul);
HWY_EXPORT(CausalConvSilu);

void silu_mul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, out, n);
}
void causal_conv_silu(const float* in, ptrdiff_t ld_in, const float* w, int C, int kc, int64_t T,
                      int c0, int c1, float* out, ptrdiff_t ld_out) {
  HWY_DYNAMIC_DISPATCH(CausalConvSilu)(in, ld_in, w, C, kc, T, c0, c1, out, ld_out);
}
}  // namespace hanpu::simd
#endif
