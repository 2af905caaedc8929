// GGUF metadata -> ModelConfig and sampling defaults (see gguf_config.h); no kernels, so the
// GGUF fuzzer runs the whole path a --model x.gguf takes before the weights are converted.
#include "model/gguf_config.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "model/gguf_fields.h"
#include "model/gguf_kda_config.h"

namespace hanpu::model {

namespace {

// Qwen3.5 / Qwen3-Next: every interval-th layer full attention, the rest Gated DeltaNet.
Status qwen_fields(const GgufFields& f, const WeightStore& store, ModelConfig* c) {
  const std::string& file = f.file();
  HANPU_RETURN_IF_ERROR(f.count("block_count", true, 0, &c->layers));
  HANPU_RETURN_IF_ERROR(f.count("embedding_length", true, 0, &c->hidden));
  HANPU_RETURN_IF_ERROR(
      f.count("feed_forward_length", c->arch == Arch::kQwen35, 0, &c->intermediate));
  HANPU_RETURN_IF_ERROR(f.count("attention.head_count", true, 0, &c->attn_heads));
  HANPU_RETURN_IF_ERROR(f.count("attention.head_count_kv", true, 0, &c->kv_heads));
  HANPU_RETURN_IF_ERROR(f.count("attention.key_length", true, 0, &c->head_dim));
  HANPU_RETURN_IF_ERROR(f.count("ssm.conv_kernel", true, 0, &c->conv_kernel));
  HANPU_RETURN_IF_ERROR(f.count("context_length", false, 0, &c->max_positions));
  HANPU_RETURN_IF_ERROR(f.count("ssm.state_size", true, 0, &c->la_key_dim));
  HANPU_RETURN_IF_ERROR(f.count("ssm.group_count", true, 0, &c->la_key_heads));
  HANPU_RETURN_IF_ERROR(f.count("ssm.time_step_rank", true, 0, &c->la_value_heads));
  int inner = 0, rope_dims = 0, interval = 4;
  HANPU_RETURN_IF_ERROR(f.count("ssm.inner_size", true, 0, &inner));
  HANPU_RETURN_IF_ERROR(f.count("rope.dimension_count", true, 0, &rope_dims));
  HANPU_RETURN_IF_ERROR(f.count("full_attention_interval", false, 4, &interval));
  if (c->la_value_heads <= 0 || inner % c->la_value_heads != 0 || c->head_dim <= 0 ||
      interval <= 0) {
    return Status::Error(
        fmt::format("{}: ssm.inner_size {} / time_step_rank {} / key_length {} / interval {} are "
                    "inconsistent",
                    file, inner, c->la_value_heads, c->head_dim, interval));
  }
  c->la_value_dim = inner / c->la_value_heads;
  c->partial_rotary = static_cast<float>(rope_dims) / static_cast<float>(c->head_dim);
  HANPU_RETURN_IF_ERROR(f.number("rope.freq_base", 1e7, &c->rope_theta));
  double eps = 1e-6;
  HANPU_RETURN_IF_ERROR(f.number("attention.layer_norm_rms_epsilon", 1e-6, &eps));
  c->rms_eps = static_cast<float>(eps);
  if (c->arch == Arch::kQwen3Next) {
    HANPU_RETURN_IF_ERROR(f.count("expert_count", false, 0, &c->num_experts));
    HANPU_RETURN_IF_ERROR(
        f.count("expert_used_count", c->num_experts > 0, 0, &c->experts_per_token));
    HANPU_RETURN_IF_ERROR(
        f.count("expert_feed_forward_length", c->num_experts > 0, 0, &c->moe_intermediate));
    HANPU_RETURN_IF_ERROR(
        f.count("expert_shared_feed_forward_length", false, 0, &c->shared_expert_intermediate));
  }
  if (c->layers > kMaxLayers) {  // checked before the layer list is built from it
    return Status::Error(fmt::format("{}: metadata '{}' = {} is more than {}", file,
                                     f.name("block_count"), c->layers, kMaxLayers));
  }
  for (int i = 0; i < c->layers; ++i) {
    c->layer_kinds.push_back((i + 1) % interval == 0 ? LayerKind::kFullAttention
                                                     : LayerKind::kLinearAttention);
  }
  // Layers whose FFN is dense in a MoE model are those with ffn_gate instead of ffn_gate_inp.
  if (c->num_experts > 0) {
    for (int i = 0; i < c->layers; ++i) {
      if (store.find(fmt::format("blk.{}.ffn_gate_inp.weight", i)) == nullptr)
        c->mlp_only_layers.push_back(i);
    }
  }
  return Status::Ok();
}

}  // namespace

Status gguf_model_config(const GgufMetadata& meta, const WeightStore& store,
                         const std::string& file, ModelConfig* out) {
  const std::string* arch = gguf_string(meta, "general.architecture");
  if (arch == nullptr)
    return Status::Error(fmt::format("{}: metadata 'general.architecture' is missing", file));
  ModelConfig c;
  c.model_type = *arch;
  const GgufFields fields(meta, *arch, file);
  if (*arch == "qwen35" || *arch == "qwen3next") {
    c.arch = *arch == "qwen35" ? Arch::kQwen35 : Arch::kQwen3Next;
    HANPU_RETURN_IF_ERROR(qwen_fields(fields, store, &c));
  } else if (*arch == "kimi-linear") {
    c.arch = Arch::kKimiLinear;
    HANPU_RETURN_IF_ERROR(kimi_linear_gguf_fields(fields, &c));
  } else {
    return Status::Error(fmt::format(
        "{}: architecture '{}' is not supported (qwen35, qwen3next, kimi-linear)", file, *arch));
  }
  const StoredTensor* embd = store.find("token_embd.weight");
  if (embd == nullptr || embd->shape.size() != 2)
    return Status::Error(fmt::format("{}: no 2-D tensor 'token_embd.weight'", file));
  if (embd->shape[0] > kMaxVocab) {
    return Status::Error(fmt::format("{}: token_embd.weight has {} rows, more than {}", file,
                                     embd->shape[0], kMaxVocab));
  }
  c.vocab = static_cast<int>(embd->shape[0]);
  c.tie_embeddings = store.find("output.weight") == nullptr;
  // llama.cpp ends generation at any of these (its "end of generation" set).
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    int64_t id = -1;
    HANPU_RETURN_IF_ERROR(gguf_int(meta, key, file, false, -1, &id));
    if (id >= 0 && id < c.vocab) c.eos_token_ids.push_back(static_cast<int>(id));
  }
  // The checks a config.json gets, with the GGUF keys' values under the names of config.json.
  HANPU_RETURN_IF_ERROR(validate_model_config(
      c, file + " (metadata '" + fields.name("*") + "' as config.json fields)"));
  *out = std::move(c);
  return Status::Ok();
}

