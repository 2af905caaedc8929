// A hybrid model's layers on the simulated Ascend cores, operator by operator as vLLM-Ascend
// runs a Qwen3.5-style model (each operator a kernel the host dispatches; the LA core the
// chosen variant): RMSNorm, the merged input projections on the cube, the causal conv and
// gates, the LA core, the gated norm, the output projection, residual + norm, and the MLP;
// the attention layer's q/k norms and RoPE, fused attention and its output gate. Every
// operator runs on seeded data; the layer's time, each operator's and the energy come out of
// the replay.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hanpu/npu.h"
#include "npu/machine/npu_machine.h"
#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

struct LayerRun {
  double ms = 0, energy_mj = 0;
  std::vector<std::pair<std::string, double>> ops;  // operator, ms (in order)
};

// One GDN layer (`attention` false) or one attention layer of `shape` over T tokens after
// `past` ones: 0 for a prefill, with the LA core as `la_variant` (a gdn_variants() name);
// else a decode step (T = 1) as the native backend runs it whatever the prefill's variant (the
// recurrent LA step over the state, attention over a cache of `past` rows).
// `inspect` (optional) sees the simulator after the run, every GM tensor the layer made
// (NpuSim::find_gm): the tests check the layer's arithmetic against a float64 one with it.
Status hybrid_layer(const NpuMachine& m, const NpuHybridShape& shape, int64_t T, int64_t past,
                    bool attention, const std::string& la_variant, uint64_t seed, LayerRun* out,
                    const std::function<void(const NpuSim&)>& inspect = {});

// Whether a layer of `shape` over T tokens after `past` fits the simulator: the values it
// holds (every GM tensor of a layer as fp32, weights included) up to kMaxLayerBytes, the
// attention kernel's recorded events up to kMaxAttentionEvents. An error names both.
inline constexpr double kMaxLayerBytes = 8.0 * (1 << 30);
Status check_hybrid_size(const NpuHybridShape& shape, int64_t T, int64_t past);

// The final RMSNorm and the LM head [hidden, vocab] for one row.
Status lm_head(const NpuMachine& m, const NpuHybridShape& shape, uint64_t seed, LayerRun* out);

}  // namespace hanpu::npu
