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
#include "model/kda_layer.h"
#include "model/layers.h"
#include "model/mla_layer.h"
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
    } else if (c.kda_hybrid()) {  // MLA's compressed cache: a latent row a token (mla_layer.h)
      s.kv[i] =
          std::make_unique<LayerKv>(1, mla_cache_dim(c.mla), kv_dtype, 256, KvValues::kAreKeys);
    } else {
      s.kv[i] = std::make_unique<LayerKv>(c.kv_heads, c.head_dim, kv_dtype);
    }
  }
  return s;
}

namespace {

// Layer i's token mixer over x [T, hidden] of one sequence, its output rows the last
// out_rows (layers.h), the state's position not yet advanced past them.
Status mix_sequence(const ModelConfig& c, const LayerWeights& lw, int i, const float* x, int64_t T,
                    int64_t out_rows, SequenceState* s, const ForwardOptions& opt, float* out,
                    ForwardProfile* prof, Workspace& ws) {
  const bool la = lw.kind == LayerKind::kLinearAttention;
  double* kernel_ms = la ? &prof->la_kernel_ms : &prof->attn_kernel_ms;
  if (c.kda_hybrid()) {
    return la ? kda_layer(c, lw.kda, x, T, &s->conv[i], &s->recurrent[i], opt, out_rows, out,
                          kernel_ms, ws)
              : mla_layer(c, lw.mla, x, T, s->position, s->kv[i].get(), opt, out_rows, out,
                          kernel_ms, ws);
  }
  return la ? gdn_layer(c, lw.gdn, x, T, &s->conv[i], &s->recurrent[i], opt, out_rows, out,
                        kernel_ms, ws)
            : attention_layer(c, lw.attn, x, T, s->position, s->kv[i].get(), opt, out_rows, out,
                              kernel_ms, ws);
}

// `s` less its KV caches, which the callers fill.
SequenceState copy_la(const SequenceState& s) {
  SequenceState c;
  c.position = s.position;
  c.tokens = s.tokens;
  c.conv = s.conv;
  c.recurrent = s.recurrent;
  c.kv.resize(s.kv.size());
  return c;
}

}  // namespace

Status copy_state(const SequenceState& s, SequenceState* out) {
  SequenceState c = copy_la(s);
  for (size_t i = 0; i < s.kv.size(); ++i) {
    if (s.kv[i]) HANPU_RETURN_IF_ERROR(s.kv[i]->copy(&c.kv[i]));
  }
  *out = std::move(c);
  return Status::Ok();
}

Status share_state(SequenceState* s, SequenceState* out) {
  SequenceState c = copy_la(*s);
  for (size_t i = 0; i < s->kv.size(); ++i) {
    if (s->kv[i]) HANPU_RETURN_IF_ERROR(s->kv[i]->share(&c.kv[i]));
  }
  *out = std::move(c);
  return Status::Ok();
}

int64_t state_bytes(const SequenceState& s,
                    const std::function<void(const void* id, int64_t bytes)>& on_shared) {
  int64_t bytes = static_cast<int64_t>(s.tokens.size() * sizeof(int));
  for (const auto& v : s.conv) bytes += static_cast<int64_t>(v.size() * sizeof(float));
  for (const auto& v : s.recurrent) bytes += static_cast<int64_t>(v.size() * sizeof(float));
  for (const auto& kv : s.kv) {
    if (!kv) continue;
    bytes += kv->own_bytes();
    for (const auto& seg : kv->shared()) {
      if (on_shared) {
        on_shared(seg.get(), LayerKv::bytes_of(*seg));
      } else {
        bytes += LayerKv::bytes_of(*seg);
      }
    }
  }
  return bytes;
}

Status Model::run_stack(const int* tokens, int64_t n, int64_t out_from, const Mixer& mix,
                        const ForwardOptions& opt, ForwardProfile* profile, Workspace& ws,
                        float** out) const {
  const ModelConfig& c = config_;
  const int hidden = c.hidden;
  ForwardProfile local;
  ForwardProfile& prof = profile != nullptr ? *profile : local;
  Stopwatch sw;
  const size_t acts = static_cast<size_t>(n) * hidden;
  float* h = ws.stack(Workspace::Stack::kHidden, acts);
  float* xn = ws.stack(Workspace::Stack::kNormed, acts);
  float* block = ws.stack(Workspace::Stack::kBlock, acts);
  parallel_rows(opt.threads, n, int64_t{8} * hidden, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) weights_.embedding_row(tokens[t], h + t * hidden);
  });
  prof.other_ms += sw.lap_ms();
  for (int i = 0; i < c.layers; ++i) {
    const LayerWeights& lw = weights_.layers[i];
    if (i == 0) {
      rms_norm_zero_centred(h, hidden, n, hidden, lw.input_norm.data(), c.rms_eps, xn, hidden,
                            opt.threads);
    } else {  // the previous layer's MLP output joins the residual here
      add_rms_norm_zero_centred(h, block, n, hidden, lw.input_norm.data(), c.rms_eps, xn,
                                opt.threads);
    }
    prof.other_ms += sw.lap_ms();
    // Only rows out_from .. n-1 are wanted from the stack, so the last layer's block (the
    // mixer's output path, the MLP) runs on those alone; rows r0 .. n-1 below.
    const int64_t r0 = i == c.layers - 1 ? out_from : 0;
    const size_t at = static_cast<size_t>(r0) * hidden;
    HANPU_RETURN_IF_ERROR(mix(i, xn, r0, block + at, &prof));
    (lw.kind == LayerKind::kLinearAttention ? prof.la_ms : prof.attn_ms) += sw.lap_ms();
    add_rms_norm_zero_centred(h + at, block + at, n - r0, hidden, lw.post_norm.data(), c.rms_eps,
                              xn + at, opt.threads);
    prof.other_ms += sw.lap_ms();
    if (lw.moe) {
      moe_layer(c, lw.moe_w, xn + at, n - r0, opt, block + at, ws);
    } else {
      mlp_layer(lw.mlp, c.intermediate, xn + at, n - r0, opt, block + at, ws);
    }
    prof.mlp_ms += sw.lap_ms();
  }
  for (size_t j = static_cast<size_t>(out_from) * hidden; j < acts; ++j) h[j] += block[j];
  prof.other_ms += sw.lap_ms();
  *out = h;
  return Status::Ok();
}

