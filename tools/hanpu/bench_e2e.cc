// `hanpu bench e2e` (see bench_e2e.h). Each model is built once (seeded random weights);
// every row prefills a fresh random prompt of T tokens and then decodes decode_tokens more.
#include "bench_e2e.h"
#include "bench_report.h"
#include "parallel/thread_pool.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "flag_checks.h"
#include "hanpu/dtype.h"
#include "hanpu/attn.h"
#include "hanpu/engine.h"
#include "hanpu/la.h"
#include "cpu/nn/linear.h"
#include "hanpu/machine.h"

namespace hanpu::cli {

namespace {

// Peak resident memory of this process (VmHWM), bytes; 0 where /proc is missing.
int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  123 kB"
  }
  return 0;
}

// Resets the peak to the current resident size (Linux clear_refs 5), so the buffer of the
// bandwidth probe does not count as the model's memory.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// The process's peak resident size without the bandwidth probes' buffers: the peak so far is
// banked before a probe's buffer is touched and the kernel's high-water mark reset after it
// is freed. (While a run's per-step probe holds its buffer, the decode's own peak is not
// seen; a decode holds less than the prefill before it.)
class PeakRss {
 public:
  void bank() { peak_ = std::max(peak_, peak_rss_bytes()); }
  void reset() { reset_peak_rss(); }
  int64_t peak() {
    bank();
    return peak_;
  }

 private:
  int64_t peak_ = 0;
};

// The per-step probe reads 64 MiB (2x the last-level cache of the VMs measured here, a
// tenth of a 0.8B step's bytes) just before each decode step: the machine's DRAM rate drifts
// within a minute on a shared host, so each step is set against the rate
// read next to it rather than one measured at the start.
constexpr size_t kStepProbeBytes = size_t{64} << 20;

// Bytes decode step k moves after a prompt of T tokens: the weights, the LA state read and
// written, the KV cache read whole (T + k + 1 positions, the step's own appended first) and
// one position written.
double step_bytes_with_state(const EngineInfo& ei, size_t kv_dtype_bytes, int64_t T, int k) {
  const double kv_position =
      static_cast<double>(ei.kv_values_per_position) * static_cast<double>(kv_dtype_bytes);
  return static_cast<double>(ei.decode_bytes_per_token) +
         2.0 * static_cast<double>(ei.la_state_bytes) +
         kv_position * (static_cast<double>(T + k + 1) + 1);
}

}  // namespace

