// The fused attention's products on the bf16 dot instruction (AVX512-BF16 VDPBF16PS, see
// gemm_bf16_dot.h), for a prefill whose keys and values are stored in bf16: both products of
// a tile, S^T = K (c Q)^T and O = diag(alpha) O + P V, take their operands as bf16 pairs
// (two consecutive steps of the reduction in one 32-bit word, low half first), sum exact
// products in fp32, and run at twice the multiply-adds of an fp32 FMA per instruction.
//
// Layouts ("pairs"): a matrix X [K x N] that is the reduction's right operand is stored as
// words x[q ldx + j] = bf16(X[2q][j]) | bf16(X[2q + 1][j]) << 16, q < ceil(K / 2); the left
// operand A [M x K] k-major as a[q lda + i] = bf16(A[i][2q]) | bf16(A[i][2q + 1]) << 16. A
// missing odd step (K odd) is a zero half.
//
// Numerics: every operand is rounded to bf16 (round to nearest even; subnormals count as
// zero), products and sums are fp32. Requires bf16_dot_usable() (gemm_bf16_dot.h).
//
// Why by hand: as gemm_bf16_dot.h (no Highway op emits VDPBF16PS).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hanpu::simd {

// C[M x N] (row-major, ldc) = A B; with row_scale, C = diag(row_scale) C + A B (the online
// softmax's rescale of the running output folded into the store); else with accumulate,
// C = C + A B. A: k-major pairs (a[q lda + i]), B: pairs (b[q ldb + j]), q < kp. Reads A
// and B only at i < M, j < N. On the calling thread.
void gemm_bf16_dot_pairs(int M, int N, int kp, const uint32_t* a, int64_t lda, const uint32_t* b,
                         int64_t ldb, float* c, int64_t ldc, const float* row_scale,
                         bool accumulate = false);

// Two fp32 rows as one row of pairs: out[j] = bf16(r0[j]) | bf16(r1[j]) << 16, j < n;
// r1 null: zero high halves (the odd step past the end).
void pack_bf16_row_pairs(const float* r0, const float* r1, int n, uint32_t* out);

// Rows of x [rows x n] (fp32, ldx; n even), times `scale`, as the k-major pairs of the left
// operand, or equally the pairs of a right operand X^T: out[q ldo + r] = bf16(s x[r][2q]) |
// bf16(s x[r][2q + 1]) << 16, q < n / 2, r < rows.
void pack_bf16_pairs_transposed(const float* x, int64_t ldx, int rows, int n, float scale,
                                uint32_t* out, int64_t ldo);

}  // namespace hanpu::simd
