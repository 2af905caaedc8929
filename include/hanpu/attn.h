// Fused softmax attention (the full-attention layers of a hybrid model) on CPU cores.
// Semantics are FlashAttention's: softmax(scale Q K^T + mask) V per head, grouped-query.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hanpu/status.h"
#include "hanpu/tensor.h"

namespace hanpu {

enum class AttnMask : uint8_t {
  kNone,     // every query sees every key
  kCausal,   // query i (at position q_offset + i) sees keys j <= q_offset + i
  kSliding,  // causal, and only the last `window` keys: q_offset + i - window < j
};
std::string_view attn_mask_name(AttnMask m);  // "none", "causal", "sliding"
std::optional<AttnMask> parse_attn_mask(std::string_view name);

// D: a multiple of 16 up to this. 576 is MLA's absorbed decode (a 512-dim latent and a
// 64-dim rope key per token, Kimi Linear and DeepSeek's shapes), the widest row a model runs.
inline constexpr int kAttnMaxHeadDim = 576;

// One attention call over one sequence.
//   q: [T, Hq, D]   k: [Tk, Hkv, D]   v: [Tk, Hkv, Dv]   o: [T, Hq, Dv]
//   D and Dv each a multiple of 16 up to kAttnMaxHeadDim. Dv != D (MLA's keys of nope + rope
//   dims against values of their own) takes contiguous k and v (strides 0) and fp32 products.
//   storage f32/f16/bf16: q and o share
//   one dtype, k and v share one (a 16-bit KV cache under fp32 queries is the usual case);
//   compute is fp32 (16-bit keys and values widened tile by tile), except where a prefill
//   takes bf16 products (AttnProducts below).
//   Hq % Hkv == 0: query head h reads key/value head h / (Hq / Hkv).
//   lse (optional out): [Hq, T] fp32, the natural-log sum of exp(scale q.k) over the keys a
//   row sees (FlashAttention's softmax_lse layout), to merge attention computed in splits.
// Query row i sits at key position q_offset + i. For the causal and sliding masks q_offset
// defaults to Tk - T (the queries are the last T keys: a prefill that continues a cache) and
// must satisfy 0 <= q_offset and q_offset + T <= Tk, so every row sees at least one key.
struct AttnArgs {
  TensorView q, k, v;
  // Where k's and v's rows are, in elements of their dtype (both alike): key j of kv head hk
  // starts at element j kv_row_stride + hk kv_head_stride. 0 (the default) is [Tk, Hkv, D]
  // contiguous: kv_row_stride Hkv x D, kv_head_stride D. A KvCache keeps each head's rows
  // contiguous (kv_row_stride D, kv_head_stride its capacity x D), so decode reads a head's
  // keys in address order. Rows must not overlap (an error names the strides).
  int64_t kv_row_stride = 0, kv_head_stride = 0;
  MutTensorView o;
  MutTensorView lse;
  AttnMask mask = AttnMask::kCausal;
  std::optional<int64_t> q_offset;
  int64_t window = 0;          // kSliding: keys per row, >= 1
  std::optional<float> scale;  // default D^-1/2; must be finite
};

// Tile sizes of the fused kernel; 0 = from attn_tile_plan(), else 1..kAttnMaxTileRows.
inline constexpr int kAttnMaxTileRows = 512;
struct AttnTiles {
  int q_rows = 0;   // query rows per tile (per head)
  int kv_rows = 0;  // key/value rows per tile
};

// How a fused prefill multiplies. kBf16: both products on the bf16 dot instruction
// (AVX512-BF16: twice an fp32 FMA's multiply-adds per instruction): q (times the scale),
// k, v and the probabilities P rounded to bf16 (nearest even), products exact, sums and the
// softmax fp32, as FlashAttention computes with bf16 inputs. kF32: fp32 throughout. kAuto:
// kBf16 where the keys and values are stored in bf16 (nothing of them is rounded then) and
// the CPU has the instruction (not with HANPU_BF16_DOT=0), else kF32. Decode (attn_decode)
// and the "layer" placement are always fp32; asking kBf16 where it cannot run is an error.
enum class AttnProducts : uint8_t { kAuto, kF32, kBf16 };
std::string_view attn_products_name(AttnProducts p);  // "auto", "f32", "bf16"
// What kAuto picks for keys and values stored in kv_dtype on this machine (in a fused
// placement with even key tiles, as the heuristic's are): whether they are bf16 products.
// HANPU_ATTN_PRODUCTS=f32 makes it fp32.
bool attn_auto_bf16_products(DType kv_dtype);
// Whether bf16 products can run here at all (the CPU has the bf16 dot instruction).
bool attn_bf16_products_usable();
std::optional<AttnProducts> parse_attn_products(std::string_view name);

struct AttnOptions {
  std::string placement = "balanced";  // see attn_placements()
  int threads = 0;                     // 0: HANPU_THREADS or every core
  AttnTiles tiles;                     // 0: the heuristic's choice
  AttnProducts products = AttnProducts::kAuto;
};

struct AttnStats {
  int64_t extra_bytes = 0;             // peak scratch memory beyond inputs and outputs
  std::vector<double> worker_busy_ms;  // per worker
  AttnTiles tiles;                     // the tiles the run used
  bool bf16_products = false;          // the products ran on the bf16 dot instruction
};

struct AttnPlacementInfo {
  std::string_view name;
  std::string_view summary;
};
std::span<const AttnPlacementInfo> attn_placements();

// Prefill (any T). Validates first: on error nothing has been written. T = 0 is a no-op.
Status attn_prefill(const AttnArgs& args, const AttnOptions& options = {},
                    AttnStats* stats = nullptr);

// Decode: a few query rows (T small) against a long key/value sequence, split along the keys
// over the cores (each core a slice of the cache, merged by log-sum-exp), so one sequence
// still uses every core. Same arguments and masks as attn_prefill.
Status attn_decode(const AttnArgs& args, int threads = 0, AttnStats* stats = nullptr);

// Merges attention computed over two disjoint splits of the keys, exactly (FlashAttention's
// split merge): (o, lse) <- the attention over both, from (o, lse) and (o2, lse2), each the
// output [T, Hq, D] and lse [Hq, T] (natural log) of one split, fp32. An lse of -inf (a row
// that saw no key there) weighs nothing.
void attn_merge_splits(int64_t T, int Hq, int D, float* o, float* lse, const float* o2,
                       const float* lse2);

// The tile sizes the fused kernel picks: a pure function of the head dim, the GQA group
// (query heads per kv head) and the per-core cache sizes in bytes (see attn_tiles.cc).
AttnTiles attn_tile_plan(int D, int group, int64_t l1_bytes, int64_t l2_bytes);
// This machine's per-core L1d and L2 sizes (sysconf, with defaults when unknown).
int64_t machine_l1d_bytes();
int64_t machine_l2_bytes();

// Query-key pairs a mask leaves visible (the useful work: FLOPs = 4 D Hq pairs).
int64_t attn_visible_pairs(int64_t T, int64_t Tk, AttnMask mask, int64_t q_offset, int64_t window);
double attn_flops(int64_t T, int64_t Tk, int Hq, int D, AttnMask mask, int64_t q_offset,
                  int64_t window);

}  // namespace hanpu
