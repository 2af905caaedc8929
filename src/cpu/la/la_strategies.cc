// The table of CPU LA strategies, and state copy helpers they share.
#include <algorithm>

#include "cpu/la/la_strategy.h"
#include "simd/gemm.h"

namespace hanpu::cpu {

namespace {

void run_hanpu_full(const LaProblem& p, LaRunContext& ctx) { run_hanpu(p, ctx, {}); }
void run_hanpu_fused(const LaProblem& p, LaRunContext& ctx) {
  run_hanpu(p, ctx, {.reorder = false, .gemm_mode = GemmMode::kRepacking});
}
void run_hanpu_reorder(const LaProblem& p, LaRunContext& ctx) {
  run_hanpu(p, ctx, {.reorder = true, .gemm_mode = GemmMode::kRepacking});
}

constexpr LaStrategyEntry kStrategies[] = {
    {{"recurrent", "token by token, state column blocks resident in L1 (the decode kernel)", false},
     &run_recurrent},
    {{"fla", "FLA chunk-head-chunk: A/W/U, per-chunk states h and outputs through memory", false},
     &run_fla},
    {{"hanpu", "head-level mapping + fusion, GEMM-first chunk-first order, planned layouts", false},
     &run_hanpu_full},
    {{"hanpu-fused", "ablation: head-level mapping + fusion only (FLA order, re-packed GEMMs)",
      true},
     &run_hanpu_fused},
    {{"hanpu-reorder", "ablation: + lifetime-aware reordering (re-packed GEMMs)", true},
     &run_hanpu_reorder},
};

}  // namespace

const LaStrategyEntry* find_la_strategy(std::string_view name) {
  for (const auto& s : kStrategies) {
    if (s.info.name == name) return &s;
  }
  return nullptr;
}

HeadSchedule schedule_for(const LaProblem& p, int cores) {
  return make_head_schedule(p.seq_lens(), p.HV, p.V, cores, simd::gemm_tile_cols() / 2);
}

HeadSchedule schedule_groups_for(const LaProblem& p, int cores) {
  return make_head_schedule(p.seq_lens(), p.H, p.V, cores, simd::gemm_tile_cols() / 2);
}

void read_initial_state(const LaProblem& p, int n, int hv, int c0, int c1, float* S, int lds) {
  const int w = c1 - c0;
  if (lds == 0) lds = w;
  for (int d = 0; d < p.K; ++d) {
    if (p.initial_state) {
      const float* src =
          p.initial_state + p.state_offset(n, hv) + static_cast<size_t>(d) * p.V + c0;
      std::copy_n(src, w, S + static_cast<size_t>(d) * lds);
    } else {
      std::fill_n(S + static_cast<size_t>(d) * lds, w, 0.0f);
    }
  }
}

void write_final_state(const LaProblem& p, int n, int hv, int c0, int c1, const float* S, int lds) {
  if (!p.final_state) return;
  const int w = c1 - c0;
  if (lds == 0) lds = w;
  for (int d = 0; d < p.K; ++d) {
    std::copy_n(S + static_cast<size_t>(d) * lds, w,
                p.final_state + p.state_offset(n, hv) + static_cast<size_t>(d) * p.V + c0);
  }
}

}  // namespace hanpu::cpu

namespace hanpu {

std::span<const LaStrategyInfo> la_strategies() {
  static const std::vector<LaStrategyInfo> infos = [] {
    std::vector<LaStrategyInfo> v;
    for (const auto& s : cpu::kStrategies) v.push_back(s.info);
    return v;
  }();
  return infos;
}

}  // namespace hanpu
