// The machine probes compute what they claim: the streaming reads (plain and prefetched) sum
// every element once (lengths that leave a remainder after the streams' whole vectors
// included), and the FMA loop counts its operations.
#include <gtest/gtest.h>

#include <vector>

#include "simd/fma_peak.h"

namespace hanpu::simd {
namespace {

TEST(ReadStreams, SumsEveryElementOnce) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{129},
                   size_t{1000}, size_t{4099}}) {
    // Small integers: every partial sum is exact in fp32, so any element missed or read twice
    // shows.
    std::vector<float> x(n);
    double want = 0;
    for (size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 13) + 1.0f;
      want += x[i];
    }
    EXPECT_EQ(read_streams(x.data(), n), static_cast<float>(want)) << "n=" << n;
    EXPECT_EQ(read_streams_prefetched(x.data(), n), static_cast<float>(want)) << "n=" << n;
  }
}

TEST(FmaLoop, CountsTwoFlopsPerFmaLane) {
  const double one = fma_loop(1), ten = fma_loop(10);
  EXPECT_GT(one, 0);
  EXPECT_DOUBLE_EQ(ten, 10 * one);
}

}  // namespace
}  // namespace hanpu::simd
