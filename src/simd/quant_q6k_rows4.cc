// Q6_K rows repacked four to a group (see quant_q6k_rows4.h); the product is in
// quant_dot_vnni.cc, beside the Q6_K unit product it shares with the blocks' kernel.
#include "simd/quant_q6k_rows4.h"

#include <cstring>

namespace hanpu::simd {

void q6k_group_rows(const uint8_t* const* rows, int in, uint8_t* dst) {
  constexpr size_t kBlockBytes = kQ6kGroupUnitBytes / kQ6kGroupRows;
  const int units = in / kQuantUnit;
  for (int u = 0; u < units; ++u) {
    for (int r = 0; r < kQ6kGroupRows; ++r) {
      std::memcpy(dst + (static_cast<size_t>(u) * kQ6kGroupRows + r) * kBlockBytes,
                  rows[r] + static_cast<size_t>(u) * kBlockBytes, kBlockBytes);
    }
  }
}

}  // namespace hanpu::simd
