// The CPU LA strategies, listed once (la_strategies.cc) so tests, benchmarks and the CLI
// all iterate the same table.
#pragma once

#include "cpu/la/la_chunk_math.h"
#include "cpu/la/la_problem.h"
#include "parallel/head_schedule.h"

#include <utility>
#include <vector>

namespace hanpu::cpu {

using LaStrategyFn = void (*)(const LaProblem&, LaRunContext&);

struct LaStrategyEntry {
  LaStrategyInfo info;
  LaStrategyFn run;
};

// Which of HA-NPU's techniques the head-level kernel applies (the ablation steps).
struct HanpuTechniques {
  bool reorder = true;                      // GEMM-first + chunk-first in-place state update
  GemmMode gemm_mode = GemmMode::kPlanned;  // layout plan (vs re-packing every product)
};

void run_recurrent(const LaProblem& p, LaRunContext& ctx);
void run_fla(const LaProblem& p, LaRunContext& ctx);
void run_hanpu(const LaProblem& p, LaRunContext& ctx, HanpuTechniques tech);

const LaStrategyEntry* find_la_strategy(std::string_view name);

// The HA-NPU core schedule of this problem on `cores` workers, split points aligned to half
// a micro-kernel column tile (one SIMD vector).
HeadSchedule schedule_for(const LaProblem& p, int cores);
// The same over q/k heads (HeadWork::head is then the q/k head, owning value heads
// head * HV/H ... (head + 1) * HV/H - 1): hanpu's GVA-group mapping.
HeadSchedule schedule_groups_for(const LaProblem& p, int cores);

// A core walks several of its work items in lockstep (chunk by chunk, or token block by
// token block) while their states fit this budget: neighbouring heads' rows of [T, H, K] then
// arrive together, so reads stream through whole pages, and the states stay in L2.
inline constexpr int64_t kResidentStateBytes = int64_t{1} << 20;

// Copies the columns [c0, c1) of (sequence n, head hv)'s initial state (or zeros) into
// S [K x (c1 - c0)] with leading dim lds (default: c1 - c0), and back out to the final state.
void read_initial_state(const LaProblem& p, int n, int hv, int c0, int c1, float* S, int lds = 0);
void write_final_state(const LaProblem& p, int n, int hv, int c0, int c1, const float* S,
                       int lds = 0);

// Resident states are stored with rows padded by this many floats: a power-of-two row pitch
// (512 B for V = 128) maps a GEMM's B panel onto a few L1 sets and evicts it.
inline constexpr int kStateRowPad = 16;

}  // namespace hanpu::cpu
