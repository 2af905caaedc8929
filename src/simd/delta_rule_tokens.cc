// Recurrent delta-rule kernel (see delta_rule_tokens.h), per Highway target. Two fused passes
// over an L1-resident column block per token: (1) S^T (a o k) with split accumulators to hide
// FMA latency; (2) decay + rank-1 update + S^T q in one read-modify-write of S.
#include "simd/delta_rule_tokens.h"

#include <algorithm>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/delta_rule_tokens.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int kNV = 4;  // vectors per column block: 128 rows x 64 cols x 4 B = 32 KiB on AVX-512

template <bool kFull>
HWY_INLINE void Block(int tokens, int K, size_t ncols, float* S, ptrdiff_t lds, const float* q,
                      const float* k, ptrdiff_t ldqk, const float* v, ptrdiff_t ldv,
                      const float* decay, bool per_channel, const float* beta, float scale,
                      float* o, ptrdiff_t ldo) {
  const DF d;
  const size_t NL = hn::Lanes(d);
  using M = hn::Mask<DF>;
  M m[kNV];
  for (int c = 0; c < kNV; ++c) {
    const size_t lo = c * NL;
    m[c] = hn::FirstN(d, kFull ? NL : (ncols > lo ? std::min(NL, ncols - lo) : 0));
  }
  auto load = [&](const float* p, int c) {
    if constexpr (kFull)
      return hn::LoadU(d, p + c * NL);
    else
      return hn::MaskedLoad(m[c], d, p + c * NL);
  };
  auto store = [&](VF x, float* p, int c) {
    if constexpr (kFull)
      hn::StoreU(x, d, p + c * NL);
    else
      hn::BlendedStore(x, m[c], d, p + c * NL);
  };
  for (int t = 0; t < tokens; ++t) {
    const float* kt = k + t * ldqk;
    const float* qt = q + t * ldqk;
    const float* at = per_channel ? decay + static_cast<ptrdiff_t>(t) * K : decay + t;
    // Pass 1: kv = S^T (a o k), two accumulator sets over even/odd rows.
    VF acc0[kNV], acc1[kNV];
    for (int c = 0; c < kNV; ++c) acc0[c] = acc1[c] = hn::Zero(d);
    int r = 0;
    for (; r + 1 < K; r += 2) {
      const VF k0 = hn::Set(d, kt[r] * (per_channel ? at[r] : 1.0f));
      const VF k1 = hn::Set(d, kt[r + 1] * (per_channel ? at[r + 1] : 1.0f));
      const float* s0 = S + r * lds;
      const float* s1 = s0 + lds;
      for (int c = 0; c < kNV; ++c) {
        acc0[c] = hn::MulAdd(k0, load(s0, c), acc0[c]);
        acc1[c] = hn::MulAdd(k1, load(s1, c), acc1[c]);
      }
    }
    if (r < K) {
      const VF k0 = hn::Set(d, kt[r] * (per_channel ? at[r] : 1.0f));
      for (int c = 0; c < kNV; ++c) acc0[c] = hn::MulAdd(k0, load(S + r * lds, c), acc0[c]);
    }
    // u = beta (v - kv); for GDN the scalar decay multiplies the whole sum.
    const VF vb = hn::Set(d, beta[t]);
    const VF ag = hn::Set(d, per_channel ? 1.0f : at[0]);
    VF u[kNV], out[kNV];
    for (int c = 0; c < kNV; ++c) {
      const VF kv = hn::Mul(ag, hn::Add(acc0[c], acc1[c]));
      u[c] = hn::Mul(vb, hn::Sub(load(v + t * ldv, c), kv));
      out[c] = hn::Zero(d);
    }
    // Pass 2: S = a S + k u^T ; o += q^T S (new S).
    for (r = 0; r < K; ++r) {
      const VF ar = per_channel ? hn::Set(d, at[r]) : ag;
      const VF kr = hn::Set(d, kt[r]);
      const VF qr = hn::Set(d, qt[r]);
      float* sr = S + r * lds;
      for (int c = 0; c < kNV; ++c) {
        const VF s = hn::MulAdd(ar, load(sr, c), hn::Mul(kr, u[c]));
        store(s, sr, c);
        out[c] = hn::MulAdd(qr, s, out[c]);
      }
    }
    const VF vs = hn::Set(d, scale);
    for (int c = 0; c < kNV; ++c) store(hn::Mul(vs, out[c]), o + t * ldo, c);
  }
}

void DeltaRuleTokens(int tokens, int K, int ncols, float* S, ptrdiff_t lds, const float* q,
                     const float* k, ptrdiff_t ldqk, const float* v, ptrdiff_t ldv,
                     const float* decay, bool per_channel, const float* beta, float scale, float* o,
                     ptrdiff_t ldo) {
  const size_t width = kNV * hn::Lanes(DF());
  for (size_t j0 = 0; j0 < static_cast<size_t>(ncols); j0 += width) {
    const size_t n = std::min(width, ncols - j0);
    if (n == width) {
      Block<true>(tokens, K, n, S + j0, lds, q, k, ldqk, v + j0, ldv, decay, per_channel, beta,
                  scale, o + j0, ldo);
    } else {
      Block<false>(tokens, K, n, S + j0, lds, q, k, ldqk, v + j0, ldv, decay, per_channel, beta,
                   scale, o + j0, ldo);
    }
  }
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(DeltaRuleTokens);
void delta_rule_tokens(int tokens, int K, int ncols, float* S, ptrdiff_t lds, const float* q,
                       const float* k, ptrdiff_t ldqk, const float* v, ptrdiff_t ldv,
                       const float* decay, bool per_channel, const float* beta, float scale,
                       float* o, ptrdiff_t ldo) {
  if (tokens <= 0 || ncols <= 0) return;
  HWY_DYNAMIC_DISPATCH(DeltaRuleTokens)
  (tokens, K, ncols, S, lds, q, k, ldqk, v, ldv, decay, per_channel, beta, scale, o, ldo);
}
}  // namespace hanpu::simd
#endif
