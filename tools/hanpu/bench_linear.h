// `hanpu bench linear`: the model's dense projections (y = x W^T) as cpu::linear runs them
// (AMX tiles, OpenBLAS in hanpu's units, or hanpu's micro-kernel), side by side with one
// multi-threaded cblas_sgemm where the build found OpenBLAS.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_report.h"

namespace hanpu::cli {

struct BenchLinearOptions {
  std::string model = "qwen3.5-0.8b";  // which synthetic model's projection shapes
  std::vector<std::string> proj;       // empty: every projection of the model
  std::vector<long> seq = {1, 1024};   // rows T of x (1: the decode GEMV; 1024: a prefill call)
  std::vector<std::string> weights = {"bf16", "f32"};
  bool openblas = true;  // also time cblas_sgemm (f32 weights) when built with it
  // Projection kernels timed side by side (cpu/nn/projection_kernels.h); "all": every one
  // this CPU has. Rows that would run the same kernel as an earlier one are dropped.
  std::vector<std::string> projection = {"all"};
  int threads = 0;
  int repeats = 5;
  bool cold = false;   // evict the caches before each timed call
  ReportFlags report;  // -o md|csv|json|jsonl, --json
};

void add_bench_linear_options(CLI::App& cmd, BenchLinearOptions& o);
int run_bench_linear(const BenchLinearOptions& o);

}  // namespace hanpu::cli
