// hanpu CLI: one binary, a subcommand per job. This file is the list of commands; each lives
// in a file of its own (command.h).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench_attn.h"
#include "bench_e2e.h"
#include "bench_la.h"
#include "bench_linear.h"
#include "command.h"
#include "hanpu/version.h"
#include "info_cmd.h"
#include "la_schedule_cmd.h"
#include "last_resort.h"
#include "list_cmds.h"
#include "perplexity_cmd.h"
#include "serve_cmd.h"
#include "plan_cmd.h"
#include "quantize_cmd.h"
#include "run_cmd.h"
#include "sim_cmd.h"
#include "simd/gemm.h"
#include "suggest.h"

namespace hanpu::cli {
namespace {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"run", "run a model: prefill a prompt, stream the reply (stdout), timings on stderr",
       command_from<RunOptions, add_run_options, run_model>()},
      {"serve", "an OpenAI-compatible HTTP server over a checkpoint (chat, completions, SSE)",
       command_from<ServeCmdOptions, add_serve_options, run_serve>()},
      {"perplexity",
       "a checkpoint's perplexity on a text file, chunked as llama.cpp's llama-perplexity",
       command_from<PerplexityCmdOptions, add_perplexity_options, run_perplexity>()},
      {"quantize",
       "quantize an F32/F16/BF16 GGUF to a llama.cpp mix (Q4_K_M, Q8_0, ...), as llama-quantize",
       command_from<QuantizeOptions, add_quantize_options, run_quantize>()},
      {"bench la", "GDN/KDA prefill: recurrent vs fla vs hanpu",
       command_from<BenchLaOptions, add_bench_la_options, run_bench_la>()},
      {"bench attn", "fused attention: balanced vs uniform vs layer, and decode",
       command_from<BenchAttnOptions, add_bench_attn_options, run_bench_attn>()},
      {"bench e2e", "whole-model prefill and decode on synthetic shapes or a checkpoint",
       command_from<BenchE2eOptions, add_bench_e2e_options, run_bench_e2e>()},
      {"bench linear", "the model's projections: hanpu's GEMM vs OpenBLAS",
       command_from<BenchLinearOptions, add_bench_linear_options, run_bench_linear>()},
      {"sim", "LA prefill on a modelled NPU: latency, traffic, buffers, energy per variant",
       command_from<SimOptions, add_sim_options, run_sim>()},
      {"plan", "HA-NPU's offline plan for a modelled NPU: op order, layouts, schedule",
       command_from<PlanOptions, add_plan_options, run_plan>()},
      {"la strategies", "list the LA strategies",
       command_from<NoOptions, add_no_options, run_la_strategies>()},
      {"la schedule", "print the HA-NPU core schedule for a shape",
       command_from<LaScheduleOptions, add_la_schedule_options, run_la_schedule>()},
      {"attn placements", "list the attention placements",
       command_from<NoOptions, add_no_options, run_attn_placements>()},
      {"info", "this machine: measured FMA peak, SIMD target, the kernels in use",
       command_from<InfoOptions, add_info_options, run_info>()},
  };
  return kCommands;
}

// Help lines of the command groups ("bench", "la", "attn").
const std::map<std::string, std::string>& group_summaries() {
  static const std::map<std::string, std::string> kGroups = {
      {"bench", "benchmarks (timed side by side, medians)"},
      {"la", "linear-attention helpers"},
      {"attn", "attention helpers"},
  };
  return kGroups;
}

int run_cli(int argc, char** argv) {
  CLI::App app{"hanpu: hybrid-attention LLMs on edge CPUs and modelled NPUs"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", fmt::format("hanpu {} (commit {}), SIMD target {}", HANPU_VERSION, HANPU_COMMIT,
                               simd::simd_target_name()));
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  std::map<std::string, CLI::App*> groups;
  for (const Command& c : commands()) {
    CLI::App* parent = &app;
    std::string name = c.path;
    if (const size_t space = c.path.find(' '); space != std::string::npos) {
      const std::string group = c.path.substr(0, space);
      name = c.path.substr(space + 1);
      CLI::App*& g = groups[group];
      if (!g) {
        g = app.add_subcommand(group, group_summaries().at(group));
        g->require_subcommand(1);
      }
      parent = g;
    }
    CLI::App* sub = parent->add_subcommand(name, c.summary);
    runners.emplace_back(sub, c.setup(*sub));
  }

  if (const int rc = check_subcommand(app, argc, argv); rc != 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version leave with 0; every refused command line with 2 (docs/cli.md).
    if (app.exit(e) == 0) return 0;
    suggest_flags(app, argc, argv);
    return 2;
  }
  for (const auto& [sub, run] : runners) {
    if (sub->parsed()) return run();
  }
  return 2;  // require_subcommand makes this unreachable
}

}  // namespace
}  // namespace hanpu::cli

int main(int argc, char** argv) {
  return hanpu::cli::run_with_last_resort([&] { return hanpu::cli::run_cli(argc, argv); });
}
