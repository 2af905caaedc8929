// The fused attention unit every placement and decode runs: one query tile of all the query
// heads of a kv head against a range of keys, FlashAttention-2's loop as STEEL stages it:
//   stage 1  S^T = K_j (c Q)^T on the micro-kernel, c = scale log2(e) folded into Q once;
//            the mask made from coordinates, only on tiles the mask cuts;
//   stage 2  running column max, exp2 and column sums (online softmax, simd/softmax_ops);
//   stage 3  O = diag(alpha) O + P V on the micro-kernel, the rescale folded into its store.
// Scores are kept transposed (keys x queries) so the per-query statistics are SIMD lanes and
// P is read as the micro-kernel's k-major "packed A" without a copy. No T x Tk matrix exists:
// a unit holds Q^T [D x N], one score tile [kv x N] and its N output rows (N = group x rows).
// Units of at most 16 query columns (decode: 1 token x a few heads, or MLA's 16) keep the
// scores row-major instead (dot products along D), reading K and V in place.
// K and V are read as contiguous rows: in place in a token-major layout, consecutive keys of
// one head sit Hkv x D floats apart (8 KiB for 32 heads of 64), every row in the same L1 set,
// and the tiles the micro-kernel re-reads per register tile would evict each other. Prefill
// packs each head's rows once per core (attn_fused.cc); otherwise a unit copies each key tile
// (1/(2N) of its FLOPs). For the same reason the output rows accumulate in a dense [N x D] block
// and are written to o once, normalised, at the end. With bf16 products
// (AttnRunContext::bf16_products, a bf16 KV cache on a CPU with the bf16 dot instruction) both
// products run on it instead (attn_tile_pairs.cc, simd/attn_bf16_dot.h): the key and value tiles as
// bf16 pairs (packed once per head and core, like the fp32 rows), c Q and P rounded to bf16, the
// rest unchanged.
#pragma once

#include <cstdint>

#include "cpu/attn/attn_problem.h"

namespace hanpu::cpu {

struct AttnWorkspace {
  // bf16_products: also the pair buffers of the dot path (needs an even tiles.kv_rows).
  AttnWorkspace(const AttnProblem& p, AttnTiles tiles, ScratchMeter* meter,
                bool bf16_products = false);
  int q_rows, kv_rows;
  ptrdiff_t ldq;            // leading dim of qt and s: group * q_rows, padded
  ScratchBuffer<float> qt;  // [D x ldq] scaled Q^T, column g * r + i (empty with bf16 products)
  ScratchBuffer<float> s;   // [kv_rows x ldq] scores, then probabilities
  ScratchBuffer<float> m, l, aux;  // [ldq] running max (log2), sum, rescale factors
  ScratchBuffer<float> kv;         // [kv_rows x (D + Dv)] the current K and V tiles, packed
  ScratchBuffer<float> o;          // [group x q_rows x Dv] output accumulators, row g * r + i
  // The dot path's operands (simd/attn_bf16_dot.h layouts), empty without bf16_products:
  bool bf16_products;
  ScratchBuffer<uint32_t> qt_pairs;  // [D / 2 x ldq] pairs of c Q^T
  ScratchBuffer<uint32_t> p_pairs;   // [kv_rows / 2 x ldq] pairs of P^T's rows (keys)
  ScratchBuffer<uint32_t> kv_pairs;  // one key tile and one value tile (kv_pair_tile_words each)
  ScratchBuffer<uint32_t> v_last;    // [D] a value pair row whose second key is not in the tile
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
// `dtype`. In place (ld = the call's kv_row_stride: Hkv x D token-major, D in a KvCache,
// the storage dtype) or packed contiguous fp32 by the caller (fp32 with ld = D: no per-tile
// copy needed).
struct KvRows {
  const void* k;
  const void* v;
  ptrdiff_t ld;
  DType dtype = DType::kF32;
  ptrdiff_t v_ld = 0;  // the values' row stride; 0: ld (values of the keys' head dim)
  ptrdiff_t v_stride() const { return v_ld != 0 ? v_ld : ld; }
  // fp32 rows of D (keys) and Dv (values) floats, which the micro-kernel reads as they are.
  bool dense_f32(int D, int Dv) const {
    return dtype == DType::kF32 && ld == D && v_stride() == Dv;
  }
  const float* k_f32() const { return static_cast<const float*>(k); }
  // Row j of the keys / values, in the storage dtype.
  const void* k_row(int64_t j) const {
    return static_cast<const char*>(k) + j * ld * dtype_size(dtype);
  }
  const void* v_row(int64_t j) const {
    return static_cast<const char*>(v) + j * v_stride() * dtype_size(dtype);
  }
  const float* v_f32() const { return static_cast<const float*>(v); }
};
KvRows kv_rows_in_place(const AttnProblem& p, int hk);
// Rows [j0, j0 + n) of kv into contiguous rows of D (k_out) and Dv (v_out) floats, widened
// from 16-bit storage on the way.
void copy_kv_rows(const KvRows& kv, int64_t j0, int64_t n, int D, int Dv, float* k_out,
                  float* v_out);

// One kv head's keys [0, keys) as the dot path's tiles of kv_rows keys (kv_rows even): tile t
// at k + t kv_pair_tile_words (K's rows k-major pairs, [D / 2 x kv_rows]) and v + t
// kv_pair_tile_words (V's pairs of rows, [kv_rows / 2 x D]); a last partial tile's missing
// key rows are zero in V, never read in K.
struct KvPairTiles {
  const uint32_t* k = nullptr;
  const uint32_t* v = nullptr;
  int64_t keys = 0;
};
int64_t kv_pair_tile_words(int D, int kv_rows);
// Packs keys [0, keys) of kv into k_out and v_out (ceil(keys / kv_rows) tiles each), widened
// and rounded through ws.kv.
void pack_kv_pair_tiles(const KvRows& kv, int64_t keys, int D, AttnWorkspace& ws, uint32_t* k_out,
                        uint32_t* v_out);

// Query rows [t0, t0 + r) (r <= ws.q_rows) of kv head hk's query heads against the keys in
// [key_lo, key_hi) that the mask leaves visible. Writes the normalised output rows and lse
// (natural log). Rows that see no key in the range get output 0 and lse -inf (decode splits).
// On a workspace with bf16 products every unit takes the dot path (the narrow ones at the
// edges of a prefill too, so all rows are rounded alike), reading its key tiles from `packed`
// where it holds them (else packing each tile).
void attend_query_tile(const AttnProblem& p, AttnWorkspace& ws, int hk, const KvRows& kv,
                       int64_t t0, int r, int64_t key_lo, int64_t key_hi, const TileOut& out,
                       const KvPairTiles* packed = nullptr);

// The dot path's key loop (attn_tile_pairs.cc): as the fp32 column loop. Its key tiles start
// at multiples of ws.kv_rows, so the caller's key_lo must be one (the fused prefill's is 0).
// Leaves the running output in ws.o and m, l in ws.m, ws.l; returns whether any key tile ran.
bool key_loop_pairs(const AttnProblem& p, AttnWorkspace& ws, int hk, const KvRows& kv,
                    const KvPairTiles* packed, int64_t t0, int r, int64_t lo, int64_t hi);
// -inf on the scores of keys [kb, kb + kr) that query rows t0 + i do not see (in ws.s).
void mask_scores(const AttnProblem& p, AttnWorkspace& ws, int64_t t0, int r, int64_t kb, int kr);

}  // namespace hanpu::cpu
