// `hanpu bench la --stages`: the per-operator profile of hanpu's chunk on one core.
#pragma once

#include <vector>

#include "bench_la.h"
#include "hanpu/la.h"

namespace hanpu::cli {

int run_bench_la_stages(const BenchLaOptions& o, const std::vector<LaMech>& mechs,
                        const std::vector<DType>& dtypes);

}  // namespace hanpu::cli
