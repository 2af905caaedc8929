// Element-wise layer pieces (see layer_ops.h).
#include "model/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "parallel/parallel_rows.h"
#include "cpu/nn/elementwise.h"

namespace hanpu::model {

namespace {

float inv_rms(const float* x, int n, float eps) {
  // Summed in double: fp32 reductions of 4096 squares drift by ~1e-6. In vectors rather than
  // one chain of dependent scalar adds a row: a prefill norms every row of its chunk
  // (docs/journal, 2026-12-06, seventh session; a decode step's norm is bound by its
  // vectors' cache misses instead).
  const double ss = cpu::sum_squares_f64(x, static_cast<size_t>(n));
  return 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
}

// One row of Qwen3_5RMSNorm: y = x / rms(x) * (1 + w).
void norm_row_zero_centred(const float* x, int n, const float* w, float eps, float* y) {
  const float s = inv_rms(x, n, eps);
  for (int i = 0; i < n; ++i) y[i] = x[i] * s * (1.0f + w[i]);
}

}  // namespace

void rms_norm_zero_centred(const float* x, int64_t ld_x, int64_t rows, int n, const float* w,
                           float eps, float* y, int64_t ld_y, int threads) {
  parallel_rows(threads, rows, 4 * n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) norm_row_zero_centred(x + r * ld_x, n, w, eps, y + r * ld_y);
  });
}

void add_rms_norm_zero_centred(float* h, const float* block, int64_t rows, int n, const float* w,
                               float eps, float* xn, int threads) {
  parallel_rows(threads, rows, 5 * n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* hr = h + r * n;
      const float* br = block + r * n;
      for (int i = 0; i < n; ++i) hr[i] += br[i];
      norm_row_zero_centred(hr, n, w, eps, xn + r * n);
    }
  });
}

void gated_rms_norm(float* o, const float* z, int64_t rows, int n, const float* w, float eps,
                    int threads) {
  parallel_rows(threads, rows, 24 * n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* orow = o + r * n;
      const float s = inv_rms(orow, n, eps);
      for (int i = 0; i < n; ++i) orow[i] = w[i] * (orow[i] * s);
      cpu::silu_mul(z + r * n, orow, orow, static_cast<size_t>(n));  // * silu(z), vectorised exp
    }
  });
}

void sigmoid_gated_rms_norm(float* o, const float* gate, int64_t rows, int n, const float* w,
                            float eps, int threads) {
  parallel_rows(threads, rows, 24 * n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* orow = o + r * n;
      const float* grow = gate + r * n;
      const float s = inv_rms(orow, n, eps);
      for (int i = 0; i < n; ++i) orow[i] = w[i] * (orow[i] * s);
      cpu::sigmoid_mul(grow, orow, orow, static_cast<size_t>(n));  // vectorised exp
    }
  });
}

void gdn_gates(const float* b, const float* a, int64_t T, int HV, const float* neg_A,
               const float* dt_bias, float* beta, float* g) {
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < HV; ++h) {
      const int64_t i = t * HV + h;
      beta[i] = sigmoid(b[i]);
      const float s = a[i] + dt_bias[h];
      const float softplus = s > 20.0f ? s : std::log1p(std::exp(s));  // torch's threshold
      g[i] = neg_A[h] * softplus;
    }
  }
}

void apply_rope(float* x, int64_t T, int heads, int D, int rot, double theta, int64_t pos0) {
  const int half = rot / 2;
  // Frequencies and angles in fp32 as transformers makes them, then cos/sin of that angle.
  std::vector<float> inv_freq(half);
  for (int i = 0; i < half; ++i) {
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(theta),
                                  static_cast<float>(2 * i) / static_cast<float>(rot));
  }
  std::vector<float> cs(half), sn(half);
  for (int64_t t = 0; t < T; ++t) {
    for (int i = 0; i < half; ++i) {
      const float angle = static_cast<float>(pos0 + t) * inv_freq[i];
      cs[i] = std::cos(angle);
      sn[i] = std::sin(angle);
    }
    for (int h = 0; h < heads; ++h) {
      float* r = x + (t * heads + h) * D;
      for (int i = 0; i < half; ++i) {
        const float x1 = r[i], x2 = r[i + half];
        r[i] = x1 * cs[i] - x2 * sn[i];
        r[i + half] = x2 * cs[i] + x1 * sn[i];
      }
    }
  }
}

void apply_rope_interleaved(float* x, int64_t T, int heads, int ld, int rot, double theta,
                            int64_t pos0) {
  std::vector<float> pair(rot);
  for (int64_t r = 0; r < T * heads; ++r) {  // evens, then odds: rotate_half's halves
    float* row = x + r * ld;
    for (int i = 0; i < rot / 2; ++i) pair[i] = row[2 * i], pair[rot / 2 + i] = row[2 * i + 1];
    std::copy(pair.begin(), pair.end(), row);
  }
  apply_rope(x, T, heads, ld, rot, theta, pos0);
}

double log_softmax_at(float* logits, int n, int id) {
  float top = logits[0];
  for (int i = 1; i < n; ++i) top = std::max(top, logits[i]);
  const double chosen = static_cast<double>(logits[id]) - top;
  for (int i = 0; i < n; ++i) logits[i] -= top;
  cpu::exp_inplace(logits, static_cast<size_t>(n));
  double sum = 0;  // in double: 248k terms
  for (int i = 0; i < n; ++i) sum += logits[i];
  return chosen - std::log(sum);
}

}  // namespace hanpu::model
