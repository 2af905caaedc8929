// The forward pass over a layer stack and checkpoint loading (see model.h).
#include "model/model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "cpu/nn/linear.h"
#include "model/gguf_model.h"
#include "model/gguf_tokenizer.h"
#include "model/layer_ops.h"
#include "model/layers.h"
#include "model/safetensors.h"
#include "parallel/parallel_rows.h"

namespace hanpu::model {

namespace {

class Stopwatch {
 public:
  double lap_ms() {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    return ms;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

SequenceState Model::new_state(DType kv_dtype) const {
  const ModelConfig& c = config_;
  SequenceState s;
  s.conv.resize(c.layers);
  s.recurrent.resize(c.layers);
  s.kv.resize(c.layers);
  for (int i = 0; i < c.layers; ++i) {
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      s.conv[i].assign(static_cast<size_t>(c.la_conv_state_floats()), 0.0f);
      s.recurrent[i].assign(static_cast<size_t>(c.la_recurrent_floats()), 0.0f);
    } else {
      s.kv[i] = std::make_unique<KvCache>(c.kv_heads, c.head_dim, kv_dtype);
    }
  }
  return s;
}

Status Model::forward(const int* tokens, int64_t n, SequenceState* state, const ForwardOptions& opt,
                      std::vector<float>* logits, ForwardProfile* profile) const {
  const ModelConfig& c = config_;
  if (n <= 0) return Status::Error("forward: no tokens");
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c.vocab) {
      return Status::Error(fmt::format("token id {} at position {} is outside the vocabulary [0, {})", tokens[t], t,
                                       c.vocab));
    }
  }
  const int hidden = c.hidden;
  ForwardProfile local;
  ForwardProfile& prof = profile != nullptr ? *profile : local;
  Stopwatch sw;
  thread_local std::vector<float> h_buf, xn_buf, block_buf;
  const size_t acts = static_cast<size_t>(n) * hidden;
  float* h = reuse_buffer(h_buf, acts);
  float* xn = reuse_buffer(xn_buf, acts);
  float* block = reuse_buffer(block_buf, acts);
  parallel_rows(opt.threads, n, int64_t{8} * hidden, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) weights_.embedding_row(tokens[t], h + t * hidden);
  });
  prof.other_ms += sw.lap_ms();
  for (int i = 0; i < c.layers; ++i) {
    const LayerWeights& lw = weights_.layers[i];
    if (i == 0) {
      rms_norm_zero_centred(h, hidden, n, hidden, lw.input_norm.data(), c.rms_eps, xn, hidden, opt.threads);
    } else {  // the previous layer's MLP output joins the residual here
      add_rms_norm_zero_centred(h, block, n, hidden, lw.input_norm.data(), c.rms_eps, xn, opt.threads);
    }
    prof.other_ms += sw.lap_ms();
    // Only the last position's logits are wanted, so the last layer's block (the mixer's
    // output path, the MLP) runs on the last row alone; rows r0 .. n-1 of the stack below.
    const int64_t r0 = i == c.layers - 1 ? n - 1 : 0;
    const size_t at = static_cast<size_t>(r0) * hidden;
    if (lw.kind == LayerKind::kLinearAttention) {
      HANPU_RETURN_IF_ERROR(gdn_layer(c, lw.gdn, xn, n, &state->conv[i], &state->recurrent[i], opt, n - r0,
                                      block + at, &prof.la_kernel_ms));
      prof.la_ms += sw.lap_ms();
    } else {
      HANPU_RETURN_IF_ERROR(attention_layer(c, lw.attn, xn, n, state->position, state->kv[i].get(), opt, n - r0,
                                            block + at, &prof.attn_kernel_ms));
      prof.attn_ms += sw.lap_ms();
    }
    add_rms_norm_zero_centred(h + at, block + at, n - r0, hidden, lw.post_norm.data(), c.rms_eps, xn + at, opt.threads);
    prof.other_ms += sw.lap_ms();
    if (lw.moe) {
      moe_layer(c, lw.moe_w, xn + at, n - r0, opt.threads, block + at);
    } else {
      mlp_layer(lw.mlp, c.intermediate, xn + at, n - r0, opt.threads, block + at);
    }
    prof.mlp_ms += sw.lap_ms();
  }
  for (size_t j = static_cast<size_t>(n - 1) * hidden; j < static_cast<size_t>(n) * hidden; ++j) h[j] += block[j];
  state->position += n;
  state->tokens.insert(state->tokens.end(), tokens, tokens + n);
  if (logits == nullptr) {  // a prompt chunk before the last: no head
    prof.other_ms += sw.lap_ms();
    return Status::Ok();
  }
  // Only the last position's logits are needed to continue a sequence.
  const float* last = h + (n - 1) * hidden;
  rms_norm_zero_centred(last, hidden, 1, hidden, weights_.final_norm.data(), c.rms_eps, xn, hidden);
  logits->resize(c.vocab);
  cpu::linear(xn, hidden, 1, weights_.lm_head, logits->data(), c.vocab, opt.threads);
  prof.other_ms += sw.lap_ms();
  return Status::Ok();
}

std::string gguf_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::path(path).extension() == ".gguf" ? path : std::string();
  if (!fs::is_directory(path, ec) || fs::exists(fs::path(path) / "config.json")) return std::string();
  std::string found;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().extension() == ".gguf") found = found.empty() ? e.path().string() : "";  // exactly one
  }
  return found;
}

Status load_model(const std::string& dir, const LoadOptions& options, std::unique_ptr<Model>* out,
                  GgufExtras* extras) {
  namespace fs = std::filesystem;
  if (const std::string g = gguf_path(dir); !g.empty()) {
    GgufMetadata meta;
    WeightStore store;
    HANPU_RETURN_IF_ERROR(load_gguf(g, &meta, &store));
    ModelConfig config;
    HANPU_RETURN_IF_ERROR(gguf_model_config(meta, store, g, &config));
    ModelWeights weights;
    const StoredTensor* embed = store.find("token_embd.weight");
    HANPU_RETURN_IF_ERROR(convert_gguf_weights(config, store, options.weights.value_or(embed->dtype), &weights,
                                               options.progress));
    if (extras != nullptr) {
      extras->tokenizer.emplace();
      HANPU_RETURN_IF_ERROR(gguf_tokenizer(meta, g, &*extras->tokenizer));
      gguf_chat_template(meta, *extras->tokenizer, &extras->chat_template, &extras->bos_token, &extras->eos_token);
      HANPU_RETURN_IF_ERROR(gguf_generation_config(meta, g, &extras->generation));
    }
    *out = std::make_unique<Model>(std::move(config), std::move(weights));
    return Status::Ok();
  }
  ModelConfig config;
  HANPU_RETURN_IF_ERROR(load_model_config((fs::path(dir) / "config.json").string(), &config));
  WeightStore store;
  HANPU_RETURN_IF_ERROR(load_safetensors(dir, &store));
  ModelWeights weights;
  const StoredTensor* embed = store.find(config.weight_prefix + "embed_tokens.weight");
  const DType dtype = options.weights.value_or(embed != nullptr ? embed->dtype : DType::kF32);
  HANPU_RETURN_IF_ERROR(convert_weights(config, store, dtype, &weights, options.progress));
  *out = std::make_unique<Model>(std::move(config), std::move(weights));
  return Status::Ok();
}

}  // namespace hanpu::model
