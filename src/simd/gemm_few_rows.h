// Products with only a few rows of A: decode attention, where one token's GQA group gives 1-8
// query rows. The general micro-kernel (gemm.h) holds 12 rows x 2 vectors; with 4 rows it
// spends 6 loads on 8 FMAs. This one holds up to 4 rows x 4 vectors (16 accumulators, 4 B
// vectors, 1 broadcast per row: 8 loads feed 16 FMAs) and reads B in its storage dtype,
// widening f16/bf16 in registers, so a 16-bit KV cache's values are multiplied in place
// with no widened copy.
#pragma once

#include <cstddef>

#include "hanpu/dtype.h"

namespace hanpu::simd {

// C[M x N] = A[M x Kd] B[Kd x N] (+ diag(row_beta) C when row_beta is not null; C is not
// read otherwise). A row-major fp32 (lda); B row-major in `b_dtype` with leading dimension
// ldb elements; C row-major fp32 (ldc). Any M >= 0 (rows are taken 4 at a time).
void gemm_few_rows(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b,
                   DType b_dtype, ptrdiff_t ldb, float* c, ptrdiff_t ldc, const float* row_beta);

}  // namespace hanpu::simd
