// `hanpu bench la`: the LA prefill benchmark (a markdown table, or -o csv|json|jsonl).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_report.h"

namespace hanpu::cli {

// Every option of the command, declared once: CLI11 parsing, help and the printed header
// all come from this struct and add_bench_la_options().
struct BenchLaOptions {
  std::vector<std::string> mech = {"gdn", "kda"};
  std::vector<std::string> strategy = {"recurrent", "fla", "hanpu"};
  std::vector<std::string> dtype = {"f32"};
  std::vector<int> hv = {16, 32, 48};
  std::vector<long> seq = {512, 1024, 2048, 4096, 8192};
  int heads = 16;  // H (q/k heads)
  int dim = 128;   // K = V
  int threads = 0;
  int repeats = 5;
  int chunk = 64;
  bool ablation = true;  // add the Figure-18 style ablation rows (T = 1024, HV = 16)
  bool stages = false;   // profile hanpu's chunk operators on one core instead (bench_la_stages.h)
  int stage_heads = 8;   // value heads walked in lockstep by the profile
  ReportFlags report;    // -o md|csv|json|jsonl, --json
};

void add_bench_la_options(CLI::App& cmd, BenchLaOptions& o);
int run_bench_la(const BenchLaOptions& o);

}  // namespace hanpu::cli
