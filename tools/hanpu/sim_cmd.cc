// `hanpu sim` (see sim_cmd.h).
#include "sim_cmd.h"
#include "flag_checks.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include <fmt/format.h>

#include "hanpu/npu.h"

namespace hanpu::cli {

namespace {

// Seeded inputs as a model feeds them: L2-normalised q/k rows, unit-normal v, mild gates
// (logsigmoid(randn) / 16), sigmoid betas; q/k/v/o stored fp16 as the NPU holds them.
struct Inputs {
  std::vector<uint16_t> q, k, v, o;
  std::vector<float> g, beta, s1;
};

// H value heads over QH q/k heads. `raw_qk`: q/k rows of norm 2-8, as projections give them
// to a kernel that normalises them itself.
Inputs make_inputs(bool kda, int64_t T, int H, int QH, int D, bool raw_qk, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  Inputs in;
  auto rows = [&](std::vector<uint16_t>& x) {
    x.resize(static_cast<size_t>(T * QH * D));
    std::vector<float> r(D);
    for (int64_t i = 0; i < T * QH; ++i) {
      float ss = 0;
      for (float& e : r) {
        e = nd(rng);
        ss += e * e;
      }
      const float norm = raw_qk ? 2.0f + 6.0f * static_cast<float>(rng() % 1024) / 1023.0f : 1.0f;
      for (int j = 0; j < D; ++j) x[i * D + j] = f32_to_f16_bits(norm * r[j] / std::sqrt(ss));
    }
  };
  rows(in.q);
  rows(in.k);
  in.v.resize(static_cast<size_t>(T * H * D));
  for (uint16_t& x : in.v) x = f32_to_f16_bits(nd(rng));
  in.g.resize(static_cast<size_t>(T * H * (kda ? D : 1)));
  for (float& x : in.g) x = -std::log1p(std::exp(-nd(rng))) / 16.0f;
  in.beta.resize(static_cast<size_t>(T * H));
  for (float& x : in.beta) x = 1.0f / (1.0f + std::exp(-nd(rng)));
  in.o.resize(in.v.size());
  in.s1.resize(static_cast<size_t>(H) * D * D);
  return in;
}

LaArgs make_args(bool kda, int64_t T, int H, int QH, int D, Inputs& in) {
  LaArgs a;
  a.mech = kda ? LaMech::kKda : LaMech::kGdn;
  a.q = {in.q.data(), DType::kF16, {T, QH, D}};
  a.k = {in.k.data(), DType::kF16, {T, QH, D}};
  a.v = {in.v.data(), DType::kF16, {T, H, D}};
  a.o = {in.o.data(), DType::kF16, {T, H, D}};
  a.g = kda ? TensorView{in.g.data(), DType::kF32, {T, H, D}}
            : TensorView{in.g.data(), DType::kF32, {T, H}};
  a.beta = {in.beta.data(), DType::kF32, {T, H}};
  a.final_state = {in.s1.data(), DType::kF32, {1, H, D, D}};
  return a;
}

// A built-in spatial target, or a JSON file of kind "spatial" (anything else goes to the
// Ascend-class path, whose loader names what is wrong with it).
bool is_spatial_target(const std::string& target) {
  const std::vector<std::string> spatial = npu_spatial_targets();
  if (std::find(spatial.begin(), spatial.end(), target) != spatial.end()) return true;
  std::ifstream f(target);
  if (!f) return false;
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  return j.is_object() && j.contains("kind") && j["kind"] == "spatial";
}

template <typename Want>
double nmse_impl(const std::vector<float>& got, const std::vector<Want>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - static_cast<double>(want[i]);
    num += d * d;
    den += static_cast<double>(want[i]) * static_cast<double>(want[i]);
  }
  return std::isfinite(num) && den > 0 ? num / den : INFINITY;
}

}  // namespace

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  return nmse_impl(got, want);
}
double nmse(const std::vector<float>& got, const std::vector<double>& want) {
  return nmse_impl(got, want);
}

