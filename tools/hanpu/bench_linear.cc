// `hanpu bench linear`: times every distinct projection shape of a synthetic model (the
// shapes `hanpu run --synthetic` executes) through cpu::linear, with the weights in bf16
// (what checkpoints ship) and fp32, its FMA path on OpenBLAS and on hanpu's own kernels (bf16:
// the dot kernel where the CPU has AVX512-BF16, the pairs kernel),
// and, when the build found OpenBLAS, the same fp32 product through one multi-threaded
// cblas_sgemm on nn.Linear's own [out, in] layout. All rows of a (projection, T) are timed
// side by side (interleaved rounds). This is the check behind the choice of GEMM in
// src/cpu/nn/linear.h. GFLOP/s = 2 T in out / time.
#include "bench_linear.h"
#include "bench_report.h"
#include "flag_checks.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "cpu/nn/blas_sgemm.h"
#include "cpu/nn/linear.h"
#include "cpu/nn/quant_linear.h"
#include "model/synthetic_models.h"
#include "parallel/thread_pool.h"

#ifdef HANPU_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace hanpu::cli {

namespace {

struct Projection {
  std::string name;
  int in, out;
};

// One entry per distinct (in, out) a forward pass of the model calls cpu::linear with.
std::vector<Projection> projections_of(const model::ModelConfig& c) {
  if (c.kda_hybrid()) {  // KDA, MLA (its absorbed halves too) and one expert
    const int hk = c.la_key_heads * c.la_key_dim, H = c.attn_heads;
    const model::MlaShape& m = c.mla;
    return {{"kda.q", c.hidden, hk},
            {"kda.f_b", c.la_key_dim, hk},
            {"kda.out", hk, c.hidden},
            {"mla.q", c.hidden, H * m.qk_dim()},
            {"mla.kv_a", c.hidden, m.kv_lora_rank + m.qk_rope_dim},
            {"mla.uk", m.qk_nope_dim, m.kv_lora_rank},
            {"mla.uv", m.kv_lora_rank, m.v_dim},
            {"mla.o", H * m.v_dim, c.hidden},
            {"expert.gate_up", c.hidden, 2 * c.moe_intermediate},
            {"expert.down", c.moe_intermediate, c.hidden},
            {"mlp.gate_up", c.hidden, 2 * c.intermediate},
            {"head", c.hidden, c.vocab}};
  }
  const int la_v = c.la_value_heads * c.la_value_dim;
  const int attn_o = c.attn_heads * c.head_dim;
  return {{"gdn.in_qkv", c.hidden, c.la_conv_channels()},
          {"gdn.in_z", c.hidden, la_v},
          {"gdn.in_b", c.hidden, c.la_value_heads},
          {"gdn.out", la_v, c.hidden},
          {"attn.q+gate", c.hidden, 2 * attn_o},
          {"attn.k", c.hidden, c.kv_heads * c.head_dim},
          {"attn.o", attn_o, c.hidden},
          {"mlp.gate_up", c.hidden, 2 * c.intermediate},
          {"mlp.down", c.intermediate, c.hidden},
          {"head", c.hidden, c.vocab}};
}

// The head multiplies one row per prefill (the last position) and per decode step, so only
// T = 1 rows time it unless --proj names it: a 1024-row product of a 250k-word head is
// minutes. At T = 1 it is the one projection far larger than the last-level cache: its
// weight_GB/s is the GEMV's own DRAM streaming rate.
bool times_by_default(const Projection& p, long T) { return p.name != "head" || T == 1; }

struct Row {
  std::string proj, impl, unit, weights;
  int in, out;
  long T;
  Timing tm;
  double gflops, pct_peak, weight_gbps;
};

// The report's columns: llama-bench's markdown table by default (bench_report.h).
std::vector<ReportColumn> linear_columns() {
  return kernel_columns({"proj", "impl", "unit", "weights", "in", "out", "T", "threads"},
                        {{"weight_gbps_text", "weight GB/s"}});
}

void report_row(BenchReport& report, const Row& r) {
  nlohmann::json j = {
      {"proj", r.proj}, {"impl", r.impl}, {"unit", r.unit}, {"weights", r.weights},
      {"in", r.in},     {"out", r.out},   {"T", r.T},       {"weight_gbps", r.weight_gbps}};
  add_timing(j, r.tm.median_ms, stddev_of(r.tm.run_ms), r.gflops, r.pct_peak, r.tm.peak_gflops,
             report.tabular(), 3);
  if (report.tabular()) {
    j["weight_gbps_text"] = fmt::format("{:.1f}", r.weight_gbps);
  }
  report.add(std::move(j));
}

}  // namespace

