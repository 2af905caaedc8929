#include "bench_util.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "cpu/nn/blas_sgemm.h"
#include "simd/fma_peak.h"

namespace hanpu::cli {

std::string human_bytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t{1} << 30));
  if (b >= (1 << 20)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  return fmt::format("{:.0f} KiB", b / 1024.0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

FmaPeak print_machine_header(FILE* out, int threads) {
  const FmaPeak peak = measure_fma_peak(threads);
  std::fprintf(out,
               "# machine: %d threads, SIMD %s, measured FMA peak %.1f GFLOP/s (%.1f per core)\n",
               peak.threads, peak.simd_target.c_str(), peak.gflops, peak.per_core_gflops);
  std::fprintf(out, "# micro-kernel: %s, %.1f GFLOP/s on 128^3 GEMMs in cache\n",
               describe_micro_kernel().c_str(), measure_gemm_gflops(threads));
  const FmaPeak amx = measure_amx_peak(threads);
  if (amx.gflops > 0) {
    std::fprintf(out,
                 "# matrix unit: AMX bf16 tiles, measured peak %.1f GFLOP/s (%.1f per core): bf16 "
                 "projections "
                 "of a prefill run on them (--projection / HANPU_PROJECTION chooses another)\n",
                 amx.gflops, amx.per_core_gflops);
  } else if (const FmaPeak dot = measure_bf16_dot_peak(threads); dot.gflops > 0) {
    std::fprintf(
        out,
        "# matrix unit: none (%s); bf16 dot instruction (AVX512-BF16), measured peak %.1f GFLOP/s "
        "(%.1f "
        "per core): bf16 projections of a prefill run on hanpu's dot kernel, x rounded to bf16 "
        "(--projection pairs: on the pairs kernel), f32 and f16 on %s\n",
        amx.simd_target.c_str(), dot.gflops, dot.per_core_gflops,
        cpu::blas_sgemm_describe().c_str());
  } else {
    std::fprintf(out,
                 "# matrix unit: none (%s): projections of a prefill run on hanpu's pairs kernel "
                 "(bf16) and %s "
                 "(f32, f16)\n",
                 amx.simd_target.c_str(), cpu::blas_sgemm_describe().c_str());
  }
  return peak;
}

Status time_runs(int repeats, int threads, const TimedRun& run, Timing* out) {
  std::vector<Timing> one(1);
  HANPU_RETURN_IF_ERROR(time_runs_interleaved(repeats, threads, {run}, &one));
  *out = one[0];
  return Status::Ok();
}

Status time_runs_interleaved(int repeats, int threads, const std::vector<TimedRun>& runs,
                             std::vector<Timing>* out, const std::function<void()>& before_each) {
  const size_t n = runs.size();
  std::vector<std::vector<double>> ms(n), peaks(n);
  out->assign(n, Timing{});
  for (int r = 0; r <= repeats; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = r % 2 == 0 ? k : n - 1 - k;
      std::vector<double> busy;
      int64_t extra = 0;
      if (before_each) before_each();
      const auto t0 = std::chrono::steady_clock::now();
      const Status st = runs[i](busy, extra);
      const double elapsed =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!st.ok()) return st;
      if (r == 0) continue;  // warm-up
      ms[i].push_back(elapsed);
      peaks[i].push_back(measure_fma_peak(threads, 20, 1).gflops);
      Timing& t = (*out)[i];
      t.extra_bytes = std::max(t.extra_bytes, extra);
      double mx = 0, sum = 0;
      for (double x : busy) mx = std::max(mx, x), sum += x;
      if (sum > 0) t.imbalance = mx / (sum / static_cast<double>(busy.size()));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    (*out)[i].median_ms = median(ms[i]);
    (*out)[i].run_ms = ms[i];
    (*out)[i].peak_gflops = median(peaks[i]);
  }
  return Status::Ok();
}

bool time_side_by_side(int repeats, int threads, const std::vector<TimedRun>& runs,
                       std::vector<Timing>* out, const std::function<void()>& before_each) {
  const Status st = time_runs_interleaved(repeats, threads, runs, out, before_each);
  if (!st.ok()) std::fprintf(stderr, "error: %s\n", st.message().c_str());
  return st.ok();
}

void evict_caches() {
  static const std::vector<float> buffer = [] {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    const size_t bytes =
        std::max<size_t>(size_t{64} << 20, 2 * static_cast<size_t>(std::max(l3, 0L)));
    return std::vector<float>(bytes / sizeof(float), 1.0f);
  }();
  volatile float sink = simd::read_streams(buffer.data(), buffer.size());
  (void)sink;
}

}  // namespace hanpu::cli
