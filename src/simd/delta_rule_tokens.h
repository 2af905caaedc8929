// The token-by-token delta rule on a block of state columns: the recurrent (decode) kernel.
#pragma once

#include <cstddef>

namespace hanpu::simd {

// Advances one value head's state S [K x ncols] (row-major, leading dim lds) over `tokens`
// tokens, writing o [tokens x ncols] (fp32, leading dim ldo). Per token t:
//   S <- diag(a_t) S ; u = beta_t (v_t - S^T k_t) ; S <- S + k_t u^T ; o_t = scale S^T q_t
// q, k: [tokens x K] fp32 (leading dim ldqk); v: [tokens x ncols] (ldv);
// decay a: per_channel ? [tokens x K] : [tokens] values exp(g) in [0, 1]; beta: [tokens].
// State columns are independent, so the kernel walks column blocks that fit in L1 and runs
// every token over one block before the next: the state never leaves the core's cache.
void delta_rule_tokens(int tokens, int K, int ncols, float* S, ptrdiff_t lds, const float* q,
                       const float* k, ptrdiff_t ldqk, const float* v, ptrdiff_t ldv,
                       const float* decay, bool per_channel, const float* beta, float scale,
                       float* o, ptrdiff_t ldo);

}  // namespace hanpu::simd
