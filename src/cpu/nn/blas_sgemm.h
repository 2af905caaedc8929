// OpenBLAS's sgemm as the FMA path's block product for the projections of a prefill, on
// cores without a matrix unit (see linear.h for where it is called).
//
// Why a library here: a projection is a big plain GEMM, the job a BLAS is made for. hanpu's
// own micro-kernel (simd/gemm.h) reads its B operand unpacked, which suits the LA chunk's
// planned 16-128-row operands; on a projection's [512 x 256] weight blocks OpenBLAS's packed
// kernels ran faster on an AVX2 core (`hanpu bench linear --fma-gemm both`;
// docs/performance.md, "Design measurements"). Used only where OpenBLAS runs
// kernels of AVX2 or wider: Debian's 0.3.21 takes cores it does not know for Prescott (SSE3)
// and is then several times slower than hanpu's kernel.
#pragma once

#include <cstdint>
#include <string>

namespace hanpu::cpu {

// Whether the FMA path's projections run on OpenBLAS: built with it, its core is one with
// AVX2-or-wider kernels. Decided once per process; whether projections use it is
// projection_kernels.h's choice.
bool blas_sgemm_in_use();

// What blas_sgemm_in_use() decided, with the reason: e.g. "OpenBLAS sgemm (Zen kernels)" or
// "hanpu's micro-kernel (OpenBLAS detected Prescott: no AVX2 kernels)".
std::string blas_sgemm_describe();

// C[M, N] = A[M, K] B[K, N] + beta C, all row-major with the given leading dimensions, on
// the calling thread only (hanpu's workers each call it for their own units; OpenBLAS's own
// threads are turned off the first time, so they never compete with hanpu's pool).
// Only valid where blas_sgemm_in_use().
void blas_sgemm(int M, int N, int K, const float* a, int64_t lda, const float* b, int64_t ldb,
                float* c, int64_t ldc, float beta);

// For the bench's whole-matrix OpenBLAS rows: OpenBLAS's own thread count (set it back to 1
// before hanpu's workers call blas_sgemm again).
void blas_set_own_threads(int threads);

}  // namespace hanpu::cpu
