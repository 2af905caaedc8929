// The fused attention unit every placement and decode runs: one query tile of all the query
// heads of a kv head against a range of keys, FlashAttention-2's loop as STEEL stages it:
//   stage 1  S^T = K_j (c Q)^T on the micro-kernel, c = scale log2(e) folded into Q once;
//            the mask made from coordinates, only on tiles the mask cuts;
//   stage 2  running column max, exp2 and column sums (online softmax, simd/softmax_ops);
//   stage 3  O = diag(alpha) O + P V on the micro-kernel, the rescale folded into its store.
// Scores are kept transposed (keys x queries) so the per-query statistics are SIMD lanes and
// P is read as the micro-kernel's k-major "packed A" without a copy. No T x Tk matrix exists:
// a unit holds Q^T [D x N], one score tile [kv x N] and its N output rows (N = group x rows).
// Units with fewer query columns than a SIMD vector (decode: 1 token x a few heads) keep the
// scores row-major instead (dot products along D), reading K and V in place.
// K and V are read as contiguous rows: in place, consecutive keys of one head sit Hkv x D
// floats apart (8 KiB for 32 heads of 64), every row in the same L1 set, and the tiles the
// micro-kernel re-reads per register tile would evict each other. Prefill packs each head's
// rows once per core (attn_fused.cc); otherwise a unit copies each key tile (1/(2N) of its
// FLOPs). For the same reason the output rows accumulate in a dense [N x D] block and are
// written to o once, normalised, at the end.
#pragma once

#include <cstdint>

#include "cpu/attn/attn_problem.h"

namespace hanpu::cpu {

struct AttnWorkspace {
  AttnWorkspace(const AttnProblem& p, AttnTiles tiles, ScratchMeter* meter);
  int q_rows, kv_rows;
  ptrdiff_t ldq;                   // leading dim of qt and s: group * q_rows, padded
  ScratchBuffer<float> qt;         // [D x ldq] scaled Q^T, column g * r + i
  ScratchBuffer<float> s;          // [kv_rows x ldq] scores, then probabilities
  ScratchBuffer<float> m, l, aux;  // [ldq] running max (log2), sum, rescale factors
  ScratchBuffer<float> kv;         // [2 x kv_rows x D] the current K and V tiles, packed
  ScratchBuffer<float> o;          // [group x q_rows x D] output accumulators, row g * r + i
};

// Where a unit's outputs go: row i of the g-th query head of the group at
// o + g * head_stride + i * row_stride; its lse at lse[g * lse_head_stride + i] (lse may be null).
struct TileOut {
  float* o;
  ptrdiff_t row_stride;
  ptrdiff_t head_stride;
  float* lse;
  ptrdiff_t lse_head_stride;
};

// Where kv head hk's key and value rows are: row j at element j * ld of k (v likewise), in
// `dtype`. In place (ld = Hkv x D, the storage dtype) or packed contiguous fp32 by the
// caller (ld = D: no per-tile copy needed).
struct KvRows {
  const void* k;
  const void* v;
  ptrdiff_t ld;
  DType dtype = DType::kF32;
  // fp32 rows of D floats, which the micro-kernel reads as they are.
  bool dense_f32(int D) const { return dtype == DType::kF32 && ld == D; }
  const float* k_f32() const { return static_cast<const float*>(k); }
  // Row j of the keys / values, in the storage dtype.
  const void* k_row(int64_t j) const { return static_cast<const char*>(k) + j * ld * dtype_size(dtype); }
  const void* v_row(int64_t j) const { return static_cast<const char*>(v) + j * ld * dtype_size(dtype); }
  const float* v_f32() const { return static_cast<const float*>(v); }
};
KvRows kv_rows_in_place(const AttnProblem& p, int hk);
// Rows [j0, j0 + n) of kv into contiguous rows of D floats (k_out, v_out), widened from
// 16-bit storage on the way.
void copy_kv_rows(const KvRows& kv, int64_t j0, int64_t n, int D, float* k_out, float* v_out);

// Query rows [t0, t0 + r) (r <= ws.q_rows) of kv head hk's query heads against the keys in
// [key_lo, key_hi) that the mask leaves visible. Writes the normalised output rows and lse
// (natural log). Rows that see no key in the range get output 0 and lse -inf (decode splits).
void attend_query_tile(const AttnProblem& p, AttnWorkspace& ws, int hk, const KvRows& kv, int64_t t0,
                       int r, int64_t key_lo, int64_t key_hi, const TileOut& out);

}  // namespace hanpu::cpu