void add_bench_e2e_options(CLI::App& cmd, BenchE2eOptions& o) {
  cmd.add_option("-m,--model", o.model,
                 fmt::format("synthetic models ({}) or checkpoints (a folder or .gguf)",
                             fmt::join(Engine::synthetic_models(), ", ")))
      ->capture_default_str();
  cmd.add_option("--seq", o.seq, "prompt lengths")->capture_default_str()->check(token_range(1));
  cmd.add_option("--la", o.la, "LA strategies")->capture_default_str()->check(la_strategy_names());
  cmd.add_option("--decode-tokens", o.decode_tokens, "tokens decoded after each prefill")
      ->capture_default_str()
      ->check(token_range(0));
  cmd.add_option("--weights", o.weights,
                 "projections in auto (bf16 for synthetic models, a checkpoint's own dtype or a "
                 "quantized GGUF's blocks), f32, bf16, f16, or quantized at load to a GGUF type")
      ->capture_default_str()
      ->check(weight_names());
  cmd.add_option("--kv-cache", o.kv_cache,
                 "KV-cache dtypes: auto (the weights' dtype), f32, bf16, f16; several are timed "
                 "alternately")
      ->capture_default_str()
      ->check(storage_names());
  cmd.add_option("--projection", o.projection,
                 "projection kernel: auto, amx, dot, pairs, blas, fma")
      ->capture_default_str()
      ->check(projection_names());
  cmd.add_option("-t,--threads", o.threads, "cores (0: all)")
      ->capture_default_str()
      ->check(thread_range());
  cmd.add_option("--repeats", o.repeats, "runs per row (median)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  add_report_flags(cmd, o.report);
}

int run_bench_e2e(const BenchE2eOptions& o) {
  for (const auto& s : o.la) {
    const auto& all = la_strategies();
    if (std::none_of(all.begin(), all.end(), [&](const auto& x) { return x.name == s; })) {
      std::fprintf(stderr, "error: --la '%s' is not one of `hanpu la strategies`\n", s.c_str());
      return 2;
    }
  }
  for (long T : o.seq) {
    if (T < 1) {
      std::fprintf(stderr, "error: --seq %ld must be >= 1\n", T);
      return 2;
    }
  }
  // stdout holds the table (or the JSON); the machine and model notes go to stderr.
  FILE* info = stderr;
  const int threads = o.threads > 0 ? o.threads : ThreadPool::default_threads();
  BenchReport report(o.report.format(),
                     {{"model", "model"},
                      {"size", "size"},
                      {"params", "params"},
                      {"la", "la"},
                      {"kv_cache", "kv"},
                      {"threads", "threads"},
                      {"test", "test"},
                      {"t_s", "t/s"},
                      {"pct_bound", "%bound"},
                      {"pct_all", "%all"},
                      {"la_pct", "LA%"},
                      {"attn_pct", "attn%"},
                      {"mlp_pct", "MLP%"},
                      {"la_kernel_pct", "LAkern%"},
                      {"attn_kernel_pct", "ATkern%"},
                      {"peak_rss", "peak RSS"}},
                     threads);
  print_machine_header(info, o.threads);
  PeakRss rss;
  rss.bank();
  const double start_gbps = measure_memory_read_gbps(o.threads, size_t{256} << 20, 3);
  rss.reset();
  std::fprintf(
      info,
      "# measured DRAM read bandwidth %.1f GB/s now; %%bound: each decode step's rate over the "
      "bandwidth bound = the rate a %zu MiB read probe run just before that step reads (the "
      "faster of a plain and a software-prefetched read) / the "
      "weight bytes a "
      "token reads (all but the embedding table; MoE: the routed share of the experts), median "
      "over the "
      "steps (mem_GB/s: the probes' median); %%all: the same with every byte the step moves, the "
      "weights "
      "plus the LA state (read and written) and the KV cache (read whole, one position written)\n",
      start_gbps, kStepProbeBytes >> 20);
  std::fprintf(
      info,
      "# prefill of a random prompt of T tokens, then %d decoded tokens (greedy); median of %d; "
      "peak RSS is the process's, so far\n",
      o.decode_tokens, o.repeats);
  const std::vector<std::string> synthetic_names = Engine::synthetic_models();
  const cpu::ProjectionKernel ceiling =
      cpu::parse_projection_kernel(o.projection).value_or(cpu::ProjectionKernel::kAuto);
  for (const std::string& model : o.model) {
    // A synthetic model's name, or a checkpoint (folder or .gguf) read as `hanpu run` reads it:
    // the prompts are random token ids either way.
    const bool synthetic =
        std::find(synthetic_names.begin(), synthetic_names.end(), model) != synthetic_names.end();
    std::unique_ptr<Engine> engine;
    std::fprintf(stderr, "%s %s...\n", synthetic ? "building" : "loading", model.c_str());
    const Status st = synthetic ? Engine::synthetic(model, 1, &engine, o.weights)
                                : Engine::load(model, &engine, o.weights);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 2;
    }
    const EngineInfo ei = engine->info();
    const std::string name =
        synthetic ? model : ei.name;  // a checkpoint: its folder's or file's name
    std::fprintf(info,
                 "# %s: a decode step reads %s of weights, reads and writes %s of LA state, and "
                 "reads %lld KV "
                 "values per position of context (times the KV dtype's bytes)\n",
                 name.c_str(), human_bytes(ei.decode_bytes_per_token).c_str(),
                 human_bytes(ei.la_state_bytes).c_str(),
                 static_cast<long long>(ei.kv_values_per_position));
    std::vector<std::string> kvs;  // resolved
    std::vector<size_t> kv_bytes;  // of each resolved dtype
    for (const std::string& kv : o.kv_cache) {
      std::string resolved;
      const Status ks = engine->kv_cache_dtype(kv, &resolved);
      if (!ks.ok()) {
        std::fprintf(stderr, "error: --kv-cache: %s\n", ks.message().c_str());
        return 2;
      }
      const std::optional<DType> dt = parse_dtype(resolved);
      if (!dt) {
        std::fprintf(stderr, "error: --kv-cache: '%s' resolved to '%s', not a dtype\n", kv.c_str(),
                     resolved.c_str());
        return 2;
      }
      kvs.push_back(resolved);
      kv_bytes.push_back(dtype_size(*dt));
    }
    for (long T : o.seq) {
      for (const std::string& la : o.la) {
        std::fprintf(stderr, "[%s] %s T=%ld\n", name.c_str(), la.c_str(), T);
        // Repeats of every KV dtype alternate, so a slow spell of the machine falls on all.
        std::vector<std::vector<GenerateStats>> runs_of(kvs.size());
        std::vector<std::vector<std::vector<double>>> gbps_of(
            kvs.size());  // per run, the probe before each step
        for (int r = 0; r < o.repeats; ++r) {
          for (size_t ki = 0; ki < kvs.size(); ++ki) {
            const std::vector<int> prompt = engine->random_prompt(
                static_cast<int>(T), static_cast<uint64_t>(T) * 31 + static_cast<uint64_t>(r));
            GenerateOptions g;
            g.la_strategy = la;
            g.threads = o.threads;
            g.projection = o.projection;
            g.max_tokens = o.decode_tokens;
            g.stop_at_eos = false;
            g.kv_cache = kvs[ki];
            std::unique_ptr<MemoryReadProbe> probe;  // made at the first step, after the prefill
            std::vector<double> step_gbps;
            g.between_decode_steps = [&] {
              if (!probe) {
                rss.bank();
                probe = std::make_unique<MemoryReadProbe>(o.threads, kStepProbeBytes);
              }
              step_gbps.push_back(probe->read_gbps());
            };
            GenerateStats s;
            const Status gs = engine->generate(prompt, g, nullptr, nullptr, &s);
            if (probe) {  // the peak before it was banked when it was made
              probe.reset();
              rss.reset();
            }
            if (!gs.ok()) {
              std::fprintf(stderr, "error: %s\n", gs.message().c_str());
              return 1;
            }
            runs_of[ki].push_back(s);
            gbps_of[ki].push_back(step_gbps);
          }
        }
        for (size_t ki = 0; ki < kvs.size(); ++ki) {
          std::vector<GenerateStats>& runs = runs_of[ki];
          const int steps =
              std::max(0, o.decode_tokens - 1);  // the first token comes from the prefill
          // Decode rate: the median run's. Its share of the bound: per step, the step's rate
          // over the probe read just before it; the median over a run's steps, then over runs
          // (before the runs are reordered by prefill time below: gbps_of[ki][r] is runs[r]'s).
          std::vector<double> dec, pct, pct_all, probes;
          for (size_t r = 0; r < runs.size(); ++r) {
            dec.push_back(steps > 0 ? steps / (runs[r].decode_ms / 1e3) : 0.0);
            const std::vector<double>& step_ms = runs[r].decode_step_ms;
            const std::vector<double>& gbps = gbps_of[ki][r];
            std::vector<double> run_pct, run_all;
            for (size_t k = 0; k < step_ms.size() && k < gbps.size(); ++k) {
              const double gbps_step = 1e-6 / step_ms[k];  // GB/s per byte moved
              run_pct.push_back(100 * gbps_step * static_cast<double>(ei.decode_bytes_per_token) /
                                gbps[k]);
              run_all.push_back(100 * gbps_step *
                                step_bytes_with_state(ei, kv_bytes[ki], T, static_cast<int>(k)) /
                                gbps[k]);
              probes.push_back(gbps[k]);
            }
            if (!run_pct.empty()) {
              pct.push_back(median(run_pct));
              pct_all.push_back(median(run_all));
            }
          }
          const double decode_tps = median(dec);
          std::vector<double> pre;  // each run's prefill rate
          for (const GenerateStats& r : runs) pre.push_back(T / (r.prefill_ms / 1e3));
          const double pct_bound = pct.empty() ? 0.0 : median(pct);
          const double pct_bound_all = pct_all.empty() ? 0.0 : median(pct_all);
          const double mem_gbps = probes.empty() ? 0.0 : median(probes);
          std::sort(runs.begin(), runs.end(),
                    [](const auto& a, const auto& b) { return a.prefill_ms < b.prefill_ms; });
          const GenerateStats& s = runs[runs.size() / 2];
          const TimeSplit& sp = s.prefill_split;
          const double part = sp.total_ms();
          const double prefill_tps = T / (s.prefill_ms / 1e3);
          const int64_t peak_rss = rss.peak();
          double all_bytes = 0;  // a step's, the mean over the steps
          for (int k = 0; k < steps; ++k)
            all_bytes += step_bytes_with_state(ei, kv_bytes[ki], T, k) / steps;
          if (!report.tabular()) {
            nlohmann::json j{
                {"model", name},
                {"la", la},
                {"T", T},
                {"prefill_ms", s.prefill_ms},
                {"prefill_tokens_per_s", prefill_tps},
                {"prefill_tokens_per_s_mean", mean_of(pre)},
                {"prefill_tokens_per_s_stddev", stddev_of(pre)},
                {"decode_tokens_per_s", decode_tps},
                {"decode_tokens_per_s_mean", mean_of(dec)},
                {"decode_tokens_per_s_stddev", stddev_of(dec)},
                {"decode_tokens", o.decode_tokens},
                {"repeats", o.repeats},
                {"la_share", sp.la_ms / part},
                {"attn_share", sp.attn_ms / part},
                {"mlp_share", sp.mlp_ms / part},
                {"peak_rss_bytes", peak_rss},
                {"parameters", ei.parameters},
                {"weight_bytes", ei.weight_bytes},
                {"la_kernel_share", sp.la_kernel_ms / part},
                {"attn_kernel_share", sp.attn_kernel_ms / part},
                {"decode_pct_of_bound", pct_bound},
                {"decode_pct_of_bound_with_state", pct_bound_all},
                {"decode_bytes_per_token_with_state", all_bytes},
                {"memory_gbps", mem_gbps},
                {"weights", ei.weight_dtype},
                {"kv_cache", kvs[ki]},
                {"projection", o.projection},
                {"amx", ei.weight_dtype == "bf16" &&
                            cpu::linear_uses_amx(ceiling)},  // prefill projections on the tiles
                {"bf16_dot", ei.weight_dtype == "bf16" &&
                                 cpu::linear_uses_dot(ceiling)},  // or the dot instruction
                {"attn_bf16_products",
                 attn_auto_bf16_products(*parse_dtype(kvs[ki]))}};  // hanpu/attn.h
            report.add(std::move(j));
          } else {
            // llama-bench's rows: the prompt (pp T) and the tokens decoded after it (tg N @ d T),
            // each mean ± standard deviation over the repeats.
            const nlohmann::json common{{"model", name},
                                        {"size", human_bytes(ei.weight_bytes)},
                                        {"params", fmt::format("{:.2f} B", ei.parameters / 1e9)},
                                        {"la", la},
                                        {"kv_cache", kvs[ki]},
                                        {"peak_rss", human_bytes(peak_rss)}};
            nlohmann::json pp = common, tg = common;
            pp["test"] = fmt::format("pp{}", T);
            pp["t_s"] = with_stddev(mean_of(pre), stddev_of(pre));
            pp["la_pct"] = fmt::format("{:.1f}", 100 * sp.la_ms / part);
            pp["attn_pct"] = fmt::format("{:.1f}", 100 * sp.attn_ms / part);
            pp["mlp_pct"] = fmt::format("{:.1f}", 100 * sp.mlp_ms / part);
            pp["la_kernel_pct"] = fmt::format("{:.1f}", 100 * sp.la_kernel_ms / part);
            pp["attn_kernel_pct"] = fmt::format("{:.1f}", 100 * sp.attn_kernel_ms / part);
            report.add(std::move(pp));
            if (steps > 0) {
              tg["test"] = fmt::format("tg{} @ d{}", o.decode_tokens, T);
              tg["t_s"] = with_stddev(mean_of(dec), stddev_of(dec));
              tg["pct_bound"] = fmt::format("{:.0f}", pct_bound);
              tg["pct_all"] = fmt::format("{:.0f}", pct_bound_all);
              report.add(std::move(tg));
            }
          }
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

}  // namespace hanpu::cli
