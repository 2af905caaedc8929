// Facts about the machine hanpu runs on, measured rather than looked up.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hanpu {

struct FmaPeak {
  double gflops = 0;  // all threads together, register-only FMA loop
  double per_core_gflops = 0;
  int threads = 0;
  std::string simd_target;  // the Highway target the kernels dispatched to, e.g. "AVX3"
};

// Runs an FMA loop on every worker of the shared pool at once for about `ms` milliseconds
// and returns the best of `repeats` runs.
FmaPeak measure_fma_peak(int threads, double ms = 100, int repeats = 5);

// Whether bf16 projections of a prefill run on the AMX bf16 tiles here (the CPU has them,
// the OS granted them, HANPU_AMX is not 0).
bool amx_bf16_in_use();

// The kernels a model's projections can run on (ModelRunOptions::projection, `--projection`,
// HANPU_PROJECTION), "auto" first, then fastest first; `usable`: on this CPU and build.
struct ProjectionKernelSummary {
  std::string name, summary;
  bool usable = false;
};
std::vector<ProjectionKernelSummary> projection_kernel_summaries();

// The same for the AMX bf16 tiles (a register-only tile-product loop on every worker), or
// gflops 0 where the machine has none or HANPU_AMX=0 (simd_target then says why).
FmaPeak measure_amx_peak(int threads, double ms = 100, int repeats = 5);

// The same for the bf16 dot-product instruction (AVX512-BF16 VDPBF16PS, a register-only
// loop; a bf16 multiply-add counts 2), gflops 0 where the CPU has none or HANPU_BF16_DOT=0.
FmaPeak measure_bf16_dot_peak(int threads, double ms = 100, int repeats = 5);

// The micro-kernel's own rate on a GEMM of the LA chunk's shape class (M=N=K=128-ish,
// operands in L1/L2), all threads, GFLOP/s: what the planned matrix unit reaches.
double measure_gemm_gflops(int threads, double ms = 100);

// DRAM read bandwidth, GB/s: every worker reads its own slice of a buffer far larger than
// the caches (`bytes` in all) as 8 lockstep streams, best of `repeats`. The bound decode is
// measured against.
double measure_memory_read_gbps(int threads, size_t bytes = size_t{1} << 30, int repeats = 3);

// The same probe keeping its buffer (first touched by the workers that read it) between
// reads, to measure beside each step of a run: read_gbps() reads `bytes` once, half of it
// each way, and returns the faster way's rate. The buffer stays resident while the probe
// lives.
class MemoryReadProbe {
 public:
  MemoryReadProbe(int threads, size_t bytes);
  ~MemoryReadProbe();
  MemoryReadProbe(const MemoryReadProbe&) = delete;
  MemoryReadProbe& operator=(const MemoryReadProbe&) = delete;
  double read_gbps();

 private:
  int threads_;
  std::vector<std::vector<float>> slices_;  // one per worker
};

// Column tile of the micro-kernel and its SIMD target, for printing.
std::string describe_micro_kernel();

}  // namespace hanpu
