// Measured FMA peak and micro-kernel rate: the denominators of "% of peak".
#include <algorithm>
#include <atomic>
#include <vector>

#include <fmt/format.h>

#include "base/timer.h"
#include "hanpu/machine.h"
#include "parallel/thread_pool.h"
#include "simd/amx.h"
#include "simd/fma_peak.h"
#include "simd/gemm_bf16_dot.h"
#include "simd/gemm.h"

namespace hanpu {

namespace {

// Best rate, GFLOP/s over all workers, of `repeats` runs of loop(iters) on every worker at
// once; iters calibrated on one thread so that a run lasts about `ms`.
double loop_peak_gflops(ThreadPool& pool, double (*loop)(int64_t), int64_t iters, double ms,
                        int repeats) {
  for (;;) {
    Timer t;
    loop(iters);
    if (t.ms() > ms / 4 || iters > (int64_t{1} << 34)) {
      iters = static_cast<int64_t>(iters * (ms / std::max(t.ms(), 1e-3)));
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    std::vector<double> flops(pool.size(), 0.0);
    Timer t;
    pool.run_on_all([&](int w) { flops[w] = loop(iters); });
    const double sec = t.ms() / 1e3;
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / sec / 1e9);
  }
  return best;
}

}  // namespace

FmaPeak measure_fma_peak(int threads, double ms, int repeats) {
  ThreadPool& pool = ThreadPool::shared(threads);
  const double best = loop_peak_gflops(pool, simd::fma_loop, 1 << 16, ms, repeats);
  return FmaPeak{best, best / pool.size(), pool.size(), simd::simd_target_name()};
}

bool amx_bf16_in_use() { return simd::amx_bf16_usable(); }

FmaPeak measure_amx_peak(int threads, double ms, int repeats) {
  ThreadPool& pool = ThreadPool::shared(threads);
  if (!simd::amx_bf16_usable())
    return FmaPeak{0, 0, pool.size(), "no AMX bf16 tiles (on this CPU, or in this build)"};
  const double best = loop_peak_gflops(pool, simd::amx_bf16_loop, 1 << 10, ms, repeats);
  return FmaPeak{best, best / pool.size(), pool.size(), "AMX bf16"};
}

FmaPeak measure_bf16_dot_peak(int threads, double ms, int repeats) {
  ThreadPool& pool = ThreadPool::shared(threads);
  if (!simd::bf16_dot_usable())
    return FmaPeak{0, 0, pool.size(), "no AVX512-BF16 (or HANPU_BF16_DOT=0)"};
  const double best = loop_peak_gflops(pool, simd::bf16_dot_loop, 1 << 16, ms, repeats);
  return FmaPeak{best, best / pool.size(), pool.size(), "AVX512-BF16 dot"};
}

double measure_gemm_gflops(int threads, double ms) {
  ThreadPool& pool = ThreadPool::shared(threads);
  const int P = pool.size();
  constexpr int kM = 128, kN = 128, kK = 128;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::atomic<int64_t> calls{0};
    Timer t;
    pool.run_on_all([&](int) {
      std::vector<float> a(kM * kK, 0.5f), b(kK * kN, 0.25f), c(kM * kN, 0.0f);
      Timer local;
      int64_t n = 0;
      while (local.ms() < ms) {
        for (int i = 0; i < 16; ++i) {
          simd::gemm(kM, kN, kK, simd::row_major(a.data(), kK), b.data(), kN, c.data(), kN, 1.0f,
                     1.0f);
        }
        n += 16;
      }
      calls += n;
    });
    const double sec = t.ms() / 1e3;
    best = std::max(best, 2.0 * kM * kN * kK * static_cast<double>(calls.load()) / sec / 1e9);
  }
  (void)P;
  return best;
}

MemoryReadProbe::MemoryReadProbe(int threads, size_t bytes) : threads_(threads) {
  ThreadPool& pool = ThreadPool::shared(threads);
  const size_t per = bytes / sizeof(float) / static_cast<size_t>(pool.size());
  slices_.resize(pool.size());
  pool.run_on_all([&](int w) { slices_[w].assign(per, 1.0f); });  // first touch on the reading core
}

MemoryReadProbe::~MemoryReadProbe() = default;

double MemoryReadProbe::read_gbps() {
  ThreadPool& pool = ThreadPool::shared(threads_);
  std::vector<float> sink(slices_.size());
  // The faster of the software-prefetched and the plain read (simd/fma_peak.h): which one the
  // memory favours changes with its load, and the bound is what the machine can read. Each
  // reads its own half of every slice: read second over the bytes the first had just read,
  // the plain read found part of them still in the last-level cache, and measured 1-5%
  // faster than the same read of bytes not read since the step before (docs/journal).
  using Read = float (*)(const float*, size_t);
  const Read reads[2] = {simd::read_streams_prefetched, simd::read_streams};
  size_t bytes = 0;  // each read's
  for (const auto& s : slices_) bytes += s.size() / 2 * sizeof(float);
  double best = 0;
  for (int half = 0; half < 2; ++half) {
    Timer t;
    pool.run_on_all([&](int w) {
      const size_t n = slices_[w].size() / 2;
      sink[w] = reads[half](slices_[w].data() + half * n, n);
    });
    best = std::max(best, static_cast<double>(bytes) / (t.ms() / 1e3) / 1e9);
  }
  return best;
}

double measure_memory_read_gbps(int threads, size_t bytes, int repeats) {
  MemoryReadProbe probe(threads, bytes);
  double best = 0;
  for (int r = 0; r < repeats; ++r) best = std::max(best, probe.read_gbps());
  return best;
}

std::string describe_micro_kernel() {
  return fmt::format("{} x {} fp32 FMA register tile, SIMD target {}", simd::gemm_tile_rows(),
                     simd::gemm_tile_cols(), simd::simd_target_name());
}

}  // namespace hanpu
