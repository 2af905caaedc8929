// A register-only FMA loop: the denominator of every "% of peak" hanpu prints.
#pragma once

#include <cstdint>

namespace hanpu::simd {

// Runs independent FMA chains (enough of them to cover latency x ports) for `iterations`
// steps on the calling thread; returns the number of floating-point operations done
// (an FMA counts 2). A sink keeps the compiler from deleting the work.
double fma_loop(int64_t iterations);

}  // namespace hanpu::simd
