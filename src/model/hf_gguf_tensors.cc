// A Hugging Face checkpoint's tensors as llama.cpp's converter writes them (hf_gguf_tensors.h).
#include "model/hf_gguf_tensors.h"

#include <fmt/format.h>

namespace hanpu::model {

namespace {

using Map = GatheredTensor::Map;

GatheredTensor tensor(std::string name, Shape shape) {
  GatheredTensor g;
  g.name = std::move(name);
  g.shape = std::move(shape);
  return g;
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

class Gatherer {
 public:
  Gatherer(const ModelConfig& c, const WeightStore& s, std::vector<GatheredTensor>* out)
      : c_(c), s_(s), out_(out) {
    const int hk = c.la_key_heads, hv = c.la_value_heads;
    // HF value head k g + r sits at GGUF head r Hk + k (qwen35 only; Qwen3-Next keeps order).
    for (int j = 0; j < hv; ++j)
      tiled_.push_back(c.arch == Arch::kQwen35 && hk != hv ? (j % hk) * (hv / hk) + j / hk : j);
  }

  // `hf` as stored (its shape checked), renamed to `name`, its values mapped by `map`.
  Status plain(const std::string& name, const std::string& hf, const Shape& shape,
               Map map = Map::kNone) {
    const StoredTensor* t = nullptr;
    HANPU_RETURN_IF_ERROR(s_.get(hf, shape, &t));
    GatheredTensor g = tensor(name, shape);
    g.map = map;
    const int64_t n = g.row_len();
    for (int64_t r = 0; r < shape_numel(shape) / n; ++r) g.rows.push_back({t, r});
    if (map == Map::kNone) g.whole = t;
    return add(std::move(g), t->dtype);
  }
  // A norm weight stored as 1 + w.
  Status norm(const std::string& name, const std::string& hf, int n) {
    return plain(name, hf, {n}, Map::kPlusOne);
  }
  // Rows `first + i` for i in `order` blocks of `per` rows: value-head blocks in tiled order.
  void value_rows(const StoredTensor* t, int64_t first, int per,
                  std::vector<GatheredTensor::Row>* rows) const {
    for (int h : tiled_)
      for (int i = 0; i < per; ++i) rows->push_back({t, first + int64_t{h} * per + i});
  }
  Status gdn(const std::string& p, const std::string& b) {
    const int H = c_.la_key_heads, HV = c_.la_value_heads, K = c_.la_key_dim, V = c_.la_value_dim,
              hidden = c_.hidden, qk = 2 * H * K, qkv = qk + HV * V;
    const StoredTensor* t = nullptr;
    if (c_.arch == Arch::kQwen35) {
      HANPU_RETURN_IF_ERROR(s_.get(p + "in_proj_qkv.weight", {qkv, hidden}, &t));
      GatheredTensor q = tensor(b + "attn_qkv.weight", {qkv, hidden});
      for (int r = 0; r < qk; ++r) q.rows.push_back({t, r});
      value_rows(t, qk, V, &q.rows);
      HANPU_RETURN_IF_ERROR(add(std::move(q), t->dtype));
      for (const auto& [hf, gg, per] : {std::tuple{"in_proj_z.weight", "attn_gate.weight", V},
                                        std::tuple{"in_proj_b.weight", "ssm_beta.weight", 1},
                                        std::tuple{"in_proj_a.weight", "ssm_alpha.weight", 1}}) {
        HANPU_RETURN_IF_ERROR(s_.get(p + hf, {HV * per, hidden}, &t));
        GatheredTensor g = tensor(b + gg, {HV * per, hidden});
        value_rows(t, 0, per, &g.rows);
        HANPU_RETURN_IF_ERROR(add(std::move(g), t->dtype));
      }
    } else {
      // Per key head h: [q K | k K | v gV | z gV] rows; qkv takes all q, all k, all v.
      const int g = HV / H, blk = 2 * K + 2 * g * V;
      HANPU_RETURN_IF_ERROR(s_.get(p + "in_proj_qkvz.weight", {H * blk, hidden}, &t));
      GatheredTensor q = tensor(b + "attn_qkv.weight", {qkv, hidden});
      GatheredTensor z = tensor(b + "attn_gate.weight", {HV * V, hidden});
      for (const auto& [offset, n] : {std::pair{0, K}, std::pair{K, K}, std::pair{2 * K, g * V}})
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < n; ++i) q.rows.push_back({t, int64_t{h} * blk + offset + i});
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < g * V; ++i) z.rows.push_back({t, int64_t{h} * blk + 2 * K + g * V + i});
      HANPU_RETURN_IF_ERROR(add(std::move(q), t->dtype));
      HANPU_RETURN_IF_ERROR(add(std::move(z), t->dtype));
      HANPU_RETURN_IF_ERROR(
          plain(b + "ssm_ba.weight", p + "in_proj_ba.weight", {H * 2 * g, hidden}));
    }
    HANPU_RETURN_IF_ERROR(s_.get(p + "conv1d.weight", {qkv, 1, c_.conv_kernel}, &t));
    GatheredTensor conv = tensor(b + "ssm_conv1d.weight", {qkv, c_.conv_kernel});
    for (int r = 0; r < qk; ++r) conv.rows.push_back({t, r});
    value_rows(t, qk, V, &conv.rows);
    HANPU_RETURN_IF_ERROR(add(std::move(conv), t->dtype));
    for (const auto& [hf, gg, map] : {std::tuple{"A_log", "ssm_a", Map::kNegExp},
                                      std::tuple{"dt_bias", "ssm_dt.bias", Map::kNone}}) {
      HANPU_RETURN_IF_ERROR(s_.get(p + hf, {HV}, &t));
      GatheredTensor g = tensor(b + gg, {HV});
      g.rows = {{t, 0}};
      g.map = map;
      g.columns.assign(tiled_.begin(), tiled_.end());
      HANPU_RETURN_IF_ERROR(add(std::move(g), t->dtype));
    }
    HANPU_RETURN_IF_ERROR(plain(b + "ssm_norm.weight", p + "norm.weight", {V}));
    // out_proj's input columns are value heads: reorder them within each row.
    HANPU_RETURN_IF_ERROR(s_.get(p + "out_proj.weight", {hidden, HV * V}, &t));
    GatheredTensor o = tensor(b + "ssm_out.weight", {hidden, HV * V});
    for (int r = 0; r < hidden; ++r) o.rows.push_back({t, r});
    for (int h : tiled_)
      for (int i = 0; i < V; ++i) o.columns.push_back(h * V + i);
    return add(std::move(o), t->dtype);
  }
  Status attention(const std::string& p, const std::string& b) {
    const int Hq = c_.attn_heads, Hkv = c_.kv_heads, D = c_.head_dim, hidden = c_.hidden;
    HANPU_RETURN_IF_ERROR(plain(b + "attn_q.weight", p + "q_proj.weight", {Hq * 2 * D, hidden}));
    HANPU_RETURN_IF_ERROR(plain(b + "attn_k.weight", p + "k_proj.weight", {Hkv * D, hidden}));
    HANPU_RETURN_IF_ERROR(plain(b + "attn_v.weight", p + "v_proj.weight", {Hkv * D, hidden}));
    HANPU_RETURN_IF_ERROR(plain(b + "attn_output.weight", p + "o_proj.weight", {hidden, Hq * D}));
    HANPU_RETURN_IF_ERROR(norm(b + "attn_q_norm.weight", p + "q_norm.weight", D));
    return norm(b + "attn_k_norm.weight", p + "k_norm.weight", D);
  }
  Status mlp(const std::string& p, const std::string& b, const std::string& suffix, int inter) {
    const int hidden = c_.hidden;
    HANPU_RETURN_IF_ERROR(
        plain(b + "ffn_gate" + suffix + ".weight", p + "gate_proj.weight", {inter, hidden}));
    HANPU_RETURN_IF_ERROR(
        plain(b + "ffn_up" + suffix + ".weight", p + "up_proj.weight", {inter, hidden}));
    return plain(b + "ffn_down" + suffix + ".weight", p + "down_proj.weight", {hidden, inter});
  }
  // Kimi Linear's KDA mixer (conversion/kimi_linear.py): the convs as [1, HK, 1, kernel],
  // A_log as -exp(A_log), norms as stored.
  Status kda(const std::string& p, const std::string& b) {
    const int H = c_.la_key_heads, K = c_.la_key_dim, HK = H * K, hidden = c_.hidden;
    for (const char* x : {"q", "k", "v"}) {
      HANPU_RETURN_IF_ERROR(plain(fmt::format("{}attn_{}.weight", b, x),
                                  fmt::format("{}{}_proj.weight", p, x), {HK, hidden}));
      HANPU_RETURN_IF_ERROR(plain(fmt::format("{}ssm_conv1d_{}.weight", b, x),
                                  fmt::format("{}{}_conv1d.weight", p, x),
                                  {1, HK, 1, c_.conv_kernel}));
    }
    for (const auto& [hf, gg, out, in] :
         {std::tuple{"f_a_proj", "ssm_f_a", K, hidden}, std::tuple{"f_b_proj", "ssm_f_b", HK, K},
          std::tuple{"g_a_proj", "ssm_g_a", K, hidden}, std::tuple{"g_b_proj", "ssm_g_b", HK, K},
          std::tuple{"b_proj", "ssm_beta", H, hidden},
          std::tuple{"o_proj", "attn_output", hidden, HK}}) {
      HANPU_RETURN_IF_ERROR(
          plain(fmt::format("{}{}.weight", b, gg), fmt::format("{}{}.weight", p, hf), {out, in}));
    }
    HANPU_RETURN_IF_ERROR(plain(b + "ssm_a", p + "A_log", {1, 1, H, 1}, Map::kNegExp));
    HANPU_RETURN_IF_ERROR(plain(b + "ssm_dt.bias", p + "dt_bias", {HK}));
    return plain(b + "ssm_norm.weight", p + "o_norm.weight", {K});
  }
  // Kimi Linear's MLA: kv_b split per head into attn_k_b [H, C, N] (the key half transposed)
  // and attn_v_b [H, Dv, C], as the converter writes it for llama.cpp's absorbed cache.
  Status mla(const std::string& p, const std::string& b) {
    const MlaShape& m = c_.mla;
    const int H = c_.attn_heads, hidden = c_.hidden, C = m.kv_lora_rank, N = m.qk_nope_dim,
              Dv = m.v_dim;
    if (m.q_lora_rank > 0) {
      HANPU_RETURN_IF_ERROR(
          plain(b + "attn_q_a.weight", p + "q_a_proj.weight", {m.q_lora_rank, hidden}));
      HANPU_RETURN_IF_ERROR(
          plain(b + "attn_q_a_norm.weight", p + "q_a_layernorm.weight", {m.q_lora_rank}));
      HANPU_RETURN_IF_ERROR(
          plain(b + "attn_q_b.weight", p + "q_b_proj.weight", {H * m.qk_dim(), m.q_lora_rank}));
    } else {
      HANPU_RETURN_IF_ERROR(
          plain(b + "attn_q.weight", p + "q_proj.weight", {H * m.qk_dim(), hidden}));
    }
    HANPU_RETURN_IF_ERROR(plain(b + "attn_kv_a_mqa.weight", p + "kv_a_proj_with_mqa.weight",
                                {C + m.qk_rope_dim, hidden}));
    HANPU_RETURN_IF_ERROR(plain(b + "attn_kv_a_norm.weight", p + "kv_a_layernorm.weight", {C}));
    const StoredTensor* t = nullptr;
    HANPU_RETURN_IF_ERROR(s_.get(p + "kv_b_proj.weight", {H * (N + Dv), C}, &t));
    GatheredTensor k = tensor(b + "attn_k_b.weight", {H, C, N});
    k.column_stride = C;
    GatheredTensor v = tensor(b + "attn_v_b.weight", {H, Dv, C});
    for (int h = 0; h < H; ++h) {
      const int64_t head = int64_t{h} * (N + Dv);
      for (int j = 0; j < C; ++j) k.rows.push_back({t, head * C + j});
      for (int d = 0; d < Dv; ++d) v.rows.push_back({t, head + N + d});
    }
    HANPU_RETURN_IF_ERROR(add(std::move(k), t->dtype));
    HANPU_RETURN_IF_ERROR(add(std::move(v), t->dtype));
    return plain(b + "attn_output.weight", p + "o_proj.weight", {hidden, H * Dv});
  }
  // Kimi Linear's MoE: w1 / w3 / w2 per expert stacked, the router's correction bias as
  // exp_probs_b.bias, an ungated shared expert.
  Status grouped_moe(const std::string& p, const std::string& b) {
    const int E = c_.num_experts, I = c_.moe_intermediate, hidden = c_.hidden;
    HANPU_RETURN_IF_ERROR(plain(b + "ffn_gate_inp.weight", p + "gate.weight", {E, hidden}));
    HANPU_RETURN_IF_ERROR(plain(b + "exp_probs_b.bias", p + "gate.e_score_correction_bias", {E}));
    for (const auto& [w, gg, out, in] :
         {std::tuple{"w1", "gate", I, hidden}, std::tuple{"w3", "up", I, hidden},
          std::tuple{"w2", "down", hidden, I}}) {
      GatheredTensor g = tensor(fmt::format("{}ffn_{}_exps.weight", b, gg), {E, out, in});
      const StoredTensor* t = nullptr;
      for (int e = 0; e < E; ++e) {
        HANPU_RETURN_IF_ERROR(
            s_.get(fmt::format("{}experts.{}.{}.weight", p, e, w), {out, in}, &t));
        for (int r = 0; r < out; ++r) g.rows.push_back({t, r});
      }
      HANPU_RETURN_IF_ERROR(add(std::move(g), t->dtype));
    }
    if (c_.shared_expert_intermediate <= 0) return Status::Ok();
    return mlp(p + "shared_experts.", b, "_shexp", c_.shared_expert_intermediate);
  }
  Status moe(const std::string& p, const std::string& b) {
    const int E = c_.num_experts, I = c_.moe_intermediate, hidden = c_.hidden;
    HANPU_RETURN_IF_ERROR(plain(b + "ffn_gate_inp.weight", p + "gate.weight", {E, hidden}));
    GatheredTensor gate = tensor(b + "ffn_gate_exps.weight", {E, I, hidden});
    GatheredTensor up = tensor(b + "ffn_up_exps.weight", {E, I, hidden});
    GatheredTensor down = tensor(b + "ffn_down_exps.weight", {E, hidden, I});
    const StoredTensor *g = nullptr, *u = nullptr, *d = nullptr;
    if (s_.find(p + "experts.gate_up_proj") != nullptr) {  // transformers 5's fused 3-D layout
      HANPU_RETURN_IF_ERROR(s_.get(p + "experts.gate_up_proj", {E, 2 * I, hidden}, &g));
      HANPU_RETURN_IF_ERROR(s_.get(p + "experts.down_proj", {E, hidden, I}, &d));
      for (int e = 0; e < E; ++e) {
        for (int i = 0; i < I; ++i) {
          gate.rows.push_back({g, int64_t{e} * 2 * I + i});
          up.rows.push_back({g, int64_t{e} * 2 * I + I + i});
        }
      }
      for (int64_t r = 0; r < int64_t{E} * hidden; ++r) down.rows.push_back({d, r});
      u = g;
    } else {
      for (int e = 0; e < E; ++e) {
        const std::string x = fmt::format("{}experts.{}.", p, e);
        HANPU_RETURN_IF_ERROR(s_.get(x + "gate_proj.weight", {I, hidden}, &g));
        HANPU_RETURN_IF_ERROR(s_.get(x + "up_proj.weight", {I, hidden}, &u));
        HANPU_RETURN_IF_ERROR(s_.get(x + "down_proj.weight", {hidden, I}, &d));
        for (int i = 0; i < I; ++i) gate.rows.push_back({g, i}), up.rows.push_back({u, i});
        for (int i = 0; i < hidden; ++i) down.rows.push_back({d, i});
      }
    }
    HANPU_RETURN_IF_ERROR(add(std::move(gate), g->dtype));
    HANPU_RETURN_IF_ERROR(add(std::move(up), u->dtype));
    HANPU_RETURN_IF_ERROR(add(std::move(down), d->dtype));
    if (c_.shared_expert_intermediate <= 0) return Status::Ok();
    HANPU_RETURN_IF_ERROR(mlp(p + "shared_expert.", b, "_shexp", c_.shared_expert_intermediate));
    return plain(b + "ffn_gate_inp_shexp.weight", p + "shared_expert_gate.weight", {1, hidden});
  }

