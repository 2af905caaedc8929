// Online-softmax SIMD ops (see softmax_ops.h), per Highway target. exp2 is written here, not
// taken from Highway's contrib Exp, because STEEL's formulation works in base 2 (log2(e) is
// folded into the query scale) and base 2 needs no range-reduction multiply: 2^x = 2^n 2^f.
#include "simd/softmax_ops.h"

#include <cmath>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/softmax_ops.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// 2^x: x = n + f with n = round(x), |f| <= 1/2; 2^f by its degree-7 Taylor polynomial in
// f ln2 (truncation error (ln2/2)^8 / 8! < 6e-9, below fp32's half ulp); 2^n into the
// exponent bits. Inputs below -126 give exactly 0 (no denormals), above 127 are clamped.
HWY_INLINE VF Exp2(DF d, VF x) {
  const hn::RebindToSigned<DF> di;
  const auto underflow = hn::Lt(x, hn::Set(d, -126.0f));
  const VF xc = hn::Min(hn::Max(x, hn::Set(d, -126.0f)), hn::Set(d, 127.0f));
  const VF n = hn::Round(xc);
  const VF f = hn::Sub(xc, n);
  VF p = hn::Set(d, 1.5252733804059840e-05f);                // ln2^7 / 7!
  p = hn::MulAdd(p, f, hn::Set(d, 1.5403530393381608e-04f));  // ln2^6 / 6!
  p = hn::MulAdd(p, f, hn::Set(d, 1.3333558146428443e-03f));  // ln2^5 / 5!
  p = hn::MulAdd(p, f, hn::Set(d, 9.6181291076284772e-03f));  // ln2^4 / 4!
  p = hn::MulAdd(p, f, hn::Set(d, 5.5504108664821580e-02f));  // ln2^3 / 3!
  p = hn::MulAdd(p, f, hn::Set(d, 2.4022650695910071e-01f));  // ln2^2 / 2!
  p = hn::MulAdd(p, f, hn::Set(d, 6.9314718055994531e-01f));  // ln2
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  const auto bits = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
  return hn::IfThenZeroElse(underflow, hn::Mul(p, hn::BitCast(d, bits)));
}

void Exp2Inplace(float* x, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  for (size_t i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(d, n - i);
    hn::BlendedStore(Exp2(d, hn::MaskedLoad(m, d, x + i)), m, d, x + i);
  }
}

void OnlineSoftmaxColumns(float* s, ptrdiff_t lds, int rows, int n, float* m, float* l,
                          float* alpha) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  const VF neg_inf = hn::Set(d, -HUGE_VALF);
  for (size_t c = 0; c < static_cast<size_t>(n); c += NL) {
    const auto lanes = hn::FirstN(d, n - c);
    const VF m_old = hn::IfThenElse(lanes, hn::MaskedLoad(lanes, d, m + c), neg_inf);
    VF m_new = m_old;
    for (int p = 0; p < rows; ++p) m_new = hn::Max(m_new, hn::MaskedLoad(lanes, d, s + p * lds + c));
    // Reference point: 0 while a column has seen nothing (its scores are all -inf -> 0).
    const VF ref = hn::IfThenElse(hn::Eq(m_new, neg_inf), hn::Zero(d), m_new);
    const VF a = Exp2(d, hn::Sub(m_old, ref));
    VF sum = hn::Zero(d);
    for (int p = 0; p < rows; ++p) {
      float* sp = s + p * lds + c;
      const VF e = Exp2(d, hn::Sub(hn::MaskedLoad(lanes, d, sp), ref));
      sum = hn::Add(sum, e);
      hn::BlendedStore(e, lanes, d, sp);
    }
    hn::BlendedStore(hn::MulAdd(a, hn::MaskedLoad(lanes, d, l + c), sum), lanes, d, l + c);
    hn::BlendedStore(m_new, lanes, d, m + c);
    hn::BlendedStore(a, lanes, d, alpha + c);
  }
}

float SoftmaxRow(float* x, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  VF vmax = hn::Set(d, -HUGE_VALF);
  for (size_t i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(d, n - i);
    vmax = hn::Max(vmax, hn::IfThenElse(m, hn::MaskedLoad(m, d, x + i), hn::Set(d, -HUGE_VALF)));
  }
  const VF mx = hn::MaxOfLanes(d, vmax);
  VF sum = hn::Zero(d);
  for (size_t i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(d, n - i);
    const VF e = Exp2(d, hn::Sub(hn::MaskedLoad(m, d, x + i), mx));
    sum = hn::Add(sum, hn::IfThenElseZero(m, e));
    hn::BlendedStore(e, m, d, x + i);
  }
  const float total = hn::GetLane(hn::SumOfLanes(d, sum));
  const VF inv = hn::Set(d, 1.0f / total);
  for (size_t i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(d, n - i);
    hn::BlendedStore(hn::Mul(inv, hn::MaskedLoad(m, d, x + i)), m, d, x + i);
  }
  return hn::GetLane(mx) + std::log2(total);
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(Exp2Inplace);
HWY_EXPORT(OnlineSoftmaxColumns);
HWY_EXPORT(SoftmaxRow);

float softmax_row(float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(SoftmaxRow)(x, n); }

void exp2_inplace(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(Exp2Inplace)(x, n); }
void online_softmax_columns(float* s, ptrdiff_t lds, int rows, int n, float* m, float* l,
                            float* alpha) {
  HWY_DYNAMIC_DISPATCH(OnlineSoftmaxColumns)(s, lds, rows, n, m, l, alpha);
}
}  // namespace hanpu::simd
#endif
