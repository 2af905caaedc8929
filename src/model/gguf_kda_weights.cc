// Kimi Linear from a GGUF written by llama.cpp's converter (conversion/kimi_linear.py) into
// hanpu's compute layout (see gguf_converter.h). The converter's choices undone here: A_log
// stored as -exp(A_log) (ssm_a), dt_bias as ssm_dt.bias, the q/k/v convs as separate
// ssm_conv1d_{q,k,v} [1, HK, 1, kernel]; MLA's kv_b split per head into attn_k_b [H, C, N]
// (the key half transposed) and attn_v_b [H, Dv, C]; the experts stacked into ffn_*_exps; the
// router's correction bias as exp_probs_b.bias. Norms are stored as the plain w the model
// scales by.
#include <algorithm>

#include <fmt/format.h>

#include "cpu/nn/quant_linear.h"
#include "model/gguf_converter.h"
#include "model/weight_converter.h"

namespace hanpu::model {

namespace {

bool split_up_projection(const WeightStore& store, int layer) {
  return store.find(fmt::format("blk.{}.attn_kv_b.weight", layer)) == nullptr;
}

}  // namespace

std::vector<ExpectedTensor> kimi_linear_gguf_weight_table(const ModelConfig& c,
                                                          const WeightStore& store) {
  std::vector<ExpectedTensor> t;
  const auto add = [&](std::string name, Shape shape) {
    t.push_back({std::move(name), std::move(shape)});
  };
  const int64_t hidden = c.hidden, H = c.la_key_heads, K = c.la_key_dim, HK = H * K;
  const int64_t Hq = c.attn_heads, E = c.num_experts, I = c.moe_intermediate;
  const MlaShape& m = c.mla;
  const int64_t C = m.kv_lora_rank, N = m.qk_nope_dim, Dv = m.v_dim;
  add("output_norm.weight", {hidden});
  add("token_embd.weight", {c.vocab, hidden});
  if (!c.tie_embeddings) add("output.weight", {c.vocab, hidden});
  const auto ffn = [&](const std::string& b, const char* suffix, int64_t inter) {
    add(fmt::format("{}ffn_gate{}.weight", b, suffix), {inter, hidden});
    add(fmt::format("{}ffn_up{}.weight", b, suffix), {inter, hidden});
    add(fmt::format("{}ffn_down{}.weight", b, suffix), {hidden, inter});
  };
  for (int i = 0; i < c.layers; ++i) {
    const std::string b = fmt::format("blk.{}.", i);
    add(b + "attn_norm.weight", {hidden});
    add(b + "ffn_norm.weight", {hidden});
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      for (const char* x : {"q", "k", "v"}) {
        add(fmt::format("{}attn_{}.weight", b, x), {HK, hidden});
        add(fmt::format("{}ssm_conv1d_{}.weight", b, x), {HK, c.conv_kernel});
      }
      add(b + "ssm_f_a.weight", {K, hidden});
      add(b + "ssm_f_b.weight", {HK, K});
      add(b + "ssm_g_a.weight", {K, hidden});
      add(b + "ssm_g_b.weight", {HK, K});
      add(b + "ssm_beta.weight", {H, hidden});
      add(b + "ssm_a", {H});
      add(b + "ssm_dt.bias", {HK});
      add(b + "ssm_norm.weight", {K});
      add(b + "attn_output.weight", {hidden, HK});
    } else {
      if (m.q_lora_rank > 0) {
        add(b + "attn_q_a.weight", {m.q_lora_rank, hidden});
        add(b + "attn_q_a_norm.weight", {m.q_lora_rank});
        add(b + "attn_q_b.weight", {Hq * m.qk_dim(), m.q_lora_rank});
      } else {
        add(b + "attn_q.weight", {Hq * m.qk_dim(), hidden});
      }
      add(b + "attn_kv_a_mqa.weight", {C + m.qk_rope_dim, hidden});
      add(b + "attn_kv_a_norm.weight", {C});
      if (split_up_projection(store, i)) {
        add(b + "attn_k_b.weight", {Hq, C, N});
        add(b + "attn_v_b.weight", {Hq, Dv, C});
      } else {
        add(b + "attn_kv_b.weight", {Hq * (N + Dv), C});
      }
      add(b + "attn_output.weight", {hidden, Hq * Dv});
    }
    if (!c.layer_has_moe(i)) {
      ffn(b, "", c.intermediate);
      continue;
    }
    add(b + "ffn_gate_inp.weight", {E, hidden});
    add(b + "exp_probs_b.bias", {E});
    add(b + "ffn_gate_exps.weight", {E, I, hidden});
    add(b + "ffn_up_exps.weight", {E, I, hidden});
    add(b + "ffn_down_exps.weight", {E, hidden, I});
    if (c.shared_expert_intermediate > 0) ffn(b, "_shexp", c.shared_expert_intermediate);
  }
  return t;
}

