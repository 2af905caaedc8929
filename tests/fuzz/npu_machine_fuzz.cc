// libFuzzer target for NPU target files, Ascend-class and spatial (`hanpu sim --target
// file.json` reads them): any bytes must parse into a machine whose every figure is valid,
// or fail with a Status — never crash (run under ASan + UBSan). Seeded with the built-ins.
#include <cstddef>
#include <cstdint>
#include <string>

#include "npu/machine/npu_machine.h"
#include "npu/machine/spatial_machine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hanpu::npu::SpatialMachine s;
  if (hanpu::npu::parse_spatial_machine(text, "fuzz.json", &s).ok()) {
    if (s.compute_tiles() < 1 || !(s.clock_ghz > 0) || !(s.dram_gbps > 0) ||
        !(s.stream_bytes_per_cycle > 0) || s.local_bytes <= 0 || s.memtile_bytes <= 0 ||
        s.fifo_depth < 1 || s.memtile_ports() < 2) {
      __builtin_trap();
    }
  }
  hanpu::npu::NpuMachine m;
  if (!hanpu::npu::parse_npu_machine(text, "fuzz.json", &m).ok()) return 0;
  // What parsed is usable: positive rates and sizes the simulator divides by.
  if (m.cores < 1 || !(m.clock_ghz > 0) || !(m.gm_gbps > 0) || !(m.vector_bytes_per_cycle > 0))
    __builtin_trap();
  for (double g : m.path_gbps) {
    if (!(g > 0)) __builtin_trap();
  }
  for (const auto& b : m.buffers) {
    if (b.bytes <= 0 || b.align <= 0) __builtin_trap();
  }
  return 0;
}
