// What a run on the Ascend model measured, as the public NpuLaStats (include/hanpu/npu.h):
// shared by every Ascend-class kernel's entry point (LA, full attention).
#pragma once

#include <string>

#include "hanpu/npu.h"
#include "npu/machine/npu_machine.h"
#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

NpuLaStats ascend_stats(const NpuMachine& m, const SimStats& s, const std::string& variant);

}  // namespace hanpu::npu
