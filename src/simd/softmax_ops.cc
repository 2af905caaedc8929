// Online-softmax SIMD ops (see softmax_ops.h), per Highway target. exp2 is written here, not
// taken from Highway's contrib Exp, because STEEL's formulation works in base 2 (log2(e) is
// folded into the query scale) and base 2 needs no range-reduction multiply: 2^x = 2^n 2^f.
#include "simd/softmax_ops.h"

#include <algorithm>
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

// 2^x: x = n + f with n = round(x), |f| <= 1/2; 2^f by its degree-6 Taylor polynomial in
// f ln2 (truncation error (ln2/2)^7 / 7! < 1.3e-7, about one ulp), then times 2^n. x is
// clamped below so every x at or under the clamp (and -inf, a masked score) gives exactly 0.
//   AVX-512: 2^n is applied by vscalefps (one op instead of convert, add, shift, multiply;
//     512-bit vector ops have two ports, so this pass is bound by its op count). The clamp
//     at -160 underflows to 0 even from the denormal range.
//   elsewhere: 2^n is built in the exponent bits; the clamp to [-127, 127] makes n = -127
//     put 0 in the exponent field, so 2^-127 and below flush to exactly 0 with no compare.
HWY_INLINE VF Exp2(DF d, VF x) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  constexpr bool kScalef = true;
  const VF xc = hn::Max(x, hn::Set(d, -160.0f));
#else
  constexpr bool kScalef = false;
  const VF xc = hn::Min(hn::Max(x, hn::Set(d, -127.0f)), hn::Set(d, 127.0f));
#endif
  const VF n = hn::Round(xc);
  const VF f = hn::Sub(xc, n);
  VF p = hn::Set(d, 1.5403530393381608e-04f);                 // ln2^6 / 6!
  p = hn::MulAdd(p, f, hn::Set(d, 1.3333558146428443e-03f));  // ln2^5 / 5!
  p = hn::MulAdd(p, f, hn::Set(d, 9.6181291076284772e-03f));  // ln2^4 / 4!
  p = hn::MulAdd(p, f, hn::Set(d, 5.5504108664821580e-02f));  // ln2^3 / 3!
  p = hn::MulAdd(p, f, hn::Set(d, 2.4022650695910071e-01f));  // ln2^2 / 2!
  p = hn::MulAdd(p, f, hn::Set(d, 6.9314718055994531e-01f));  // ln2
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  if constexpr (kScalef) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    return VF{_mm512_scalef_ps(p.raw, n.raw)};
#endif
  } else {
    const hn::RebindToSigned<DF> di;
    const auto bits = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
    return hn::Mul(p, hn::BitCast(d, bits));
  }
}

void Exp2Inplace(float* x, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  for (size_t i = 0; i < n; i += NL) {
    const auto m = hn::FirstN(d, n - i);
    hn::BlendedStore(Exp2(d, hn::MaskedLoad(m, d, x + i)), m, d, x + i);
  }
}

// Columns are walked kBlock vectors at a time with every row of the tile inside: the running
// max and sum of each vector are separate dependency chains, so a row's kBlock max / add ops
// overlap instead of waiting on one 4-cycle chain per vector.
void OnlineSoftmaxColumns(float* s, ptrdiff_t lds, int rows, int n, float* m, float* l,
                          float* alpha) {
  constexpr int kBlock = 4;
  const DF d;
  const size_t NL = hn::Lanes(d);
  const VF neg_inf = hn::Set(d, -HUGE_VALF);
  for (size_t c0 = 0; c0 < static_cast<size_t>(n); c0 += kBlock * NL) {
    using M = decltype(hn::FirstN(d, 0));
    M lanes[kBlock];
    VF mx[kBlock], ref[kBlock], sum[kBlock], m_old[kBlock];
    for (int b = 0; b < kBlock; ++b) {
      const size_t c = c0 + b * NL;
      lanes[b] = hn::FirstN(d, c < static_cast<size_t>(n) ? n - c : 0);
      m_old[b] = hn::IfThenElse(lanes[b], hn::MaskedLoad(lanes[b], d, m + c), neg_inf);
      mx[b] = m_old[b];
      sum[b] = hn::Zero(d);
    }
    for (int p = 0; p < rows; ++p) {
      const float* sp = s + p * lds + c0;
      for (int b = 0; b < kBlock; ++b)
        mx[b] = hn::Max(mx[b], hn::MaskedLoad(lanes[b], d, sp + b * NL));
    }
    // Reference point: 0 while a column has seen nothing (its scores are all -inf -> 0).
    for (int b = 0; b < kBlock; ++b)
      ref[b] = hn::IfThenElse(hn::Eq(mx[b], neg_inf), hn::Zero(d), mx[b]);
    for (int p = 0; p < rows; ++p) {
      float* sp = s + p * lds + c0;
      for (int b = 0; b < kBlock; ++b) {
        const VF e = Exp2(d, hn::Sub(hn::MaskedLoad(lanes[b], d, sp + b * NL), ref[b]));
        sum[b] = hn::Add(sum[b], e);
        hn::BlendedStore(e, lanes[b], d, sp + b * NL);
      }
    }
    for (int b = 0; b < kBlock; ++b) {
      const size_t c = c0 + b * NL;
      const VF a = Exp2(d, hn::Sub(m_old[b], ref[b]));
      hn::BlendedStore(hn::MulAdd(a, hn::MaskedLoad(lanes[b], d, l + c), sum[b]), lanes[b], d,
                       l + c);
      hn::BlendedStore(mx[b], lanes[b], d, m + c);
      hn::BlendedStore(a, lanes[b], d, alpha + c);
    }
  }
}