Status Model::run_layers(const int* tokens, int64_t n, int64_t out_from, SequenceState* state,
                         const ForwardOptions& opt, ForwardProfile* profile, Workspace& ws,
                         float** out) const {
  const ModelConfig& c = config_;
  if (n <= 0) return Status::Error("forward: no tokens");
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c.vocab) {
      return Status::Error(fmt::format(
          "token id {} at position {} is outside the vocabulary [0, {})", tokens[t], t, c.vocab));
    }
  }
  const Mixer mix = [&](int i, const float* xn, int64_t r0, float* block, ForwardProfile* prof) {
    return mix_sequence(c, weights_.layers[i], i, xn, n, n - r0, state, opt, block, prof, ws);
  };
  HANPU_RETURN_IF_ERROR(run_stack(tokens, n, out_from, mix, opt, profile, ws, out));
  state->position += n;
  state->tokens.insert(state->tokens.end(), tokens, tokens + n);
  return Status::Ok();
}

Status Model::forward(const int* tokens, int64_t n, SequenceState* state, const ForwardOptions& opt,
                      std::vector<float>* logits, ForwardProfile* profile, Workspace* ws_in) const {
  Workspace local;
  Workspace& ws = ws_in != nullptr ? *ws_in : local;
  float* h = nullptr;
  // Only the last position's logits are needed to continue a sequence.
  HANPU_RETURN_IF_ERROR(run_layers(tokens, n, n - 1, state, opt, profile, ws, &h));
  if (logits == nullptr) return Status::Ok();  // a prompt chunk before the last: no head
  Stopwatch sw;
  const ModelConfig& c = config_;
  float* xn = ws.stack(Workspace::Stack::kHeadNormed, static_cast<size_t>(c.hidden));
  rms_norm_zero_centred(h + (n - 1) * c.hidden, c.hidden, 1, c.hidden, weights_.final_norm.data(),
                        c.rms_eps, xn, c.hidden);
  logits->resize(c.vocab);
  cpu::linear(xn, c.hidden, 1, weights_.lm_head, logits->data(), c.vocab, opt.threads,
              opt.projection);
  if (profile != nullptr) profile->other_ms += sw.lap_ms();
  return Status::Ok();
}

Status Model::decode_batch(const int* tokens, int n, SequenceState* const* states,
                           const ForwardOptions& opt, float* logits, ForwardProfile* profile,
                           Workspace* ws_in) const {
  const ModelConfig& c = config_;
  Workspace local;
  Workspace& ws = ws_in != nullptr ? *ws_in : local;
  if (n <= 0) return Status::Error("decode_batch: no sequences");
  for (int s = 0; s < n; ++s) {
    if (tokens[s] < 0 || tokens[s] >= c.vocab) {
      return Status::Error(fmt::format(
          "token id {} of sequence {} is outside the vocabulary [0, {})", tokens[s], s, c.vocab));
    }
    for (int r = 0; r < s; ++r) {
      if (states[r] == states[s])
        return Status::Error(fmt::format("decode_batch: sequences {} and {} are one state", r, s));
    }
  }
  const Mixer mix = [&](int i, const float* xn, int64_t, float* block, ForwardProfile* prof) {
    const LayerWeights& lw = weights_.layers[i];
    if (c.kda_hybrid()) {  // per sequence: its row through the one-sequence layers
      for (int s = 0; s < n; ++s) {
        const float* x = xn + static_cast<int64_t>(s) * c.hidden;
        float* o = block + static_cast<int64_t>(s) * c.hidden;
        HANPU_RETURN_IF_ERROR(mix_sequence(c, lw, i, x, 1, 1, states[s], opt, o, prof, ws));
      }
      return Status::Ok();
    }
    return lw.kind == LayerKind::kLinearAttention
               ? gdn_layer_batch(c, lw.gdn, xn, n, states, i, opt, block, &prof->la_kernel_ms, ws)
               : attention_layer_batch(c, lw.attn, xn, n, states, i, opt, block,
                                       &prof->attn_kernel_ms, ws);
  };
  float* h = nullptr;
  HANPU_RETURN_IF_ERROR(run_stack(tokens, n, 0, mix, opt, profile, ws, &h));
  for (int s = 0; s < n; ++s) {
    states[s]->position += 1;
    states[s]->tokens.push_back(tokens[s]);
  }
  Stopwatch sw;
  float* xn = ws.stack(Workspace::Stack::kHeadNormed, static_cast<size_t>(n) * c.hidden);
  rms_norm_zero_centred(h, c.hidden, n, c.hidden, weights_.final_norm.data(), c.rms_eps, xn,
                        c.hidden, opt.threads);
  cpu::linear(xn, c.hidden, n, weights_.lm_head, logits, c.vocab, opt.threads, opt.projection);
  if (profile != nullptr) profile->other_ms += sw.lap_ms();
  return Status::Ok();
}

