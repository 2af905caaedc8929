// `hanpu sim`: LA prefill (or, with --op attn, fused attention) on a modelled NPU — every variant
// executed by the simulator on seeded random inputs, its output checked against the CPU's fp32
// recurrent kernel (nmse_o; the tests check against float64), one row per run (table, or JSON lines
// with --json).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace hanpu::cli {

struct SimOptions {
  std::string op = "la";               // la (Ascend-class targets) or attn (spatial targets)
  std::string target = "ascend-310p";  // attn: xdna2 unless given
  std::vector<std::string> placement = {"uniform", "sparsity-aware"};  // attn
  std::vector<std::string> mech = {"gdn"};
  std::vector<int> heads = {16, 32, 48};
  std::vector<long> seq = {512, 1024, 2048, 4096};
  std::vector<std::string> variant = {"all"};
  int dim = 128;  // K = V
  int chunk = 64;
  bool ablation = false;  // the ablation steps (fla -> +mapping -> +reordering -> +layout)
  bool check = true;      // compare each run's outputs with the float64 reference
  bool json = false;
};

void add_sim_options(CLI::App& cmd, SimOptions& o);
int run_sim(const SimOptions& o);
// --op attn: fused attention on a spatial target (STEEL), one row per run.
int run_sim_attn(const SimOptions& o);

}  // namespace hanpu::cli
