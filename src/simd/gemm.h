// The "matrix unit" of a CPU core: small fp32 GEMMs on an FMA register-tile micro-kernel.
// Layout contract (this is where hanpu's layout plan meets the hardware):
//   - B is consumed row-major ("packed" along N): each step of the reduction loads 2 SIMD
//     vectors of one row of B. A state S [K x V] or a transposed K^T [K x C] is such a B.
//   - A is consumed by broadcast, element (i, p) at a[i * row_stride + p * col_stride]. A
//     row-major matrix (col_stride 1) and the transpose of one (row_stride 1, i.e. the
//     k-major "packed A" panel layout) both work without a copy, which is what lets the
//     planner skip transforms: K^T Vn reads K in place.
#pragma once

#include <cstddef>

namespace hanpu::simd {

struct MatA {
  const float* data;
  ptrdiff_t row_stride;
  ptrdiff_t col_stride;
};

inline MatA row_major(const float* a, ptrdiff_t lda) { return MatA{a, lda, 1}; }
// The matrix X^T where X is row-major with leading dimension ldx.
inline MatA transposed(const float* x, ptrdiff_t ldx) { return MatA{x, 1, ldx}; }

// C[M x N] = alpha * A[M x Kd] B[Kd x N] + beta * C, C row-major (ldc). beta == 0 does not
// read C (it may hold garbage); beta != 1 folds a scaling of C (e.g. a state decay) into the
// product's store instead of a separate pass.
void gemm(int M, int N, int Kd, MatA A, const float* B, ptrdiff_t ldb, float* C, ptrdiff_t ldc,
          float alpha, float beta);

// C = A B + diag(row_beta) C: a per-row rescale of C folded into the product's store (the
// online-softmax correction of FlashAttention's output rows). Every C row is read, so C
// must hold finite values even where row_beta is 0.
void gemm_row_scaled(int M, int N, int Kd, MatA A, const float* B, ptrdiff_t ldb, float* C,
                     ptrdiff_t ldc, const float* row_beta);

// The same product the way a generic library call does it with no layout plan: A and B are
// copied into packed panels and the result tile through a packed buffer on every call. Used
// by the ablation to measure what the layout plan saves; the result equals gemm()'s.
void gemm_repacking(int M, int N, int Kd, MatA A, const float* B, ptrdiff_t ldb, float* C,
                    ptrdiff_t ldc, float alpha, float beta);

// Rows per register tile and columns per tile of the micro-kernel on this machine's target.
int gemm_tile_rows();
int gemm_tile_cols();
// The SIMD target Highway selected at run time, e.g. "AVX3".
const char* simd_target_name();

}  // namespace hanpu::simd