Status gguf_generation_config(const GgufMetadata& meta, const std::string& file,
                              std::optional<GenerationConfig>* out) {
  out->reset();
  const std::string k = "general.sampling.";
  if (!meta.count(k + "temp") && !meta.count(k + "top_k") && !meta.count(k + "top_p") &&
      !meta.count(k + "min_p")) {
    return Status::Ok();
  }
  double temp = 0, top_p = 1, min_p = 0;
  int64_t top_k = 0;
  HANPU_RETURN_IF_ERROR(gguf_number(meta, k + "temp", file, 0.0, &temp));
  HANPU_RETURN_IF_ERROR(gguf_int(meta, k + "top_k", file, false, 0, &top_k));
  HANPU_RETURN_IF_ERROR(gguf_number(meta, k + "top_p", file, 1.0, &top_p));
  HANPU_RETURN_IF_ERROR(gguf_number(meta, k + "min_p", file, 0.0, &min_p));
  const auto bad = [&](const std::string& key, double v, const char* range) {
    return Status::Error(fmt::format("{}: metadata '{}{}' is {}, {}", file, k, key, v, range));
  };
  if (!(temp >= 0 && temp <= 1e6)) return bad("temp", temp, "not in [0, 1e6]");
  if (top_k < 0 || top_k > std::numeric_limits<int>::max())
    return bad("top_k", static_cast<double>(top_k), "not >= 0");
  if (!(top_p > 0 && top_p <= 1)) return bad("top_p", top_p, "not in (0, 1]");
  if (!(min_p >= 0 && min_p <= 1)) return bad("min_p", min_p, "not in [0, 1]");
  GenerationConfig g;
  g.do_sample = temp > 0;
  g.temperature = static_cast<float>(temp);
  g.top_k = static_cast<int>(top_k);
  g.top_p = static_cast<float>(top_p);
  g.min_p = static_cast<float>(min_p);
  *out = g;
  return Status::Ok();
}

}  // namespace hanpu::model
