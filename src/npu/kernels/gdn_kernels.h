// GDN and KDA prefill kernels on the simulated Ascend-class NPU (every variant runs both), listed
// once (the table drives the tests, `hanpu sim` and its --variant values).
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "hanpu/status.h"
#include "npu/kernels/chunk_ops.h"
#include "plan/la_plan.h"

namespace hanpu::npu {

struct GdnVariant {
  std::string_view name;
  std::string_view summary;
  Status (*run)(NpuSim& sim, const GdnGm& gm);
  bool ablation_only = false;  // an intermediate step of the hanpu ablation
};

// HA-NPU's techniques, each switchable for the ablation (head-level mapping with fusion is
// what makes a kernel "fused" at all).
struct GdnTechniques {
  bool reorder = true;      // chunk-first in-place state update, GEMM-first rewrite
  bool plan_layout = true;  // the planner's per-chain layouts (else dense everywhere)
  // The tail heads split by value columns evenly over all cores, as the paper places 16
  // heads on 10 cores, instead of the placement the planner's cost and measurement pick.
  bool tail_columns_evenly = false;
};
Status gdn_fused(NpuSim& sim, const GdnGm& gm, const GdnTechniques& tech);
// What the planner sees of a machine, and the fused kernel's core schedule, shared by the
// kernel and `hanpu plan`: tiers I and II from the planner's modelled cost of a head part;
// tier III (the tail run chunk-head-chunk over all cores) when the kernel measures faster
// with it — both schedules run on the target's model over the first chunks (`shape` gives
// T, H, K, V, chunk, kda and whether states are read or written; its tensors are unused).
plan::TargetDesc plan_target(const NpuMachine& m);
plan::CoreSchedule fused_schedule(const NpuMachine& m, const GdnGm& shape,
                                  const plan::LayoutPlan& layouts, const GdnTechniques& tech);
std::span<const GdnVariant> gdn_variants();

// q and k L2-normalised as the baselines do it (FLA's l2norm_fwd, a kernel of its own before
// the flow): the q/k heads that `value_heads` read, a (chunk, head) unit at a time, to new GM
// tensors; *out is `gm` reading them, with qk_l2norm cleared. `own_launch`: q and k each in
// a launch of its own, standing for `framework_ops` eager operators each (see
// NpuSim::launch); else inside the current launch.
Status l2norm_qk(NpuSim& sim, const GdnGm& gm, const std::vector<int>& value_heads,
                 int framework_ops, bool own_launch, GdnGm* out);
// Every value head, 0 .. H - 1.
std::vector<int> all_value_heads(const GdnGm& gm);

// GM tensors of `shape` over T tokens on `sim`, all zero: a kernel's timing does not depend
// on its values, so the runs that pick a variant's tunables by measuring it use these.
GdnGm zero_inputs(NpuSim& sim, const GdnGm& shape, int64_t T);
// A tunable's cycles over a sequence of `chunks` chunks, from `run(n)`, the cycles of a run
// over its first n chunks: the whole run up to 32 chunks; past that extrapolated from runs
// over 16 and 32, since with the tunable fixed every launch's work grows linearly in the
// chunks (the searches of flashqla_segments and fla_value_block).
double probe_cycles(int64_t chunks, const std::function<double(int64_t)>& run);

// FlashQLA's flow (segment-parallel): launch 1 per (chunk, head) the gates' cumsum and
// A = (I + L)^-1 to GM (its chunk_local_cumsum and kkt_solve; unlike FLA it keeps no W or
// U in GM: each walk below rebuilds them on the core from A, k, v and beta, as its fused
// kernels do); launch 2 per (segment, head) walks the segment's chunks from a zero state,
// building its local state B and transition M (S_end = M S_start + B, the extra
// pre-computation that makes segments independent); launch 3 per head combines the
// segments' boundary states in order; launch 4 per (segment, head) walks the segment again
// from its true state with the output fused into the walk. The segment count is FlashQLA's
// tunable: gdn_flashqla takes the one flashqla_segments measures fastest, as hanpu's schedule
// takes its measured tail.
Status gdn_flashqla(NpuSim& sim, const GdnGm& gm);
Status gdn_flashqla_segments(NpuSim& sim, const GdnGm& gm, int segments);
// The fastest segment count for `shape` on `m` among 1, 2, 4, 8, 16 (at most the chunk
// count), each run on zero inputs (whole up to 32 chunks, extrapolated from 16 and 32 past
// that); *cycles (if given) gets each candidate's.
int flashqla_segments(const NpuMachine& m, const GdnGm& shape,
                      std::vector<std::pair<int, double>>* cycles = nullptr);
// HA-NPU: a core owns whole heads and walks all chunks with the fp32 state resident in UB
// (its fp16 copy in L1 for the cube); per chunk the GEMM-first group ([K;Q] S0, [K;Q] K^T
// on operands loaded to L0 once), the decay masks, (I + L)^-1 applied to the right-hand side,
// the outputs, then the state updated in place (chunk-first). GM sees only the compulsory
// traffic: q, k, v, g, beta and the initial state read once, o and the final state written once.
Status gdn_hanpu(NpuSim& sim, const GdnGm& gm);
// vLLM-Ascend's native path: the PyTorch reference chunk function it runs where Triton-Ascend
// kernels do not (its solve a 63-step row loop), as a chain of launches over every (chunk,
// head) unit (or, in the chunk loop the host drives, over the heads of one chunk), every
// intermediate through GM, each launch paying the host's dispatch of its eager operators.
Status gdn_vllm_ascend(NpuSim& sim, const GdnGm& gm);
// FLA's chunk-head-chunk flow as three launches through GM: (1) per (chunk, head) on any core:
// A = (I + L)^-1, W = A diag(beta exp(gam)) K, U = A diag(beta) V to GM; (2) per head: walk
// the chunks, write every chunk's input state h and Vn = U - W h to GM, update the state;
// (3) per (chunk, head): O = scale exp(gam) Q h + Qm Vn from GM.
Status gdn_fla(NpuSim& sim, const GdnGm& gm);
// The same three phases in one launch (FLA + MegaKernel): cross-core syncs through GM flags
// replace the launches; the intermediates still go through GM.
Status gdn_fla_mega(NpuSim& sim, const GdnGm& gm);
// FLA's three phases for `heads` only, over all cores: phases meet by launches or, with
// `one_launch`, by cross-core syncs; the first phase starts with a launch or, without
// `starts_launch`, a sync inside the running launch (the fused kernel's chunk-split tier).
// The recurrence launch deals (head, value block) units of `value_block` state columns
// (0: whole heads), FLA's grid (V / BV, heads); its other launches take whole heads.
Status fla_flow(NpuSim& sim, const GdnGm& gm, const std::vector<int>& heads, bool one_launch,
                bool starts_launch, int value_block = 0);
// FLA's value block for `shape` on `m`, its tunable: the fastest of whole heads (as the
// Triton-Ascend port of its chunk_delta_h kernel runs them: one program a head, both 64-column
// halves inside) and the 64 and 32 columns its GPU autotuning tries (those that divide V),
// each run on zero inputs (whole up to 32 chunks, extrapolated from 16 and 32 past that);
// *cycles (if given) gets each candidate's.
int fla_value_block(const NpuMachine& m, const GdnGm& shape, bool one_launch,
                    std::vector<std::pair<int, double>>* cycles = nullptr);

}  // namespace hanpu::npu