HWY_INLINE void ScaleInplace(float* x, size_t n, float a) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  const VF va = hn::Set(d, a);
  for (size_t j = 0; j < n; j += NL) {
    const auto lanes = hn::FirstN(d, n - j);
    hn::BlendedStore(hn::Mul(va, hn::MaskedLoad(lanes, d, x + j)), lanes, d, x + j);
  }
}

// Max over a row of n floats (masked tail lanes ignored).
HWY_INLINE float RowMax(const float* x, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  const VF neg_inf = hn::Set(d, -HUGE_VALF);
  VF vmax = neg_inf;
  for (size_t j = 0; j < n; j += NL) {
    const auto lanes = hn::FirstN(d, n - j);
    vmax = hn::Max(vmax, hn::IfThenElse(lanes, hn::MaskedLoad(lanes, d, x + j), neg_inf));
  }
  return hn::GetLane(hn::MaxOfLanes(d, vmax));
}

// x = 2^(x - ref) in place; returns the sum.
HWY_INLINE float Exp2SumRow(float* x, size_t n, float ref) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  const VF vref = hn::Set(d, ref);
  VF sum = hn::Zero(d);
  for (size_t j = 0; j < n; j += NL) {
    const auto lanes = hn::FirstN(d, n - j);
    const VF e = Exp2(d, hn::Sub(hn::MaskedLoad(lanes, d, x + j), vref));
    sum = hn::Add(sum, hn::IfThenElseZero(lanes, e));
    hn::BlendedStore(e, lanes, d, x + j);
  }
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

void OnlineSoftmaxRows(float* s, ptrdiff_t lds, int rows, int cols, float* m, float* l,
                       float* alpha) {
  const DF d;
  for (int c = 0; c < rows; ++c) {
    float* row = s + c * lds;
    const float m_new = std::max(m[c], RowMax(row, static_cast<size_t>(cols)));
    const float ref = m_new == -HUGE_VALF ? 0.0f : m_new;  // nothing seen yet: -inf -> 0
    const float sum = Exp2SumRow(row, static_cast<size_t>(cols), ref);
    const float a = hn::GetLane(Exp2(d, hn::Set(d, m[c] - ref)));
    l[c] = a * l[c] + sum;
    m[c] = m_new;
    alpha[c] = a;
  }
}

float SoftmaxRow(float* x, size_t n) {
  const float mx = RowMax(x, n);
  const float total = Exp2SumRow(x, n, mx);
  ScaleInplace(x, n, 1.0f / total);
  return mx + std::log2(total);
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(Exp2Inplace);
HWY_EXPORT(OnlineSoftmaxColumns);
HWY_EXPORT(SoftmaxRow);
HWY_EXPORT(OnlineSoftmaxRows);

void online_softmax_rows(float* s, ptrdiff_t lds, int rows, int cols, float* m, float* l,
                         float* alpha) {
  HWY_DYNAMIC_DISPATCH(OnlineSoftmaxRows)(s, lds, rows, cols, m, l, alpha);
}

float softmax_row(float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(SoftmaxRow)(x, n); }

void exp2_inplace(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(Exp2Inplace)(x, n); }
void online_softmax_columns(float* s, ptrdiff_t lds, int rows, int n, float* m, float* l,
                            float* alpha) {
  HWY_DYNAMIC_DISPATCH(OnlineSoftmaxColumns)(s, lds, rows, n, m, l, alpha);
}
}  // namespace hanpu::simd
#endif
