// GGUF -> hanpu model (see gguf_model.h). The conventions undone are those of llama.cpp's
// convert_hf_to_gguf.py Qwen3NextModel / _LinearAttentionVReorderBase: every zero-centred RMSNorm
// weight is stored as 1 + w; A_log as -exp(A_log) (= hanpu's neg_A); conv weights squeezed to
// [channels, kernel]; Qwen3-Next's qkvz already split into attn_qkv / attn_gate; and for qwen35 the
// value heads in tiled order (GGUF head r Hk + k holds HF head k g + r) in attn_qkv's V rows,
// attn_gate, ssm_alpha/beta, ssm_a, ssm_dt, the conv's V channels and ssm_out's input columns. The
// config is read in gguf_config.cc, the tokenizer and chat template in gguf_tokenizer.cc.
#include "model/gguf_model.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "cpu/nn/quant_linear.h"
#include "model/gguf_converter.h"
#include "model/weight_table.h"

namespace hanpu::model {

Status GgufConverter::linear(const std::string& name, int out, int in, const std::vector<int>& rows,
                             Linear* l) {
  const StoredTensor* t = nullptr;
  HANPU_RETURN_IF_ERROR(s_.get(name, {out, in}, &t));
  if (t->quant && keep_blocks_) {  // kept in its blocks (cpu/nn/quant_linear.h)
    *l = cpu::quant_linear_from_rows(*t->quant, t->data, in, rows, t->owner);
    return Status::Ok();
  }
  std::vector<float>& w = scratch_[0];
  HANPU_RETURN_IF_ERROR(f32(name, {out, in}, &w));
  *l = pack_rows(w.data(), in, rows, plain_dtype(*t), quantize_);
  return Status::Ok();
}

Status GgufConverter::embedding(const std::string& name, int vocab, int hidden, ModelWeights* w) {
  const StoredTensor* t = nullptr;
  HANPU_RETURN_IF_ERROR(s_.get(name, {vocab, hidden}, &t));
  if (t->quant && keep_blocks_) {
    w->embed_blocks = cpu::quant_linear_from_rows(*t->quant, t->data, hidden, iota(vocab), t->owner,
                                                  /*decode_copy=*/false);
    return Status::Ok();
  }
  return f32(name, {vocab, hidden}, &w->embed);
}

Status GgufConverter::mlp(const std::string& b, const char* suffix, int inter, MlpWeights* m) {
  const std::string gate = fmt::format("{}ffn_gate{}.weight", b, suffix),
                    up = fmt::format("{}ffn_up{}.weight", b, suffix);
  const StoredTensor *tg = nullptr, *tu = nullptr;
  HANPU_RETURN_IF_ERROR(s_.get(gate, {inter, c_.hidden}, &tg));
  HANPU_RETURN_IF_ERROR(s_.get(up, {inter, c_.hidden}, &tu));
  if (keep_blocks_ && tg->quant &&
      tg->quant == tu->quant) {  // one projection of both tensors' rows
    m->gate_up = cpu::quant_linear_concat(
        cpu::quant_linear_from_rows(*tg->quant, tg->data, c_.hidden, iota(inter), tg->owner),
        cpu::quant_linear_from_rows(*tu->quant, tu->data, c_.hidden, iota(inter), tu->owner));
    return linear(fmt::format("{}ffn_down{}.weight", b, suffix), c_.hidden, inter, &m->down);
  }
  // Plain tensors, or a mix of gate and up types: widened to the compute layout.
  std::vector<float>&g = scratch_[0], &u = scratch_[1];
  HANPU_RETURN_IF_ERROR(f32(fmt::format("{}ffn_gate{}.weight", b, suffix), {inter, c_.hidden}, &g));
  HANPU_RETURN_IF_ERROR(f32(fmt::format("{}ffn_up{}.weight", b, suffix), {inter, c_.hidden}, &u));
  g.insert(g.end(), u.begin(), u.end());
  m->gate_up = pack_rows(g.data(), c_.hidden, iota(2 * inter), dt_, quantize_);
  return linear(fmt::format("{}ffn_down{}.weight", b, suffix), c_.hidden, inter, &m->down);
}

Status GgufConverter::gdn(const std::string& b, GdnWeights* w) {
  const int H = c_.la_key_heads, HV = c_.la_value_heads, K = c_.la_key_dim, V = c_.la_value_dim,
            hidden = c_.hidden;
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
  const std::vector<int> cols = v_rows(V);
  const StoredTensor* t_out = nullptr;
  HANPU_RETURN_IF_ERROR(s_.get(b + "ssm_out.weight", {hidden, HV * V}, &t_out));
  if (t_out->quant && keep_blocks_) {
    // Its columns stay in GGUF's head order: the kernel reads x through the permutation
    // (GGUF column cols[i] is HF column i).
    w->out =
        cpu::quant_linear_from_rows(*t_out->quant, t_out->data, HV * V, iota(hidden), t_out->owner);
    w->out.x_order.assign(cols.size(), 0);
    for (size_t i = 0; i < cols.size(); ++i) w->out.x_order[cols[i]] = static_cast<int32_t>(i);
    if (!order_.tiled) w->out.x_order.clear();  // the identity
  } else {
    std::vector<float> out;  // [hidden, HV V]: value heads are its input columns
    HANPU_RETURN_IF_ERROR(f32(b + "ssm_out.weight", {hidden, HV * V}, &out));
    std::vector<float> w_hf(out.size());  // the same matrix with its columns in HF order
    for (int o = 0; o < hidden; ++o) {
      for (int i = 0; i < HV * V; ++i)
        w_hf[static_cast<size_t>(o) * HV * V + i] = out[static_cast<size_t>(o) * HV * V + cols[i]];
    }
    w->out = pack_rows(w_hf.data(), HV * V, iota(hidden), dt_, quantize_);
  }
  std::vector<float> conv;  // [channels, kernel] -> tap-major, V channels back in HF order
  HANPU_RETURN_IF_ERROR(f32(b + "ssm_conv1d.weight", {C, c_.conv_kernel}, &conv));
  w->conv.resize(conv.size());
  for (int ch = 0; ch < C; ++ch) {
    const int src = ch < qk ? ch : qkv_rows[ch];
    for (int j = 0; j < c_.conv_kernel; ++j)
      w->conv[static_cast<size_t>(j) * C + ch] =
          conv[static_cast<size_t>(src) * c_.conv_kernel + j];
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

Status GgufConverter::attn(const std::string& b, AttnWeights* w) {
  const int Hq = c_.attn_heads, Hkv = c_.kv_heads, D = c_.head_dim;
  HANPU_RETURN_IF_ERROR(linear(b + "attn_q.weight", Hq * 2 * D, c_.hidden, &w->q));
  HANPU_RETURN_IF_ERROR(linear(b + "attn_k.weight", Hkv * D, c_.hidden, &w->k));
  HANPU_RETURN_IF_ERROR(linear(b + "attn_v.weight", Hkv * D, c_.hidden, &w->v));
  HANPU_RETURN_IF_ERROR(linear(b + "attn_output.weight", c_.hidden, Hq * D, &w->o));
  HANPU_RETURN_IF_ERROR(norm(b + "attn_q_norm.weight", D, &w->q_norm));
  return norm(b + "attn_k_norm.weight", D, &w->k_norm);
}

Status GgufConverter::moe(const std::string& b, MoeWeights* m) {
  HANPU_RETURN_IF_ERROR(experts(b, m));
  return shared_expert(b, m);
}

Status GgufConverter::experts(const std::string& b, MoeWeights* m) {
  const int E = c_.num_experts, I = c_.moe_intermediate, hidden = c_.hidden;
  HANPU_RETURN_IF_ERROR(linear(b + "ffn_gate_inp.weight", E, hidden, &m->router));
  m->experts.resize(E);
  const StoredTensor *tg = nullptr, *tu = nullptr, *td = nullptr;
  HANPU_RETURN_IF_ERROR(s_.get(b + "ffn_gate_exps.weight", {E, I, hidden}, &tg));
  HANPU_RETURN_IF_ERROR(s_.get(b + "ffn_up_exps.weight", {E, I, hidden}, &tu));
  HANPU_RETURN_IF_ERROR(s_.get(b + "ffn_down_exps.weight", {E, hidden, I}, &td));
  // Row indices are ints: a stack too tall for them (no real model) is refused.
  if (int64_t{E} * std::max(I, hidden) > std::numeric_limits<int>::max())
    return Status::Error(
        fmt::format("{}: {} experts of {} x {} rows are too many", b, E, I, hidden));
  if (keep_blocks_ && tg->quant && tg->quant == tu->quant && td->quant) {
    // Each expert's rows kept in their blocks, gate and up as one projection.
    for (int e = 0; e < E; ++e) {
      m->experts[e].gate_up = cpu::quant_linear_concat(
          cpu::quant_linear_from_rows(*tg->quant, tg->data, hidden, iota(I, e * I), tg->owner),
          cpu::quant_linear_from_rows(*tu->quant, tu->data, hidden, iota(I, e * I), tu->owner));
      m->experts[e].down =
          cpu::quant_linear_from_rows(*td->quant, td->data, I, iota(hidden, e * hidden), td->owner);
    }
    return Status::Ok();
  }
  std::vector<float> g, u, d;
  HANPU_RETURN_IF_ERROR(f32(b + "ffn_gate_exps.weight", {E, I, hidden}, &g));
  HANPU_RETURN_IF_ERROR(f32(b + "ffn_up_exps.weight", {E, I, hidden}, &u));
  HANPU_RETURN_IF_ERROR(f32(b + "ffn_down_exps.weight", {E, hidden, I}, &d));
  const size_t gi = static_cast<size_t>(I) * hidden;
  for (int e = 0; e < E; ++e) {
    std::vector<float> gu(g.begin() + e * gi, g.begin() + (e + 1) * gi);
    gu.insert(gu.end(), u.begin() + e * gi, u.begin() + (e + 1) * gi);
    m->experts[e].gate_up = pack_rows(gu.data(), hidden, iota(2 * I), dt_, quantize_);
    m->experts[e].down = pack_rows(d.data() + e * gi, I, iota(hidden), dt_, quantize_);
  }
  return Status::Ok();
}

Status GgufConverter::shared_expert(const std::string& b, MoeWeights* m) {
  const int hidden = c_.hidden;
  if (c_.shared_expert_intermediate > 0) {
    HANPU_RETURN_IF_ERROR(mlp(b, "_shexp", c_.shared_expert_intermediate, &m->shared));
    // The converter writes [1, hidden] (ggml's [hidden, 1]); older files [hidden]. llama.cpp
    // takes either, as trailing ggml dimensions of 1 do not count.
    std::vector<float> sg;
    const std::string gate = b + "ffn_gate_inp_shexp.weight";
    const StoredTensor* t = s_.find(gate);
    const Shape shape = t && t->shape.size() == 2 ? Shape{1, hidden} : Shape{hidden};
    HANPU_RETURN_IF_ERROR(f32(gate, shape, &sg));
    m->shared_gate = pack_rows(sg.data(), hidden, {0}, plain_dtype(*t), quantize_);
  }
  return Status::Ok();
}

namespace {

Status convert_qwen_layer(GgufConverter& cv, const ModelConfig& c, int i, LayerWeights* l) {
  const std::string b = fmt::format("blk.{}.", i);
  l->kind = c.layer_kinds[i];
  HANPU_RETURN_IF_ERROR(cv.norm(b + "attn_norm.weight", c.hidden, &l->input_norm));
  HANPU_RETURN_IF_ERROR(cv.norm(b + "post_attention_norm.weight", c.hidden, &l->post_norm));
  if (l->kind == LayerKind::kLinearAttention) {
    HANPU_RETURN_IF_ERROR(cv.gdn(b, &l->gdn));
  } else {
    HANPU_RETURN_IF_ERROR(cv.attn(b, &l->attn));
  }
  l->moe = c.layer_has_moe(i);
  if (l->moe) return cv.moe(b, &l->moe_w);
  return cv.mlp(b, "", c.intermediate, &l->mlp);
}

}  // namespace

Status convert_gguf_weights(const ModelConfig& c, const WeightStore& store, DType weights,
                            bool widen, ModelWeights* out, const LoadProgress& progress,
                            std::optional<QuantType> quantize) {
  // Every tensor the config implies, checked before the first is converted or allocated.
  HANPU_RETURN_IF_ERROR(check_weight_table(
      c.arch == Arch::kKimiLinear ? kimi_linear_gguf_weight_table(c, store) : gguf_weight_table(c),
      store));
  GgufConverter cv(c, store, weights, !widen, quantize);
  ModelWeights w;
  HANPU_RETURN_IF_ERROR(cv.norm("output_norm.weight", c.hidden, &w.final_norm));
  if (c.tie_embeddings) {
    HANPU_RETURN_IF_ERROR(load_tied_embedding(store, "token_embd.weight", c.vocab, c.hidden,
                                              weights, &w, widen, quantize));
  } else {
    HANPU_RETURN_IF_ERROR(cv.embedding("token_embd.weight", c.vocab, c.hidden, &w));
    HANPU_RETURN_IF_ERROR(cv.linear("output.weight", c.vocab, c.hidden, &w.lm_head));
  }
  w.layers.resize(c.layers);
  for (int i = 0; i < c.layers; ++i) {
    LayerWeights& l = w.layers[i];
    if (c.arch == Arch::kKimiLinear) {
      HANPU_RETURN_IF_ERROR(convert_kimi_linear_gguf_layer(cv, i, &l));
    } else {
      HANPU_RETURN_IF_ERROR(convert_qwen_layer(cv, c, i, &l));
    }
    if (progress) progress(i + 1, c.layers);
  }
  *out = std::move(w);
  return Status::Ok();
}

}  // namespace hanpu::model
