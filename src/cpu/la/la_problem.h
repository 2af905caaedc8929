// A validated LA call, as every CPU strategy sees it (validated once in la_validate.cc,
// trusted below).
#pragma once

#include <cstdint>
#include <vector>

#include "base/scratch.h"
#include "hanpu/la.h"

namespace hanpu::cpu {

struct LaProblem {
  LaMech mech = LaMech::kGdn;
  DType dtype = DType::kF32;  // storage of q, k, v, o
  int64_t T = 0;
  int H = 0, HV = 0, K = 0, V = 0, N = 0;
  float scale = 1.0f;
  bool qk_l2norm = false;
  int chunk = 64;
  const void* q = nullptr;               // [T, H, K]
  const void* k = nullptr;               // [T, H, K]
  const void* v = nullptr;               // [T, HV, V]
  const float* g = nullptr;              // GDN [T, HV]; KDA [T, HV, K]
  const float* beta = nullptr;           // [T, HV]
  const float* initial_state = nullptr;  // [N, HV, K, V] or null (zeros)
  void* o = nullptr;                     // [T, HV, V]
  float* final_state = nullptr;          // [N, HV, K, V] or null
  std::vector<int64_t> cu;               // N + 1 offsets

  bool kda() const { return mech == LaMech::kKda; }
  int qk_head(int hv) const { return hv / (HV / H); }
  int64_t seq_len(int n) const { return cu[n + 1] - cu[n]; }
  std::vector<int64_t> seq_lens() const;
  // Element offsets of token t's row for a head.
  size_t qk_offset(int64_t t, int hv) const {
    return (static_cast<size_t>(t) * H + qk_head(hv)) * K;
  }
  size_t v_offset(int64_t t, int hv) const { return (static_cast<size_t>(t) * HV + hv) * V; }
  size_t state_offset(int n, int hv) const { return (static_cast<size_t>(n) * HV + hv) * K * V; }
};

// What a strategy gets besides the problem.
struct LaRunContext {
  int threads = 1;
  ScratchMeter* meter = nullptr;
  std::vector<double> busy_ms;  // filled by the strategy: per worker, summed over its passes
};

Status validate_la(const LaArgs& args, const LaOptions& options, LaProblem* out);

}  // namespace hanpu::cpu
