// A modelled Ascend-class NPU as data: cores, per-core buffers, cube and vector rates, the
// bandwidth of every data path, the shared GM bandwidth, and an energy table. The targets
// ship as JSON files (data/npu/*.json, compiled into the library) where every number
// carries its source and a confidence tag ([V] verified, [T] third party, [I] inferred).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hanpu/status.h"

namespace hanpu::npu {

enum class Buf : uint8_t { kL1, kL0A, kL0B, kL0C, kUB };
inline constexpr int kNumBufs = 5;
const char* buf_name(Buf b);

// The data paths a transfer engine can take. GM paths share the chip's GM bandwidth.
enum class Path : uint8_t {
  kGmToL1,
  kGmToUb,
  kUbToGm,
  kUbToL1,
  kL1ToL0A,
  kL1ToL0B,
  kL0CToUb,
  kL1ToUb
};
inline constexpr int kNumPaths = 8;
const char* path_name(Path p);  // "GM->L1", ...
bool path_touches_gm(Path p);

struct BufferSpec {
  int64_t bytes = 0;
  int align = 32;
};

struct EnergyTable {  // picojoules
  double gm_byte = 0, l1_byte = 0, l0_byte = 0, ub_byte = 0, cube_mac = 0, vector_byte = 0;
  double static_w = 0;  // watts while the kernel runs
};

struct NpuMachine {
  std::string name, summary;
  int cores = 1;
  double clock_ghz = 1.0;
  double launch_overhead_us = 0;
  // Host time to dispatch one framework operator (an eager torch_npu op: argument checks,
  // shape inference, tiling, allocation) before its kernel can be queued. Only a variant
  // written as a chain of framework operators (vLLM-Ascend's) pays it; the device runs
  // behind the host, so it costs time only where the host falls behind.
  double framework_op_us = 0;
  std::array<BufferSpec, kNumBufs> buffers{};
  int cube_m = 16, cube_k = 16, cube_n = 16, cube_startup_cycles = 0;
  double vector_bytes_per_cycle = 256, vector_startup_cycles = 0, vector_nz_row_op_factor = 1;
  std::array<double, kNumPaths> path_gbps{};
  double gm_latency_cycles = 0, local_latency_cycles = 0;
  // A GM transfer moves in bursts (one per contiguous run of bytes: a block's rows unless they
  // span the tensor's whole width): each burst costs a setup, and one shorter than the
  // minimum efficient burst takes that burst's time and bandwidth.
  double dma_burst_setup_cycles = 0;
  int64_t dma_min_burst_bytes = 0;
  double gm_gbps = 0;  // shared by all cores
  EnergyTable energy;
  std::map<std::string, std::string> sources;

  // Bytes a path moves per core cycle.
  double path_bytes_per_cycle(Path p) const { return path_gbps[static_cast<int>(p)] / clock_ghz; }
  double cube_macs_per_cycle() const { return static_cast<double>(cube_m) * cube_k * cube_n; }
};

// The built-in targets ("ascend-310p", "ascend-310b").
std::vector<std::string> npu_machine_names();
// A built-in target by name, or a JSON file path; errors name the file and the field.
Status load_npu_machine(const std::string& name_or_path, NpuMachine* out);
Status parse_npu_machine(const std::string& json_text, const std::string& source, NpuMachine* out);

}  // namespace hanpu::npu
