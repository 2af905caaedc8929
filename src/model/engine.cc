// The public Engine (include/hanpu/engine.h) over model::Model, Tokenizer and Sampler.
#include "hanpu/engine.h"
#include "cpu/nn/projection_kernels.h"
#include "base/env_settings.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/quant_quantize.h"
#include "base/rng.h"
#include "model/chat_continuation.h"
#include "model/chat_template.h"
#include "model/generation_config.h"
#include "model/mla_layer.h"
#include "model/model.h"
#include "model/perplexity.h"
#include "model/state_file.h"
#include "model/synthetic_models.h"
#include "model/tiktoken_vocab.h"
#include "model/tokenizer.h"
#include "model/engine_impl.h"

namespace hanpu {

Sequence::Sequence(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sequence::~Sequence() = default;

const std::vector<int>& Sequence::tokens() const {
  static const std::vector<int> kNone;
  return impl_->state ? impl_->state->tokens : kNone;
}

int64_t Sequence::bytes() const { return impl_->state ? model::state_bytes(*impl_->state) : 0; }

int64_t Sequence::bytes(
    const std::function<void(const void* block, int64_t bytes)>& on_shared) const {
  return impl_->state ? model::state_bytes(*impl_->state, on_shared) : 0;
}

std::unique_ptr<Sequence> Engine::copy_sequence(const Sequence& sequence) const {
  const Sequence::Impl& q = *sequence.impl_;
  if (q.model != impl_->model.get() || q.broken) return nullptr;
  std::unique_ptr<Sequence> out = new_sequence();
  if (q.state) {
    model::SequenceState copy;
    if (!model::copy_state(*q.state, &copy).ok()) return nullptr;  // out of memory
    out->impl_->state = std::move(copy);
  }
  return out;
}

std::unique_ptr<Sequence> Engine::new_sequence() const {
  auto impl = std::make_unique<Sequence::Impl>();
  impl->model = impl_->model.get();
  return std::unique_ptr<Sequence>(new Sequence(std::move(impl)));
}

Status Engine::save_sequence(const Sequence& sequence, const std::string& path) const {
  const Sequence::Impl& q = *sequence.impl_;
  if (q.model != impl_->model.get())
    return Status::Error("the sequence was made by another engine");
  if (q.broken)
    return Status::Error("the sequence was left part-way by a call that failed; it is not saved");
  if (!q.state) return Status::Error("the sequence holds no tokens yet");
  return model::save_state(*impl_->model, *q.state, path);
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Status Engine::load(const std::string& dir, std::unique_ptr<Engine>* out,
                    const std::string& weights, const std::function<void(int, int)>& on_progress) {
  auto impl = std::make_unique<Impl>();
  impl->name = std::filesystem::path(dir).filename().string();
  if (impl->name.empty()) impl->name = dir;
  model::LoadOptions lo;
  lo.progress = on_progress;
  if (weights != "auto") {
    const std::optional<QuantType> q = parse_quant_type(weights);
    lo.weights = parse_dtype(weights);
    if (q && quant_type_quantizable(*q)) {
      lo.quantize = q;
    } else if (!lo.weights) {
      return Status::Error(
          fmt::format("weights '{}' is not auto, f32, bf16, f16 or a type hanpu quantizes to ({})",
                      weights, fmt::join(quantizable_type_names(), ", ")));
    }
  }
  model::GgufExtras gguf;
  HANPU_RETURN_IF_ERROR(model::load_model(dir, lo, &impl->model, &gguf));
  std::string tok_source = dir;
  if (gguf.tokenizer) {
    impl->tokenizer = std::move(gguf.tokenizer);
    if (!gguf.chat_template.empty()) {
      model::ChatTemplate t;
      impl->chat_error =
          model::ChatTemplate::parse(gguf.chat_template, dir + " (tokenizer.chat_template)", &t);
      t.set_special_tokens(gguf.bos_token, gguf.eos_token);
      if (impl->chat_error.ok()) impl->chat = std::move(t);
    }
  } else {  // a safetensors folder: tokenizer.json and the chat template beside the weights, if any
    tok_source = (std::filesystem::path(dir) / "tokenizer.json").string();
    if (std::filesystem::exists(tok_source)) {
      impl->tokenizer.emplace();
      HANPU_RETURN_IF_ERROR(model::Tokenizer::load(tok_source, &*impl->tokenizer));
    } else if (model::has_tiktoken_model(dir)) {  // Kimi's folders ship tiktoken.model instead
      tok_source = (std::filesystem::path(dir) / "tiktoken.model").string();
      model::Tokenizer::Parts parts;
      HANPU_RETURN_IF_ERROR(model::tiktoken_parts(dir, &parts));
      impl->tokenizer.emplace();
      HANPU_RETURN_IF_ERROR(
          model::Tokenizer::build(std::move(parts), tok_source, &*impl->tokenizer));
    }
    std::optional<model::ChatTemplate> t;
    impl->chat_error = model::load_hf_chat_template(dir, &t);
    if (t) impl->chat = std::move(*t);
  }
  if (impl->tokenizer && impl->tokenizer->vocab_size() > impl->model->config().vocab) {
    return Status::Error(
        fmt::format("{}: the tokenizer has {} tokens, the model's vocabulary only {}", tok_source,
                    impl->tokenizer->vocab_size(), impl->model->config().vocab));
  }
  // Stop tokens from every place a checkpoint names them (EngineInfo::stop_tokens).
  std::vector<int>& stops = impl->stop_tokens;
  stops = impl->model->config().eos_token_ids;
  std::string eos_text = gguf.eos_token;
  if (gguf.generation) {
    impl->generation = gguf.generation;
    impl->generation_origin = dir + " (general.sampling.*)";
  }
  if (!gguf.tokenizer) {
    HANPU_RETURN_IF_ERROR(
        model::load_generation_config(dir, impl->model->config().vocab, &impl->generation));
    if (impl->generation) {
      impl->generation_origin = (std::filesystem::path(dir) / "generation_config.json").string();
      stops.insert(stops.end(), impl->generation->eos_token_ids.begin(),
                   impl->generation->eos_token_ids.end());
    }
    // A tokenizer_config.json that does not parse is reported when a chat asks for the
    // template (chat_error above), not here.
    if (!model::load_hf_eos_token(dir, &eos_text).ok()) eos_text.clear();
  }
  if (impl->tokenizer && !eos_text.empty()) {
    if (const std::optional<int> id = impl->tokenizer->token_id(eos_text)) stops.push_back(*id);
  }
  std::sort(stops.begin(), stops.end());
  stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
  out->reset(new Engine(std::move(impl)));
  return Status::Ok();
}

Status Engine::synthetic(const std::string& name, uint64_t seed, std::unique_ptr<Engine>* out,
                         const std::string& weights,
                         const std::function<void(int, int)>& on_progress) {
  const auto config = model::synthetic_model_config(name);
  if (!config) {
    std::string names;
    for (const auto& n : model::synthetic_model_names()) names += (names.empty() ? "" : ", ") + n;
    return Status::Error(fmt::format("unknown synthetic model '{}' (one of: {})", name, names));
  }
  // bf16 projections unless asked otherwise; a quantized type quantizes them (as a checkpoint's
  // at load).
  std::optional<DType> dt = parse_dtype(weights == "auto" ? "bf16" : weights);
  const std::optional<QuantType> q = parse_quant_type(weights);
  if (!dt && q && quant_type_quantizable(*q)) dt = DType::kBF16;
  if (!dt) {
    return Status::Error(
        fmt::format("weights '{}' is not auto, f32, bf16, f16 or a type hanpu quantizes to ({})",
                    weights, fmt::join(quantizable_type_names(), ", ")));
  }
  auto impl = std::make_unique<Impl>();
  impl->name = name + " (synthetic)";
  model::ModelWeights w;
  model::random_weights(*config, seed, *dt, &w, on_progress,
                        q && quant_type_quantizable(*q) ? q : std::nullopt);
  impl->model = std::make_unique<model::Model>(*config, std::move(w));
  out->reset(new Engine(std::move(impl)));
  return Status::Ok();
}

std::vector<std::string> Engine::synthetic_models() { return model::synthetic_model_names(); }

EngineInfo Engine::info() const {
  const model::ModelConfig& c = impl_->model->config();
  EngineInfo i;
  i.name = impl_->name;
  i.architecture = c.arch == model::Arch::kQwen35       ? "qwen3.5"
                   : c.arch == model::Arch::kQwen3Next  ? "qwen3-next"
                   : c.arch == model::Arch::kKimiLinear ? "kimi-linear"
                                                        : "ling";
  i.layers = c.layers;
  for (auto k : c.layer_kinds)
    (k == model::LayerKind::kLinearAttention ? i.la_layers : i.attn_layers)++;
  i.hidden = c.hidden;
  i.vocab = c.vocab;
  const model::ModelWeights& w = impl_->model->weights();
  i.weight_bytes = w.bytes();
  i.decode_copy_bytes = w.decode_copy_bytes();
  i.weight_dtype = w.lm_head.quant ? std::string(quant_type_info(*w.lm_head.quant).name)
                                   : std::string(dtype_name(w.lm_head.dtype));
  // A token reads one row of an untied table.
  const int64_t embed =
      static_cast<int64_t>(w.embed.size() * sizeof(float)) + w.embed_blocks.bytes();
  i.decode_bytes_per_token = i.weight_bytes - embed;
  for (const model::LayerWeights& l : w.layers) {  // a token reads only its routed experts
    if (!l.moe || l.moe_w.experts.empty()) continue;
    const int64_t per_expert = l.moe_w.experts[0].gate_up.bytes() + l.moe_w.experts[0].down.bytes();
    i.decode_bytes_per_token -= per_expert * (c.num_experts - c.experts_per_token);
  }
  // MLA's decode runs absorbed (mla_layer.h): it reads kv_b's per-head halves uk and uv, never
  // kv_b itself, which only a prefill's decompression reads.
  for (const model::LayerWeights& l : w.layers) i.decode_bytes_per_token -= l.mla.kv_b.bytes();
  // The sizes new_state() allocates, per layer of each kind.
  i.la_state_bytes =
      i.la_layers * (c.la_recurrent_floats() + c.la_conv_state_floats()) * int64_t{sizeof(float)};
  // MLA caches one latent row a token, its values being its keys.
  i.kv_values_per_position = c.kda_hybrid() ? i.attn_layers * int64_t{model::mla_cache_dim(c.mla)}
                                            : i.attn_layers * 2 * int64_t{c.kv_heads} * c.head_dim;
  i.parameters = w.parameters(c.tie_embeddings);
  i.max_positions = c.max_positions;
  i.stop_tokens = impl_->stop_tokens;
  i.sampling_origin = impl_->generation_origin;
  return i;
}

GenerateOptions Engine::default_generate_options() const {
  GenerateOptions o;
  if (!impl_->generation) return o;
  const model::GenerationConfig& g = *impl_->generation;
  if (g.do_sample) {
    o.temperature = g.temperature;
    o.top_k = g.top_k;
    o.top_p = g.top_p;
    o.min_p = g.min_p;
  }
  o.repetition_penalty = g.repetition_penalty;
  return o;
}

std::string Engine::token_text(int id) const {
  if (!impl_->tokenizer || id < 0 || id >= impl_->tokenizer->vocab_size()) return "";
  return impl_->tokenizer->token_bytes(id);
}

Status Engine::kv_cache_dtype(const std::string& kv_cache, std::string* resolved) const {
  if (kv_cache == "auto") {
    // The weights' dtype; bf16 for quantized weights (half the bytes of f32 per cached row).
    const cpu::PackedLinear& head = impl_->model->weights().lm_head;
    *resolved = head.quant ? "bf16" : std::string(dtype_name(head.dtype));
    return Status::Ok();
  }
  if (!parse_dtype(kv_cache))
    return Status::Error(fmt::format("kv cache '{}' is not auto, f32, bf16 or f16", kv_cache));
  *resolved = kv_cache;
  return Status::Ok();
}

namespace {

// GenerateOptions::attn_products: parsed, and whether the prefill's attention takes bf16
// products; "bf16" without the instruction is an error now rather than at the first
// attention layer of a prefill.
Status resolve_attn_products(const std::string& name, DType kv_dtype, AttnProducts* out,
                             bool* bf16) {
  const std::optional<AttnProducts> p = parse_attn_products(name);
  if (!p)
    return Status::Error(fmt::format("attention products '{}' are not auto, f32 or bf16", name));
  if (*p == AttnProducts::kBf16 && !attn_bf16_products_usable()) {
    return Status::Error(
        "attention products bf16: this CPU has no bf16 dot instruction (AVX512-BF16)");
  }
  *out = *p;
  *bf16 =
      *p == AttnProducts::kBf16 || (*p == AttnProducts::kAuto && attn_auto_bf16_products(kv_dtype));
  return Status::Ok();
}

// ModelRunOptions::projection: a kernel of the table that this CPU has; "auto" takes
// HANPU_PROJECTION, which is checked the same way (a typo there is an error, not ignored).
Status resolve_projection(const std::string& name, cpu::ProjectionKernel* out) {
  if (name != "auto") {
    const Status st = cpu::parse_usable_projection_kernel(name, out);
    return st.ok() ? st : Status::Error("projection " + st.message());
  }
  const char* env = env_text(EnvVar::kProjection);
  *out = cpu::ProjectionKernel::kAuto;
  if (env == nullptr) return Status::Ok();
  const Status st = cpu::parse_usable_projection_kernel(env, out);
  return st.ok() ? st : Status::Error("HANPU_PROJECTION " + st.message());
}

}  // namespace

Status Engine::resolve_run(const ModelRunOptions& o, model::ForwardOptions* forward,
                           DType* kv_dtype, std::string* kv_name, bool* bf16_products) const {
  forward->la_strategy = o.la_strategy;
  forward->attn_placement = o.attn_placement;
  forward->threads = o.threads;
  HANPU_RETURN_IF_ERROR(resolve_projection(o.projection, &forward->projection));
  HANPU_RETURN_IF_ERROR(kv_cache_dtype(o.kv_cache, kv_name));
  *kv_dtype = *parse_dtype(*kv_name);
  return resolve_attn_products(o.attn_products, *kv_dtype, &forward->attn_products, bf16_products);
}

bool Engine::has_tokenizer() const { return impl_->tokenizer.has_value(); }

std::vector<int> Engine::random_prompt(int n, uint64_t seed) const {
  Rng rng(seed);
  std::vector<int> ids(static_cast<size_t>(std::max(n, 0)));
  for (int& id : ids) id = static_cast<int>(rng.below(impl_->model->config().vocab));
  return ids;
}

Status Engine::tokenize(std::string_view text, std::vector<int>* ids) const {
  if (!impl_->tokenizer) return Status::Error(fmt::format("{} has no tokenizer", impl_->name));
  ids->clear();
  return impl_->tokenizer->encode(text, ids);
}

Status Engine::apply_chat_template(const std::vector<ChatMessage>& messages,
                                   const ChatOptions& options, std::string* text) const {
  HANPU_RETURN_IF_ERROR(impl_->chat_error);
  return impl_->chat.render(messages, options, text);
}

Status Engine::tokenize_chat(const std::vector<ChatMessage>& messages, const ChatOptions& options,
                             std::vector<int>* ids) const {
  std::string text;
  HANPU_RETURN_IF_ERROR(apply_chat_template(messages, options, &text));
  return tokenize(text, ids);
}

Status Engine::continue_chat(const std::string& state_path,
                             const std::vector<ChatMessage>& messages, const ChatOptions& options,
                             std::string* text) const {
  std::vector<int> saved;
  HANPU_RETURN_IF_ERROR(model::read_state_tokens(impl_->model->config(), state_path, &saved));
  return continue_chat_after(saved, messages, options, text);
}

Status Engine::continue_chat(const Sequence& sequence, const std::vector<ChatMessage>& messages,
                             const ChatOptions& options, std::string* text) const {
  if (sequence.tokens().empty()) return apply_chat_template(messages, options, text);
  return continue_chat_after(sequence.tokens(), messages, options, text);
}

Status Engine::continue_chat_after(const std::vector<int>& ids,
                                   const std::vector<ChatMessage>& messages,
                                   const ChatOptions& options, std::string* text) const {
  HANPU_RETURN_IF_ERROR(impl_->chat_error);
  if (!impl_->tokenizer) return Status::Error(fmt::format("{} has no tokenizer", impl_->name));
  // The text of the last 32 tokens: more than any template's reply ending.
  std::string tail;
  for (size_t i = ids.size() - std::min<size_t>(ids.size(), 32); i < ids.size(); ++i) {
    tail += impl_->tokenizer->token_bytes(ids[i]);
  }
  return model::chat_continuation(impl_->chat, tail, messages, options, text);
}

Status Engine::set_chat_template_file(const std::string& path) {
  std::string source;
  HANPU_RETURN_IF_ERROR(
      read_regular_file(path, kMaxChatTemplateBytes, "the chat template", &source));
  model::ChatTemplate t;
  HANPU_RETURN_IF_ERROR(model::ChatTemplate::parse(source, path, &t));
  t.set_special_tokens(impl_->chat.bos_token(), impl_->chat.eos_token());  // the checkpoint's
  impl_->chat = std::move(t);
  impl_->chat_error = Status::Ok();
  return Status::Ok();
}

std::string Engine::chat_template_origin() const { return impl_->chat.origin(); }

Status Engine::sequence_to_continue(const GenerateOptions& o, DType kv_dtype,
                                    const std::string& kv_name, model::SequenceState** held) const {
  *held = nullptr;
  if (o.sequence == nullptr) return Status::Ok();
  Sequence::Impl& q = *o.sequence->impl_;
  if (q.model != impl_->model.get())
    return Status::Error("the sequence was made by another engine");
  if (q.broken) {
    return Status::Error(
        "the sequence was left part-way by a call that failed; start a new one (or resume a saved "
        "file)");
  }
  if (!o.resume_state.empty() || !q.state) return Status::Ok();  // filled fresh, then handed to it
  for (const auto& cache : q.state->kv) {
    if (cache && cache->dtype() != kv_dtype) {
      return Status::Error(fmt::format("the sequence's KV cache holds {}, this call asks for {}",
                                       dtype_name(cache->dtype()), kv_name));
    }
  }
  *held = &*q.state;
  return Status::Ok();
}

Status Engine::perplexity_run(const PerplexityOptions& o, model::PerplexityRun* run) const {
  std::string kv_name;
  bool bf16_products = false;
  HANPU_RETURN_IF_ERROR(resolve_run(o, &run->forward, &run->kv_dtype, &kv_name, &bf16_products));
  run->context = o.context;
  run->max_chunks = o.max_chunks;
  run->prefill_chunk = o.prefill_chunk;
  run->save_logprobs = o.save_logprobs;
  return Status::Ok();
}

Status Engine::perplexity(const std::vector<int>& tokens, const PerplexityOptions& o,
                          const std::function<void(const PerplexityStats&)>& on_chunk,
                          PerplexityStats* stats) const {
  model::PerplexityRun run;
  HANPU_RETURN_IF_ERROR(perplexity_run(o, &run));
  return model::perplexity(*impl_->model, tokens, run, on_chunk, stats);
}

Status Engine::kl_divergence(const std::string& base_file, const PerplexityOptions& o,
                             const std::function<void(const KlDivergenceStats&)>& on_chunk,
                             KlDivergenceStats* stats) const {
  model::PerplexityRun run;
  HANPU_RETURN_IF_ERROR(perplexity_run(o, &run));  // the context and chunks are the file's
  return model::kl_divergence(*impl_->model, base_file, run, on_chunk, stats);
}

std::string default_model_dir() {
  const std::filesystem::path p =
      std::filesystem::path(HANPU_SOURCE_DIR) / "tests/fixtures/models/qwen35-tiny";
  return std::filesystem::exists(p / "config.json") ? p.string() : std::string();
}

}  // namespace hanpu
