// `hanpu bench attn`: the fused attention benchmark (a markdown table, or -o csv|json|jsonl).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_report.h"

namespace hanpu::cli {

struct BenchAttnOptions {
  std::vector<std::string> placement = {"balanced", "uniform", "layer"};
  std::vector<std::string> dtype = {"f32"};
  std::vector<std::string> products = {
      "auto"};  // prefill products (AttnProducts); several: side by side
  std::string mask = "causal";
  long window = 1024;           // sliding mask only
  std::vector<long> seq;        // T (prefill rows); empty: each shape's default lengths
  int heads = 0, kv_heads = 0;  // 0: the two default shapes
  int dim = 0;
  std::vector<long> decode_len = {1024, 4096, 16384, 32768};
  bool decode = true;
  long layer_max_seq = 8192;                     // the layer baseline holds T x T floats per head
  std::vector<int> q_tile = {0}, kv_tile = {0};  // 0: heuristic; several: every pair, interleaved
  int threads = 0;
  int repeats = 3;
  ReportFlags report;  // -o md|csv|json|jsonl, --json
};

void add_bench_attn_options(CLI::App& cmd, BenchAttnOptions& o);
int run_bench_attn(const BenchAttnOptions& o);

}  // namespace hanpu::cli
