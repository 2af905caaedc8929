// The six chunk operators of chunkwise LA (docs/la-spec.md) on one core's workspace, shared by
// the fused hanpu kernel and the FLA-style baseline so both compute exactly the same math.
//
// Layout plan on a CPU core (HA-NPU §6 with cores as AI cores):
//   row-major ("dense", for the vector unit): the chunk's k/q rows, v, gates, Vn, O — every
//     element-wise op (L2 norm, gating, masks, beta) runs on rows; fp32 q/k/v/o are used in
//     place as strided rows of the caller's [T, H, K] tensors (no copy), other dtypes are
//     converted once into the workspace;
//   packed for the FMA micro-kernel: B operands are row-major along N by construction
//     (S is [K x V]); the one transform kept is K^T [K x c], made once per chunk and
//     shared by the K K^T and Q K^T products (the GEMM-first group); K^T Vn reads K in place
//     as a transposed A operand, so the state update needs no transform at all.
//   Without the plan (gemm_mode kRepacking) every product re-packs its operands, as a
//   library GEMM call would.
#pragma once

#include "base/scratch.h"
#include "cpu/la/la_problem.h"
#include "simd/gemm.h"

namespace hanpu::cpu {

enum class GemmMode { kPlanned, kRepacking };

// Per-core scratch for one chunk, sized for chunk C, dims K and V.
struct ChunkWorkspace {
  ChunkWorkspace(int C, int K, int V, ScratchMeter* meter);
  int C, K, V;
  ScratchBuffer<float> kq;        // [2C x K]: rows [0,c) = k, rows [c,2c) = q
  ScratchBuffer<float> kq_gated;  // KDA: [2C x K] the same rows times exp(Gam) per channel
  ScratchBuffer<float> kt;        // [K x C] K^T, leading dim ldkt
  ScratchBuffer<float> gam;       // GDN [C]: inclusive in-chunk cumsum of g
  ScratchBuffer<float> egam;      // GDN [C]: exp(Gam); KDA [C x K]: exp(Gam) per channel
  ScratchBuffer<float> beta;      // [C]
  ScratchBuffer<float> raw;       // GDN [2C x C]: K K^T then Q K^T lower blocks, not yet gated
  ScratchBuffer<float> kkqk;      // [2C x C]: rows [0,c) = L (strict lower), [c,2c) = Qm (lower)
  ScratchBuffer<float> ksqs;      // [2C x V]: K S0 (gated) rows then Q S0 (gated) rows
  ScratchBuffer<float> vrow;      // [C x V]: v of the chunk, fp32
  ScratchBuffer<float> vn;        // [C x V]: right-hand side, then Vn in place (leading dim ldvn)
  ScratchBuffer<float> out;       // [C x V]: O
  ScratchBuffer<float> kd;        // [C x K]: K scaled by exp(Gam_last - Gam)
  ScratchBuffer<float> tmp;       // [2C x K] scratch for the KDA sub-chunk factors
  ScratchBuffer<float> decay;     // KDA [C x K]: a = exp(g) per token and channel
  ScratchBuffer<float> etail;     // KDA [C x K]: exp(Gam_last - Gam_i) per channel
  // KDA computes every decay factor as a running product of a = exp(g) in (0, 1] — one exp
  // per (token, channel) and a multiply per use — instead of an exp of a cumsum difference.
  int c = 0;  // rows of the current chunk
  // B operands of the micro-kernel get rows padded by one cache line: a power-of-two pitch
  // (256 B for K^T at C = 64, 512 B for Vn at V = 128) maps a B panel onto a few L1 sets.
  int ldkt = 0;
  int ldvn = 0;
  // Where this chunk's rows are read from and its output written to: in place in the
  // caller's fp32 tensors (strided rows, no copy — the micro-kernel and the vector ops take a
  // leading dimension), or the buffers above when a dtype conversion or the L2 norm has to
  // write them (then out is converted by store_chunk_out).
  const float* k = nullptr;
  const float* q = nullptr;
  ptrdiff_t ldqk = 0;
  const float* v = nullptr;
  ptrdiff_t ldv = 0;
  float* o = nullptr;
  ptrdiff_t ldo = 0;
};

using GemmFn = void (*)(int, int, int, simd::MatA, const float*, ptrdiff_t, float*, ptrdiff_t,
                        float, float);
GemmFn gemm_for(GemmMode mode);

// Rows [t0, t0 + c) of the q/k head that value head hv reads (L2-normalised if asked).
void load_chunk_rows(const LaProblem& p, int64_t t0, int c, int hv, ChunkWorkspace& ws);
// Gates and beta of value head hv for the chunk whose rows are loaded.
void load_chunk_gates(const LaProblem& p, int64_t t0, int hv, ChunkWorkspace& ws);
// Both of the above.
void load_chunk(const LaProblem& p, int64_t t0, int c, int hv, ChunkWorkspace& ws);
// Binds the chunk's v rows (columns [c0, c1)) and its output rows: in place for fp32
// storage, else v converted into ws.vrow and o staged in ws.out (leading dim c1 - c0).
void bind_chunk_v_and_out(const LaProblem& p, int64_t t0, int hv, int c0, int c1,
                          ChunkWorkspace& ws);

// GDN: K K^T and Q K^T (lower blocks, ungated) into ws.raw. They depend only on the q/k
// head, so every value head of a GVA group can gate the same raw products.
void raw_kk_qk(const LaProblem& p, ChunkWorkspace& ws, GemmFn gemm);

// L = StrictTril(diag(beta) (K K^T o D)) and Qm = scale Tril(Q K^T o D) into ws.kkqk for the
// value head whose gates are loaded. GDN gates ws.raw (computed here unless raw_ready);
// KDA's decay sits inside the sums, so it always computes its own products.
void decayed_kk_qk(const LaProblem& p, ChunkWorkspace& ws, GemmFn gemm, bool raw_ready = false);

// ksqs rows [row_begin, row_end) of [K; Q] S0 (rows [0,c) keys, [c,2c) queries) for state
// columns [c0, c1) of S (leading dim lds). GDN applies exp(Gam) to the result later; KDA's is
// per channel, so it scales the operand rows here.
void state_products(const LaProblem& p, ChunkWorkspace& ws, const float* S, ptrdiff_t lds, int c0,
                    int c1, GemmFn gemm, int row_begin, int row_end);

// vn = diag(beta) (V - [exp(Gam)] K S0)  (w = c1 - c0 columns)
void gemm_first_rhs(const LaProblem& p, ChunkWorkspace& ws, int w);

// X <- (I + L)^-1 X in place for X [c x w] (leading dim ldx): blocked forward substitution,
// off-diagonal blocks and the inverted 16 x 16 diagonal blocks on the micro-kernel.
void solve_unit_lower(const float* L, int ldl, int c, float* X, int ldx, int w, GemmFn gemm);

// FLA's operator order (baseline and ablation only): A = (I + L)^-1 explicitly into A
// [c x C], kb = diag(beta exp(Gam)) K [c x K] and diag(beta) V into ws.out (leading dim w),
// the operands of W = A kb and U = A diag(beta) V.
void explicit_inverse_and_wy_operands(const LaProblem& p, ChunkWorkspace& ws, float* A, float* kb,
                                      int w, GemmFn gemm);

// ws.o = scale exp(Gam) Q S0 + Qm Vn   (w columns)
void chunk_outputs(const LaProblem& p, ChunkWorkspace& ws, int w, GemmFn gemm);

// S[:, c0:c1] <- diag(exp(Gam_last)) S + (exp(Gam_last - Gam) o K)^T Vn, in place.
void update_state(const LaProblem& p, ChunkWorkspace& ws, float* S, ptrdiff_t lds, int c0, int c1,
                  const float* vn, int ldvn, GemmFn gemm);

// Converts the staged output (columns [c0, c1)) into o rows [t0, t0 + c) of head hv when the
// storage dtype is not fp32 (fp32 outputs were written in place).
void store_chunk_out(const LaProblem& p, int64_t t0, int hv, int c0, int c1,
                     const ChunkWorkspace& ws);

}  // namespace hanpu::cpu
