// The "vector unit" work of fused attention: the online-softmax step of FlashAttention-2 on
// a transposed score tile (rows = keys, columns = query rows), so the per-query running max
// and sum are plain SIMD lanes and no horizontal reduction is needed.
#pragma once

#include <cstddef>

namespace hanpu::simd {

// x[i] = 2^x[i] to ~2 ulp; exactly 0 for x <= -160 and -inf (a masked score); results under
// 2^-126 may flush to 0.
void exp2_inplace(float* x, size_t n);

// One key tile of the online softmax, in log2 units (scale and log2(e) are folded into the
// queries upstream). For each column c < n, over rows p < rows of s (leading dim lds):
//   m_new = max(m[c], max_p s[p][c])        alpha[c] = 2^(m[c] - m_new)
//   s[p][c] = 2^(s[p][c] - m_new)           l[c] = alpha[c] l[c] + sum_p s[p][c]
//   m[c] = m_new
// Masked scores are -inf and become 0. A column that has seen no visible key yet keeps
// m = -inf and l = 0, with alpha = 0 (its exponents use 0 as reference: never inf - inf).
void online_softmax_columns(float* s, ptrdiff_t lds, int rows, int n, float* m, float* l,
                            float* alpha);

// The same step with scores row-major (rows = query rows, columns = keys), for units with
// too few query rows to fill the lanes (decode): per row c < rows, over columns j < cols:
//   m_new = max(m[c], max_j s[c][j]) ... exactly as online_softmax_columns.
void online_softmax_rows(float* s, ptrdiff_t lds, int rows, int cols, float* m, float* l,
                         float* alpha);

// A whole row in log2 units (the layer-by-layer baseline): x = 2^(x - max) / sum, returning
// log2 of sum_j 2^x_j (max + log2 sum). Masked entries are -inf and become 0; the row must
// have at least one finite entry.
float softmax_row(float* x, size_t n);

}  // namespace hanpu::simd