 private:
  // The converter's kept type: F32 for what llama.cpp computes in F32 (1-D tensors, norms,
  // routers, the conv, tensors not named *.weight), else the checkpoint's type.
  Status add(GatheredTensor g, DType stored) {
    const bool f32 = g.shape.size() <= 1 || ends_with(g.name, "_norm.weight") ||
                     ends_with(g.name, "ffn_gate_inp.weight") ||
                     ends_with(g.name, "ffn_gate_inp_shexp.weight") ||
                     g.name.find("ssm_conv1d") != std::string::npos ||
                     !ends_with(g.name, ".weight");
    g.kept = f32 ? DType::kF32 : stored;
    if (g.whole && g.kept != stored) g.whole = nullptr;
    out_->push_back(std::move(g));
    return Status::Ok();
  }

  const ModelConfig& c_;
  const WeightStore& s_;
  std::vector<GatheredTensor>* out_;
  std::vector<int> tiled_;
};

Status kimi_linear_tensors(const ModelConfig& c, Gatherer& g) {
  const std::string& P = c.weight_prefix;
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = fmt::format("{}layers.{}.", P, l), b = fmt::format("blk.{}.", l);
    HANPU_RETURN_IF_ERROR(
        g.plain(b + "attn_norm.weight", p + "input_layernorm.weight", {c.hidden}));
    HANPU_RETURN_IF_ERROR(
        g.plain(b + "ffn_norm.weight", p + "post_attention_layernorm.weight", {c.hidden}));
    if (c.layer_kinds[l] == LayerKind::kLinearAttention) {
      HANPU_RETURN_IF_ERROR(g.kda(p + "self_attn.", b));
    } else {
      HANPU_RETURN_IF_ERROR(g.mla(p + "self_attn.", b));
    }
    if (c.layer_has_moe(l)) {
      HANPU_RETURN_IF_ERROR(g.grouped_moe(p + "block_sparse_moe.", b));
    } else {
      HANPU_RETURN_IF_ERROR(g.mlp(p + "block_sparse_moe.", b, "", c.intermediate));
    }
  }
  return Status::Ok();
}

}  // namespace

