// Zero inputs for the runs that pick a kernel's tunables by measuring it (see gdn_kernels.h).
#include "npu/kernels/gdn_kernels.h"

namespace hanpu::npu {

GdnGm zero_inputs(NpuSim& sim, const GdnGm& shape, int64_t T) {
  GdnGm g;
  g.kda = shape.kda;
  g.T = T;
  g.H = shape.H;
  g.K = shape.K;
  g.V = shape.V;
  g.chunk = shape.chunk;
  g.scale = shape.scale;
  g.group = shape.group;
  g.qk_l2norm = shape.qk_l2norm;
  const int64_t HK = static_cast<int64_t>(g.H) * g.K, HV = static_cast<int64_t>(g.H) * g.V;
  const int64_t QK = static_cast<int64_t>(g.H / g.group) * g.K;
  g.q = sim.gm("q", g.T, QK, true);
  g.k = sim.gm("k", g.T, QK, true);
  g.v = sim.gm("v", g.T, HV, true);
  g.o = sim.gm("o", g.T, HV, true);
  g.g = sim.gm("g", g.T, g.kda ? HK : g.H, false);
  g.beta = sim.gm("beta", g.T, g.H, false);
  if (shape.state0 != nullptr) g.state0 = sim.gm("state0", HK, g.V, false);
  if (shape.state1 != nullptr) g.state1 = sim.gm("state1", HK, g.V, false);
  return g;
}

double probe_cycles(int64_t chunks, const std::function<double(int64_t)>& run) {
  constexpr int64_t kShort = 16, kLong = 32;
  if (chunks <= kLong) return run(chunks);
  const double a = run(kShort), b = run(kLong);
  return a + (b - a) / static_cast<double>(kLong - kShort) * static_cast<double>(chunks - kShort);
}

}  // namespace hanpu::npu