Status GgufConverter::conv(const std::string& name, int channels, int first, int total,
                           std::vector<float>* tap_major) {
  const int kernel = c_.conv_kernel;
  std::vector<float>& w = scratch_[0];  // [channels, kernel]
  HANPU_RETURN_IF_ERROR(f32(name, {channels, kernel}, &w));
  tap_major->resize(static_cast<size_t>(kernel) * total);
  for (int ch = 0; ch < channels; ++ch) {
    for (int j = 0; j < kernel; ++j)
      (*tap_major)[static_cast<size_t>(j) * total + first + ch] =
          w[static_cast<size_t>(ch) * kernel + j];
  }
  return Status::Ok();
}

Status GgufConverter::kda(const std::string& b, KdaWeights* w) {
  const int hidden = c_.hidden, H = c_.la_key_heads, K = c_.la_key_dim, HK = H * K;
  HANPU_RETURN_IF_ERROR(linear(b + "attn_q.weight", HK, hidden, &w->q));
  HANPU_RETURN_IF_ERROR(linear(b + "attn_k.weight", HK, hidden, &w->k));
  HANPU_RETURN_IF_ERROR(linear(b + "attn_v.weight", HK, hidden, &w->v));
  int first = 0;
  for (const char* x : {"q", "k", "v"}) {
    HANPU_RETURN_IF_ERROR(
        conv(fmt::format("{}ssm_conv1d_{}.weight", b, x), HK, first, 3 * HK, &w->conv));
    first += HK;
  }
  HANPU_RETURN_IF_ERROR(linear(b + "ssm_f_a.weight", K, hidden, &w->f_a));
  HANPU_RETURN_IF_ERROR(linear(b + "ssm_f_b.weight", HK, K, &w->f_b));
  HANPU_RETURN_IF_ERROR(linear(b + "ssm_g_a.weight", K, hidden, &w->g_a));
  HANPU_RETURN_IF_ERROR(linear(b + "ssm_g_b.weight", HK, K, &w->g_b));
  HANPU_RETURN_IF_ERROR(linear(b + "ssm_beta.weight", H, hidden, &w->b));
  HANPU_RETURN_IF_ERROR(f32(b + "ssm_a", {H}, &w->a_rate));
  for (float& a : w->a_rate) a = -a;  // -exp(A_log) -> exp(A_log)
  HANPU_RETURN_IF_ERROR(f32(b + "ssm_dt.bias", {HK}, &w->dt_bias));
  HANPU_RETURN_IF_ERROR(f32(b + "ssm_norm.weight", {K}, &w->o_norm));
  w->gate_lower_bound = c_.kda_gate_lower_bound;
  return linear(b + "attn_output.weight", hidden, HK, &w->out);
}