Status hf_gguf_tensors(const ModelConfig& c, const WeightStore& store,
                       std::vector<GatheredTensor>* out) {
  out->clear();
  Gatherer g(c, store, out);
  const std::string& P = c.weight_prefix;
  HANPU_RETURN_IF_ERROR(
      g.plain("token_embd.weight", P + "embed_tokens.weight", {c.vocab, c.hidden}));
  if (c.arch == Arch::kKimiLinear) {  // its norms scale by w: stored as they are
    HANPU_RETURN_IF_ERROR(g.plain("output_norm.weight", P + "norm.weight", {c.hidden}));
  } else {
    HANPU_RETURN_IF_ERROR(g.norm("output_norm.weight", P + "norm.weight", c.hidden));
  }
  if (!c.tie_embeddings)
    HANPU_RETURN_IF_ERROR(g.plain("output.weight", "lm_head.weight", {c.vocab, c.hidden}));
  if (c.arch == Arch::kKimiLinear) return kimi_linear_tensors(c, g);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = fmt::format("{}layers.{}.", P, l), b = fmt::format("blk.{}.", l);
    HANPU_RETURN_IF_ERROR(g.norm(b + "attn_norm.weight", p + "input_layernorm.weight", c.hidden));
    HANPU_RETURN_IF_ERROR(
        g.norm(b + "post_attention_norm.weight", p + "post_attention_layernorm.weight", c.hidden));
    if (c.layer_kinds[l] == LayerKind::kLinearAttention) {
      HANPU_RETURN_IF_ERROR(g.gdn(p + "linear_attn.", b));
    } else {
      HANPU_RETURN_IF_ERROR(g.attention(p + "self_attn.", b));
    }
    if (c.layer_has_moe(l)) {
      HANPU_RETURN_IF_ERROR(g.moe(p + "mlp.", b));
    } else {
      HANPU_RETURN_IF_ERROR(g.mlp(p + "mlp.", b, "", c.intermediate));
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::model
