// Products with only a few rows of A: decode attention, where one token's GQA group gives 1-8
// query rows: scores against keys in place (gemm_few_rows_bt), then P V (gemm_few_rows). The
// general micro-kernel (gemm.h) holds 12 rows x 2 vectors; with 4 rows it spends 6 loads on
// 8 FMAs. This one holds up to 4 rows x 4 vectors (4 x 3 where there are only 16 vector
// registers: AVX2; 1 broadcast per row, so 8 loads feed 16 FMAs) and reads B in its storage dtype,
// widening f16/bf16 in registers, so a 16-bit KV cache's values are multiplied in place
// with no widened copy.
#pragma once

#include <cstddef>

#include "hanpu/dtype.h"

namespace hanpu::simd {

// Rows of a later tile for a product to pull into cache while it computes: `rows` rows of
// `row_bytes` bytes, `row_stride` bytes apart from `first`. The product spreads the lines
// over its inner loop, a few per step. Decode attention computed a tile and then waited on
// the next one's misses (far slower from DRAM than from L3); a burst of prefetches before
// each tile filled the core's miss buffers and stalled it the same, no faster than none.
// Spread, the cold case ran faster (docs/performance.md, "Design measurements").
struct RowsToFetch {
  const void* first = nullptr;
  ptrdiff_t row_stride = 0;
  size_t row_bytes = 0;
  int64_t rows = 0;
};

// C[M x N] = A[M x Kd] B[Kd x N] (+ diag(row_beta) C when row_beta is not null; C is not
// read otherwise). A row-major fp32 (lda); B row-major in `b_dtype` with leading dimension
// ldb elements; C row-major fp32 (ldc). Any M >= 0 (rows are taken 4 at a time).
// `fetch` (may be null): rows to prefetch meanwhile (see RowsToFetch).
void gemm_few_rows(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b,
                   DType b_dtype, ptrdiff_t ldb, float* c, ptrdiff_t ldc, const float* row_beta,
                   const RowsToFetch* fetch = nullptr);

// C[M x N] = A[M x Kd] B^T, B = [N x Kd] row-major in `b_dtype` (ldb elements): dot
// products of few rows of A with the rows of B (decode: the query rows against a key tile read
// in place, 16-bit keys widened in registers, no transpose). 4 rows x 4 (AVX2: 3) B rows of vector
// accumulators along Kd, each reduced once at the end. C row-major fp32 (ldc), overwritten.
void gemm_few_rows_bt(int M, int N, int Kd, const float* a, ptrdiff_t lda, const void* b,
                      DType b_dtype, ptrdiff_t ldb, float* c, ptrdiff_t ldc,
                      const RowsToFetch* fetch = nullptr);

}  // namespace hanpu::simd
