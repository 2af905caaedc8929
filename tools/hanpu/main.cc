// hanpu CLI: one binary, subcommands per job (run, perplexity, bench la, bench attn, bench e2e, bench linear, sim, la strategies, la schedule,
// attn placements, info).
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench_attn.h"
#include "flag_checks.h"
#include "hanpu/version.h"
#include "simd/gemm.h"
#include "last_resort.h"
#include "suggest.h"
#include "bench_e2e.h"
#include "bench_la.h"
#include "bench_linear.h"
#include "sim_cmd.h"
#include "hanpu/npu.h"
#include "perplexity_cmd.h"
#include "run_cmd.h"
#include "hanpu/attn.h"
#include "hanpu/la.h"
#include "hanpu/machine.h"
#include "cpu/nn/blas_sgemm.h"
#include "simd/gemm_bf16_dot.h"
#include "simd/gemm_bf16_pairs.h"

namespace {

using hanpu::cli::shape_range;
using hanpu::cli::thread_range;
using hanpu::cli::token_range;

int run_cli(int argc, char** argv) {
  CLI::App app{"hanpu: hybrid-attention LLM kernels for edge hardware"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("hanpu {} (commit {}), SIMD target {}", HANPU_VERSION, HANPU_COMMIT,
                                                hanpu::simd::simd_target_name()));

  hanpu::cli::RunOptions run_opts;
  auto* run = app.add_subcommand("run", "run a model: prefill a prompt, stream generated text, print tokens/s");
  hanpu::cli::add_run_options(*run, run_opts);

  hanpu::cli::PerplexityCmdOptions ppl_opts;
  auto* ppl = app.add_subcommand("perplexity", "a checkpoint's perplexity on a text file, chunked as llama.cpp's llama-perplexity");
  hanpu::cli::add_perplexity_options(*ppl, ppl_opts);

  auto* bench = app.add_subcommand("bench", "benchmarks (timed side by side, medians)");
  bench->require_subcommand(1);
  hanpu::cli::BenchLaOptions bench_la;
  auto* bench_la_cmd = bench->add_subcommand("la", "GDN/KDA prefill: recurrent vs fla vs hanpu");
  hanpu::cli::add_bench_la_options(*bench_la_cmd, bench_la);
  hanpu::cli::BenchAttnOptions bench_attn;
  auto* bench_attn_cmd = bench->add_subcommand("attn", "fused attention: balanced vs uniform vs layer, and decode");
  hanpu::cli::add_bench_attn_options(*bench_attn_cmd, bench_attn);

  hanpu::cli::BenchE2eOptions bench_e2e;
  auto* bench_e2e_cmd = bench->add_subcommand("e2e", "whole-model prefill and decode on synthetic Qwen3.5 shapes");
  hanpu::cli::add_bench_e2e_options(*bench_e2e_cmd, bench_e2e);

  hanpu::cli::BenchLinearOptions bench_linear;
  auto* bench_linear_cmd = bench->add_subcommand("linear", "the model's projections: hanpu's GEMM vs OpenBLAS");
  hanpu::cli::add_bench_linear_options(*bench_linear_cmd, bench_linear);

  hanpu::cli::SimOptions sim_opts;
  auto* sim = app.add_subcommand("sim", "LA prefill on a modelled NPU: latency, traffic, buffers, energy per variant");
  hanpu::cli::add_sim_options(*sim, sim_opts);

  std::string plan_target = "ascend-310p";
  int plan_heads = 16, plan_dim = 128, plan_chunk = 64;
  long plan_seq = 4096;
  std::string plan_mech = "gdn";
  auto* plan = app.add_subcommand("plan", "HA-NPU's offline plan for a modelled NPU: op order, layouts, schedule");
  plan->add_option("--target", plan_target, "NPU target (built-in name or JSON file)")->capture_default_str();
  plan->add_option("--mech", plan_mech, "gdn or kda")->capture_default_str();
  plan->add_option("--heads", plan_heads, "heads H")->capture_default_str()->check(shape_range());
  plan->add_option("--seq", plan_seq, "sequence length T")->capture_default_str()->check(token_range(1));
  plan->add_option("--dim", plan_dim, "head dim K = V")->capture_default_str()->check(shape_range());
  plan->add_option("--chunk", plan_chunk, "chunk size C")->capture_default_str()->check(shape_range());

  auto* attn = app.add_subcommand("attn", "attention helpers");
  attn->require_subcommand(1);
  auto* placements = attn->add_subcommand("placements", "list the attention placements");

  auto* la = app.add_subcommand("la", "linear-attention helpers");
  la->require_subcommand(1);
  auto* strategies = la->add_subcommand("strategies", "list the LA strategies");
  int sched_hv = 16, sched_heads = 0, sched_v = 128, sched_threads = 0;
  std::vector<long> sched_seq = {4096};
  auto* schedule = la->add_subcommand("schedule", "print the HA-NPU core schedule for a shape");
  schedule->add_option("--hv", sched_hv, "value heads HV")->capture_default_str()->check(shape_range());
  schedule->add_option("--heads", sched_heads, "q/k heads H (0: H = HV)")->capture_default_str()->check(shape_range(0));
  schedule->add_option("--v", sched_v, "value dim V")->capture_default_str()->check(shape_range());
  schedule->add_option("--seq", sched_seq, "sequence lengths (several: varlen)")->capture_default_str()->check(token_range(1));
  schedule->add_option("--threads", sched_threads, "cores (0: this machine's)")->capture_default_str()->check(thread_range());

  auto* info = app.add_subcommand("info", "measured FMA peak, SIMD target, micro-kernel");
  int info_threads = 0;
  info->add_option("--threads", info_threads, "threads (0: all cores)")->check(thread_range());

  if (const int rc = hanpu::cli::check_subcommand(app, argc, argv); rc != 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    if (rc != 0) hanpu::cli::suggest_flags(app, argc, argv);
    return rc;
  }

  if (*run) return hanpu::cli::run_model(run_opts);
  if (*ppl) return hanpu::cli::run_perplexity(ppl_opts);
  if (*bench_la_cmd) return hanpu::cli::run_bench_la(bench_la);
  if (*sim) return hanpu::cli::run_sim(sim_opts);
  if (*plan) {
    if (plan_mech != "gdn" && plan_mech != "kda") {
      std::fprintf(stderr, "error: --mech %s: gdn or kda\n", plan_mech.c_str());
      return 2;
    }
    std::string text;
    const hanpu::LaMech mech = plan_mech == "kda" ? hanpu::LaMech::kKda : hanpu::LaMech::kGdn;
    const hanpu::Status st =
        hanpu::describe_npu_plan(plan_target, mech, plan_heads, plan_seq, plan_dim, plan_chunk, &text);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 2;
    }
    std::printf("%s", text.c_str());
    return 0;
  }
  if (*bench_e2e_cmd) return hanpu::cli::run_bench_e2e(bench_e2e);
  if (*bench_linear_cmd) return hanpu::cli::run_bench_linear(bench_linear);
  if (*bench_attn_cmd) return hanpu::cli::run_bench_attn(bench_attn);
  if (*placements) {
    for (const auto& p : hanpu::attn_placements()) {
      std::printf("%-10s %s\n", std::string(p.name).c_str(), std::string(p.summary).c_str());
    }
    return 0;
  }
  if (*strategies) {
    for (const auto& s : hanpu::la_strategies()) {
      std::printf("%-14s %s%s\n", std::string(s.name).c_str(), std::string(s.summary).c_str(),
                  s.ablation_only ? "  [ablation step]" : "");
    }
    return 0;
  }
  if (*schedule) {
    std::vector<int64_t> lens(sched_seq.begin(), sched_seq.end());
    const int heads = sched_heads > 0 ? sched_heads : sched_hv;
    if (sched_hv < 1 || heads < 1 || sched_hv % heads != 0 || sched_v < 1) {
      std::fprintf(stderr, "error: --hv %d must be a positive multiple of --heads %d, --v >= 1\n",
                   sched_hv, heads);
      return 2;
    }
    std::printf("%s",
                hanpu::describe_la_schedule(lens, heads, sched_hv, sched_v, sched_threads).c_str());
    return 0;
  }
  if (*info) {
    const hanpu::FmaPeak p = hanpu::measure_fma_peak(info_threads);
    std::printf("threads %d, SIMD target %s\nFMA peak %.1f GFLOP/s (%.1f per core)\n", p.threads,
                p.simd_target.c_str(), p.gflops, p.per_core_gflops);
    std::printf("micro-kernel: %s, %.1f GFLOP/s on 128^3 GEMMs\n",
                hanpu::describe_micro_kernel().c_str(), hanpu::measure_gemm_gflops(info_threads));
    const hanpu::FmaPeak amx = hanpu::measure_amx_peak(info_threads);
    if (amx.gflops > 0) {
      std::printf("matrix unit: AMX bf16 tiles, %.1f GFLOP/s (%.1f per core)\n", amx.gflops, amx.per_core_gflops);
    } else {
      std::printf("matrix unit: none (%s)\n", amx.simd_target.c_str());
      const hanpu::FmaPeak dot = hanpu::measure_bf16_dot_peak(info_threads);
      if (dot.gflops > 0) {
        std::printf("bf16 dot instruction (AVX512-BF16): %.1f GFLOP/s (%.1f per core)\n", dot.gflops,
                    dot.per_core_gflops);
        std::printf("projections of a prefill: bf16 on hanpu's dot kernel (%d x 32 register tile, x rounded to bf16; "
                    "HANPU_BF16_DOT=0: the pairs kernel), f32 and f16 on %s\n",
                    hanpu::simd::gemm_bf16_dot_tile_rows(), hanpu::cpu::blas_sgemm_describe().c_str());
      } else {
        std::printf("projections of a prefill: bf16 on hanpu's pairs kernel (%d x %d register tile), f32 and f16 on %s\n",
                    hanpu::simd::gemm_bf16_pairs_tile_rows(), hanpu::simd::gemm_bf16_pairs_tile_cols(),
                    hanpu::cpu::blas_sgemm_describe().c_str());
      }
    }
    // The attention prefill's products on a bf16 KV cache (hanpu/attn.h), as AttnProducts::kAuto picks them.
    std::printf("attention prefill on a bf16 KV cache: %s\n",
                hanpu::attn_auto_bf16_products(hanpu::DType::kBF16)
                    ? "bf16 products on the dot instruction (q and P rounded to bf16, fp32 sums; HANPU_BF16_DOT=0: fp32)"
                    : "fp32 products (no bf16 dot instruction here, or HANPU_BF16_DOT=0)");
    return 0;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return hanpu::cli::run_with_last_resort([&] { return run_cli(argc, argv); });
}
