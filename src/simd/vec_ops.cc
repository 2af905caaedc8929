// Element-wise SIMD ops for the LA chunk dataflow (see vec_ops.h), per Highway target.
#include "simd/vec_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/vec_ops.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Applies f(vector, mask-of-valid-lanes-or-null) over [0, n) with a masked tail; f gets the
// element offset. Keeps every op below a one-liner.
template <class F>
HWY_INLINE void ForEachVec(size_t n, const F& f) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  size_t i = 0;
  for (; i + NL <= n; i += NL) f(i, hn::FirstN(d, NL));
  if (i < n) f(i, hn::FirstN(d, n - i));
}

void ExpInplace(float* x, size_t n) {
  const DF d;
  ForEachVec(n, [&](size_t i, auto m) {
    hn::BlendedStore(hn::CallExp(d, hn::MaskedLoad(m, d, x + i)), m, d, x + i);
  });
}

void ScaleCopy(float* y, const float* x, float a, size_t n) {
  const DF d;
  const VF va = hn::Set(d, a);
  ForEachVec(n, [&](size_t i, auto m) {
    hn::BlendedStore(hn::Mul(va, hn::MaskedLoad(m, d, x + i)), m, d, y + i);
  });
}

void Mul(float* y, const float* x, const float* a, size_t n) {
  const DF d;
  ForEachVec(n, [&](size_t i, auto m) {
    hn::BlendedStore(hn::Mul(hn::MaskedLoad(m, d, x + i), hn::MaskedLoad(m, d, a + i)), m, d,
                     y + i);
  });
}

void Axpy(float* y, const float* x, float a, size_t n) {
  const DF d;
  const VF va = hn::Set(d, a);
  ForEachVec(n, [&](size_t i, auto m) {
    hn::BlendedStore(hn::MulAdd(va, hn::MaskedLoad(m, d, x + i), hn::MaskedLoad(m, d, y + i)), m, d,
                     y + i);
  });
}

float SumSquares(const float* x, size_t n) {
  const DF d;
  VF acc = hn::Zero(d);
  ForEachVec(n, [&](size_t i, auto m) {
    const VF v = hn::MaskedLoad(m, d, x + i);
    acc = hn::MulAdd(v, v, acc);
  });
  return hn::GetLane(hn::SumOfLanes(d, acc));
}

double SumSquaresF64(const float* x, size_t n) {
  size_t i = 0;
  double sum = 0;
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;  // as many floats as dd has doubles
  const size_t N = hn::Lanes(dd);
  auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto a = hn::PromoteTo(dd, hn::LoadU(dh, x + i));
    const auto b = hn::PromoteTo(dd, hn::LoadU(dh, x + i + N));
    acc0 = hn::MulAdd(a, a, acc0);
    acc1 = hn::MulAdd(b, b, acc1);
  }
  sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(acc0, acc1)));
#endif
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

void BetaResidualRows(float* y, ptrdiff_t ldy, const float* v, ptrdiff_t ldv, const float* ks,
                      ptrdiff_t ldks, const float* e, const float* b, int rows, int n) {
  const DF d;
  for (int i = 0; i < rows; ++i) {
    const VF ve = hn::Set(d, e ? e[i] : 1.0f), vb = hn::Set(d, b[i]);
    const float *vi = v + i * ldv, *ki = ks + i * ldks;
    float* yi = y + i * ldy;
    ForEachVec(n, [&](size_t o, auto m) {
      const VF r = hn::NegMulAdd(ve, hn::MaskedLoad(m, d, ki + o), hn::MaskedLoad(m, d, vi + o));
      hn::BlendedStore(hn::Mul(vb, r), m, d, yi + o);
    });
  }
}

void ScaleRows(float* dst, ptrdiff_t ldd, const float* src, ptrdiff_t lds, const float* row_scale,
               float scale, int rows, int n) {
  const DF d;
  for (int i = 0; i < rows; ++i) {
    const VF vs = hn::Set(d, scale * (row_scale ? row_scale[i] : 1.0f));
    const float* si = src + i * lds;
    float* di = dst + i * ldd;
    ForEachVec(n, [&](size_t o, auto m) {
      hn::BlendedStore(hn::Mul(vs, hn::MaskedLoad(m, d, si + o)), m, d, di + o);
    });
  }
}

