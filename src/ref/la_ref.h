// float64 references for GDN and KDA (docs/la-spec.md): the oracle every LA kernel is tested
// against. No SIMD, no threads, written to be read.
#pragma once

#include <vector>

#include "hanpu/la.h"

namespace hanpu::ref {

struct LaRefResult {
  std::vector<double> o;            // [T, HV, V]
  std::vector<double> final_state;  // [N, HV, K, V]
};

// Token-by-token recurrence. Inputs are read through their storage dtype (so a bf16 input
// is the rounded value the kernel also sees); args must be valid (la_prefill's checks).
LaRefResult la_recurrent(const LaArgs& args);

// The chunked form of docs/la-spec.md (GEMM-first Vn, explicit inverse), in float64, chunk size
// C. Exists to pin the chunk algebra down independently of any fast kernel.
LaRefResult la_chunked(const LaArgs& args, int chunk);

}  // namespace hanpu::ref
