// The "vector unit" of a CPU core: element-wise fp32 work on row-major rows (exp, gating,
// scaling, dtype conversion). Each function is dispatched to the best SIMD target once.
#pragma once

#include <cstddef>

#include "hanpu/dtype.h"

namespace hanpu::simd {

// x[i] = exp(x[i])
void exp_inplace(float* x, size_t n);
// y[i] = a * x[i]
void scale_copy(float* y, const float* x, float a, size_t n);
// y[i] = x[i] * a[i]
void mul(float* y, const float* x, const float* a, size_t n);
// y[i] += a * x[i]
void axpy(float* y, const float* x, float a, size_t n);
// sum x[i]^2
float sum_squares(const float* x, size_t n);
// The same summed in double (an RMS norm's: fp32 sums of 4096 squares drift by ~1e-6), in
// several vector accumulators, not one dependent chain of scalar adds.
double sum_squares_f64(const float* x, size_t n);
// KDA's per-channel decay factors as running products of a = exp(g) in (0, 1] (rows of
// K floats, leading dim K for a and out). Each walks one SIMD slice of the channels at a time
// over all rows, so the running factor stays in a register.
//   cumprod_forward:  out_i = a_0 ... a_i                       = exp(Gam_i)
//   cumprod_backward: out_i = a_{i+1} ... a_{n-1} (out_{n-1} = 1) = exp(Gam_last - Gam_i)
void cumprod_forward(const float* a, int K, int n, float* out);
void cumprod_backward(const float* a, int K, int n, float* out);
// Rows of a sub-chunk block against its first row i0 (rows k, q with leading dim ldx):
//   out_k_i = k_i o (a_1 ... a_i), out_q_i = q_i o (a_1 ... a_i)   (row 0: factor 1)
void decay_rows_forward(const float* k, const float* q, ptrdiff_t ldx, const float* a, int K, int n,
                        float* out_k, float* out_q);
// The block's own rows against its first row, inverted (row 0: factor 1):
//   out_i = k_i / (a_1 ... a_i)
// Returns the smallest factor a_1 ... a_{n-1} over the channels (1 for n = 1): the caller
// uses the rows only when it is not so small that their quotients could overflow.
float decay_rows_inverse(const float* k, ptrdiff_t ldx, const float* a, int K, int n, float* out);
// Columns before a block starting at row r (rows 0..n-1 = the n rows before r):
//   out_j = k_j o (a_{j+1} ... a_{n-1}) o a_ref   (a_ref = a_r)
void decay_rows_backward(const float* k, ptrdiff_t ldx, const float* a, const float* a_ref, int K,
                         int n, float* out);

// KDA's decayed products inside one diagonal sub-chunk block of n rows, without a single exp:
// exp(Gam_i - Gam_j) = prod_{j < s <= i} a_s per channel, built by running products of the
// per-token decays a = exp(g) in (0, 1] (no overflow; underflow flushes to 0 as it should).
//   L[i*ld + j]  = sum_d k_id k_jd exp(Gam_id - Gam_jd)   (j < i)
//   Qm[i*ld + j] = sum_d q_id k_jd exp(Gam_id - Gam_jd)   (j <= i)
// k, q: [n x K] rows (leading dim ldkq); a: [n x K] (leading dim K); L, Qm point at the
// block's (0, 0), leading dim ld.
void kda_diag_block(const float* k, const float* q, ptrdiff_t ldkq, const float* a, int K, int n,
                    float* L, float* Qm, int ld);
// Row-batched forms (one dispatch for a whole chunk's rows; row_scale may be null = 1):
// dst_i[j] = scale row_scale_i src_i[j] exp(gam_i - gam_j) for j < i (j <= i if inclusive),
// the lower triangle of a c x c block (leading dim ld); gam null: no decay factor. The GDN
// decay mask: every exponent gam_i - gam_j <= 0.
void gate_lower(float* dst, const float* src, ptrdiff_t ld, const float* gam,
                const float* row_scale, float scale, int rows, bool inclusive);
// GDN's two gated blocks at once: L_ij = beta_i exp(gam_i - gam_j) kk_ij for j < i and
// Qm_ij = scale exp(gam_i - gam_j) qk_ij for j <= i (rows <= kMaxGateRows; gam falling, so
// every exponent is <= 0), the decay factored at the first row of each `block` rows.
inline constexpr int kMaxGateRows = 128;  // the largest LA chunk
void gate_lower_gdn(float* L, float* Qm, const float* kk, const float* qk, ptrdiff_t ld,
                    const float* gam, const float* beta, float scale, int rows, int block);
// inv [n x n] (leading dim ldi) = (I + StrictTril(L))^-1, a unit lower-triangular matrix;
// L's diagonal and upper triangle are not read. Every entry of inv is written (zeros above).
void invert_unit_lower(const float* L, ptrdiff_t ldl, int n, float* inv, ptrdiff_t ldi);
// dst_i = scale row_scale_i src_i for rows of n floats.
void scale_rows(float* dst, ptrdiff_t ldd, const float* src, ptrdiff_t lds, const float* row_scale,
                float scale, int rows, int n);
// y_i = b_i (v_i - e_i ks_i) for rows of n floats (e null = 1): the GEMM-first right-hand side.
void beta_residual_rows(float* y, ptrdiff_t ldy, const float* v, ptrdiff_t ldv, const float* ks,
                        ptrdiff_t ldks, const float* e, const float* b, int rows, int n);

// Index of the first x[i] that is not finite or is > 0 (a gate that would make the
// recurrence grow), or n if there is none. Vectorised: it scans every gate of a call.
size_t find_bad_gate(const float* x, size_t n);
// Index of the first non-finite x[i], or n.
size_t find_non_finite(const float* x, size_t n);
// Index of the first largest x[i], NaNs passed over (0 when n is 0 or every x is NaN).
size_t argmax(const float* x, size_t n);

// Row conversion between a storage dtype and fp32.
void load_f32(float* dst, const void* src, DType t, size_t n);
void store_f32(void* dst, DType t, const float* src, size_t n);

// dst[j * ldd + i] = src[i * lds + j] for a rows x cols src (the K^T of the layout plan).
void transpose(const float* src, ptrdiff_t lds, float* dst, ptrdiff_t ldd, int rows, int cols);

}  // namespace hanpu::simd