void GateLower(float* dst, const float* src, ptrdiff_t ld, const float* gam, const float* row_scale,
               float scale, int rows, bool inclusive) {
  const DF d;
  for (int i = 0; i < rows; ++i) {
    const VF vs = hn::Set(d, scale * (row_scale ? row_scale[i] : 1.0f));
    const size_t n = static_cast<size_t>(i + (inclusive ? 1 : 0));
    const float* si = src + i * ld;
    float* di = dst + i * ld;
    if (gam) {
      const VF gi = hn::Set(d, gam[i]);
      ForEachVec(n, [&](size_t o, auto m) {
        const VF e = hn::CallExp(d, hn::Sub(gi, hn::MaskedLoad(m, d, gam + o)));
        hn::BlendedStore(hn::Mul(hn::Mul(vs, e), hn::MaskedLoad(m, d, si + o)), m, d, di + o);
      });
    } else {
      ForEachVec(n, [&](size_t o, auto m) {
        hn::BlendedStore(hn::Mul(vs, hn::MaskedLoad(m, d, si + o)), m, d, di + o);
      });
    }
  }
}

// exp(gam_i - gam_j) for a column j left of row i's block start r is the product
// exp(gam_i - gam_r) exp(gam_r - gam_j) of two factors <= 1 (gam only falls along the
// chunk), so a block of rows needs r + 1 exps for those columns instead of one per element;
// only the block's own triangle takes the exponent directly (FLA factors its sub-chunk decay
// at the same reference row). L and Qm share every factor, so they are gated in one pass.
void GateLowerGdn(float* L, float* Qm, const float* kk, const float* qk, ptrdiff_t ld,
                  const float* gam, const float* beta, float scale, int rows, int block) {
  const DF d;
  HWY_ALIGN float left[kMaxGateRows];  // exp(gam_r - gam_j), j < r
  for (int r = 0; r < rows; r += block) {
    const VF gr = hn::Set(d, gam[r]);
    ForEachVec(static_cast<size_t>(r), [&](size_t o, auto m) {
      hn::BlendedStore(hn::CallExp(d, hn::Sub(gr, hn::MaskedLoad(m, d, gam + o))), m, d, left + o);
    });
    const int end = std::min(rows, r + block);
    for (int i = r; i < end; ++i) {
      const float a = std::exp(gam[i] - gam[r]);
      const VF vl = hn::Set(d, beta[i] * a), vq = hn::Set(d, scale * a);
      const float *ki = kk + i * ld, *qi = qk + i * ld;
      float *li = L + i * ld, *qmi = Qm + i * ld;
      ForEachVec(static_cast<size_t>(r), [&](size_t o, auto m) {
        const VF f = hn::MaskedLoad(m, d, left + o);
        hn::BlendedStore(hn::Mul(hn::Mul(vl, f), hn::MaskedLoad(m, d, ki + o)), m, d, li + o);
        hn::BlendedStore(hn::Mul(hn::Mul(vq, f), hn::MaskedLoad(m, d, qi + o)), m, d, qmi + o);
      });
      const VF gi = hn::Set(d, gam[i]), vb = hn::Set(d, beta[i]), vs = hn::Set(d, scale);
      ForEachVec(static_cast<size_t>(i - r + 1), [&](size_t o, auto m) {
        const size_t j = r + o;
        const VF e = hn::CallExp(d, hn::Sub(gi, hn::MaskedLoad(m, d, gam + j)));
        hn::BlendedStore(hn::Mul(hn::Mul(vs, e), hn::MaskedLoad(m, d, qi + j)), m, d, qmi + j);
        const auto strict = hn::And(m, hn::FirstN(d, static_cast<size_t>(i - r) - o));  // j < i
        hn::BlendedStore(hn::Mul(hn::Mul(vb, e), hn::MaskedLoad(strict, d, ki + j)), strict, d,
                         li + j);
      });
    }
  }
}

