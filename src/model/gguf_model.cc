// GGUF -> hanpu model (see gguf_model.h). The conventions undone are those of llama.cpp's
// convert_hf_to_gguf.py Qwen3NextModel / _LinearAttentionVReorderBase (shared/research/
// la_peers.md §4.4): every zero-centred RMSNorm weight is stored as 1 + w; A_log as
// -exp(A_log) (= hanpu's neg_A); conv weights squeezed to [channels, kernel]; Qwen3-Next's
// qkvz already split into attn_qkv / attn_gate; and for qwen35 the value heads in tiled
// order (GGUF head r Hk + k holds HF head k g + r) in attn_qkv's V rows, attn_gate,
// ssm_alpha/beta, ssm_a, ssm_dt, the conv's V channels and ssm_out's input columns. The
// tokenizer and chat template are read in gguf_tokenizer.cc.
#include "model/gguf_model.h"

#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace hanpu::model {

namespace {

Status meta_int(const GgufMetadata& m, const std::string& key, const std::string& file, bool required, int64_t fallback,
                int64_t* out) {
  const auto it = m.find(key);
  if (it == m.end()) {
    if (required) return Status::Error(fmt::format("{}: metadata '{}' is missing", file, key));
    *out = fallback;
    return Status::Ok();
  }
  if (!it->second.is_int()) return Status::Error(fmt::format("{}: metadata '{}' is not an integer", file, key));
  *out = it->second.as_int();
  return Status::Ok();
}

Status meta_float(const GgufMetadata& m, const std::string& key, const std::string& file, double fallback, double* out) {
  const auto it = m.find(key);
  if (it == m.end()) {
    *out = fallback;
    return Status::Ok();
  }
  if (const auto* d = std::get_if<double>(&it->second.v)) {
    *out = *d;
  } else if (it->second.is_int()) {
    *out = static_cast<double>(it->second.as_int());
  } else {
    return Status::Error(fmt::format("{}: metadata '{}' is not a number", file, key));
  }
  return Status::Ok();
}

// HF value head hv sits at GGUF position tiled_position(hv) (qwen35 with Hk != HV).
struct HeadOrder {
  int hk = 1, hv = 1;
  bool tiled = false;
  int gguf_of(int h) const { return tiled ? (h % (hv / hk)) * hk + h / (hv / hk) : h; }
};

}  // namespace

