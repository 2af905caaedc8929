// FMA throughput and streaming-read probes (see fma_peak.h), per Highway target.
#include "simd/fma_peak.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/fma_peak.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

double FmaLoop(int64_t iterations) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  constexpr int kChains = 12;  // >= FMA latency (4) x ports (2), and fits 16 registers
  V acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = hn::Set(d, 1.0f + 1e-3f * i);
  const V a = hn::Set(d, 0.999999f), b = hn::Set(d, 1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = hn::MulAdd(acc[i], a, b);
  }
  V sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = hn::Add(sum, acc[i]);
  volatile float sink = hn::GetLane(sum);
  (void)sink;
  return 2.0 * kChains * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iterations);
}

// S equal parts of x walked in lockstep into independent accumulators; with a prefetch
// distance, each part asks for its lines that many bytes ahead, as the quantized decode
// kernels do (simd/quant_unpack.h).
template <int S, size_t kAheadBytes>
float ReadParts(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const size_t NL = hn::Lanes(d);
  const size_t per = n / S / NL * NL;  // each part's whole vectors
  V acc[S];
  for (int s = 0; s < S; ++s) acc[s] = hn::Zero(d);
  constexpr size_t kAhead = kAheadBytes / sizeof(float);
  for (size_t i = 0; i < per; i += NL) {
    for (int s = 0; s < S; ++s) {
      if constexpr (kAhead > 0) {
        // One prefetch a 64-byte line (a vector of 16 floats at most per load).
        if ((i * sizeof(float)) % 64 == 0) hwy::Prefetch(x + s * per + i + kAhead);
      }
      acc[s] = hn::Add(acc[s], hn::LoadU(d, x + s * per + i));
    }
  }
  V sum = acc[0];
  for (int s = 1; s < S; ++s) sum = hn::Add(sum, acc[s]);
  float total = hn::GetLane(hn::SumOfLanes(d, sum));
  for (size_t i = S * per; i < n; ++i) total += x[i];  // what the parts left
  return total;
}

float ReadStreams(const float* HWY_RESTRICT x, size_t n) {
  return ReadParts<kReadStreams, 0>(x, n);
}

float ReadStreamsPrefetched(const float* HWY_RESTRICT x, size_t n) {
  return ReadParts<kPrefetchedStreams, kPrefetchAheadBytes>(x, n);
}

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(FmaLoop);
HWY_EXPORT(ReadStreams);
HWY_EXPORT(ReadStreamsPrefetched);
double fma_loop(int64_t iterations) { return HWY_DYNAMIC_DISPATCH(FmaLoop)(iterations); }
float read_streams(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(ReadStreams)(x, n); }
float read_streams_prefetched(const float* x, size_t n) {
  return HWY_DYNAMIC_DISPATCH(ReadStreamsPrefetched)(x, n);
}
}  // namespace hanpu::simd
#endif