// Row i of the inverse is e_i - sum_{j<i} L_ij inv_j: whole rows of inv as vectors (one
// AVX-512 vector at n = 16), two accumulators to halve the FMA dependency chain. Scalar code
// here ran the ~700 multiply-adds of a 16 x 16 block one lane at a time.
void InvertUnitLower(const float* L, ptrdiff_t ldl, int n, float* inv, ptrdiff_t ldi) {
  const DF d;
  for (int i = 0; i < n; ++i) {
    const float* li = L + i * ldl;
    float* row = inv + i * ldi;
    ForEachVec(static_cast<size_t>(n), [&](size_t o, auto m) {
      VF acc0 = hn::IfThenElseZero(
          hn::Eq(hn::Iota(d, static_cast<float>(o)), hn::Set(d, static_cast<float>(i))),
          hn::Set(d, 1.0f));
      VF acc1 = hn::Zero(d);
      int j = 0;
      for (; j + 2 <= i; j += 2) {
        acc0 = hn::NegMulAdd(hn::Set(d, li[j]), hn::MaskedLoad(m, d, inv + j * ldi + o), acc0);
        acc1 = hn::NegMulAdd(hn::Set(d, li[j + 1]), hn::MaskedLoad(m, d, inv + (j + 1) * ldi + o),
                             acc1);
      }
      if (j < i)
        acc0 = hn::NegMulAdd(hn::Set(d, li[j]), hn::MaskedLoad(m, d, inv + j * ldi + o), acc0);
      hn::BlendedStore(hn::Add(acc0, acc1), m, d, row + o);
    });
  }
}

void KdaDiagBlock(const float* k, const float* q, ptrdiff_t ldkq, const float* a, int K, int n,
                  float* L, float* Qm, int ld) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  constexpr int kMaxVecs = 256 / 4;  // K <= 256 floats, at least 4 lanes
  HWY_ALIGN float D[kMaxVecs * 4 * 4];
  for (int j = 0; j < n; ++j) {
    std::copy_n(k + j * ldkq, K, D);  // D = k_j o exp(Gam_i - Gam_j), starting at i = j
    for (int i = j; i < n; ++i) {
      VF acc_k = hn::Zero(d), acc_q = hn::Zero(d);
      ForEachVec(K, [&](size_t o, auto m) {
        VF dv = hn::MaskedLoad(m, d, D + o);
        if (i > j) {
          dv = hn::Mul(dv, hn::MaskedLoad(m, d, a + i * K + o));
          hn::Store(dv, d, D + o);
        }
        acc_k = hn::MulAdd(hn::MaskedLoad(m, d, k + i * ldkq + o), dv, acc_k);
        acc_q = hn::MulAdd(hn::MaskedLoad(m, d, q + i * ldkq + o), dv, acc_q);
      });
      if (i > j) L[i * ld + j] = hn::GetLane(hn::SumOfLanes(d, acc_k));
      Qm[i * ld + j] = hn::GetLane(hn::SumOfLanes(d, acc_q));
    }
  }
  (void)NL;
}

void CumprodForward(const float* a, int K, int n, float* out) {
  const DF d;
  ForEachVec(K, [&](size_t o, auto m) {
    VF f = hn::Set(d, 1.0f);
    for (int i = 0; i < n; ++i) {
      f = hn::Mul(f, hn::MaskedLoad(m, d, a + i * K + o));
      hn::BlendedStore(f, m, d, out + i * K + o);
    }
  });
}

void CumprodBackward(const float* a, int K, int n, float* out) {
  const DF d;
  ForEachVec(K, [&](size_t o, auto m) {
    VF f = hn::Set(d, 1.0f);
    for (int i = n - 1; i >= 0; --i) {
      hn::BlendedStore(f, m, d, out + i * K + o);
      f = hn::Mul(f, hn::MaskedLoad(m, d, a + i * K + o));
    }
  });
}

void DecayRowsForward(const float* k, const float* q, ptrdiff_t ldx, const float* a, int K, int n,
                      float* out_k, float* out_q) {
  const DF d;
  ForEachVec(K, [&](size_t o, auto m) {
    VF f = hn::Set(d, 1.0f);
    for (int i = 0; i < n; ++i) {
      if (i > 0) f = hn::Mul(f, hn::MaskedLoad(m, d, a + i * K + o));
      hn::BlendedStore(hn::Mul(f, hn::MaskedLoad(m, d, k + i * ldx + o)), m, d, out_k + i * K + o);
      hn::BlendedStore(hn::Mul(f, hn::MaskedLoad(m, d, q + i * ldx + o)), m, d, out_q + i * K + o);
    }
  });
}