Status gguf_model_config(const GgufMetadata& meta, const WeightStore& store, const std::string& file,
                         ModelConfig* out) {
  const std::string* arch = gguf_string(meta, "general.architecture");
  if (arch == nullptr) return Status::Error(fmt::format("{}: metadata 'general.architecture' is missing", file));
  ModelConfig c;
  if (*arch == "qwen35") {
    c.arch = Arch::kQwen35;
  } else if (*arch == "qwen3next") {
    c.arch = Arch::kQwen3Next;
  } else {
    return Status::Error(fmt::format("{}: architecture '{}' is not supported (qwen35, qwen3next)", file, *arch));
  }
  c.model_type = *arch;
  const std::string a = *arch + ".";
  int64_t v = 0;
  const auto get = [&](const char* key, bool required, int64_t fallback, int* dst) -> Status {
    HANPU_RETURN_IF_ERROR(meta_int(meta, a + key, file, required, fallback, &v));
    if (v < 0 || v > (int64_t{1} << 30)) return Status::Error(fmt::format("{}: metadata '{}{}' = {} is out of range", file, a, key, v));
    *dst = static_cast<int>(v);
    return Status::Ok();
  };
  HANPU_RETURN_IF_ERROR(get("block_count", true, 0, &c.layers));
  HANPU_RETURN_IF_ERROR(get("embedding_length", true, 0, &c.hidden));
  HANPU_RETURN_IF_ERROR(get("feed_forward_length", c.arch == Arch::kQwen35, 0, &c.intermediate));
  HANPU_RETURN_IF_ERROR(get("attention.head_count", true, 0, &c.attn_heads));
  HANPU_RETURN_IF_ERROR(get("attention.head_count_kv", true, 0, &c.kv_heads));
  HANPU_RETURN_IF_ERROR(get("attention.key_length", true, 0, &c.head_dim));
  HANPU_RETURN_IF_ERROR(get("ssm.conv_kernel", true, 0, &c.conv_kernel));
  HANPU_RETURN_IF_ERROR(get("context_length", false, 0, &c.max_positions));
  HANPU_RETURN_IF_ERROR(get("ssm.state_size", true, 0, &c.la_key_dim));
  HANPU_RETURN_IF_ERROR(get("ssm.group_count", true, 0, &c.la_key_heads));
  HANPU_RETURN_IF_ERROR(get("ssm.time_step_rank", true, 0, &c.la_value_heads));
  int inner = 0, rope_dims = 0, interval = 4;
  HANPU_RETURN_IF_ERROR(get("ssm.inner_size", true, 0, &inner));
  HANPU_RETURN_IF_ERROR(get("rope.dimension_count", true, 0, &rope_dims));
  HANPU_RETURN_IF_ERROR(get("full_attention_interval", false, 4, &interval));
  if (c.la_value_heads <= 0 || inner % c.la_value_heads != 0 || c.head_dim <= 0 || interval <= 0) {
    return Status::Error(fmt::format("{}: ssm.inner_size {} / time_step_rank {} / key_length {} / interval {} are "
                                     "inconsistent", file, inner, c.la_value_heads, c.head_dim, interval));
  }
  c.la_value_dim = inner / c.la_value_heads;
  c.partial_rotary = static_cast<float>(rope_dims) / static_cast<float>(c.head_dim);
  HANPU_RETURN_IF_ERROR(meta_float(meta, a + "rope.freq_base", file, 1e7, &c.rope_theta));
  double eps = 1e-6;
  HANPU_RETURN_IF_ERROR(meta_float(meta, a + "attention.layer_norm_rms_epsilon", file, 1e-6, &eps));
  c.rms_eps = static_cast<float>(eps);
  if (c.arch == Arch::kQwen3Next) {
    HANPU_RETURN_IF_ERROR(get("expert_count", false, 0, &c.num_experts));
    HANPU_RETURN_IF_ERROR(get("expert_used_count", c.num_experts > 0, 0, &c.experts_per_token));
    HANPU_RETURN_IF_ERROR(get("expert_feed_forward_length", c.num_experts > 0, 0, &c.moe_intermediate));
    HANPU_RETURN_IF_ERROR(get("expert_shared_feed_forward_length", false, 0, &c.shared_expert_intermediate));
  }
  if (c.layers > kMaxLayers) {  // checked before the layer list is built from it
    return Status::Error(fmt::format("{}: metadata '{}block_count' = {} is more than {}", file, a, c.layers, kMaxLayers));
  }
  for (int i = 0; i < c.layers; ++i) {
    c.layer_kinds.push_back((i + 1) % interval == 0 ? LayerKind::kFullAttention : LayerKind::kLinearAttention);
  }
  // Layers whose FFN is dense in a MoE model are those with ffn_gate instead of ffn_gate_inp.
  if (c.num_experts > 0) {
    for (int i = 0; i < c.layers; ++i) {
      if (store.find(fmt::format("blk.{}.ffn_gate_inp.weight", i)) == nullptr) c.mlp_only_layers.push_back(i);
    }
  }
  const StoredTensor* embd = store.find("token_embd.weight");
  if (embd == nullptr || embd->shape.size() != 2) return Status::Error(fmt::format("{}: no 2-D tensor 'token_embd.weight'", file));
  if (embd->shape[0] > kMaxVocab) {
    return Status::Error(fmt::format("{}: token_embd.weight has {} rows, more than {}", file, embd->shape[0], kMaxVocab));
  }
  c.vocab = static_cast<int>(embd->shape[0]);
  c.tie_embeddings = store.find("output.weight") == nullptr;
  // llama.cpp ends generation at any of these (its "end of generation" set).
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    int64_t id = -1;
    HANPU_RETURN_IF_ERROR(meta_int(meta, key, file, false, -1, &id));
    if (id >= 0 && id < c.vocab) c.eos_token_ids.push_back(static_cast<int>(id));
  }
  // The checks a config.json gets, with the GGUF keys' values under the names of config.json.
  HANPU_RETURN_IF_ERROR(validate_model_config(c, file + " (metadata '" + a + "*' as config.json fields)"));
  *out = std::move(c);
  return Status::Ok();
}

