// float64 reference for softmax attention: the naive T x Tk form, written to be read. The
// oracle of every attention kernel test (prefill, decode, every mask and placement).
#pragma once

#include <vector>

#include "hanpu/attn.h"

namespace hanpu::ref {

struct AttnRefResult {
  std::vector<double> o;    // [T, Hq, Dv]
  std::vector<double> lse;  // [Hq, T], natural log
};

// Inputs are read through their storage dtype (a bf16 input is the rounded value the kernel
// sees); args must be valid (attn_prefill's checks).
AttnRefResult attention(const AttnArgs& args);

}  // namespace hanpu::ref
