// `hanpu bench e2e`: whole-model prefill and decode on synthetic shapes, one row per
// (model, prompt length, LA strategy).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_report.h"

namespace hanpu::cli {

struct BenchE2eOptions {
  std::vector<std::string> model = {"qwen3.5-0.8b", "qwen3.5-2b"};
  std::vector<long> seq = {512, 2048, 4096};
  std::vector<std::string> la = {"recurrent", "fla", "hanpu"};
  int decode_tokens = 16;
  std::string weights = "auto";                  // synthetic: bf16
  std::vector<std::string> kv_cache = {"auto"};  // KV-cache dtypes (auto: the weights' dtype)
  std::string projection = "auto";  // the projections' kernel (ModelRunOptions::projection)
  int threads = 0;
  int repeats = 1;
  ReportFlags report;  // -o md|csv|json|jsonl, --json
};

void add_bench_e2e_options(CLI::App& cmd, BenchE2eOptions& o);
int run_bench_e2e(const BenchE2eOptions& o);

}  // namespace hanpu::cli
