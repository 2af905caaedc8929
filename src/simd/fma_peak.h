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

// The same read as kPrefetchedStreams parts, each asking for its lines kPrefetchAheadBytes
// ahead in software, as the quantized decode kernels read their rows. On a fast memory the
// hardware prefetchers alone left the plain read short of what those kernels reached (the
// decode rows then read faster than "the bound"), so a probe takes the faster of the two.
inline constexpr int kPrefetchedStreams = 4;
inline constexpr size_t kPrefetchAheadBytes = 2048;
float read_streams_prefetched(const float* x, size_t n);

}  // namespace hanpu::simd
