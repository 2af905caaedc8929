// Linear-attention prefill (Gated DeltaNet and Kimi Delta Attention) on CPU cores.
// Semantics follow FLA's chunk_gated_delta_rule / chunk_kda (docs/la-spec.md).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hanpu/status.h"
#include "hanpu/tensor.h"

namespace hanpu {

enum class LaMech : uint8_t { kGdn, kKda };
std::string_view la_mech_name(LaMech m);  // "gdn", "kda"
std::optional<LaMech> parse_la_mech(std::string_view name);

inline constexpr int kLaMaxHeadDim = 256;  // K and V up to this
inline constexpr int kLaChunkSizes[] = {16, 32, 64, 128};

// One LA prefill call over a packed batch of N sequences (T tokens in all).
//   q, k: [T, H, K]  storage dtype d;  v: [T, HV, V] dtype d;  o: [T, HV, V] dtype d
//   g:    GDN [T, HV], KDA [T, HV, K]  fp32, natural-log gates, every entry finite and <= 0
//   beta: [T, HV] fp32
//   initial_state (optional): [N, HV, K, V] fp32;  final_state (optional out): same shape;
//   final_state may be the initial_state buffer itself (the state is then updated in place)
//   cu_seqlens: empty (one sequence of T tokens) or N+1 offsets 0 = c0 <= c1 <= ... <= cN = T
//               (an empty sequence passes its initial state through to its final state)
// Value head hv reads q/k head hv / (HV / H) (grouped, FLA's mapping).
struct LaArgs {
  LaMech mech = LaMech::kGdn;
  TensorView q, k, v, g, beta;
  TensorView initial_state;
  MutTensorView o;
  MutTensorView final_state;
  std::vector<int64_t> cu_seqlens;
  std::optional<float> scale;  // default K^-1/2
  bool qk_l2norm = false;      // in-kernel x / sqrt(sum x^2 + 1e-6) of q and k
};

// How to run it. Strategies are listed once in la_strategies().
struct LaOptions {
  std::string strategy = "hanpu";
  int chunk_size = 64;  // one of kLaChunkSizes (ignored by "recurrent")
  int threads = 0;      // 0: HANPU_THREADS or every core of the machine
};

// What a run measured about itself.
struct LaStats {
  int64_t extra_bytes = 0;  // peak scratch memory the strategy held beyond inputs/outputs
  std::vector<double> worker_busy_ms;  // per worker, for imbalance
};

struct LaStrategyInfo {
  std::string_view name;
  std::string_view summary;
  bool ablation_only;  // an intermediate step of the hanpu ablation, not a headline strategy
};
std::span<const LaStrategyInfo> la_strategies();

// Validates everything first: on error nothing has been written to o or final_state.
// T = 0 is a valid no-op (final_state is then the initial state, or zeros).
Status la_prefill(const LaArgs& args, const LaOptions& options = {}, LaStats* stats = nullptr);

// The core schedule the hanpu strategy uses for this shape (HA-NPU §4), one line per core.
// Its unit is a q/k head with its GVA group of HV/H value heads ("h3" = q/k head 3).
std::string describe_la_schedule(const std::vector<int64_t>& seq_lens, int H, int HV, int V,
                                 int threads);

// The one FLOP count every strategy is measured with: the useful work of the chunked
// algorithm at C = 64 per (token, value head): 2 (3 K V + 65 K + 64 V), i.e. K S0, Q S0 and
// the state update (K V each), the lower triangles of K K^T and Q K^T ((C+1) K), the solve
// and Tril(QK) Vn (C V). Exps, norms and gating are not counted.
double la_flops(int64_t T, int HV, int K, int V);

// Where one core's time goes inside hanpu's fused chunk: every operator of the chunk timed
// on its own (a wall clock around each), over `rounds` passes through the sequence's chunks
// for value heads 0 .. heads-1 in lockstep (as a core walks its units), on the calling
// thread. Whole-run times on a shared machine drift from run to run; a stage's
// minimum over thousands of calls does not, which is what makes a kernel change measurable.
// One sequence (no cu_seqlens); writes o like la_prefill (final_state is left alone).
struct LaStageTime {
  // load, kk_qk, state, mask, rhs, solve, outputs, update, store; KDA has no kk_qk (its
  // products run inside mask: the decay sits inside the sum).
  std::string_view stage;
  double min_us = 0;
  double median_us = 0;
  // Multiply-adds of the operator's products per full chunk and value head, counted as the
  // work the operator needs (the triangles of K K^T, Q K^T, the solve and the outputs, not
  // the blocks the kernel rounds them up to); 0 for element-wise stages.
  double fmas = 0;
};
Status profile_la_chunk_stages(const LaArgs& args, int chunk_size, int heads, int rounds,
                               std::vector<LaStageTime>* out);

// Decode is la_prefill with strategy "recurrent" on T = 1 per sequence, carrying the state.
}  // namespace hanpu