float DecayRowsInverse(const float* k, ptrdiff_t ldx, const float* a, int K, int n, float* out) {
  const DF d;
  VF smallest = hn::Set(d, 1.0f);
  ForEachVec(K, [&](size_t o, auto m) {
    VF f = hn::Set(d, 1.0f);
    for (int i = 0; i < n; ++i) {
      if (i > 0) f = hn::Mul(f, hn::MaskedLoad(m, d, a + i * K + o));
      // 1/f as the 14-bit estimate plus one Newton step (~2^-23 relative): a full-width
      // division per vector is about ten times the cost on x86.
      const VF est = hn::ApproximateReciprocal(f);
      const VF inv = hn::Mul(est, hn::NegMulAdd(f, est, hn::Set(d, 2.0f)));
      hn::BlendedStore(hn::Mul(hn::MaskedLoad(m, d, k + i * ldx + o), inv), m, d, out + i * K + o);
    }
    smallest = hn::Min(smallest, hn::IfThenElse(m, f, hn::Set(d, 1.0f)));
  });
  return hn::GetLane(hn::MinOfLanes(d, smallest));
}

void DecayRowsBackward(const float* k, ptrdiff_t ldx, const float* a, const float* a_ref, int K,
                       int n, float* out) {
  const DF d;
  ForEachVec(K, [&](size_t o, auto m) {
    VF f = hn::MaskedLoad(m, d, a_ref + o);
    for (int j = n - 1; j >= 0; --j) {
      hn::BlendedStore(hn::Mul(f, hn::MaskedLoad(m, d, k + j * ldx + o)), m, d, out + j * K + o);
      f = hn::Mul(f, hn::MaskedLoad(m, d, a + j * K + o));
    }
  });
}

// Four source rows at a time: four vector loads, one interleaving store makes them
// [r0[j] r1[j] r2[j] r3[j]] quads, and each quad is one 16-byte store into dst's column j.
void Transpose(const float* src, ptrdiff_t lds, float* dst, ptrdiff_t ldd, int rows, int cols) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
  HWY_ALIGN float quads[4 * kMaxLanes];
  int i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* s0 = src + i * lds;
    size_t j = 0;
    for (; j + NL <= static_cast<size_t>(cols); j += NL) {
      hn::StoreInterleaved4(hn::LoadU(d, s0 + j), hn::LoadU(d, s0 + lds + j),
                            hn::LoadU(d, s0 + 2 * lds + j), hn::LoadU(d, s0 + 3 * lds + j), d,
                            quads);
      for (size_t jj = 0; jj < NL; ++jj) std::memcpy(dst + (j + jj) * ldd + i, quads + 4 * jj, 16);
    }
    for (; j < static_cast<size_t>(cols); ++j)
      for (int r = 0; r < 4; ++r) dst[j * ldd + i + r] = s0[r * lds + j];
  }
  for (; i < rows; ++i)
    for (int j = 0; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
}

// Scans [0, n) for the first lane where bad(v) holds; returns its index or n.
template <class Bad>
HWY_INLINE size_t FindFirst(const float* x, size_t n, const Bad& bad) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  size_t i = 0;
  for (; i + NL <= n; i += NL) {
    const auto m = bad(hn::LoadU(d, x + i));
    if (!hn::AllFalse(d, m)) return i + static_cast<size_t>(hn::FindFirstTrue(d, m));
  }
  for (; i < n; ++i) {
    const auto m = bad(hn::Set(d, x[i]));
    if (!hn::AllFalse(d, m)) return i;
  }
  return n;
}

size_t FindBadGate(const float* x, size_t n) {
  const DF d;
  // Bad: NaN (every comparison false, so !(v <= 0)), > 0, or -inf.
  return FindFirst(x, n, [&](VF v) {
    return hn::Or(hn::Not(hn::Le(v, hn::Zero(d))), hn::Eq(v, hn::Set(d, -HUGE_VALF)));
  });
}

size_t FindNonFinite(const float* x, size_t n) {
  return FindFirst(x, n, [&](VF v) { return hn::Not(hn::IsFinite(v)); });
}