Status gguf_generation_config(const GgufMetadata& meta, const std::string& file, std::optional<GenerationConfig>* out) {
  out->reset();
  const std::string k = "general.sampling.";
  if (!meta.count(k + "temp") && !meta.count(k + "top_k") && !meta.count(k + "top_p") && !meta.count(k + "min_p")) {
    return Status::Ok();
  }
  double temp = 0, top_p = 1, min_p = 0;
  int64_t top_k = 0;
  HANPU_RETURN_IF_ERROR(meta_float(meta, k + "temp", file, 0.0, &temp));
  HANPU_RETURN_IF_ERROR(meta_int(meta, k + "top_k", file, false, 0, &top_k));
  HANPU_RETURN_IF_ERROR(meta_float(meta, k + "top_p", file, 1.0, &top_p));
  HANPU_RETURN_IF_ERROR(meta_float(meta, k + "min_p", file, 0.0, &min_p));
  const auto bad = [&](const std::string& key, double v, const char* range) {
    return Status::Error(fmt::format("{}: metadata '{}{}' is {}, {}", file, k, key, v, range));
  };
  if (!(temp >= 0 && temp <= 1e6)) return bad("temp", temp, "not in [0, 1e6]");
  if (top_k < 0 || top_k > std::numeric_limits<int>::max()) return bad("top_k", static_cast<double>(top_k), "not >= 0");
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

namespace {

class GgufConverter {
 public:
  GgufConverter(const ModelConfig& c, const WeightStore& s, DType dt) : c_(c), s_(s), dt_(dt) {
    order_ = HeadOrder{c.la_key_heads, c.la_value_heads, c.arch == Arch::kQwen35 && c.la_key_heads != c.la_value_heads};
  }
  Status f32(const std::string& name, const Shape& shape, std::vector<float>* out) {
    return s_.get_f32(name, shape, out);
  }
  // A zero-centred norm weight (GGUF stores 1 + w).
  Status norm(const std::string& name, int n, std::vector<float>* out) {
    HANPU_RETURN_IF_ERROR(f32(name, {n}, out));
    for (float& x : *out) x -= 1.0f;
    return Status::Ok();
  }
  Status linear(const std::string& name, int out, int in, const std::vector<int>& rows, Linear* l) {
    std::vector<float>& w = scratch_[0];
    HANPU_RETURN_IF_ERROR(f32(name, {out, in}, &w));
    *l = Linear::from_rows(w.data(), in, rows, dt_);
    return Status::Ok();
  }
  Status linear(const std::string& name, int out, int in, Linear* l) { return linear(name, out, in, iota(out), l); }
  static std::vector<int> iota(int n, int first = 0) {
    std::vector<int> r(n);
    std::iota(r.begin(), r.end(), first);
    return r;
  }
  // GGUF rows of HF value heads 0..HV-1 (blocks of `per` rows), after `base` leading rows.
  std::vector<int> v_rows(int per, int base = 0) const {
    std::vector<int> r;
    for (int h = 0; h < c_.la_value_heads; ++h) {
      for (int i = 0; i < per; ++i) r.push_back(base + order_.gguf_of(h) * per + i);
    }
    return r;
  }
  Status mlp(const std::string& b, const char* suffix, int inter, MlpWeights* m) {
    std::vector<float>& g = scratch_[0], &u = scratch_[1];
    HANPU_RETURN_IF_ERROR(f32(fmt::format("{}ffn_gate{}.weight", b, suffix), {inter, c_.hidden}, &g));
    HANPU_RETURN_IF_ERROR(f32(fmt::format("{}ffn_up{}.weight", b, suffix), {inter, c_.hidden}, &u));
    g.insert(g.end(), u.begin(), u.end());
    m->gate_up = Linear::from_rows(g.data(), c_.hidden, iota(2 * inter), dt_);
    return linear(fmt::format("{}ffn_down{}.weight", b, suffix), c_.hidden, inter, &m->down);
  }
  Status gdn(const std::string& b, GdnWeights* w) {
    const int H = c_.la_key_heads, HV = c_.la_value_heads, K = c_.la_key_dim, V = c_.la_value_dim, hidden = c_.hidden;
    const int C = c_.la_conv_channels(), qk = 2 * H * K;
    std::vector<int> qkv_rows = iota(qk);
    for (int r : v_rows(V, qk)) qkv_rows.push_back(r);
    HANPU_RETURN_IF_ERROR(linear(b + "attn_qkv.weight", C, hidden, qkv_rows, &w->qkv));
    HANPU_RETURN_IF_ERROR(linear(b + "attn_gate.weight", HV * V, hidden, v_rows(V), &w->z));
    if (c_.arch == Arch::kQwen35) {
      HANPU_RETURN_IF_ERROR(linear(b + "ssm_beta.weight", HV, hidden, v_rows(1), &w->b));
      HANPU_RETURN_IF_ERROR(linear(b + "ssm_alpha.weight", HV, hidden, v_rows(1), &w->a));
    } else {  // ssm_ba keeps HF's grouping: per key head [b (g) | a (g)]
      const int g = HV / H;
      std::vector<int> rb, ra;
      for (int h = 0; h < H; ++h) {
        for (int i = 0; i < g; ++i) rb.push_back(h * 2 * g + i), ra.push_back(h * 2 * g + g + i);
      }
      HANPU_RETURN_IF_ERROR(linear(b + "ssm_ba.weight", 2 * HV, hidden, rb, &w->b));
      HANPU_RETURN_IF_ERROR(linear(b + "ssm_ba.weight", 2 * HV, hidden, ra, &w->a));
    }
    std::vector<float> out;  // [hidden, HV V]: value heads are its input columns
    HANPU_RETURN_IF_ERROR(f32(b + "ssm_out.weight", {hidden, HV * V}, &out));
    const std::vector<int> cols = v_rows(V);
    std::vector<float> w_hf(out.size());  // the same matrix with its columns in HF order
    for (int o = 0; o < hidden; ++o) {
      for (int i = 0; i < HV * V; ++i) w_hf[static_cast<size_t>(o) * HV * V + i] = out[static_cast<size_t>(o) * HV * V + cols[i]];
    }
    w->out = Linear::from_rows(w_hf.data(), HV * V, iota(hidden), dt_);
    std::vector<float> conv;  // [channels, kernel] -> tap-major, V channels back in HF order
    HANPU_RETURN_IF_ERROR(f32(b + "ssm_conv1d.weight", {C, c_.conv_kernel}, &conv));
    w->conv.resize(conv.size());
    for (int ch = 0; ch < C; ++ch) {
      const int src = ch < qk ? ch : qkv_rows[ch];
      for (int j = 0; j < c_.conv_kernel; ++j) w->conv[static_cast<size_t>(j) * C + ch] = conv[static_cast<size_t>(src) * c_.conv_kernel + j];
    }
    std::vector<float> a, dt;
    HANPU_RETURN_IF_ERROR(f32(b + "ssm_a", {HV}, &a));
    HANPU_RETURN_IF_ERROR(f32(b + "ssm_dt.bias", {HV}, &dt));
    w->neg_A.resize(HV);
    w->dt_bias.resize(HV);
    for (int h = 0; h < HV; ++h) {
      w->neg_A[h] = a[order_.gguf_of(h)];
      w->dt_bias[h] = dt[order_.gguf_of(h)];
    }
    return f32(b + "ssm_norm.weight", {V}, &w->norm);
  }
  Status attn(const std::string& b, AttnWeights* w) {
    const int Hq = c_.attn_heads, Hkv = c_.kv_heads, D = c_.head_dim;
    HANPU_RETURN_IF_ERROR(linear(b + "attn_q.weight", Hq * 2 * D, c_.hidden, &w->q));
    HANPU_RETURN_IF_ERROR(linear(b + "attn_k.weight", Hkv * D, c_.hidden, &w->k));
    HANPU_RETURN_IF_ERROR(linear(b + "attn_v.weight", Hkv * D, c_.hidden, &w->v));
    HANPU_RETURN_IF_ERROR(linear(b + "attn_output.weight", c_.hidden, Hq * D, &w->o));
    HANPU_RETURN_IF_ERROR(norm(b + "attn_q_norm.weight", D, &w->q_norm));
    return norm(b + "attn_k_norm.weight", D, &w->k_norm);
  }
  Status moe(const std::string& b, MoeWeights* m) {
    const int E = c_.num_experts, I = c_.moe_intermediate, hidden = c_.hidden;
    HANPU_RETURN_IF_ERROR(linear(b + "ffn_gate_inp.weight", E, hidden, &m->router));
    std::vector<float> g, u, d;
    HANPU_RETURN_IF_ERROR(f32(b + "ffn_gate_exps.weight", {E, I, hidden}, &g));
    HANPU_RETURN_IF_ERROR(f32(b + "ffn_up_exps.weight", {E, I, hidden}, &u));
    HANPU_RETURN_IF_ERROR(f32(b + "ffn_down_exps.weight", {E, hidden, I}, &d));
    m->experts.resize(E);
    const size_t gi = static_cast<size_t>(I) * hidden;
    for (int e = 0; e < E; ++e) {
      std::vector<float> gu(g.begin() + e * gi, g.begin() + (e + 1) * gi);
      gu.insert(gu.end(), u.begin() + e * gi, u.begin() + (e + 1) * gi);
      m->experts[e].gate_up = Linear::from_rows(gu.data(), hidden, iota(2 * I), dt_);
      m->experts[e].down = Linear::from_rows(d.data() + e * gi, I, iota(hidden), dt_);
    }
    if (c_.shared_expert_intermediate > 0) {
      HANPU_RETURN_IF_ERROR(mlp(b, "_shexp", c_.shared_expert_intermediate, &m->shared));
      std::vector<float> sg;
      HANPU_RETURN_IF_ERROR(f32(b + "ffn_gate_inp_shexp.weight", {hidden}, &sg));
      m->shared_gate = Linear::from_rows(sg.data(), hidden, {0}, dt_);
    }
    return Status::Ok();
  }

 private:
  const ModelConfig& c_;
  const WeightStore& s_;
  DType dt_;  // storage of the projections
  HeadOrder order_;
  // fp32 copies of the tensor being converted, kept between tensors: fresh ones of up to
  // hundreds of MB each would cost their page faults and zeroing again every time.
  std::vector<float> scratch_[2];
};

}  // namespace

Status convert_gguf_weights(const ModelConfig& c, const WeightStore& store, DType weights, ModelWeights* out,
                            const LoadProgress& progress) {
  GgufConverter cv(c, store, weights);
  ModelWeights w;
  HANPU_RETURN_IF_ERROR(cv.norm("output_norm.weight", c.hidden, &w.final_norm));
  if (c.tie_embeddings) {
    HANPU_RETURN_IF_ERROR(load_tied_embedding(store, "token_embd.weight", c.vocab, c.hidden, weights, &w));
  } else {
    HANPU_RETURN_IF_ERROR(cv.f32("token_embd.weight", {c.vocab, c.hidden}, &w.embed));
    HANPU_RETURN_IF_ERROR(cv.linear("output.weight", c.vocab, c.hidden, &w.lm_head));
  }
  w.layers.resize(c.layers);
  for (int i = 0; i < c.layers; ++i) {
    LayerWeights& l = w.layers[i];
    const std::string b = fmt::format("blk.{}.", i);
    l.kind = c.layer_kinds[i];
    HANPU_RETURN_IF_ERROR(cv.norm(b + "attn_norm.weight", c.hidden, &l.input_norm));
    HANPU_RETURN_IF_ERROR(cv.norm(b + "post_attention_norm.weight", c.hidden, &l.post_norm));
    if (l.kind == LayerKind::kLinearAttention) {
      HANPU_RETURN_IF_ERROR(cv.gdn(b, &l.gdn));
    } else {
      HANPU_RETURN_IF_ERROR(cv.attn(b, &l.attn));
    }
    l.moe = c.layer_has_moe(i);
    if (l.moe) {
      HANPU_RETURN_IF_ERROR(cv.moe(b, &l.moe_w));
    } else {
      HANPU_RETURN_IF_ERROR(cv.mlp(b, "", c.intermediate, &l.mlp));
    }
    if (progress) progress(i + 1, c.layers);
  }
  *out = std::move(w);
  return Status::Ok();
}

}  // namespace hanpu::model
