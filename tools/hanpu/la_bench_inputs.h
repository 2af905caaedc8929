// The inputs of `hanpu bench la` (strategies and chunk stages alike): what a model feeds.
#pragma once

#include <cstdint>
#include <vector>

#include "hanpu/la.h"

namespace hanpu::cli {

struct LaBenchInputs {
  std::vector<uint16_t> q16, k16, v16, o16;  // f16/bf16 storage
  std::vector<float> q, k, v, o, g, beta, state;
};

// Normalised q/k rows, mild gates (logsigmoid(randn)/16), sigmoid betas, fixed seed.
LaBenchInputs make_la_bench_inputs(LaMech mech, DType dt, int64_t T, int H, int HV, int D,
                                   uint64_t seed);
// The call over them: one sequence, K = V = D, the final state written.
LaArgs la_bench_args(LaMech mech, DType dt, int64_t T, int H, int HV, int D, LaBenchInputs& in);

}  // namespace hanpu::cli
