// A hybrid model's weights in hanpu's compute layout, converted once from the checkpoint:
// fp32, projections transposed to W^T in column panels (the micro-kernel's B operand),
// Qwen3-Next's grouped qkvz / ba projections regrouped into Qwen3.5's separate q|k|v, z, b, a
// order so one layer implementation serves both, GDN's A_log turned into -exp(A_log).
#pragma once

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cpu/nn/linear.h"
#include "hanpu/status.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace hanpu::model {

// A projection in the compute layout (W^T in column panels, see cpu/nn/linear.h).
using Linear = cpu::PackedLinear;

struct GdnWeights {
  Linear qkv;                  // out = 2 H K + HV V: q heads, k heads, v heads
  Linear z;                    // out = HV V
  Linear b, a;                 // out = HV
  Linear out;                  // [HV V -> hidden]
  std::vector<float> conv;     // [kernel, channels] tap-major depthwise causal conv over q|k|v
  std::vector<float> neg_A;    // [HV] -exp(A_log)
  std::vector<float> dt_bias;  // [HV]
  std::vector<float> norm;     // [V] gated RMSNorm weight (plain, not zero-centred)
};

struct AttnWeights {
  Linear q;  // out = Hq 2D: per head D query dims then D output-gate dims
  Linear k, v, o;
  std::vector<float> q_norm, k_norm;  // [D] zero-centred RMSNorm weights (applied as 1 + w)
};

// The KDA token mixer of Kimi Linear and Ling (kda_layer.h).
struct KdaWeights {
  Linear q, k, v;              // [hidden -> H K] each
  std::vector<float> conv;     // [kernel, 3 H K] tap-major depthwise causal conv over q|k|v
  Linear f_a, f_b;             // the gate's input: f_b(f_a(x)) (Kimi, low rank), or f_a(x) alone
                               // (Ling's f_proj) where f_b has no rows
  Linear b;                    // [hidden -> H]: beta = sigmoid(b x)
  Linear g_a, g_b;             // the output gate, in the same two forms
  std::vector<float> a_rate;   // [H]: exp(A_log), the gate's rate (kda_gates.h)
  std::vector<float> dt_bias;  // [H K]
  std::vector<float> o_norm;   // [K], applied as w (not 1 + w)
  Linear out;                  // [H K -> hidden]
  // Ling's bounded gate (kda_forget_gate); NaN: Kimi Linear's unbounded one.
  float gate_lower_bound = std::numeric_limits<float>::quiet_NaN();
};

// Multi-head latent attention (mla_layer.h); H heads, C = kv_lora_rank, R = qk_rope_head_dim,
// N = qk_nope_head_dim, Dv = v_head_dim.
struct MlaWeights {
  Linear q;                      // [hidden -> H (N + R)] (full rank), or [hidden -> q_lora_rank]
  std::vector<float> q_a_norm;   // [q_lora_rank] where q is low rank (zero-centred, as w - 1)
  Linear q_b;                    // [q_lora_rank -> H (N + R)]; no rows where q is full rank
  Linear kv_a;                   // [hidden -> C + R]: the latent, then the shared rope key
  std::vector<float> kv_a_norm;  // [C], zero-centred (w - 1)
  Linear kv_b;                   // [C -> H (N + Dv)]: per head N key dims, then Dv value dims
  // kv_b's halves per head for the absorbed form: uk[h] [N -> C] (the key half transposed:
  // a query's nope dims into the latent space), uv[h] [C -> Dv] (the value half).
  std::vector<Linear> uk, uv;
  Linear o;     // [H Dv -> hidden]
  Linear gate;  // Ling: [hidden -> H], o_h *= sigmoid(gate_h); else no rows
};

struct MlpWeights {
  Linear gate_up;  // out = 2 I: gate columns [0, I), up columns [I, 2I) (one pass over x)
  Linear down;
};

struct MoeWeights {
  Linear router;                   // out = E
  std::vector<float> router_bias;  // [E] the grouped router's score correction (KDA hybrids)
  std::vector<MlpWeights> experts;
  MlpWeights shared;
  Linear shared_gate;  // out = 1; absent (in = 0) where the shared expert is ungated or absent
  // The KDA hybrids' SwiGLU clipping (Ling): gate <= limit, |up| <= limit; 0: none.
  float expert_limit = 0, shared_limit = 0;
};

struct LayerWeights {
  LayerKind kind = LayerKind::kLinearAttention;
  std::vector<float> input_norm, post_norm;  // [hidden], zero-centred
  GdnWeights gdn;                            // Qwen's LA layers
  AttnWeights attn;                          // Qwen's attention layers
  KdaWeights kda;                            // the KDA hybrids' LA layers
  MlaWeights mla;                            // the KDA hybrids' attention layers
  bool moe = false;
  MlpWeights mlp;
  MoeWeights moe_w;
};

struct ModelWeights {
  std::vector<float> embed;  // [vocab, hidden]; empty where the tied lm_head holds it (below)
  Linear embed_blocks;       // an untied quantized table, row t = token t's (else empty)
  std::vector<float> final_norm;
  Linear lm_head;  // [hidden -> vocab] (a transposed copy of embed when tied)
  std::vector<LayerWeights> layers;
  int64_t bytes() const;
  // The decode copies of quantized rows held beside them (PackedLinear::qgroups).
  int64_t decode_copy_bytes() const;
  // Parameters as the checkpoint counts them (`tied`: the embedding is counted once).
  int64_t parameters(bool tied) const;
  // Row `token` of the embedding table, out[hidden].
  void embedding_row(int token, float* out) const;
};

// The embedding table `name` [vocab, hidden] and the lm_head tied to it, projections stored
// as `weights`. Where that dtype holds the stored values exactly (the checkpoint's own dtype,
// or fp32) the head is packed straight from the stored rows and `embed` stays empty: a model
// keeps one copy of its largest tensor and never makes an fp32 table of it (a bf16 0.8B:
// 1 GB less in memory, and at the peak of loading). Otherwise `embed` gets the fp32 table and
// the head is packed, rounded, from it.
// A quantized table keeps its blocks (the head multiplies them, the embedding decodes a
// token's row) unless `widen`.
Status load_tied_embedding(const WeightStore& store, const std::string& name, int vocab, int hidden,
                           DType weights, ModelWeights* w, bool widen = false,
                           std::optional<QuantType> quantize = std::nullopt);

// Rows `rows` of W [*, in] as a projection: quantized to `quantize` where set (or to its
// 32-value stand-in where `in` is not whole blocks of it, base/quant_quantize.h), else in
// `dtype`.
Linear pack_rows(const float* w, int in, const std::vector<int>& rows, DType dtype,
                 std::optional<QuantType> quantize);

// Called after each layer's weights are ready: (layers done, layers in all).
using LoadProgress = std::function<void(int, int)>;

// Converts the tensors `config` needs from `store`, projections stored as `weights` (f32,
// bf16, f16); an error names the first tensor that is missing or has the wrong shape.
// `quantize`: projections quantized at load to that type (base/quant_quantize.h), where set.
Status convert_weights(const ModelConfig& config, const WeightStore& store, DType weights,
                       ModelWeights* out, const LoadProgress& progress = nullptr,
                       std::optional<QuantType> quantize = std::nullopt);

// Seeded random weights of the real architecture shape (for `--synthetic` benchmarks);
// `quantize`: projections quantized to that type (routers and per-head gates stay `weights`).
void random_weights(const ModelConfig& config, uint64_t seed, DType weights, ModelWeights* out,
                    const LoadProgress& progress = nullptr,
                    std::optional<QuantType> quantize = std::nullopt);

}  // namespace hanpu::model
