// Checkpoint -> compute-layout conversion and synthetic weights (see model_weights.h).
#include "model/model_weights.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "base/quant_quantize.h"
#include "base/rng.h"
#include "cpu/nn/quant_linear.h"
#include "model/weight_converter.h"
#include "model/weight_table.h"

namespace hanpu::model {

Status Converter::plain_norm(const std::string& name, int n, std::vector<float>* out) const {
  HANPU_RETURN_IF_ERROR(f32(name, {n}, out));
  for (float& w : *out) w -= 1.0f;
  return Status::Ok();
}

Status Converter::linear(const std::string& name, int out, int in, Linear* l) {
  std::vector<float>& w = scratch_[0];
  HANPU_RETURN_IF_ERROR(f32(name, {out, in}, &w));
  *l = linear_from_rows(w, in, iota_rows(out));
  return Status::Ok();
}

Status Converter::mlp(const std::string& p, int inter, MlpWeights* m,
                      const std::array<const char*, 3>& names) {
  std::vector<float>&g = scratch_[0], &u = scratch_[1];
  HANPU_RETURN_IF_ERROR(f32(p + names[0], {inter, c_.hidden}, &g));
  HANPU_RETURN_IF_ERROR(f32(p + names[1], {inter, c_.hidden}, &u));
  g.insert(g.end(), u.begin(), u.end());
  m->gate_up = linear_from_rows(g, c_.hidden, iota_rows(2 * inter));
  return linear(p + names[2], c_.hidden, inter, &m->down);
}

Status Converter::conv(const std::string& name, int channels, int first, int total,
                       std::vector<float>* tap_major) {
  std::vector<float>& w = scratch_[0];  // [channels, 1, kernel]
  HANPU_RETURN_IF_ERROR(f32(name, {channels, 1, c_.conv_kernel}, &w));
  tap_major->resize(static_cast<size_t>(c_.conv_kernel) * total);
  for (int ch = 0; ch < channels; ++ch) {
    for (int j = 0; j < c_.conv_kernel; ++j)
      (*tap_major)[static_cast<size_t>(j) * total + first + ch] = w[ch * c_.conv_kernel + j];
  }
  return Status::Ok();
}

Status Converter::gdn(const std::string& p, GdnWeights* w) {
  const int H = c_.la_key_heads, HV = c_.la_value_heads, K = c_.la_key_dim, V = c_.la_value_dim;
  const int hidden = c_.hidden, qkv = 2 * H * K + HV * V;
  if (c_.arch == Arch::kQwen35) {
    HANPU_RETURN_IF_ERROR(linear(p + "in_proj_qkv.weight", qkv, hidden, &w->qkv));
    HANPU_RETURN_IF_ERROR(linear(p + "in_proj_z.weight", HV * V, hidden, &w->z));
    HANPU_RETURN_IF_ERROR(linear(p + "in_proj_b.weight", HV, hidden, &w->b));
    HANPU_RETURN_IF_ERROR(linear(p + "in_proj_a.weight", HV, hidden, &w->a));
  } else {
    // Qwen3-Next groups the projections per key head: qkvz rows [q_h K | k_h K | v_h gV |
    // z_h gV] and ba rows [b_h g | a_h g] for h = 0..H-1 (g = HV / H). Regroup once.
    const int g = HV / H, blk = 2 * K + 2 * g * V;
    std::vector<float> qkvz, ba;
    HANPU_RETURN_IF_ERROR(f32(p + "in_proj_qkvz.weight", {H * blk, hidden}, &qkvz));
    HANPU_RETURN_IF_ERROR(f32(p + "in_proj_ba.weight", {H * 2 * g, hidden}, &ba));
    std::vector<int> rq, rz, rb, ra;
    for (int part = 0; part < 3; ++part) {  // all q heads, then all k heads, then all v heads
      for (int h = 0; h < H; ++h) {
        const int begin = h * blk + (part == 0   ? 0
                                     : part == 1 ? K
                                                 : 2 * K),
                  n = part < 2 ? K : g * V;
        for (int i = 0; i < n; ++i) rq.push_back(begin + i);
      }
    }
    for (int h = 0; h < H; ++h) {
      for (int i = 0; i < g * V; ++i) rz.push_back(h * blk + 2 * K + g * V + i);
      for (int i = 0; i < g; ++i) rb.push_back(h * 2 * g + i), ra.push_back(h * 2 * g + g + i);
    }
    w->qkv = linear_from_rows(qkvz, hidden, rq);
    w->z = linear_from_rows(qkvz, hidden, rz);
    w->b = linear_from_rows(ba, hidden, rb);
    w->a = linear_from_rows(ba, hidden, ra);
  }
  HANPU_RETURN_IF_ERROR(linear(p + "out_proj.weight", hidden, HV * V, &w->out));
  HANPU_RETURN_IF_ERROR(conv(p + "conv1d.weight", qkv, 0, qkv, &w->conv));
  HANPU_RETURN_IF_ERROR(f32(p + "A_log", {HV}, &w->neg_A));
  for (float& a : w->neg_A) a = -std::exp(a);
  HANPU_RETURN_IF_ERROR(f32(p + "dt_bias", {HV}, &w->dt_bias));
  return f32(p + "norm.weight", {V}, &w->norm);
}

Status Converter::attn(const std::string& p, AttnWeights* w) {
  const int Hq = c_.attn_heads, Hkv = c_.kv_heads, D = c_.head_dim;
  HANPU_RETURN_IF_ERROR(linear(p + "q_proj.weight", Hq * 2 * D, c_.hidden, &w->q));
  HANPU_RETURN_IF_ERROR(linear(p + "k_proj.weight", Hkv * D, c_.hidden, &w->k));
  HANPU_RETURN_IF_ERROR(linear(p + "v_proj.weight", Hkv * D, c_.hidden, &w->v));
  HANPU_RETURN_IF_ERROR(linear(p + "o_proj.weight", c_.hidden, Hq * D, &w->o));
  HANPU_RETURN_IF_ERROR(f32(p + "q_norm.weight", {D}, &w->q_norm));
  return f32(p + "k_norm.weight", {D}, &w->k_norm);
}

Status Converter::moe(const std::string& p, MoeWeights* m) {
  const int E = c_.num_experts, I = c_.moe_intermediate, hidden = c_.hidden;
  HANPU_RETURN_IF_ERROR(linear(p + "gate.weight", E, hidden, &m->router));
  m->experts.resize(E);
  if (s_.find(p + "experts.gate_up_proj") != nullptr) {  // transformers 5's fused 3-D layout
    std::vector<float> gu, dn;
    HANPU_RETURN_IF_ERROR(f32(p + "experts.gate_up_proj", {E, 2 * I, hidden}, &gu));
    HANPU_RETURN_IF_ERROR(f32(p + "experts.down_proj", {E, hidden, I}, &dn));
    for (int e = 0; e < E; ++e) {
      const std::vector<float> gue(gu.begin() + static_cast<int64_t>(e) * 2 * I * hidden,
                                   gu.begin() + static_cast<int64_t>(e + 1) * 2 * I * hidden);
      const std::vector<float> dne(dn.begin() + static_cast<int64_t>(e) * hidden * I,
                                   dn.begin() + static_cast<int64_t>(e + 1) * hidden * I);
      m->experts[e].gate_up = linear_from_rows(gue, hidden, iota_rows(2 * I));
      m->experts[e].down = linear_from_rows(dne, I, iota_rows(hidden));
    }
  } else {
    for (int e = 0; e < E; ++e)
      HANPU_RETURN_IF_ERROR(mlp(fmt::format("{}experts.{}.", p, e), I, &m->experts[e]));
  }
  if (c_.shared_expert_intermediate > 0) {
    HANPU_RETURN_IF_ERROR(mlp(p + "shared_expert.", c_.shared_expert_intermediate, &m->shared));
    HANPU_RETURN_IF_ERROR(linear(p + "shared_expert_gate.weight", 1, hidden, &m->shared_gate));
  }
  return Status::Ok();
}

namespace {

// Visits every projection and every fp32 vector of the weights once.
template <class OnLinear, class OnVector>
void walk(const ModelWeights& w, OnLinear lin, OnVector vec) {
  vec(w.embed);
  lin(w.embed_blocks);
  vec(w.final_norm);
  lin(w.lm_head);
  const auto mlp = [&](const MlpWeights& m) {
    lin(m.gate_up);
    lin(m.down);
  };
  const auto kda_mla = [&](const KdaWeights& k, const MlaWeights& m) {
    for (const Linear* x : {&k.q, &k.k, &k.v, &k.f_a, &k.f_b, &k.b, &k.g_a, &k.g_b, &k.out, &m.q,
                            &m.q_b, &m.kv_a, &m.kv_b, &m.o, &m.gate}) {
      lin(*x);
    }
    for (const std::vector<float>* v :
         {&k.conv, &k.a_rate, &k.dt_bias, &k.o_norm, &m.q_a_norm, &m.kv_a_norm}) {
      vec(*v);
    }
    for (const Linear& x : m.uk) lin(x);
    for (const Linear& x : m.uv) lin(x);
  };
  for (const LayerWeights& l : w.layers) {
    vec(l.input_norm);
    vec(l.post_norm);
    for (const Linear* x :
         {&l.gdn.qkv, &l.gdn.z, &l.gdn.a, &l.gdn.b, &l.gdn.out, &l.attn.q, &l.attn.k, &l.attn.v,
          &l.attn.o, &l.moe_w.router, &l.moe_w.shared_gate}) {
      lin(*x);
    }
    for (const std::vector<float>* v :
         {&l.gdn.conv, &l.gdn.neg_A, &l.gdn.dt_bias, &l.gdn.norm, &l.attn.q_norm, &l.attn.k_norm}) {
      vec(*v);
    }
    kda_mla(l.kda, l.mla);
    vec(l.moe_w.router_bias);
    mlp(l.mlp);
    mlp(l.moe_w.shared);
    for (const MlpWeights& e : l.moe_w.experts) mlp(e);
  }
}

}  // namespace

int64_t ModelWeights::bytes() const {
  int64_t n = 0;
  walk(
      *this, [&](const Linear& l) { n += l.bytes(); },
      [&](const std::vector<float>& v) { n += static_cast<int64_t>(v.size() * sizeof(float)); });
  return n;
}

int64_t ModelWeights::decode_copy_bytes() const {
  int64_t n = 0;
  walk(
      *this, [&](const Linear& l) { n += l.decode_copy_bytes(); },
      [](const std::vector<float>&) {});
  return n;
}

int64_t ModelWeights::parameters(bool tied) const {
  int64_t n = 0;
  walk(
      *this, [&](const Linear& l) { n += static_cast<int64_t>(l.in) * l.out; },
      [&](const std::vector<float>& v) { n += static_cast<int64_t>(v.size()); });
  // MLA's absorbed halves of kv_b are a second layout of it, not parameters of their own.
  for (const LayerWeights& l : layers) {
    for (const std::vector<Linear>* v : {&l.mla.uk, &l.mla.uv}) {
      for (const Linear& x : *v) n -= static_cast<int64_t>(x.in) * x.out;
    }
  }
  // A tied head is the embedding again (unless the table was freed in its favour).
  return tied && !embed.empty() ? n - static_cast<int64_t>(lm_head.in) * lm_head.out : n;
}

void ModelWeights::embedding_row(int token, float* out) const {
  if (!embed.empty()) {
    std::copy_n(embed.data() + static_cast<int64_t>(token) * lm_head.in, lm_head.in, out);
    return;
  }
  if (embed_blocks.quant) return cpu::quant_linear_row(embed_blocks, token, out);
  if (lm_head.quant) return cpu::quant_linear_row(lm_head, token, out);
  for (int i = 0; i < lm_head.in; ++i) out[i] = lm_head.at(i, token);
}

Status load_tied_embedding(const WeightStore& store, const std::string& name, int vocab, int hidden,
                           DType weights, ModelWeights* w, bool widen,
                           std::optional<QuantType> quantize) {
  const StoredTensor* t = nullptr;
  HANPU_RETURN_IF_ERROR(store.get(name, {vocab, hidden}, &t));
  if (t->quant && !widen) {  // the head multiplies the blocks; the embedding decodes a token's row
    w->embed.clear();
    w->lm_head =
        cpu::quant_linear_from_rows(*t->quant, t->data, hidden, iota_rows(vocab), t->owner);
    return Status::Ok();
  }
  if (quantize) quantize = quant_type_for_row(*quantize, hidden);
  const bool quantizes = quantize.has_value();
  if (weights != DType::kF32 && weights != t->dtype && !quantizes) {
    // The head rounds the table: keep it in fp32.
    HANPU_RETURN_IF_ERROR(store.get_f32(name, {vocab, hidden}, &w->embed));
    w->lm_head = Linear::from_rows(w->embed.data(), hidden, iota_rows(vocab), weights);
    return Status::Ok();
  }
  // The head packed (or quantized) from the stored rows, one at a time: no fp32 table.
  w->embed.clear();
  std::atomic<int64_t> first_bad{std::numeric_limits<int64_t>::max()};
  const Linear::RowSource row = [&](int o, float* buf) {
    stored_to_f32(*t, static_cast<int64_t>(o) * hidden, hidden, buf);
    const size_t i = first_non_finite(buf, static_cast<size_t>(hidden));
    if (i == static_cast<size_t>(hidden)) return static_cast<const float*>(buf);
    int64_t bad = static_cast<int64_t>(o) * hidden + static_cast<int64_t>(i),
            seen = first_bad.load();
    while (bad < seen && !first_bad.compare_exchange_weak(seen, bad)) {
    }
    std::fill_n(buf, hidden, 0.0f);  // refused below; the quantizer never sees a NaN
    return static_cast<const float*>(buf);
  };
  w->lm_head = quantizes ? *cpu::quantized_row_source(*quantize, hidden, vocab, row)
                         : Linear::from_row_source(hidden, vocab, row, weights);
  if (first_bad.load() != std::numeric_limits<int64_t>::max()) {
    w->lm_head = Linear{};
    return Status::Error(fmt::format("tensor '{}' in {} holds a non-finite value at element {}",
                                     name, t->file, first_bad.load()));
  }
  return Status::Ok();
}

Linear pack_rows(const float* w, int in, const std::vector<int>& rows, DType dtype,
                 std::optional<QuantType> quantize) {
  if (std::optional<QuantType> t = quantize ? quant_type_for_row(*quantize, in) : std::nullopt) {
    if (std::optional<Linear> q = cpu::quantized_rows(*t, w, in, rows)) return *std::move(q);
  }
  return Linear::from_rows(w, in, rows, dtype);
}

Status convert_weights(const ModelConfig& c, const WeightStore& store, DType weights,
                       ModelWeights* out, const LoadProgress& progress,
                       std::optional<QuantType> quantize) {
  // Every tensor the config implies, checked before the first is converted or allocated.
  const bool hybrid = c.kda_hybrid();
  HANPU_RETURN_IF_ERROR(check_weight_table(
      hybrid ? kda_hybrid_weight_table(c, store) : hf_weight_table(c, store), store));
  Converter cv(c, store, weights, quantize);
  ModelWeights w;
  const std::string& P = c.weight_prefix;
  const std::string embed = hybrid ? hybrid_embedding_name(c) : P + "embed_tokens.weight";
  if (hybrid) {
    HANPU_RETURN_IF_ERROR(cv.plain_norm(P + "norm.weight", c.hidden, &w.final_norm));
  } else {
    HANPU_RETURN_IF_ERROR(cv.f32(P + "norm.weight", {c.hidden}, &w.final_norm));
  }
  if (c.tie_embeddings && store.find("lm_head.weight") == nullptr) {
    HANPU_RETURN_IF_ERROR(
        load_tied_embedding(store, embed, c.vocab, c.hidden, weights, &w, false, quantize));
  } else {
    HANPU_RETURN_IF_ERROR(cv.f32(embed, {c.vocab, c.hidden}, &w.embed));
    HANPU_RETURN_IF_ERROR(cv.linear("lm_head.weight", c.vocab, c.hidden, &w.lm_head));
  }
  if (hybrid) {
    w.layers.resize(c.layers);
    for (int i = 0; i < c.layers; ++i) {
      HANPU_RETURN_IF_ERROR(convert_kda_hybrid_layer(cv, i, &w.layers[i]));
      if (progress) progress(i + 1, c.layers);
    }
    *out = std::move(w);
    return Status::Ok();
  }
  w.layers.resize(c.layers);
  for (int i = 0; i < c.layers; ++i) {
    LayerWeights& l = w.layers[i];
    const std::string p = fmt::format("{}layers.{}.", P, i);
    l.kind = c.layer_kinds[i];
    HANPU_RETURN_IF_ERROR(cv.f32(p + "input_layernorm.weight", {c.hidden}, &l.input_norm));
    HANPU_RETURN_IF_ERROR(cv.f32(p + "post_attention_layernorm.weight", {c.hidden}, &l.post_norm));
    if (l.kind == LayerKind::kLinearAttention) {
      HANPU_RETURN_IF_ERROR(cv.gdn(p + "linear_attn.", &l.gdn));
    } else {
      HANPU_RETURN_IF_ERROR(cv.attn(p + "self_attn.", &l.attn));
    }
    l.moe = c.layer_has_moe(i);
    if (l.moe) {
      HANPU_RETURN_IF_ERROR(cv.moe(p + "mlp.", &l.moe_w));
    } else {
      HANPU_RETURN_IF_ERROR(cv.mlp(p + "mlp.", c.intermediate, &l.mlp));
    }
    if (progress) progress(i + 1, c.layers);
  }
  *out = std::move(w);
  return Status::Ok();
}

namespace {

// How random projections are stored: `dtype`, or quantized to `quantize` where set (a row
// that is not whole blocks of it takes its 32-value stand-in, pack_rows).
struct Storage {
  DType dtype;
  std::optional<QuantType> quantize;
  Storage plain() const { return {dtype, std::nullopt}; }  // routers and gates: unquantized
};

Linear random_linear(Rng& rng, int in, int out, const Storage& st) {
  const DType dtype = st.dtype;
  // Uniform with the standard deviation 0.5 / sqrt(in) (a normal per weight costs seconds
  // for a billion of them; the layout of random values does not matter, the padding is
  // zeroed after).
  const double a = std::sqrt(3.0) * 0.5 / std::sqrt(static_cast<double>(in));
  if (st.quantize) {  // fp32 rows, quantized as a checkpoint's would be at load
    std::vector<float> w(static_cast<size_t>(out) * in);
    for (float& x : w) x = static_cast<float>(rng.uniform(-a, a));
    return pack_rows(w.data(), in, iota_rows(out), dtype, st.quantize);
  }
  Linear l = Linear::zeros(in, out, dtype);
  if (dtype == DType::kF32) {
    for (float& x : l.data) x = static_cast<float>(rng.uniform(-a, a));
  } else {
    for (size_t i = 0; i < l.half.size(); ++i)
      store_from_f32(l.half.data(), dtype, i, static_cast<float>(rng.uniform(-a, a)));
  }
  l.clear_padding();
  return l;
}

std::vector<float> random_vec(Rng& rng, size_t n, double mean, double sd) {
  std::vector<float> v(n);
  const double a = std::sqrt(3.0) * sd;  // uniform with this standard deviation
  for (float& x : v) x = static_cast<float>(mean + rng.uniform(-a, a));
  return v;
}

MlpWeights random_mlp(Rng& rng, int hidden, int inter, const Storage& dt) {
  return MlpWeights{random_linear(rng, hidden, 2 * inter, dt),
                    random_linear(rng, inter, hidden, dt)};
}

// A KDA hybrid's token mixer (KDA or MLA) of layer l->kind, random.
void random_kda_hybrid_mixer(Rng& rng, const ModelConfig& c, const Storage& dt, LayerWeights* l) {
  const int hidden = c.hidden, H = c.la_key_heads, K = c.la_key_dim, HK = H * K;
  if (l->kind == LayerKind::kLinearAttention) {
    KdaWeights& k = l->kda;
    k.q = random_linear(rng, hidden, HK, dt);
    k.k = random_linear(rng, hidden, HK, dt);
    k.v = random_linear(rng, hidden, HK, dt);
    k.conv = random_vec(rng, static_cast<size_t>(3) * HK * c.conv_kernel, 0.0, 0.3);
    const bool low_rank = c.arch == Arch::kKimiLinear;
    k.f_a = random_linear(rng, hidden, low_rank ? K : HK, dt);
    k.g_a = random_linear(rng, hidden, low_rank ? K : HK, dt);
    if (low_rank) {
      k.f_b = random_linear(rng, K, HK, dt);
      k.g_b = random_linear(rng, K, HK, dt);
    }
    k.b = random_linear(rng, hidden, H, dt.plain());
    k.a_rate = random_vec(rng, H, 0.0, 0.5);  // A_log
    for (float& a : k.a_rate) a = std::exp(a);
    k.dt_bias = random_vec(rng, HK, 0.0, 0.5);
    k.o_norm = random_vec(rng, K, 1.0, 0.1);
    k.out = random_linear(rng, HK, hidden, dt);
    k.gate_lower_bound = c.kda_gate_lower_bound;
    return;
  }
  const MlaShape& m = c.mla;
  const int Hq = c.attn_heads, C = m.kv_lora_rank;
  MlaWeights& a = l->mla;
  a.q = random_linear(rng, hidden, Hq * m.qk_dim(), dt);
  a.kv_a = random_linear(rng, hidden, C + m.qk_rope_dim, dt);
  a.kv_a_norm = random_vec(rng, C, 0.0, 0.1);
  const double up = std::sqrt(3.0) * 0.5 / std::sqrt(static_cast<double>(C));
  std::vector<float> kv_b(static_cast<size_t>(Hq) * (m.qk_nope_dim + m.v_dim) * C);
  for (float& x : kv_b) x = static_cast<float>(rng.uniform(-up, up));
  pack_mla_up_projection(c, kv_b, dt.dtype, dt.quantize, &a);
  a.o = random_linear(rng, Hq * m.v_dim, hidden, dt);
  if (c.arch == Arch::kLing) a.gate = random_linear(rng, hidden, Hq, dt);
}

}  // namespace

void random_weights(const ModelConfig& c, uint64_t seed, DType dtype, ModelWeights* out,
                    const LoadProgress& progress, std::optional<QuantType> quantize) {
  const Storage dt{dtype, quantize};
  Rng rng(seed);
  ModelWeights w;
  // Tied as a real checkpoint of the shape is: embedding rows are read from the head, so the
  // model holds (and a benchmark's peak RSS counts) one copy, as load_tied_embedding leaves it.
  if (!c.tie_embeddings)
    w.embed = random_vec(rng, static_cast<size_t>(c.vocab) * c.hidden, 0.0, 1.0);
  w.final_norm = random_vec(rng, c.hidden, 0.0, 0.1);
  w.lm_head = random_linear(rng, c.hidden, c.vocab, dt);
  w.layers.resize(c.layers);
  const int H = c.la_key_heads, HV = c.la_value_heads, K = c.la_key_dim, V = c.la_value_dim;
  for (int i = 0; i < c.layers; ++i) {
    LayerWeights& l = w.layers[i];
    l.kind = c.layer_kinds[i];
    l.input_norm = random_vec(rng, c.hidden, 0.0, 0.1);
    l.post_norm = random_vec(rng, c.hidden, 0.0, 0.1);
    if (c.kda_hybrid()) {
      random_kda_hybrid_mixer(rng, c, dt, &l);
    } else if (l.kind == LayerKind::kLinearAttention) {
      GdnWeights& g = l.gdn;
      g.qkv = random_linear(rng, c.hidden, 2 * H * K + HV * V, dt);
      g.z = random_linear(rng, c.hidden, HV * V, dt);
      g.b = random_linear(rng, c.hidden, HV, dt.plain());
      g.a = random_linear(rng, c.hidden, HV, dt.plain());
      g.out = random_linear(rng, HV * V, c.hidden, dt);
      g.conv = random_vec(rng, static_cast<size_t>(c.la_conv_channels()) * c.conv_kernel, 0.0, 0.3);
      g.neg_A = random_vec(rng, HV, 0.0, 0.5);
      for (float& a : g.neg_A) a = -std::exp(a);
      g.dt_bias = random_vec(rng, HV, 0.0, 0.5);
      g.norm = random_vec(rng, V, 1.0, 0.1);
    } else {
      AttnWeights& a = l.attn;
      a.q = random_linear(rng, c.hidden, c.attn_heads * 2 * c.head_dim, dt);
      a.k = random_linear(rng, c.hidden, c.kv_heads * c.head_dim, dt);
      a.v = random_linear(rng, c.hidden, c.kv_heads * c.head_dim, dt);
      a.o = random_linear(rng, c.attn_heads * c.head_dim, c.hidden, dt);
      a.q_norm = random_vec(rng, c.head_dim, 0.0, 0.1);
      a.k_norm = random_vec(rng, c.head_dim, 0.0, 0.1);
    }
    l.moe = c.layer_has_moe(i);
    if (l.moe) {
      l.moe_w.router = random_linear(rng, c.hidden, c.num_experts, dt.plain());
      if (c.kda_hybrid()) l.moe_w.router_bias = random_vec(rng, c.num_experts, 0.0, 0.05);
      for (int e = 0; e < c.num_experts; ++e)
        l.moe_w.experts.push_back(random_mlp(rng, c.hidden, c.moe_intermediate, dt));
      if (c.shared_expert_intermediate > 0) {
        l.moe_w.shared = random_mlp(rng, c.hidden, c.shared_expert_intermediate, dt);
        if (!c.kda_hybrid()) l.moe_w.shared_gate = random_linear(rng, c.hidden, 1, dt.plain());
      }
    } else {
      l.mlp = random_mlp(rng, c.hidden, c.intermediate, dt);
    }
    if (progress) progress(i + 1, c.layers);
  }
  *out = std::move(w);
}

}  // namespace hanpu::model