size_t ArgMax(const float* x, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  const VF lowest = hn::Set(d, -HUGE_VALF);
  VF m = lowest;
  size_t i = 0;
  for (; i + NL <= n; i += NL) {
    const VF v = hn::LoadU(d, x + i);
    m = hn::Max(m, hn::IfThenElse(hn::IsNaN(v), lowest, v));
  }
  float best = hn::GetLane(hn::MaxOfLanes(d, m));
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  const size_t at = FindFirst(x, n, [&](VF v) { return hn::Eq(v, hn::Set(d, best)); });
  return at < n ? at : 0;
}

void LoadF32(float* dst, const void* src, int t, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  size_t i = 0;
  if (t == static_cast<int>(DType::kF32)) {
    std::copy_n(static_cast<const float*>(src), n, dst);
    return;
  }
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToUnsigned<DF> du32;
  const uint16_t* s = static_cast<const uint16_t*>(src);
  for (; i + NL <= n; i += NL) {
    VF v;
    if (t == static_cast<int>(DType::kF16)) {
      const hn::Rebind<hwy::float16_t, DF> dh;
      v = hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(s + i)));
    } else {  // bf16: the upper half of an fp32
      v = hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, s + i))));
    }
    hn::StoreU(v, d, dst + i);
  }
  for (; i < n; ++i) dst[i] = load_as_f32(src, static_cast<DType>(t), i);
}

