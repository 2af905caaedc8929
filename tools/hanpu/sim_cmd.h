// `hanpu sim`: LA prefill (or, with --op attn, fused attention) on a modelled NPU — every variant
// executed by the simulator on seeded random inputs, its output (LA: and final state) checked
// against the CPU's fp32 recurrent kernel (attention: the float64 reference; nmse_o, nmse_state;
// the tests check LA against float64), one row per run (table, or JSON lines with --json). A run
// whose NMSE passes --max-nmse (or is not finite) fails the command after its row is printed.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace hanpu::cli {

struct SimOptions {
  // la (Ascend-class targets) or attn (full attention: STEEL on spatial targets, fused
  // FlashAttention on Ascend-class ones)
  std::string op = "la";
  std::string target = "ascend-310p";                                  // attn: xdna2 unless given
  std::vector<std::string> placement = {"uniform", "sparsity-aware"};  // attn
  std::vector<std::string> mech = {"gdn"};
  std::vector<int> heads = {16, 32, 48};
  std::vector<long> seq = {512, 1024, 2048, 4096};
  std::vector<std::string> variant = {"all"};
  int dim = 128;     // K = V
  int gva = 1;       // LA: value heads per q/k head (--heads counts the value heads)
  int kv_heads = 0;  // attn on Ascend-class targets: kv heads (0: as many as --heads)
  std::vector<std::string> model = {"qwen3.5-2b"};  // prefill, request: the model shapes
  int output_tokens = 8;                            // request: tokens out (the first from prefill)
  bool qk_l2norm = false;  // LA: q/k as raw projections, L2-normalised inside the kernel
  int chunk = 64;
  bool ablation = false;  // the ablation steps (fla -> +mapping -> +reordering -> +layout)
  bool check = true;      // compare each run's outputs with the reference
  // A checked NMSE above it (or not finite) fails the command. Every correct run is far below:
  // about 2e-7 for LA's fp16 outputs and fp32 states, and up to 4e-5 for DATO's attention at
  // 2048 tokens (growing with T); a wrong kernel is near 1.
  double max_nmse = 1e-3;
  bool json = false;
};

// sum (got - want)^2 / sum want^2 in double; infinite where the sum is not finite.
double nmse(const std::vector<float>& got, const std::vector<float>& want);
double nmse(const std::vector<float>& got, const std::vector<double>& want);

// The runs whose check failed, reported together once every row is printed.
class NmseGate {
 public:
  explicit NmseGate(double max) : max_(max) {}
  // Row `row`'s NMSE of `what` (negative: not checked).
  void check(const std::string& row, const char* what, double nmse);
  // 0, or 1 after naming every failed run on stderr.
  int finish() const;

 private:
  double max_;
  std::vector<std::string> failed_;
};

void add_sim_options(CLI::App& cmd, SimOptions& o);
int run_sim(const SimOptions& o);
// --op attn: fused attention on a spatial target (STEEL), one row per run.
int run_sim_attn(const SimOptions& o);
// --op attn on an Ascend-class target: the fused FlashAttention kernel, one row per run.
int run_sim_attn_ascend(const SimOptions& o);
// --op prefill: a hybrid model's whole prefill on an Ascend-class target, one row per run.
int run_sim_prefill(const SimOptions& o);
// --op request: a request (prefill, LM head, decode steps) per LA variant, one row each.
int run_sim_request(const SimOptions& o);

}  // namespace hanpu::cli
