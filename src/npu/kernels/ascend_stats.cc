// ascend_stats (see ascend_stats.h).
#include "npu/kernels/ascend_stats.h"

namespace hanpu::npu {

NpuLaStats ascend_stats(const NpuMachine& m, const SimStats& s, const std::string& variant) {
  NpuLaStats r;
  r.target = m.name;
  r.variant = variant;
  r.latency_ms = s.latency_ms;
  r.gm_read_bytes = s.gm_read_bytes;
  r.gm_write_bytes = s.gm_write_bytes;
  r.l1_l0_bytes = s.l1_l0_bytes;
  r.spill_bytes = s.spill_bytes;
  r.gm_workspace_bytes = s.gm_workspace_bytes;
  r.gm_device_bytes = s.gm_device_bytes;
  for (int b = 0; b < kNumBufs; ++b) r.peak_bytes[buf_name(static_cast<Buf>(b))] = s.peak_bytes[b];
  r.cube_macs = s.cube_macs;
  r.cube_util = s.cube_util;
  r.vector_util = s.vector_util;
  static constexpr const char* kEngines[kNumEngines] = {"mte2", "mte1", "mte3", "cube", "vector"};
  for (int e = 0; e < kNumEngines; ++e)
    r.engine_busy[kEngines[e]] = s.engine_busy_cycles[e] / (m.cores * s.latency_cycles);
  r.energy_mj = s.energy_mj;
  r.launches = s.launches;
  r.framework_ops = s.framework_ops;
  r.instructions = s.instructions;
  return r;
}

}  // namespace hanpu::npu