void add_bench_linear_options(CLI::App& cmd, BenchLinearOptions& o) {
  cmd.add_option("--model", o.model, "synthetic model whose projection shapes are timed")
      ->capture_default_str();
  cmd.add_option("--proj", o.proj, "projections to time by name, e.g. mlp.down (default: all)");
  cmd.add_option("--seq", o.seq, "rows T of x (1 = decode)")
      ->capture_default_str()
      ->check(token_range(1));
  cmd.add_option("--weights", o.weights,
                 "weight dtypes: bf16, f16, f32, or GGUF block types (q4_k, q8_0, ...; random "
                 "blocks)")
      ->capture_default_str();
  cmd.add_flag("!--no-openblas", o.openblas,
               "skip the whole-matrix OpenBLAS rows (f32, its own threads)");
  cmd.add_option(
         "--projection", o.projection,
         "projection kernels side by side: all (every one this CPU has), or names of `hanpu "
         "info`'s list (auto, amx, dot, pairs, blas, fma)")
      ->capture_default_str();
  cmd.add_flag("--cold", o.cold,
               "evict the caches before every timed call (weights and x from DRAM, as in a model's "
               "prefill)");
  add_kernel_bench_flags(cmd, o.threads, o.repeats, o.report);
}

int run_bench_linear(const BenchLinearOptions& o) {
  const auto config = model::synthetic_model_config(o.model);
  if (!config) {
    std::fprintf(stderr, "error: --model %s: not a synthetic model (%s)\n", o.model.c_str(),
                 fmt::format("{}", fmt::join(model::synthetic_model_names(), ", ")).c_str());
    return 2;
  }
  // Each --weights entry: a dtype, or a GGUF block type.
  struct WeightKind {
    DType dtype = DType::kF32;
    std::optional<QuantType> quant;
    std::string name() const {
      return quant ? std::string(quant_type_info(*quant).name) : std::string(dtype_name(dtype));
    }
  };
  std::vector<WeightKind> dtypes;
  for (const std::string& name : o.weights) {
    if (const auto d = parse_dtype(name)) {
      dtypes.push_back({*d, std::nullopt});
    } else if (const auto q = parse_quant_type(name)) {
      dtypes.push_back({DType::kF32, q});
    } else {
      std::fprintf(stderr, "error: --weights %s: not bf16, f16, f32 or a GGUF block type (%s)\n",
                   name.c_str(), quant_type_names().c_str());
      return 2;
    }
  }
  for (long T : o.seq) {
    if (T < 1) {
      std::fprintf(stderr, "error: --seq %ld: rows must be >= 1\n", T);
      return 2;
    }
  }
  if (o.repeats < 1) {
    std::fprintf(stderr, "error: --repeats %d: must be >= 1\n", o.repeats);
    return 2;
  }
  FILE* info = stderr;  // stdout holds the table (or the JSON)
  const FmaPeak peak = print_machine_header(info, o.threads);
  const int threads = peak.threads;
  BenchReport report(o.report.format(), linear_columns(), threads);
#ifdef HANPU_HAVE_OPENBLAS
  const bool openblas = o.openblas;
  if (openblas) openblas_set_num_threads(threads);
  std::fprintf(info, "# openblas: %s\n",
               openblas ? openblas_get_config() : "skipped (--no-openblas)");
  // Debian's 0.3.21 does not know every newer core and then falls back to its oldest x86-64
  // kernels, several times slower (seen on this project's Sapphire-Rapids-class VM).
  if (openblas && std::string(openblas_get_corename()) == "Prescott") {
    std::fprintf(
        info,
        "# openblas: note: it detected this CPU as Prescott (SSE3 kernels); for a fair comparison "
        "set OPENBLAS_CORETYPE (e.g. SkylakeX or Haswell) to what the CPU supports\n");
  }
#else
  const bool openblas = false;
  std::fprintf(info, "# openblas: not found when this binary was built\n");
#endif
  const FmaPeak amx = measure_amx_peak(threads);
  const FmaPeak dot = measure_bf16_dot_peak(threads);
  std::fprintf(
      info,
      "# %s projections; GFLOP/s = 2 T in out / median of %d runs after one warm-up; %%peak "
      "against the peak of the unit the row ran on (blas, pairs, fma: the FMA peak re-measured "
      "after each run; amx, "
      "dot: the AMX tile or bf16 dot peak above); weight_GB/s = weight bytes / time\n",
      o.model.c_str(), o.repeats);
  // The kernels to time: each a ceiling (projection_kernels.h); rows whose unit repeats an
  // earlier row's are dropped below.
  std::vector<cpu::ProjectionKernel> kernels;
  for (const std::string& name : o.projection) {
    if (name == "all") {
      for (const cpu::ProjectionKernelInfo& k : cpu::projection_kernels()) {
        if (k.kernel != cpu::ProjectionKernel::kAuto && k.usable()) kernels.push_back(k.kernel);
      }
      continue;
    }
    const auto k = cpu::parse_projection_kernel(name);
    if (!k) {
      std::fprintf(stderr, "error: --projection %s: not all, auto, amx, dot, pairs, blas or fma\n",
                   name.c_str());
      return 2;
    }
    if (!cpu::projection_kernel_info(*k).usable()) {
      std::fprintf(stderr, "error: --projection %s: this CPU (or build) does not have it\n",
                   name.c_str());
      return 2;
    }
    kernels.push_back(*k);
  }
  std::fprintf(info, "# FMA-path GEMM (unit blas / pairs / fma): %s\n",
               cpu::blas_sgemm_describe().c_str());
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::vector<Projection> all = projections_of(*config);
  for (const std::string& name : o.proj) {
    if (std::none_of(all.begin(), all.end(), [&](const Projection& p) { return p.name == name; })) {
      std::fprintf(stderr, "error: --proj %s: not a projection of %s\n", name.c_str(),
                   o.model.c_str());
      return 2;
    }
  }
  for (const Projection& p : all) {
    if (!o.proj.empty() && std::find(o.proj.begin(), o.proj.end(), p.name) == o.proj.end())
      continue;
    if (o.proj.empty() &&
        std::none_of(o.seq.begin(), o.seq.end(), [&](long T) { return times_by_default(p, T); }))
      continue;
    std::vector<float> w(static_cast<size_t>(p.in) * p.out);
    for (float& v : w) v = 0.02f * normal(rng);
    std::vector<int> rows(p.out);
    for (int i = 0; i < p.out; ++i) rows[i] = i;
    for (long T : o.seq) {
      if (o.proj.empty() && !times_by_default(p, T)) continue;
      std::vector<float> x(static_cast<size_t>(T) * p.in), y(static_cast<size_t>(T) * p.out);
      for (float& v : x) v = normal(rng);
      const double flops = 2.0 * static_cast<double>(T) * p.in * p.out;
      // Rows timed side by side (interleaved rounds): each (weights dtype, FMA-path GEMM).
      struct Candidate {
        std::string impl, unit, weights;
        int64_t weight_bytes;
        std::function<void()> call;
      };
      std::vector<Candidate> cands;
      std::vector<cpu::PackedLinear> packed;
      packed.reserve(dtypes.size());
      for (const WeightKind& wt : dtypes) {
        if (wt.quant && p.in % quant_type_info(*wt.quant).block_elems != 0) continue;
        packed.push_back(wt.quant ? cpu::random_quant_linear(*wt.quant, p.in, p.out, 11)
                                  : cpu::PackedLinear::from_rows(w.data(), p.in, rows, wt.dtype));
        const cpu::PackedLinear* pw = &packed.back();
        const int64_t bytes = wt.quant ? pw->bytes()
                                       : static_cast<int64_t>(p.in) * p.out *
                                             static_cast<int64_t>(dtype_size(wt.dtype));
        for (const cpu::ProjectionKernel kernel : kernels) {
          const std::string unit = cpu::linear_kernel_name(*pw, T, threads, kernel);
          // The GEMM choice is moot on the AMX tiles, the GEMV and units OpenBLAS does not take.
          if (std::any_of(cands.begin(), cands.end(), [&](const Candidate& c) {
                return c.weights == wt.name() && c.unit == unit;
              })) {
            continue;
          }
          cands.push_back({"hanpu", unit, wt.name(), bytes, [&, pw, kernel] {
                             cpu::linear(x.data(), p.in, T, *pw, y.data(), p.out, threads, kernel);
                           }});
        }
      }
#ifdef HANPU_HAVE_OPENBLAS
      if (openblas) {  // OpenBLAS as a user calls it: the whole product on its own threads
        cands.push_back({"openblas", "fma", "f32", static_cast<int64_t>(p.in) * p.out * 4, [&] {
                           cpu::blas_set_own_threads(threads);
                           cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(T),
                                       p.out, p.in, 1.0f, x.data(), p.in, w.data(), p.in, 0.0f,
                                       y.data(), p.out);
                           cpu::blas_set_own_threads(1);
                         }});
      }
#endif
      std::fprintf(stderr, "[%s] T=%ld\n", p.name.c_str(), T);
      std::vector<TimedRun> runs;
      for (const Candidate& c : cands) {
        runs.push_back([&c](std::vector<double>&, int64_t&) {
          c.call();
          return Status::Ok();
        });
      }
      std::vector<Timing> timings;
      const bool ok =
          time_side_by_side(o.repeats, threads, runs, &timings,
                            o.cold ? std::function<void()>(evict_caches) : std::function<void()>());
      if (!ok) return 1;
      for (size_t i = 0; i < cands.size(); ++i) {
        const Candidate& c = cands[i];
        const Timing& tm = timings[i];
        const double gflops = flops / tm.median_ms / 1e6;
        const double wbytes = static_cast<double>(c.weight_bytes);
        report_row(report, {p.name, c.impl, c.unit, c.weights, p.in, p.out, T, tm, gflops,
                            100 * gflops /
                                (c.unit == "amx"   ? amx.gflops
                                 : c.unit == "dot" ? dot.gflops
                                                   : tm.peak_gflops),
                            wbytes / tm.median_ms / 1e6});
      }
    }
  }
  return 0;
}

}  // namespace hanpu::cli
