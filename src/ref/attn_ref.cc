// Naive float64 attention: scores, max-subtracted softmax, weighted sum, row by row.
#include "ref/attn_ref.h"

#include <cmath>
#include <limits>

namespace hanpu::ref {

AttnRefResult attention(const AttnArgs& a) {
  const int64_t T = a.q.shape[0], Tk = a.k.shape[0];
  const int Hq = static_cast<int>(a.q.shape[1]), Hkv = static_cast<int>(a.k.shape[1]);
  const int D = static_cast<int>(a.q.shape[2]), Dv = static_cast<int>(a.v.shape[2]);
  const int64_t q_offset = a.q_offset ? *a.q_offset : Tk - T;
  // Key j of kv head hk starts at element j ld + hk head_ld (AttnArgs' strides; 0: contiguous).
  const int64_t ld = a.kv_row_stride != 0 ? a.kv_row_stride : int64_t{Hkv} * D;
  const int64_t head_ld = a.kv_head_stride != 0 ? a.kv_head_stride : D;
  // Values of their own head dim are contiguous [Tk, Hkv, Dv] (attn_prefill's rule).
  const int64_t v_ld = Dv == D ? ld : int64_t{Hkv} * Dv, v_head_ld = Dv == D ? head_ld : Dv;
  const double scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(D));
  AttnRefResult r;
  r.o.assign(static_cast<size_t>(T) * Hq * Dv, 0.0);
  r.lse.assign(static_cast<size_t>(Hq) * T, -std::numeric_limits<double>::infinity());
  std::vector<double> s(static_cast<size_t>(Tk));
  for (int h = 0; h < Hq; ++h) {
    const int hk = h / (Hq / Hkv);
    for (int64_t i = 0; i < T; ++i) {
      const int64_t pos = q_offset + i;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < Tk; ++j) {
        bool visible = true;
        if (a.mask != AttnMask::kNone) visible = j <= pos;
        if (a.mask == AttnMask::kSliding) visible = visible && j > pos - a.window;
        if (!visible) {
          s[j] = -std::numeric_limits<double>::infinity();
          continue;
        }
        double dot = 0;
        for (int d = 0; d < D; ++d) {
          dot += static_cast<double>(load_as_f32(a.q.data, a.q.dtype, (i * Hq + h) * D + d)) *
                 load_as_f32(a.k.data, a.k.dtype, j * ld + hk * head_ld + d);
        }
        s[j] = scale * dot;
        m = std::max(m, s[j]);
      }
      double sum = 0;
      double* out = r.o.data() + (i * Hq + h) * Dv;
      for (int64_t j = 0; j < Tk; ++j) {
        if (std::isinf(s[j])) continue;
        const double p = std::exp(s[j] - m);
        sum += p;
        for (int d = 0; d < Dv; ++d)
          out[d] += p * load_as_f32(a.v.data, a.v.dtype, j * v_ld + hk * v_head_ld + d);
      }
      for (int d = 0; d < Dv; ++d) out[d] /= sum;
      r.lse[static_cast<size_t>(h) * T + i] = m + std::log(sum);
    }
  }
  return r;
}

}  // namespace hanpu::ref
