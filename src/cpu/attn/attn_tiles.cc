// Tile-size heuristic, cache sizes, masks' useful work: small pure functions the kernels,
// the bench and the tests share.
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "cpu/attn/attn_problem.h"

namespace hanpu {

std::string_view attn_mask_name(AttnMask m) {
  switch (m) {
    case AttnMask::kNone:
      return "none";
    case AttnMask::kCausal:
      return "causal";
    case AttnMask::kSliding:
      return "sliding";
  }
  return "?";
}

std::optional<AttnMask> parse_attn_mask(std::string_view name) {
  for (AttnMask m : {AttnMask::kNone, AttnMask::kCausal, AttnMask::kSliding}) {
    if (attn_mask_name(m) == name) return m;
  }
  return std::nullopt;
}

std::string_view attn_products_name(AttnProducts p) {
  switch (p) {
    case AttnProducts::kAuto:
      return "auto";
    case AttnProducts::kF32:
      return "f32";
    case AttnProducts::kBf16:
      return "bf16";
  }
  return "?";
}

std::optional<AttnProducts> parse_attn_products(std::string_view name) {
  for (AttnProducts p : {AttnProducts::kAuto, AttnProducts::kF32, AttnProducts::kBf16}) {
    if (attn_products_name(p) == name) return p;
  }
  return std::nullopt;
}

int64_t machine_l1d_bytes() {
  const long v = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  return v > 0 ? v : 32 * 1024;
}

int64_t machine_l2_bytes() {
  const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return v > 0 ? v : 1024 * 1024;
}

// One unit of the fused kernel is a query tile of q_rows rows for all `group` query heads of
// a kv head: N = group * q_rows score columns. Its working set is Q^T [D x N] and the output
// rows [N x D] (reused across every key tile) plus one key and one value tile [kv x D] and
// the score tile [kv x N].
//   - N = 64 for D <= 128, 128 for larger D. A key tile feeds N query columns (N / 2 FLOPs
//     per byte of K/V moved: ample for L2 and DRAM) and Q^T stays within 32 KiB, next to the
//     key rows it is multiplied with in L1; at D = 256 a K/V tile is 64 KiB and the larger
//     N amortises it. Measured (docs/performance.md, "Design measurements"): with 32 heads of
//     64, N = 64 was ahead of 128 and 256; with 8/2 heads of 256 there was no reliable
//     difference. Smaller tiles also waste
//     less on the causal diagonal and give the balanced placement more units. At least 16
//     rows per head.
//   - Q^T + O (2 N D floats) must fit half of L2, with the streamed K/V tiles beside them:
//     q_rows halves until it does.
//   - kv_rows = 64: the O rescale between key tiles costs 1/(2 kv_rows) of the product
//     FLOPs (folded into the P V product's store, see attn_tile_kernel.cc), and the
//     online-softmax pass over a [64 x N] score tile is one L1-sized sweep.
AttnTiles attn_tile_plan(int D, int group, int64_t l1_bytes, int64_t l2_bytes) {
  (void)l1_bytes;
  group = std::max(group, 1);
  const int columns = D <= 128 ? 64 : 128;
  int q_rows = std::max(16, columns / group);
  while (q_rows > 16 && 2LL * group * q_rows * D * 4 > l2_bytes / 2) q_rows /= 2;
  return AttnTiles{q_rows, 64};
}

int64_t attn_visible_pairs(int64_t T, int64_t Tk, AttnMask mask, int64_t q_offset, int64_t window) {
  if (mask == AttnMask::kNone) return T * Tk;
  int64_t pairs = 0;
  for (int64_t i = 0; i < T; ++i) {
    const int64_t end = std::min(Tk, q_offset + i + 1);
    const int64_t begin =
        mask == AttnMask::kSliding ? std::max<int64_t>(0, q_offset + i - window + 1) : 0;
    pairs += std::max<int64_t>(0, end - begin);
  }
  return pairs;
}

double attn_flops(int64_t T, int64_t Tk, int Hq, int D, AttnMask mask, int64_t q_offset,
                  int64_t window) {
  return 4.0 * D * Hq * static_cast<double>(attn_visible_pairs(T, Tk, mask, q_offset, window));
}

}  // namespace hanpu
