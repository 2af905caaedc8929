// Probes of the machine's rates: a register-only FMA loop (the denominator of every "% of
// peak" hanpu prints) and a streaming read (the denominator of decode's "% of bound").
#pragma once

#include <cstddef>
#include <cstdint>

namespace hanpu::simd {

// Runs independent FMA chains (enough of them to cover latency x ports) for `iterations`
// steps on the calling thread; returns the number of floating-point operations done
// (an FMA counts 2). A sink keeps the compiler from deleting the work.
double fma_loop(int64_t iterations);

// The sum of x[0, n), read as kReadStreams equal parts walked in lockstep with plain vector
// loads into independent accumulators: the access pattern that gets the most out of DRAM
// per core. One sequential stream, or masked loads into one dependent chain, read at half
// the rate on an AVX2 VM, which made decode look faster than "the bound".
inline constexpr int kReadStreams = 8;
float read_streams(const float* x, size_t n);

}  // namespace hanpu::simd