Status GgufConverter::mla(const std::string& b, MlaWeights* w) {
  const MlaShape& m = c_.mla;
  const int hidden = c_.hidden, H = c_.attn_heads;
  if (m.q_lora_rank > 0) {
    HANPU_RETURN_IF_ERROR(linear(b + "attn_q_a.weight", m.q_lora_rank, hidden, &w->q));
    HANPU_RETURN_IF_ERROR(norm(b + "attn_q_a_norm.weight", m.q_lora_rank, &w->q_a_norm));
    HANPU_RETURN_IF_ERROR(linear(b + "attn_q_b.weight", H * m.qk_dim(), m.q_lora_rank, &w->q_b));
  } else {
    HANPU_RETURN_IF_ERROR(linear(b + "attn_q.weight", H * m.qk_dim(), hidden, &w->q));
  }
  HANPU_RETURN_IF_ERROR(
      linear(b + "attn_kv_a_mqa.weight", m.kv_lora_rank + m.qk_rope_dim, hidden, &w->kv_a));
  HANPU_RETURN_IF_ERROR(norm(b + "attn_kv_a_norm.weight", m.kv_lora_rank, &w->kv_a_norm));
  const int N = m.qk_nope_dim, Dv = m.v_dim, C = m.kv_lora_rank;
  // kv_b [H (N + Dv), C] in fp32, as the safetensors hold it, whichever way the file splits it;
  // it is small (C columns) and every form is packed from it (pack_mla_up_projection).
  std::vector<float> kv_b;
  if (store().find(b + "attn_kv_b.weight") != nullptr) {
    HANPU_RETURN_IF_ERROR(f32(b + "attn_kv_b.weight", {H * (N + Dv), C}, &kv_b));
  } else {
    std::vector<float>&k_b = scratch_[0], &v_b = scratch_[1];
    HANPU_RETURN_IF_ERROR(f32(b + "attn_k_b.weight", {H, C, N}, &k_b));   // per head [C, N]
    HANPU_RETURN_IF_ERROR(f32(b + "attn_v_b.weight", {H, Dv, C}, &v_b));  // per head [Dv, C]
    kv_b.resize(static_cast<size_t>(H) * (N + Dv) * C);
    for (int h = 0; h < H; ++h) {
      float* head = kv_b.data() + static_cast<size_t>(h) * (N + Dv) * C;
      const float* kh = k_b.data() + static_cast<size_t>(h) * C * N;
      for (int n = 0; n < N; ++n) {
        for (int j = 0; j < C; ++j) head[static_cast<size_t>(n) * C + j] = kh[j * N + n];
      }
      std::copy_n(v_b.data() + static_cast<size_t>(h) * Dv * C, static_cast<size_t>(Dv) * C,
                  head + static_cast<size_t>(N) * C);
    }
  }
  // A decode step reads the per-head halves uk and uv (the absorbed form, mla_layer.h); a file
  // that splits kv_b per head stores them as the halves' own rows (attn_k_b: head h's C rows of
  // N, attn_v_b: its Dv rows of C), so they stay in the file's blocks as llama.cpp reads them
  // and a step moves their stored bytes rather than a widened copy. kv_b, which only a
  // prefill's decompression reads, stays widened.
  const StoredTensor* k_b = store().find(b + "attn_k_b.weight");
  const StoredTensor* v_b = store().find(b + "attn_v_b.weight");
  const bool uk_blocks = keep_blocks_ && k_b != nullptr && k_b->quant;
  const bool uv_blocks = keep_blocks_ && v_b != nullptr && v_b->quant;
  pack_mla_up_projection(c_, kv_b, dt_, quantize_, w, !uk_blocks, !uv_blocks);
  for (int h = 0; h < H; ++h) {
    if (uk_blocks)
      w->uk[h] = cpu::quant_linear_from_rows(*k_b->quant, k_b->data, N, iota(C, h * C), k_b->owner);
    if (uv_blocks)
      w->uv[h] =
          cpu::quant_linear_from_rows(*v_b->quant, v_b->data, C, iota(Dv, h * Dv), v_b->owner);
  }
  return linear(b + "attn_output.weight", hidden, H * Dv, &w->o);
}

Status GgufConverter::grouped_moe(const std::string& b, MoeWeights* m) {
  HANPU_RETURN_IF_ERROR(experts(b, m));
  HANPU_RETURN_IF_ERROR(f32(b + "exp_probs_b.bias", {c_.num_experts}, &m->router_bias));
  if (c_.shared_expert_intermediate > 0)
    HANPU_RETURN_IF_ERROR(mlp(b, "_shexp", c_.shared_expert_intermediate, &m->shared));
  return Status::Ok();
}

Status convert_kimi_linear_gguf_layer(GgufConverter& cv, int i, LayerWeights* l) {
  const ModelConfig& c = cv.config();
  const std::string b = fmt::format("blk.{}.", i);
  l->kind = c.layer_kinds[i];
  HANPU_RETURN_IF_ERROR(cv.norm(b + "attn_norm.weight", c.hidden, &l->input_norm));
  HANPU_RETURN_IF_ERROR(cv.norm(b + "ffn_norm.weight", c.hidden, &l->post_norm));
  if (l->kind == LayerKind::kLinearAttention) {
    HANPU_RETURN_IF_ERROR(cv.kda(b, &l->kda));
  } else {
    HANPU_RETURN_IF_ERROR(cv.mla(b, &l->mla));
  }
  l->moe = c.layer_has_moe(i);
  if (!l->moe) return cv.mlp(b, "", c.intermediate, &l->mlp);
  return cv.grouped_moe(b, &l->moe_w);
}

}  // namespace hanpu::model