void NmseGate::check(const std::string& row, const char* what, double nmse) {
  if (nmse < 0) return;  // not checked
  if (!(nmse <= max_)) failed_.push_back(fmt::format("{}: {} NMSE {:.3g}", row, what, nmse));
}

int NmseGate::finish() const {
  if (failed_.empty()) return 0;
  std::fprintf(stderr, "error: %zu check(s) past --max-nmse %g:\n", failed_.size(), max_);
  for (const std::string& f : failed_) std::fprintf(stderr, "  %s\n", f.c_str());
  return 1;
}

void add_sim_options(CLI::App& cmd, SimOptions& o) {
  std::string targets, variants;
  for (const auto& t : npu_targets()) targets += (targets.empty() ? "" : ", ") + t;
  for (const auto& v : npu_la_variants())
    variants += (variants.empty() ? "" : ", ") + std::string(v.name);
  std::string spatial;
  for (const auto& t : npu_spatial_targets()) spatial += (spatial.empty() ? "" : ", ") + t;
  cmd.add_option("--op", o.op,
                 "la (LA prefill, Ascend-class targets), attn (full attention: STEEL on "
                 "spatial targets, fused FlashAttention on Ascend-class ones), prefill (a "
                 "model's whole prefill, Ascend-class targets, with --variant the LA core) or "
                 "request (--seq input tokens, then --output-tokens; every --variant)")
      ->capture_default_str();
  cmd.add_option(
         "--model", o.model,
         "--op prefill / request: model shapes (qwen3.5-0.8b, qwen3.5-2b, qwen3.5-4b, qwen3.5-9b)")
      ->capture_default_str();
  cmd.add_option("--output-tokens", o.output_tokens,
                 "--op request: tokens generated, the first by the prefill (1-256)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  auto* target = cmd.add_option("--target", o.target,
                                "NPU target: " + targets + " (--op la or attn); " + spatial +
                                    " (--op attn, its default xdna2); or a JSON file")
                     ->capture_default_str();
  cmd.add_option("--kv-heads", o.kv_heads,
                 "--op attn on an Ascend-class target: kv heads, dividing --heads (default: as "
                 "many as --heads)")
      ->check(shape_range());
  cmd.add_option("--placement", o.placement,
                 "--op attn: query blocks on pipelines: uniform, sparsity-aware")
      ->capture_default_str();
  cmd.add_option("--mech", o.mech, "gdn and/or kda")->capture_default_str();
  auto* heads = cmd.add_option("--heads", o.heads, "heads H (the value heads HV with --gva)")
                    ->capture_default_str()
                    ->check(shape_range());
  auto* seq = cmd.add_option("--seq", o.seq, "sequence lengths T")
                  ->capture_default_str()
                  ->check(token_range(1));
  std::string attn_variants;
  for (const auto& v : npu_attn_variants())
    attn_variants += (attn_variants.empty() ? "" : ", ") + v;
  cmd.add_option("--variant", o.variant,
                 "kernel variants: all (every non-ablation one), " + variants + " (--op la); " +
                     attn_variants + " (--op attn)")
      ->capture_default_str();
  cmd.add_flag("--ablation", o.ablation,
               "the ablation steps fla, hanpu-fused, hanpu-reordered, hanpu (at T 1024, 16 heads "
               "unless --seq / --heads)")
      ->excludes("--variant");
  auto* dim = cmd.add_option("--dim", o.dim,
                             "head dim (LA: K = V, multiple of 16, <= 256, wider than 128 in "
                             "value-column parts; attn: 64 on spatial targets, a multiple of 16 "
                             "up to 512 on Ascend-class ones, default 128)")
                  ->check(shape_range())
                  ->capture_default_str();
  cmd.callback([&o, heads, seq, target, dim] {
    if ((o.op == "prefill" || o.op == "request") && seq->count() == 0) o.seq = {512, 4096};
    if (o.op == "attn") {  // STEEL's BERT shape unless told otherwise
      if (target->count() == 0) o.target = "xdna2";
      if (heads->count() == 0) o.heads = {12};
      if (dim->count() == 0) o.dim = o.target == "xdna1" || o.target == "xdna2" ? 64 : 128;
      if (seq->count() == 0) o.seq = {512, 1024, 2048, 4096};
      return;
    }
    if (!o.ablation) return;
    if (heads->count() == 0) o.heads = {16};
    if (seq->count() == 0) o.seq = {1024};
  });
  cmd.add_option("--gva", o.gva,
                 "LA: value heads per q/k head (grouped value attention, as Qwen3-Next's 2); "
                 "must divide every --heads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd.add_flag("--qk-l2norm", o.qk_l2norm,
               "LA: q and k as raw projections, L2-normalised inside the kernel (Qwen3.5's "
               "use_qk_l2norm_in_kernel); the fused kernels normalise as they load a chunk, "
               "the baselines in a pass of their own");
  cmd.add_option("--chunk", o.chunk, "chunk size C: 16, 32, 64")
      ->capture_default_str()
      ->check(shape_range());
  cmd.add_flag("!--no-check", o.check, "skip the reference check (faster)");
  cmd.add_option("--max-nmse", o.max_nmse,
                 "fail the command when a run's output or final-state NMSE against the reference "
                 "is above this (or not finite)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_flag("--json", o.json, "one JSON object per row on stdout");
}

int run_sim(const SimOptions& o) {
  if (o.op == "attn") return is_spatial_target(o.target) ? run_sim_attn(o) : run_sim_attn_ascend(o);
  if (o.op == "prefill") return run_sim_prefill(o);
  if (o.op == "request") return run_sim_request(o);
  if (o.op != "la") {
    std::fprintf(stderr, "error: --op %s: la, attn, prefill or request\n", o.op.c_str());
    return 2;
  }
  std::vector<std::string> variants;
  if (o.ablation) {
    variants = {"fla", "hanpu-fused", "hanpu-reordered", "hanpu"};
  } else {
    for (const std::string& v : o.variant) {
      if (v == "all") {
        for (const auto& info : npu_la_variants()) {
          if (!info.ablation_only) variants.emplace_back(info.name);
        }
      } else {
        variants.push_back(v);
      }
    }
  }
  for (int H : o.heads) {
    if (H % o.gva != 0) {
      std::fprintf(stderr, "error: --gva %d must divide --heads %d\n", o.gva, H);
      return 2;
    }
  }
  for (const std::string& m : o.mech) {
    if (m != "gdn" && m != "kda") {
      std::fprintf(stderr, "error: --mech %s: gdn or kda\n", m.c_str());
      return 2;
    }
  }
  if (!o.json) {
    std::printf("%-12s %-4s %-15s %6s %5s %11s %9s %9s %9s %8s %8s %7s %7s %9s %9s %10s\n",
                "target", "mech", "variant", "T", "heads", "latency_ms", "gm_MiB", "l1l0_MiB",
                "spill_MiB", "UB_KiB", "L1_KiB", "cube%", "vec%", "energy_mJ", "nmse_o",
                "nmse_state");
  }
  const bool tty = isatty(fileno(stderr)) != 0;
  NmseGate gate(o.max_nmse);
  const size_t total = o.mech.size() * o.heads.size() * o.seq.size() * variants.size();
  size_t done = 0;
  for (const std::string& mech : o.mech) {
    const bool kda = mech == "kda";
    for (int H : o.heads) {
      for (long T : o.seq) {
        Inputs in = make_inputs(kda, T, H, H / o.gva, o.dim, o.qk_l2norm, 1000 + T * 7 + H);
        for (const std::string& v : variants) {
          if (tty)
            std::fprintf(stderr, "\r[%zu/%zu] %s, %d heads, T = %ld ...", ++done, total, v.c_str(),
                         H, T);
          Inputs run = in;
          LaArgs args = make_args(kda, T, H, H / o.gva, o.dim, run);
          args.qk_l2norm = o.qk_l2norm;
          NpuLaStats s;
          const Status st =
              npu_la_prefill(args, {.target = o.target, .variant = v, .chunk_size = o.chunk}, &s);
          if (!st.ok()) {
            std::fprintf(stderr, "error: %s\n", st.message().c_str());
            return 2;
          }
          double err = -1, err_state = -1;
          if (o.check) {  // against the CPU's fp32 recurrent kernel on the same fp16 inputs
            std::vector<float> want(run.o.size()), want_state(run.s1.size()), q(run.q.size()),
                k(run.k.size()), vv(run.v.size());
            for (size_t i = 0; i < q.size(); ++i)
              q[i] = f16_bits_to_f32(run.q[i]), k[i] = f16_bits_to_f32(run.k[i]);
            for (size_t i = 0; i < vv.size(); ++i) vv[i] = f16_bits_to_f32(run.v[i]);
            LaArgs cpu = args;
            cpu.q = {q.data(), DType::kF32, args.q.shape};
            cpu.k = {k.data(), DType::kF32, args.k.shape};
            cpu.v = {vv.data(), DType::kF32, args.v.shape};
            cpu.o = {want.data(), DType::kF32, args.o.shape};
            cpu.final_state = {want_state.data(), DType::kF32, args.final_state.shape};
            const Status ref = la_prefill(cpu, {.strategy = "recurrent"});
            if (!ref.ok()) {
              std::fprintf(stderr, "error: the reference run failed: %s\n", ref.message().c_str());
              return 2;
            }
            std::vector<float> got(run.o.size());
            for (size_t i = 0; i < got.size(); ++i) got[i] = f16_bits_to_f32(run.o[i]);
            err = nmse(got, want);
            err_state = nmse(run.s1, want_state);
            const std::string row =
                fmt::format("{} {} {}, {} heads, T {}", s.target, mech, v, H, T);
            gate.check(row, "output", err);
            gate.check(row, "final state", err_state);
          }
          if (tty) std::fprintf(stderr, "\r\033[K");
          const double mib = 1.0 / (1 << 20);
          if (o.json) {
            nlohmann::json j = {{"target", s.target},
                                {"mech", mech},
                                {"variant", v},
                                {"T", T},
                                {"heads", H},
                                {"qk_heads", H / o.gva},
                                {"qk_l2norm", o.qk_l2norm},
                                {"K", o.dim},
                                {"V", o.dim},
                                {"chunk", o.chunk},
                                {"latency_ms", s.latency_ms},
                                {"gm_bytes", s.gm_bytes()},
                                {"gm_mib", s.gm_bytes() * mib},
                                {"gm_read_bytes", s.gm_read_bytes},
                                {"gm_write_bytes", s.gm_write_bytes},
                                {"l1_l0_bytes", s.l1_l0_bytes},
                                {"spill_bytes", s.spill_bytes},
                                {"gm_workspace_bytes", s.gm_workspace_bytes},
                                {"gm_device_bytes", s.gm_device_bytes},
                                {"cube_util", s.cube_util},
                                {"vector_util", s.vector_util},
                                {"energy_mj", s.energy_mj},
                                {"launches", s.launches},
                                {"framework_ops", s.framework_ops},
                                {"nmse_o", err},
                                {"nmse_state", err_state}};
            for (const auto& [b, bytes] : s.peak_bytes) j["peak_" + b + "_bytes"] = bytes;
            for (const auto& [e, busy] : s.engine_busy) j["busy_" + e] = busy;
            std::printf("%s\n", j.dump().c_str());
          } else {
            std::printf(
                "%-12s %-4s %-15s %6ld %5d %11.3f %9.2f %9.2f %9.2f %8.1f %8.1f %6.2f%% %6.2f%% "
                "%9.3f %9.2e %10.2e\n",
                s.target.c_str(), mech.c_str(), v.c_str(), T, H, s.latency_ms, s.gm_bytes() * mib,
                s.l1_l0_bytes * mib, s.spill_bytes * mib, s.peak_bytes["UB"] / 1024.0,
                s.peak_bytes["L1"] / 1024.0, 100 * s.cube_util, 100 * s.vector_util, s.energy_mj,
                err, err_state);
          }
          std::fflush(stdout);
        }
      }
    }
  }
  return gate.finish();
}

}  // namespace hanpu::cli