void StoreF32(void* dst, int t, const float* src, size_t n) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  size_t i = 0;
  if (t == static_cast<int>(DType::kF32)) {
    std::copy_n(src, n, static_cast<float*>(dst));
    return;
  }
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToUnsigned<DF> du32;
  uint16_t* out = static_cast<uint16_t*>(dst);
  for (; i + NL <= n; i += NL) {
    const VF v = hn::LoadU(d, src + i);
    if (t == static_cast<int>(DType::kF16)) {
      const hn::Rebind<hwy::float16_t, DF> dh;
      hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(out + i));
    } else {  // bf16, round to nearest even; NaN stays NaN
      const auto u = hn::BitCast(du32, v);
      const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
      auto hi = hn::ShiftRight<16>(hn::Add(u, hn::Add(hn::Set(du32, 0x7FFFu), lsb)));
      const auto nan = hn::Or(hn::ShiftRight<16>(u), hn::Set(du32, 0x40u));
      hi = hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), nan, hi);
      // hi <= 0xFFFF, so the signed-to-unsigned saturating demote is exact.
      const hn::RebindToSigned<DF> di32;
      hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, hi)), du16, out + i);
    }
  }
  for (; i < n; ++i) store_from_f32(dst, static_cast<DType>(t), i, src[i]);
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {

HWY_EXPORT(ExpInplace);
HWY_EXPORT(ScaleCopy);
HWY_EXPORT(Mul);
HWY_EXPORT(Axpy);
HWY_EXPORT(SumSquares);
HWY_EXPORT(SumSquaresF64);
HWY_EXPORT(BetaResidualRows);
HWY_EXPORT(ScaleRows);
HWY_EXPORT(GateLower);
HWY_EXPORT(GateLowerGdn);
HWY_EXPORT(InvertUnitLower);
HWY_EXPORT(KdaDiagBlock);
HWY_EXPORT(Transpose);
HWY_EXPORT(CumprodForward);
HWY_EXPORT(CumprodBackward);
HWY_EXPORT(DecayRowsForward);
HWY_EXPORT(DecayRowsBackward);
HWY_EXPORT(DecayRowsInverse);
HWY_EXPORT(FindBadGate);
HWY_EXPORT(FindNonFinite);
HWY_EXPORT(ArgMax);
HWY_EXPORT(LoadF32);
HWY_EXPORT(StoreF32);

void exp_inplace(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(ExpInplace)(x, n); }
void scale_copy(float* y, const float* x, float a, size_t n) {
  HWY_DYNAMIC_DISPATCH(ScaleCopy)(y, x, a, n);
}
void mul(float* y, const float* x, const float* a, size_t n) {
  HWY_DYNAMIC_DISPATCH(Mul)(y, x, a, n);
}
void axpy(float* y, const float* x, float a, size_t n) { HWY_DYNAMIC_DISPATCH(Axpy)(y, x, a, n); }
float sum_squares(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(SumSquares)(x, n); }
double sum_squares_f64(const float* x, size_t n) {
  return HWY_DYNAMIC_DISPATCH(SumSquaresF64)(x, n);
}
void beta_residual_rows(float* y, ptrdiff_t ldy, const float* v, ptrdiff_t ldv, const float* ks,
                        ptrdiff_t ldks, const float* e, const float* b, int rows, int n) {
  HWY_DYNAMIC_DISPATCH(BetaResidualRows)(y, ldy, v, ldv, ks, ldks, e, b, rows, n);
}
void scale_rows(float* dst, ptrdiff_t ldd, const float* src, ptrdiff_t lds, const float* row_scale,
                float scale, int rows, int n) {
  HWY_DYNAMIC_DISPATCH(ScaleRows)(dst, ldd, src, lds, row_scale, scale, rows, n);
}
void gate_lower(float* dst, const float* src, ptrdiff_t ld, const float* gam,
                const float* row_scale, float scale, int rows, bool inclusive) {
  HWY_DYNAMIC_DISPATCH(GateLower)(dst, src, ld, gam, row_scale, scale, rows, inclusive);
}
void gate_lower_gdn(float* L, float* Qm, const float* kk, const float* qk, ptrdiff_t ld,
                    const float* gam, const float* beta, float scale, int rows, int block) {
  HWY_DYNAMIC_DISPATCH(GateLowerGdn)(L, Qm, kk, qk, ld, gam, beta, scale, rows, block);
}
void invert_unit_lower(const float* L, ptrdiff_t ldl, int n, float* inv, ptrdiff_t ldi) {
  HWY_DYNAMIC_DISPATCH(InvertUnitLower)(L, ldl, n, inv, ldi);
}
void kda_diag_block(const float* k, const float* q, ptrdiff_t ldkq, const float* a, int K, int n,
                    float* L, float* Qm, int ld) {
  HWY_DYNAMIC_DISPATCH(KdaDiagBlock)(k, q, ldkq, a, K, n, L, Qm, ld);
}
size_t find_bad_gate(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(FindBadGate)(x, n); }
size_t find_non_finite(const float* x, size_t n) {
  return HWY_DYNAMIC_DISPATCH(FindNonFinite)(x, n);
}
size_t argmax(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(ArgMax)(x, n); }
void load_f32(float* dst, const void* src, DType t, size_t n) {
  HWY_DYNAMIC_DISPATCH(LoadF32)(dst, src, static_cast<int>(t), n);
}
void store_f32(void* dst, DType t, const float* src, size_t n) {
  HWY_DYNAMIC_DISPATCH(StoreF32)(dst, static_cast<int>(t), src, n);
}

void cumprod_forward(const float* a, int K, int n, float* out) {
  HWY_DYNAMIC_DISPATCH(CumprodForward)(a, K, n, out);
}
void cumprod_backward(const float* a, int K, int n, float* out) {
  HWY_DYNAMIC_DISPATCH(CumprodBackward)(a, K, n, out);
}
void decay_rows_forward(const float* k, const float* q, ptrdiff_t ldx, const float* a, int K, int n,
                        float* out_k, float* out_q) {
  HWY_DYNAMIC_DISPATCH(DecayRowsForward)(k, q, ldx, a, K, n, out_k, out_q);
}
float decay_rows_inverse(const float* k, ptrdiff_t ldx, const float* a, int K, int n, float* out) {
  return HWY_DYNAMIC_DISPATCH(DecayRowsInverse)(k, ldx, a, K, n, out);
}
void decay_rows_backward(const float* k, ptrdiff_t ldx, const float* a, const float* a_ref, int K,
                         int n, float* out) {
  HWY_DYNAMIC_DISPATCH(DecayRowsBackward)(k, ldx, a, a_ref, K, n, out);
}
void transpose(const float* src, ptrdiff_t lds, float* dst, ptrdiff_t ldd, int rows, int cols) {
  HWY_DYNAMIC_DISPATCH(Transpose)(src, lds, dst, ldd, rows, cols);
}

}  // namespace hanpu::simd
#endif
