// `hanpu sim --op prefill` (see sim_cmd.h): a Qwen3.5-shaped model's whole prefill on an
// Ascend-class target, every operator run on the model, for each LA core variant; one row per
// (model, T, variant) with the layers' and cores' times and the LA share of the prefill.
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "hanpu/npu.h"
#include "model/synthetic_models.h"
#include "sim_cmd.h"

namespace hanpu::cli {

namespace {

Status shape_of(const std::string& name, NpuHybridShape* s) {
  const std::optional<model::ModelConfig> c = model::synthetic_model_config(name);
  if (!c || c->arch != model::Arch::kQwen35) {
    return Status::Error(fmt::format(
        "--model {}: a Qwen3.5 shape (qwen3.5-0.8b, qwen3.5-2b, qwen3.5-4b, qwen3.5-9b)", name));
  }
  s->hidden = c->hidden;
  s->ffn = c->intermediate;
  s->la_layers = s->attn_layers = 0;
  for (const model::LayerKind k : c->layer_kinds)
    ++(k == model::LayerKind::kFullAttention ? s->attn_layers : s->la_layers);
  s->la_qk_heads = c->la_key_heads;
  s->la_v_heads = c->la_value_heads;
  s->la_key_dim = c->la_key_dim;
  s->la_value_dim = c->la_value_dim;
  s->conv_kernel = c->conv_kernel;
  s->attn_heads = c->attn_heads;
  s->kv_heads = c->kv_heads;
  s->head_dim = c->head_dim;
  s->rotary_fraction = c->partial_rotary;
  s->rope_theta = static_cast<float>(c->rope_theta);
  s->vocab = c->vocab;
  return Status::Ok();
}

// Every --model's shape (an error, printed, ends the command: false).
bool shapes_of(const std::vector<std::string>& names,
               std::vector<std::pair<std::string, NpuHybridShape>>* out) {
  for (const std::string& name : names) {
    NpuHybridShape shape;
    if (const Status st = shape_of(name, &shape); !st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return false;
    }
    out->emplace_back(name, shape);
  }
  return true;
}

// --variant with "all" standing for `all`.
std::vector<std::string> variants_of(const std::vector<std::string>& asked,
                                     const std::vector<std::string>& all) {
  std::vector<std::string> out;
  for (const std::string& v : asked) {
    if (v == "all") {
      out.insert(out.end(), all.begin(), all.end());
    } else {
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace

int run_sim_prefill(const SimOptions& o) {
  const std::vector<std::string> variants = variants_of(o.variant, {"vllm-ascend", "hanpu"});
  std::vector<std::pair<std::string, NpuHybridShape>> shapes;
  if (!shapes_of(o.model, &shapes)) return 2;
  if (!o.json) {
    std::printf("%-12s %-13s %-12s %6s %11s %9s %9s %9s %9s %9s %9s %6s %10s\n", "target", "model",
                "variant", "T", "prefill_ms", "la_layer", "attn_lyr", "la_mixer", "attn_mix",
                "la_core", "attn_core", "LA%", "energy_mJ");
  }
  const bool tty = isatty(fileno(stderr)) != 0;
  for (const auto& [name, shape] : shapes) {
    for (long T : o.seq) {
      for (const std::string& v : variants) {
        if (tty) std::fprintf(stderr, "\r%s, %s, T = %ld ...", name.c_str(), v.c_str(), T);
        NpuPrefillStats s;
        const Status st = npu_hybrid_prefill(shape, T, {.target = o.target, .la_variant = v}, &s);
        if (tty) std::fprintf(stderr, "\r\033[K");
        if (!st.ok()) {
          std::fprintf(stderr, "error: %s\n", st.message().c_str());
          return 2;
        }
        const double la_share = s.group_ms["linear attention"] / s.prefill_ms;
        if (o.json) {
          nlohmann::json j = {{"target", s.target},
                              {"op", "prefill"},
                              {"model", name},
                              {"variant", v},
                              {"T", T},
                              {"prefill_ms", s.prefill_ms},
                              {"la_layer_ms", s.la_layer_ms},
                              {"attn_layer_ms", s.attn_layer_ms},
                              {"la_mixer_ms", s.la_mixer_ms},
                              {"attn_mixer_ms", s.attn_mixer_ms},
                              {"la_core_ms", s.la_core_ms},
                              {"attn_core_ms", s.attn_core_ms},
                              {"la_share", la_share},
                              {"energy_mj", s.energy_mj},
                              {"group_ms", s.group_ms}};
          nlohmann::json ops = nlohmann::json::array();
          for (const auto& [op, ms] : s.ops) ops.push_back({{"op", op}, {"ms", ms}});
          j["ops"] = ops;
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf(
              "%-12s %-13s %-12s %6ld %11.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %5.1f%% %10.1f\n",
              s.target.c_str(), name.c_str(), v.c_str(), T, s.prefill_ms, s.la_layer_ms,
              s.attn_layer_ms, s.la_mixer_ms, s.attn_mixer_ms, s.la_core_ms, s.attn_core_ms,
              100 * la_share, s.energy_mj);
        }
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

int run_sim_request(const SimOptions& o) {
  std::vector<std::string> all;
  for (const auto& info : npu_la_variants()) {
    if (!info.ablation_only) all.emplace_back(info.name);
  }
  const std::vector<std::string> variants = variants_of(o.variant, all);
  std::vector<std::pair<std::string, NpuHybridShape>> shapes;
  if (!shapes_of(o.model, &shapes)) return 2;
  if (!o.json) {
    std::printf("%-12s %-13s %-12s %7s %5s %11s %9s %10s %11s %10s\n", "target", "model", "variant",
                "input", "out", "prefill_ms", "ttft_ms", "decode_ms", "latency_ms", "energy_J");
  }
  const bool tty = isatty(fileno(stderr)) != 0;
  for (const auto& [name, shape] : shapes) {
    for (long T : o.seq) {
      if (tty) std::fprintf(stderr, "\r%s, %ld + %d tokens ...", name.c_str(), T, o.output_tokens);
      std::vector<NpuRequestStats> rows;
      const Status st =
          npu_hybrid_request(shape, T, o.output_tokens, variants, {.target = o.target}, &rows);
      if (tty) std::fprintf(stderr, "\r\033[K");
      if (!st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.message().c_str());
        return 2;
      }
      for (const NpuRequestStats& r : rows) {
        if (o.json) {
          const nlohmann::json j = {{"target", r.target},
                                    {"op", "request"},
                                    {"model", name},
                                    {"variant", r.la_variant},
                                    {"T", T},
                                    {"output_tokens", r.output_tokens},
                                    {"prefill_ms", r.prefill_ms},
                                    {"ttft_ms", r.ttft_ms},
                                    {"decode_ms", r.decode_ms},
                                    {"latency_ms", r.latency_ms},
                                    {"decode_step_ms", r.decode_step_ms},
                                    {"energy_mj", r.energy_mj}};
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf("%-12s %-13s %-12s %7ld %5ld %11.1f %9.1f %10.1f %11.1f %10.3f\n",
                      r.target.c_str(), name.c_str(), r.la_variant.c_str(), T,
                      static_cast<long>(r.output_tokens), r.prefill_ms, r.ttft_ms, r.decode_ms,
                      r.latency_ms, r.energy_mj / 1e3);
        }
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace hanpu::cli
