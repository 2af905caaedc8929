// KDA forget gates (see kda_gates.h), in fp32 as the models' code computes them.
#include "model/kda_gates.h"

#include "cpu/nn/elementwise.h"
#include "parallel/parallel_rows.h"

namespace hanpu::model {

void kda_forget_gate(const float* f, int64_t T, int H, int K, const float* rate,
                     const float* dt_bias, float lower_bound, float* g, int threads) {
  // A row is one head of one token; an exp and a log1p a channel make a prefill's gates worth
  // sharing between cores (a decode step's 32 rows stay on the caller: too little for a job).
  parallel_rows(threads, T * H, int64_t{K} * 32, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int h = static_cast<int>(r % H);
      cpu::kda_gate(f + r * K, dt_bias + static_cast<int64_t>(h) * K, rate[h], lower_bound,
                    g + r * K, static_cast<size_t>(K));
    }
  });
}

}  // namespace hanpu::model
