// libFuzzer target for NPU target files (`hanpu sim --target file.json` reads them): any bytes
// must parse into a machine whose every figure is valid, or fail with a Status — never
// crash (run under ASan + UBSan). Seeded with the built-in targets.
#include <cstddef>
#include <cstdint>
#include <string>

#include "npu/machine/npu_machine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hanpu::npu::NpuMachine m;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!hanpu::npu::parse_npu_machine(text, "fuzz.json", &m).ok()) return 0;
  // What parsed is usable: positive rates and sizes the simulator divides by.
  if (m.cores < 1 || !(m.clock_ghz > 0) || !(m.gm_gbps > 0) || !(m.vector_bytes_per_cycle > 0)) __builtin_trap();
  for (double g : m.path_gbps) {
    if (!(g > 0)) __builtin_trap();
  }
  for (const auto& b : m.buffers) {
    if (b.bytes <= 0 || b.align <= 0) __builtin_trap();
  }
  return 0;
}
