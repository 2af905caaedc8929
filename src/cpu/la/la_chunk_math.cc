// Chunk operators of chunkwise GDN/KDA on one core's workspace (see la_chunk_math.h).
#include "cpu/la/la_chunk_math.h"

#include <algorithm>
#include <cmath>

#include "simd/vec_ops.h"

namespace hanpu::cpu {

namespace {

constexpr int kSubChunk = 16;  // diagonal blocks of the solve and of KDA's decayed products

const char* at(const void* base, size_t elem, DType t) {
  return static_cast<const char*>(base) + elem * dtype_size(t);
}

}  // namespace

ChunkWorkspace::ChunkWorkspace(int C_, int K_, int V_, ScratchMeter* meter)
    : C(C_),
      K(K_),
      V(V_),
      kq(2 * C_ * K_, meter),
      kq_gated(2 * C_ * K_, meter),
      kt(K_ * (C_ + 16), meter),
      gam(C_ * K_, meter),
      egam(C_ * K_, meter),
      beta(C_, meter),
      raw(2 * C_ * C_, meter),
      kkqk(2 * C_ * C_, meter),
      ksqs(2 * C_ * V_, meter),
      vrow(C_ * V_, meter),
      vn(C_ * (V_ + 16), meter),
      out(C_ * V_, meter),
      kd(C_ * K_, meter),
      tmp(2 * C_ * K_, meter),
      decay(C_ * K_, meter),
      etail(C_ * K_, meter),
      ldkt(C_ + 16) {}

GemmFn gemm_for(GemmMode mode) {
  return mode == GemmMode::kPlanned ? &simd::gemm : &simd::gemm_repacking;
}

void load_chunk_rows(const LaProblem& p, int64_t t0, int c, int hv, ChunkWorkspace& ws) {
  const int K = p.K;
  ws.c = c;
  if (p.dtype == DType::kF32 && !p.qk_l2norm) {
    ws.k = static_cast<const float*>(p.k) + p.qk_offset(t0, hv);
    ws.q = static_cast<const float*>(p.q) + p.qk_offset(t0, hv);
    ws.ldqk = static_cast<ptrdiff_t>(p.H) * K;
    return;
  }
  for (int i = 0; i < c; ++i) {
    float* krow = ws.kq.data() + static_cast<size_t>(i) * K;
    float* qrow = ws.kq.data() + static_cast<size_t>(c + i) * K;
    simd::load_f32(krow, at(p.k, p.qk_offset(t0 + i, hv), p.dtype), p.dtype, K);
    simd::load_f32(qrow, at(p.q, p.qk_offset(t0 + i, hv), p.dtype), p.dtype, K);
    if (p.qk_l2norm) {
      simd::scale_copy(krow, krow, 1.0f / std::sqrt(simd::sum_squares(krow, K) + 1e-6f), K);
      simd::scale_copy(qrow, qrow, 1.0f / std::sqrt(simd::sum_squares(qrow, K) + 1e-6f), K);
    }
  }
  ws.k = ws.kq.data();
  ws.q = ws.kq.data() + static_cast<size_t>(c) * K;
  ws.ldqk = K;
}

void load_chunk_gates(const LaProblem& p, int64_t t0, int hv, ChunkWorkspace& ws) {
  const int K = p.K, c = ws.c;
  for (int i = 0; i < c; ++i) {
    const int64_t t = t0 + i;
    ws.beta[i] = p.beta[t * p.HV + hv];
    if (p.kda()) {
      std::copy_n(p.g + (t * p.HV + hv) * K, K, ws.decay.data() + static_cast<size_t>(i) * K);
    } else {
      ws.gam[i] = p.g[t * p.HV + hv] + (i ? ws.gam[i - 1] : 0.0f);
    }
  }
  if (p.kda()) {
    float* a = ws.decay.data();
    simd::exp_inplace(a, static_cast<size_t>(c) * K);  // a = exp(g) in (0, 1]
    simd::cumprod_forward(a, K, c, ws.egam.data());    // exp(Gam_i)
    simd::cumprod_backward(a, K, c, ws.etail.data());  // exp(Gam_last - Gam_i)
  } else {
    std::copy_n(ws.gam.data(), c, ws.egam.data());
    simd::exp_inplace(ws.egam.data(), c);  // exp(Gam_i) <= 1: Gam is a sum of gates <= 0
  }
}

void load_chunk(const LaProblem& p, int64_t t0, int c, int hv, ChunkWorkspace& ws) {
  load_chunk_rows(p, t0, c, hv, ws);
  load_chunk_gates(p, t0, hv, ws);
}

void bind_chunk_v_and_out(const LaProblem& p, int64_t t0, int hv, int c0, int c1,
                          ChunkWorkspace& ws) {
  const int w = c1 - c0;
  ws.ldvn = w + 16;
  if (p.dtype == DType::kF32) {
    ws.v = static_cast<const float*>(p.v) + p.v_offset(t0, hv) + c0;
    ws.o = static_cast<float*>(p.o) + p.v_offset(t0, hv) + c0;
    ws.ldv = ws.ldo = static_cast<ptrdiff_t>(p.HV) * p.V;
    return;
  }
  for (int i = 0; i < ws.c; ++i) {
    simd::load_f32(ws.vrow.data() + static_cast<size_t>(i) * w,
                   at(p.v, p.v_offset(t0 + i, hv) + c0, p.dtype), p.dtype, w);
  }
  ws.v = ws.vrow.data();
  ws.o = ws.out.data();
  ws.ldv = ws.ldo = w;
}

// GDN: K K^T and Q K^T on the micro-kernel, lower row blocks only, ungated.
void raw_kk_qk(const LaProblem& p, ChunkWorkspace& ws, GemmFn gemm) {
  const int c = ws.c, K = p.K, C = ws.C;
  const ptrdiff_t ld = ws.ldqk;
  float* kk = ws.raw.data();
  float* qk = kk + static_cast<size_t>(c) * C;
  simd::transpose(ws.k, ld, ws.kt.data(), ws.ldkt, c, K);  // the one transform: K^T, shared below
  for (int i0 = 0; i0 < c; i0 += kSubChunk) {
    const int i1 = std::min(c, i0 + kSubChunk);
    gemm(i1 - i0, i1, K, simd::row_major(ws.k + i0 * ld, ld), ws.kt.data(), ws.ldkt, kk + i0 * C, C,
         1.0f, 0.0f);
    gemm(i1 - i0, i1, K, simd::row_major(ws.q + i0 * ld, ld), ws.kt.data(), ws.ldkt, qk + i0 * C, C,
         1.0f, 0.0f);
  }
}

namespace {

// GDN: the decay mask exp(Gam_i - Gam_j) (<= 0 exponents) and beta / scale on rows of the
// raw products.
void gate_kk_qk_gdn(const LaProblem& p, ChunkWorkspace& ws) {
  const int c = ws.c, C = ws.C;
  const float* kk = ws.raw.data();
  const float* qk = kk + static_cast<size_t>(c) * C;
  float* L = ws.kkqk.data();
  float* Qm = L + static_cast<size_t>(c) * C;
  simd::gate_lower_gdn(L, Qm, kk, qk, C, ws.gam.data(), ws.beta.data(), p.scale, c, kSubChunk);
}

// KDA: the decay is inside the sum, so it cannot be applied afterwards; it is factored at a
// reference row r as exp(Gam_i - Gam_j) = exp(Gam_i - Gam_r) exp(Gam_r - Gam_j): rows i
// times the first factor, columns j times the second, and the products run on the
// micro-kernel. For j > r the second factor is the inverse of a decay. While the decay from
// r to the last row stays above kMinInverseDecay (mild gates: what models feed) no factor can
// overflow, and the whole chunk uses r = 0: one K^T, lower row blocks as in GDN. Otherwise
// each 16-row block uses its first row (FLA's reference point), and where even the block's
// own decay is too strong its 16 x 16 diagonal block is summed element by element with the
// decay built as running products of exp(g) (kda_diag_block), with no exp and no division.
constexpr float kMinInverseDecay = 0x1p-40f;

// Rows [i0, i1) of L and Qm from rows (k, q) times exp(Gam_i - Gam_r) and kt, the columns
// j < n times exp(Gam_r - Gam_j), transposed.
void kda_block_products(ChunkWorkspace& ws, int K, int i0, int i1, int n, const float* rows_k,
                        const float* rows_q, GemmFn gemm) {
  float* L = ws.kkqk.data();
  float* Qm = L + static_cast<size_t>(ws.c) * ws.C;
  const int C = ws.C;
  gemm(i1 - i0, n, K, simd::row_major(rows_k, K), ws.kt.data(), ws.ldkt, L + i0 * C, C, 1.0f, 0.0f);
  gemm(i1 - i0, n, K, simd::row_major(rows_q, K), ws.kt.data(), ws.ldkt, Qm + i0 * C, C, 1.0f,
       0.0f);
}

void decayed_kk_qk_kda(const LaProblem& p, ChunkWorkspace& ws, GemmFn gemm) {
  const int c = ws.c, K = p.K, C = ws.C;
  const float* k = ws.k;
  const float* q = ws.q;
  const ptrdiff_t ld = ws.ldqk;
  const float* a = ws.decay.data();
  float* L = ws.kkqk.data();
  float* Qm = L + static_cast<size_t>(c) * C;
  float* kd = ws.kd.data();
  float* rows = ws.tmp.data();  // [2c x K]: k rows, then q rows, times exp(Gam_i - Gam_r)
  if (simd::decay_rows_inverse(k, ld, a, K, c, kd) >= kMinInverseDecay) {
    simd::decay_rows_forward(k, q, ld, a, K, c, rows, rows + c * K);
    simd::transpose(kd, K, ws.kt.data(), ws.ldkt, c, K);
    for (int i0 = 0; i0 < c; i0 += kSubChunk) {
      const int i1 = std::min(c, i0 + kSubChunk);
      kda_block_products(ws, K, i0, i1, i1, rows + i0 * K, rows + (c + i0) * K, gemm);
    }
  } else {
    for (int i0 = 0; i0 < c; i0 += kSubChunk) {
      const int i1 = std::min(c, i0 + kSubChunk), r = i1 - i0;
      simd::decay_rows_forward(k + i0 * ld, q + i0 * ld, ld, a + i0 * K, K, r, rows, rows + r * K);
      if (i0 > 0) simd::decay_rows_backward(k, ld, a, a + i0 * K, K, i0, kd);
      const bool whole = simd::decay_rows_inverse(k + i0 * ld, ld, a + i0 * K, K, r, kd + i0 * K) >=
                         kMinInverseDecay;
      const int n = whole ? i1 : i0;  // columns from the micro-kernel
      if (n > 0) {
        simd::transpose(kd, K, ws.kt.data(), ws.ldkt, n, K);
        kda_block_products(ws, K, i0, i1, n, rows, rows + r * K, gemm);
      }
      if (!whole) {
        simd::kda_diag_block(k + i0 * ld, q + i0 * ld, ld, a + i0 * K, K, r, L + i0 * C + i0,
                             Qm + i0 * C + i0, C);
      }
    }
  }
  simd::gate_lower(L, L, C, nullptr, ws.beta.data(), 1.0f, c, /*inclusive=*/false);
  simd::gate_lower(Qm, Qm, C, nullptr, nullptr, p.scale, c, /*inclusive=*/true);
}

}  // namespace

void decayed_kk_qk(const LaProblem& p, ChunkWorkspace& ws, GemmFn gemm, bool raw_ready) {
  if (p.kda()) {
    decayed_kk_qk_kda(p, ws, gemm);
  } else {
    if (!raw_ready) raw_kk_qk(p, ws, gemm);
    gate_kk_qk_gdn(p, ws);
  }
  // chunk_outputs multiplies whole diagonal blocks of Qm: clear their upper triangle.
  float* Qm = ws.kkqk.data() + static_cast<size_t>(ws.c) * ws.C;
  for (int i = 0; i < ws.c; ++i) {
    const int block_end = std::min(ws.c, (i / kSubChunk + 1) * kSubChunk);
    std::fill(Qm + i * ws.C + i + 1, Qm + i * ws.C + block_end, 0.0f);
  }
}

void state_products(const LaProblem& p, ChunkWorkspace& ws, const float* S, ptrdiff_t lds, int c0,
                    int c1, GemmFn gemm, int row_begin, int row_end) {
  const int c = ws.c, K = p.K, w = c1 - c0;
  float* out = ws.ksqs.data();
  if (p.kda()) {  // exp(Gam) is per channel: it scales the operand rows, not the result
    for (int i = row_begin; i < row_end; ++i) {
      const float* src = i < c ? ws.k + i * ws.ldqk : ws.q + (i - c) * ws.ldqk;
      simd::mul(ws.kq_gated.data() + i * K, src, ws.egam.data() + static_cast<size_t>(i % c) * K,
                K);
    }
    gemm(row_end - row_begin, w, K, simd::row_major(ws.kq_gated.data() + row_begin * K, K), S + c0,
         lds, out + static_cast<size_t>(row_begin) * w, w, 1.0f, 0.0f);
    return;
  }
  // GDN: exp(Gam) scales the result rows later; the key and query rows are read in place.
  if (row_begin < c) {
    const int end = std::min(row_end, c);
    gemm(end - row_begin, w, K, simd::row_major(ws.k + row_begin * ws.ldqk, ws.ldqk), S + c0, lds,
         out + static_cast<size_t>(row_begin) * w, w, 1.0f, 0.0f);
  }
  if (row_end > c) {
    const int begin = std::max(row_begin, c);
    gemm(row_end - begin, w, K, simd::row_major(ws.q + (begin - c) * ws.ldqk, ws.ldqk), S + c0, lds,
         out + static_cast<size_t>(begin) * w, w, 1.0f, 0.0f);
  }
}

void gemm_first_rhs(const LaProblem& p, ChunkWorkspace& ws, int w) {
  simd::beta_residual_rows(ws.vn.data(), ws.ldvn, ws.v, ws.ldv, ws.ksqs.data(), w,
                           p.kda() ? nullptr : ws.egam.data(), ws.beta.data(), ws.c, w);
}

void solve_unit_lower(const float* L, int ldl, int c, float* X, int ldx, int w, GemmFn gemm) {
  // Diagonal blocks: invert the 16 x 16 unit lower-triangular block (scalar, ~700 flops) and
  // apply it as one micro-kernel product instead of 120 row axpys.
  alignas(64) float inv[kSubChunk * kSubChunk];
  alignas(64) float rhs[kSubChunk * kLaMaxHeadDim];
  for (int b0 = 0; b0 < c; b0 += kSubChunk) {
    const int b1 = std::min(c, b0 + kSubChunk), n = b1 - b0;
    if (b0 > 0) {
      gemm(n, w, b0, simd::row_major(L + b0 * ldl, ldl), X, ldx, X + b0 * ldx, ldx, -1.0f, 1.0f);
    }
    simd::invert_unit_lower(L + b0 * ldl + b0, ldl, n, inv, kSubChunk);
    for (int i = 0; i < n; ++i) std::copy_n(X + (b0 + i) * ldx, w, rhs + i * w);
    gemm(n, w, n, simd::row_major(inv, kSubChunk), rhs, w, X + b0 * ldx, ldx, 1.0f, 0.0f);
  }
}

void explicit_inverse_and_wy_operands(const LaProblem& p, ChunkWorkspace& ws, float* A, float* kb,
                                      int w, GemmFn gemm) {
  const int c = ws.c, C = ws.C, K = p.K;
  std::fill_n(A, static_cast<size_t>(c) * C, 0.0f);
  for (int i = 0; i < c; ++i) A[i * C + i] = 1.0f;
  solve_unit_lower(ws.kkqk.data(), C, c, A, C, c, gemm);  // against the identity
  if (p.kda()) {
    for (int i = 0; i < c; ++i)
      simd::mul(kb + i * K, ws.k + i * ws.ldqk, ws.egam.data() + i * K, K);
    simd::scale_rows(kb, K, kb, K, ws.beta.data(), 1.0f, c, K);
  } else {
    for (int i = 0; i < c; ++i) {
      simd::scale_copy(kb + i * K, ws.k + i * ws.ldqk, ws.beta[i] * ws.egam[i], K);
    }
  }
  simd::scale_rows(ws.out.data(), w, ws.v, ws.ldv, ws.beta.data(), 1.0f, c, w);
}

void chunk_outputs(const LaProblem& p, ChunkWorkspace& ws, int w, GemmFn gemm) {
  const int c = ws.c, C = ws.C;
  const float* qs = ws.ksqs.data() + static_cast<size_t>(c) * w;
  const float* Qm = ws.kkqk.data() + static_cast<size_t>(c) * C;
  for (int i0 = 0; i0 < c; i0 += kSubChunk) {  // lower row blocks: row i needs Vn rows <= i
    const int i1 = std::min(c, i0 + kSubChunk);
    // Scaled Q S rows of this block, still in L1 when the product accumulates onto them.
    simd::scale_rows(ws.o + i0 * ws.ldo, ws.ldo, qs + static_cast<size_t>(i0) * w, w,
                     p.kda() ? nullptr : ws.egam.data() + i0, p.scale, i1 - i0, w);
    gemm(i1 - i0, w, i1, simd::row_major(Qm + i0 * C, C), ws.vn.data(), ws.ldvn, ws.o + i0 * ws.ldo,
         ws.ldo, 1.0f, 1.0f);
  }
}

void update_state(const LaProblem& p, ChunkWorkspace& ws, float* S, ptrdiff_t lds, int c0, int c1,
                  const float* vn, int ldvn, GemmFn gemm) {
  const int c = ws.c, K = p.K, w = c1 - c0;
  const float* k = ws.k;
  const ptrdiff_t ld = ws.ldqk;
  if (p.kda()) {  // per-channel decay: rows of S scaled before the product
    const float* elast = ws.egam.data() + static_cast<size_t>(c - 1) * K;  // exp(Gam_last)
    simd::scale_rows(S + c0, lds, S + c0, lds, elast, 1.0f, K, w);
    for (int i = 0; i < c; ++i)
      simd::mul(ws.kd.data() + i * K, k + i * ld, ws.etail.data() + i * K, K);
    gemm(K, w, c, simd::transposed(ws.kd.data(), K), vn, ldvn, S + c0, lds, 1.0f, 1.0f);
  } else {
    const float glast = ws.gam[c - 1];
    float* tail = ws.tmp.data();  // exp(Gam_last - Gam_i) <= 1
    for (int i = 0; i < c; ++i) tail[i] = glast - ws.gam[i];
    simd::exp_inplace(tail, c);
    simd::scale_rows(ws.kd.data(), K, k, ld, tail, 1.0f, c, K);
    // GDN's decay is one scalar per chunk: folded into the product's store (C scale).
    gemm(K, w, c, simd::transposed(ws.kd.data(), K), vn, ldvn, S + c0, lds, 1.0f, std::exp(glast));
  }
}

void store_chunk_out(const LaProblem& p, int64_t t0, int hv, int c0, int c1,
                     const ChunkWorkspace& ws) {
  if (p.dtype == DType::kF32) return;  // written in place
  const int w = c1 - c0;
  for (int i = 0; i < ws.c; ++i) {
    char* dst = static_cast<char*>(p.o) + (p.v_offset(t0 + i, hv) + c0) * dtype_size(p.dtype);
    simd::store_f32(dst, p.dtype, ws.out.data() + i * w, w);
  }
}

}  // namespace hanpu::cpu