Status Model::score(const int* tokens, int64_t n, int64_t from, const int* next,
                    SequenceState* state, const ForwardOptions& opt, double* logprobs,
                    ForwardProfile* profile, const RowLogits& on_logits, Workspace* ws_in) const {
  const ModelConfig& c = config_;
  Workspace local;
  Workspace& ws = ws_in != nullptr ? *ws_in : local;
  if (from < 0 || from >= n)
    return Status::Error(fmt::format("score: row {} is not one of the {} tokens", from, n));
  for (int64_t t = from; t < n; ++t) {
    const int id = next[t - from];
    if (id < 0 || id >= c.vocab) {
      return Status::Error(
          fmt::format("score: next token id {} at position {} is outside the vocabulary [0, {})",
                      id, t, c.vocab));
    }
  }
  float* h = nullptr;
  HANPU_RETURN_IF_ERROR(run_layers(tokens, n, from, state, opt, profile, ws, &h));
  Stopwatch sw;
  // The head in blocks of rows: a block's logits [rows, vocab] are 32 MB for Qwen's 248k
  // vocabulary at 32 rows, where all of a 512-token chunk's would be 0.5 GB.
  constexpr int64_t kHeadRows = 32;
  const int64_t rows_max = std::min(kHeadRows, n - from);
  float* xn = ws.stack(Workspace::Stack::kHeadNormed, static_cast<size_t>(rows_max) * c.hidden);
  float* logits = ws.stack(Workspace::Stack::kHeadLogits, static_cast<size_t>(rows_max) * c.vocab);
  for (int64_t r0 = from; r0 < n; r0 += kHeadRows) {
    const int64_t rows = std::min(kHeadRows, n - r0);
    rms_norm_zero_centred(h + r0 * c.hidden, c.hidden, rows, c.hidden, weights_.final_norm.data(),
                          c.rms_eps, xn, c.hidden, opt.threads);
    cpu::linear(xn, c.hidden, rows, weights_.lm_head, logits, c.vocab, opt.threads, opt.projection);
    parallel_rows(opt.threads, rows, c.vocab, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t t = r0 + q;
        if (on_logits) on_logits(t - from, logits + q * c.vocab);  // before: the next line
        logprobs[t - from] =
            log_softmax_at(logits + q * c.vocab, c.vocab, next[t - from]);  // overwrites
      }
    });
  }
  if (profile != nullptr) profile->other_ms += sw.lap_ms();
  return Status::Ok();
}

std::string gguf_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec))
    return fs::path(path).extension() == ".gguf" ? path : std::string();
  if (!fs::is_directory(path, ec) || fs::exists(fs::path(path) / "config.json"))
    return std::string();
  std::string found;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().extension() == ".gguf")
      found = found.empty() ? e.path().string() : "";  // exactly one
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
    // A quantized GGUF keeps its blocks unless the caller asks for a dtype; what it stores
    // plainly (or in a mix the kernels do not take, gguf_model.cc) is held in bf16.
    const DType plain = embed->quant ? DType::kBF16 : embed->dtype;
    HANPU_RETURN_IF_ERROR(convert_gguf_weights(config, store, options.weights.value_or(plain),
                                               options.weights.has_value(), &weights,
                                               options.progress, options.quantize));
    if (extras != nullptr) {
      extras->tokenizer.emplace();
      HANPU_RETURN_IF_ERROR(gguf_tokenizer(meta, g, &*extras->tokenizer));
      gguf_chat_template(meta, *extras->tokenizer, &extras->chat_template, &extras->bos_token,
                         &extras->eos_token);
      HANPU_RETURN_IF_ERROR(gguf_generation_config(meta, g, &extras->generation));
    }
    store.release_copied();
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
  HANPU_RETURN_IF_ERROR(
      convert_weights(config, store, dtype, &weights, options.progress, options.quantize));
  store.release_copied();
  *out = std::make_unique<Model>(std::move(config), std::move(weights));
  return Status::Ok();
}

}  // namespace hanpu::model
