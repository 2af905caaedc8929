// KDA forget gates (see kda_gates.h), in fp32 as the models' code computes them.
#include "model/kda_gates.h"

#include <cmath>

namespace hanpu::model {

void kda_forget_gate(const float* f, int64_t T, int H, int K, const float* rate,
                     const float* dt_bias, float lower_bound, float* g) {
  const bool bounded = !std::isnan(lower_bound);
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      const float decay = rate[h];
      const int64_t at = (t * H + h) * K;
      for (int k = 0; k < K; ++k) {
        const float x = f[at + k] + dt_bias[h * K + k];
        if (bounded) {
          g[at + k] = lower_bound / (1.0f + std::exp(-decay * x));
        } else {
          const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
          g[at + k] = -decay * softplus;
        }
      }
    }
  }
}

}  // namespace hanpu::model
