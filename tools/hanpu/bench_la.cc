// `hanpu bench la`: times every (mech, strategy, dtype, HV, T) of the sweep side by side in
// one process and prints median ms, GFLOP/s by the one shared FLOP formula (la_flops), % of
// the FMA peak measured at start, per-core imbalance and the scratch memory each strategy held.
#include "bench_la.h"
#include "bench_report.h"
#include "flag_checks.h"

#include "bench_la_stages.h"
#include "bench_util.h"
#include "la_bench_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include <fmt/format.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hanpu/la.h"
#include "hanpu/machine.h"

namespace hanpu::cli {

namespace {

struct Row {
  std::string mech, strategy, dtype;
  int64_t T;
  int H, HV, K, V;
  double median_ms, stddev_ms, gflops, pct_peak, imbalance;
  int64_t extra_bytes;
  std::string group;   // "sweep" or "ablation"
  double peak_gflops;  // the FMA peak measured beside this row's runs
};

// The report's columns: llama-bench's markdown table by default (bench_report.h).
std::vector<ReportColumn> la_columns() {
  return kernel_columns(
      {"mech", "strategy", "dtype", "T", "H", "HV", "K", "V", "threads"},
      {{"imbalance_text", "imbalance"}, {"extra_mem", "extra mem"}, {"group", "group"}});
}

void report_row(BenchReport& report, const Row& r) {
  nlohmann::json j = {{"mech", r.mech},
                      {"strategy", r.strategy},
                      {"dtype", r.dtype},
                      {"T", r.T},
                      {"H", r.H},
                      {"HV", r.HV},
                      {"K", r.K},
                      {"V", r.V},
                      {"imbalance", r.imbalance},
                      {"extra_bytes", r.extra_bytes},
                      {"group", r.group}};
  add_timing(j, r.median_ms, r.stddev_ms, r.gflops, r.pct_peak, r.peak_gflops, report.tabular());
  if (report.tabular()) {
    j["imbalance_text"] = fmt::format("{:.3f}", r.imbalance);
    j["extra_mem"] = human_bytes(r.extra_bytes);
  }
  report.add(std::move(j));
}

}  // namespace

void add_bench_la_options(CLI::App& cmd, BenchLaOptions& o) {
  cmd.add_option("--mech", o.mech, "gdn and/or kda")->capture_default_str();
  cmd.add_option("--strategy", o.strategy, "strategies to time (see `hanpu la strategies`)")
      ->capture_default_str();
  cmd.add_option("--dtype", o.dtype, "storage dtypes of q/k/v/o: f32, f16, bf16")
      ->capture_default_str();
  cmd.add_option("--hv", o.hv, "value heads HV")->capture_default_str()->check(shape_range());
  cmd.add_option("--seq", o.seq, "sequence lengths T")
      ->capture_default_str()
      ->check(token_range(1));
  cmd.add_option("--heads", o.heads, "q/k heads H (HV must be a multiple)")
      ->capture_default_str()
      ->check(shape_range());
  cmd.add_option("--dim", o.dim, "head dim K = V (<= 256)")
      ->capture_default_str()
      ->check(shape_range());
  add_kernel_bench_flags(cmd, o.threads, o.repeats, o.report);
  cmd.add_option("--chunk", o.chunk, "chunk size C: 16, 32, 64, 128")
      ->capture_default_str()
      ->check(shape_range());
  cmd.add_flag("!--no-ablation", o.ablation, "skip the ablation rows (T = 1024, HV = 16)");
  cmd.add_flag("--stages", o.stages,
               "instead of the strategies: hanpu's chunk operators timed one by one on one thread "
               "(min/median per call; --repeats passes)");
  cmd.add_option("--stage-heads", o.stage_heads,
                 "value heads the --stages profile walks in lockstep")
      ->capture_default_str()
      ->check(shape_range());
}

int run_bench_la(const BenchLaOptions& o) {
  std::vector<LaMech> mechs;
  std::vector<DType> dtypes;
  if (!parse_all(o.mech, parse_la_mech, "--mech", "gdn or kda", mechs) ||
      !parse_all(o.dtype, parse_dtype, "--dtype", "f32, f16 or bf16", dtypes)) {
    return 2;
  }
  if (o.repeats < 1) {
    std::fprintf(stderr, "error: --repeats must be >= 1\n");
    return 2;
  }
  for (long T : o.seq) {
    if (T < 1) {
      std::fprintf(stderr, "error: --seq %ld: sequence lengths must be >= 1\n", T);
      return 2;
    }
  }
  for (int hv : o.hv) {
    if (hv < 1 || o.heads < 1 || hv % o.heads != 0) {
      std::fprintf(stderr, "error: --hv %d must be a positive multiple of --heads %d\n", hv,
                   o.heads);
      return 2;
    }
  }
  if (o.dim < 1 || o.dim > kLaMaxHeadDim) {
    std::fprintf(stderr, "error: --dim %d must be in [1, %d]\n", o.dim, kLaMaxHeadDim);
    return 2;
  }
  if (o.stage_heads < 1) {
    std::fprintf(stderr, "error: --stage-heads must be >= 1\n");
    return 2;
  }
  if (o.stages) return run_bench_la_stages(o, mechs, dtypes);
  FILE* info = stderr;  // stdout holds the table (or the JSON)
  const FmaPeak peak = print_machine_header(info, o.threads);
  BenchReport report(o.report.format(), la_columns(), peak.threads);
  std::fprintf(
      info,
      "# FLOPs per (token, value head) = 2 (3KV + 65K + 64V) for every strategy; "
      "median of %d runs after one warm-up, the strategies of a shape interleaved (forward, "
      "then reverse order, per round); %%peak against the FMA peak re-measured after each run "
      "(median)\n",
      o.repeats);
  struct Job {
    LaMech mech;
    DType dt;
    int HV;
    int64_t T;
    std::string strategy, group;
  };
  std::vector<Job> jobs;
  for (LaMech m : mechs)
    for (DType dt : dtypes)
      for (int hv : o.hv)
        for (long T : o.seq)
          for (const auto& s : o.strategy) jobs.push_back({m, dt, hv, T, s, "sweep"});
  if (o.ablation) {
    for (LaMech m : mechs)
      for (const char* s : {"fla", "hanpu-fused", "hanpu-reorder", "hanpu"})
        jobs.push_back({m, dtypes.front(), 16, 1024, s, "ablation"});
  }
  // The strategies of one (mech, dtype, HV, T) are timed in interleaved rounds on the same
  // inputs (bench_util.h), so neither their order nor a drift of the machine favours one.
  size_t done = 0;
  for (size_t g0 = 0; g0 < jobs.size();) {
    const Job& first = jobs[g0];
    size_t g1 = g0 + 1;
    while (g1 < jobs.size() && jobs[g1].mech == first.mech && jobs[g1].dt == first.dt &&
           jobs[g1].HV == first.HV && jobs[g1].T == first.T && jobs[g1].group == first.group) {
      ++g1;
    }
    std::fprintf(stderr, "[%zu-%zu/%zu] %s T=%ld HV=%d\n", done + 1, done + (g1 - g0), jobs.size(),
                 std::string(la_mech_name(first.mech)).c_str(), (long)first.T, first.HV);
    LaBenchInputs in =
        make_la_bench_inputs(first.mech, first.dt, first.T, o.heads, first.HV, o.dim, 42);
    const LaArgs args = la_bench_args(first.mech, first.dt, first.T, o.heads, first.HV, o.dim, in);
    std::vector<TimedRun> runs;
    for (size_t k = g0; k < g1; ++k) {
      LaOptions opt;
      opt.strategy = jobs[k].strategy;
      opt.threads = o.threads;
      opt.chunk_size = o.chunk;
      runs.push_back([&args, opt](std::vector<double>& busy, int64_t& extra) {
        LaStats stats;
        const Status st = la_prefill(args, opt, &stats);
        busy = stats.worker_busy_ms;
        extra = stats.extra_bytes;
        return st;
      });
    }
    std::vector<Timing> tms;
    if (!time_side_by_side(o.repeats, o.threads, runs, &tms)) return 1;
    for (size_t k = g0; k < g1; ++k) {
      const Job& j = jobs[k];
      const Timing& tm = tms[k - g0];
      const double gflops = la_flops(j.T, j.HV, o.dim, o.dim) / tm.median_ms / 1e6;
      report_row(report,
                 Row{std::string(la_mech_name(j.mech)), j.strategy, std::string(dtype_name(j.dt)),
                     j.T, o.heads, j.HV, o.dim, o.dim, tm.median_ms, stddev_of(tm.run_ms), gflops,
                     100 * gflops / tm.peak_gflops, tm.imbalance, tm.extra_bytes, j.group,
                     tm.peak_gflops});
    }
    done += g1 - g0;
    g0 = g1;
  }
  return 0;
}

}  // namespace hanpu::cli
