// The KDA hybrids' per-channel forget gate (Kimi Linear, Ling), in log space: a step
// multiplies key channel k of head h's state by exp(g[t][h][k]).
#pragma once

#include <cstdint>

namespace hanpu::model {

// g [T, H K] from the gate projection's output f [T, H K] (Kimi: f_b(f_a(x)); Ling: f_proj(x)),
// rate [H] = exp(A_log) (a safetensors checkpoint holds A_log, a GGUF -exp(A_log)) and
// dt_bias [H K], with x = f + dt_bias:
//   lower_bound NaN (Kimi Linear; Ling without kda_safe_gate):
//     g = -rate[h] softplus(x), softplus(x) = x above 20 as both models' code has it.
//     Unbounded below: a gate far past any bound is the model's own value, never clipped.
//   lower_bound finite (Ling's kda_safe_gate): g = lower_bound sigmoid(rate[h] x), in
//     (lower_bound, 0).
// g may alias f. threads: as parallel_rows takes them (0: the default pool).
void kda_forget_gate(const float* f, int64_t T, int H, int K, const float* rate,
                     const float* dt_bias, float lower_bound, float* g, int threads = 1);

}  // namespace hanpu::model
