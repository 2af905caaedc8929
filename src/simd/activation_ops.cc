// SiLU and sigmoid products, the causal short convolution and the KDA forget gate (see
// activation_ops.h), per Highway target.
#include "simd/activation_ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/activation_ops.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Highway's exp is defined for arguments up to 104 and returns garbage past it: 1 / (1 +
// exp(-x)) gave silu(-200) = -200. So a sigmoid takes e = exp(-|x|) <= 1 (1 / (1 + e) for
// x >= 0, e / (1 + e) below), and silu is 0 below -88, where |silu(x)| < |x| e^-88 (and
// exp(-x) is inf in fp32 anyway).
HWY_INLINE VF Sigmoid(DF d, VF x) {
  const VF e = hn::CallExp(d, hn::Neg(hn::Abs(x)));
  const VF r = hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), e));
  return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(e, r), r);
}

// silu(x) = x / (1 + exp(-x)) from -88 up.
HWY_INLINE VF Silu(DF d, VF x) {
  const VF e = hn::CallExp(d, hn::Min(hn::Neg(x), hn::Set(d, 88.0f)));
  return hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, -88.0f)),
                            hn::Div(x, hn::Add(hn::Set(d, 1.0f), e)));
}

// out[i] = act(gate[i]) * up[i] over n values, the tail masked.
template <class Act>
HWY_INLINE void GateTimesUp(const float* gate, const float* up, float* out, size_t n, Act act) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  for (size_t i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(d, n - i);
    const VF g = hn::MaskedLoad(m, d, gate + i), u = hn::MaskedLoad(m, d, up + i);
    hn::BlendedStore(hn::Mul(act(d, g), u), m, d, out + i);
  }
}

struct SiluOf {
  VF operator()(DF d, VF g) const { return Silu(d, g); }
};
// A NaN gate gives NaN, as 1 / (1 + exp(-x)) does (the vector exp does not pass it on).
struct SigmoidOf {
  VF operator()(DF d, VF g) const { return hn::IfThenElse(hn::IsNaN(g), g, Sigmoid(d, g)); }
};

void SiluMul(const float* gate, const float* up, float* out, size_t n) {
  GateTimesUp(gate, up, out, n, SiluOf());
}

void SigmoidMul(const float* gate, const float* up, float* out, size_t n) {
  GateTimesUp(gate, up, out, n, SigmoidOf());
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

void KdaGate(const float* x, const float* bias, float rate, float lower_bound, float* g, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  const bool bounded = !std::isnan(lower_bound);
  const VF r = hn::Set(d, rate);
  for (size_t i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(d, n - i);
    const VF v = hn::Add(hn::MaskedLoad(m, d, x + i), hn::MaskedLoad(m, d, bias + i));
    VF out;
    if (bounded) {
      out = hn::Mul(hn::Set(d, lower_bound), Sigmoid(d, hn::Mul(r, v)));
    } else {
      // Above 20 softplus is x itself, as torch's threshold has it (exp would overflow past 88).
      const VF softplus =
          hn::IfThenElse(hn::Gt(v, hn::Set(d, 20.0f)), v,
                         hn::CallLog1p(d, hn::CallExp(d, hn::Min(v, hn::Set(d, 20.0f)))));
      out = hn::Neg(hn::Mul(r, softplus));
    }
    hn::BlendedStore(out, m, d, g + i);
  }
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(SiluMul);
HWY_EXPORT(SigmoidMul);
HWY_EXPORT(CausalConvSilu);
HWY_EXPORT(KdaGate);

void silu_mul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, out, n);
}
void sigmoid_mul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SigmoidMul)(gate, up, out, n);
}
void causal_conv_silu(const float* in, ptrdiff_t ld_in, const float* w, int C, int kc, int64_t T,
                      int c0, int c1, float* out, ptrdiff_t ld_out) {
  HWY_DYNAMIC_DISPATCH(CausalConvSilu)(in, ld_in, w, C, kc, T, c0, c1, out, ld_out);
}
void kda_gate(const float* x, const float* bias, float rate, float lower_bound, float* g,
              size_t n) {
  HWY_DYNAMIC_DISPATCH(KdaGate)(x, bias, rate, lower_bound, g, n);
}
}  // namespace hanpu::simd
#endif
