// The pairs-layout packer puts every bf16 value where simd/amx.h's layout says: value k of row
// c at block k / 32, half c / 16, pair row (k % 32) / 2, column c % 16, element k % 2; random
// rows, a leading dimension longer than the rows, and a poisoned destination.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "simd/amx.h"
#include "simd/pairs_pack.h"

namespace hanpu::simd {
namespace {

TEST(PairsPack, EveryValueLandsWhereTheLayoutSays) {
  std::mt19937 rng(std::random_device{}());
  for (int kt : {1, 3, 32}) {
    const int64_t ld = int64_t{kt} * kPairBlockDepth + 48;
    std::vector<uint16_t> rows(static_cast<size_t>(kPairStripCols * ld));
    for (uint16_t& v : rows) v = static_cast<uint16_t>(rng());
    std::vector<uint16_t> strip(static_cast<size_t>(kt) * kPairBlockElems + 1, 0xdead);
    pack_strip_bf16(rows.data(), ld, kt, strip.data());
    ASSERT_EQ(strip.back(), 0xdead) << "wrote past the strip";
    for (int c = 0; c < kPairStripCols; ++c) {
      for (int k = 0; k < kt * kPairBlockDepth; ++k) {
        const int64_t at =
            int64_t{k / kPairBlockDepth} * kPairBlockElems + (c / kPairHalfCols) * kPairHalfElems +
            (k % kPairBlockDepth / 2) * 2 * kPairHalfCols + (c % kPairHalfCols) * 2 + k % 2;
        ASSERT_EQ(strip[static_cast<size_t>(at)], rows[static_cast<size_t>(c * ld + k)])
            << "kt " << kt << " row " << c << " value " << k;
      }
    }
  }
}

}  // namespace
}  // namespace hanpu::simd
