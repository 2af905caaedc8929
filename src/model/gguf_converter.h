// GGUF tensors -> hanpu's compute layout (see gguf_model.h): the conversions each
// architecture's layers share, Qwen's in gguf_model.cc, Kimi Linear's in gguf_kda_weights.cc.
#pragma once

#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "hanpu/status.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/weight_store.h"
#include "model/weight_table.h"

namespace hanpu::model {

// HF value head hv sits at GGUF position tiled_position(hv) (qwen35 with Hk != HV).
struct HeadOrder {
  int hk = 1, hv = 1;
  bool tiled = false;
  int gguf_of(int h) const { return tiled ? (h % (hv / hk)) * hk + h / (hv / hk) : h; }
};

class GgufConverter {
 public:
  GgufConverter(const ModelConfig& c, const WeightStore& s, DType dt, bool keep_blocks,
                std::optional<QuantType> quantize)
      : c_(c), s_(s), dt_(dt), keep_blocks_(keep_blocks), quantize_(quantize) {
    order_ = HeadOrder{c.la_key_heads, c.la_value_heads,
                       c.arch == Arch::kQwen35 && c.la_key_heads != c.la_value_heads};
  }
  Status f32(const std::string& name, const Shape& shape, std::vector<float>* out) {
    return s_.get_f32(name, shape, out);
  }
  // A norm weight held zero-centred (as w - 1) from what the file stores: Qwen's converter
  // writes its zero-centred norms as 1 + w, Kimi Linear's are plain w; both are the scale.
  Status norm(const std::string& name, int n, std::vector<float>* out) {
    HANPU_RETURN_IF_ERROR(f32(name, {n}, out));
    for (float& x : *out) x -= 1.0f;
    return Status::Ok();
  }
  Status linear(const std::string& name, int out, int in, const std::vector<int>& rows, Linear* l);
  // A plain tensor's storage: as stored unless the caller asked for a dtype (llama.cpp computes
  // the F32 routers and gates of a quantized file in F32; rounding them to bf16 would move
  // which experts are chosen).
  DType plain_dtype(const StoredTensor& t) const {
    return keep_blocks_ && !t.quant ? t.dtype : dt_;
  }
  Status linear(const std::string& name, int out, int in, Linear* l) {
    return linear(name, out, in, iota(out), l);
  }
  // An untied embedding table: kept in its blocks (a token decodes its row) or in f32.
  Status embedding(const std::string& name, int vocab, int hidden, ModelWeights* w);
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
  Status mlp(const std::string& b, const char* suffix, int inter, MlpWeights* m);
  Status gdn(const std::string& b, GdnWeights* w);
  Status attn(const std::string& b, AttnWeights* w);
  // Qwen3-Next's MoE: experts, then the shared expert with its sigmoid gate.
  Status moe(const std::string& b, MoeWeights* m);
  Status shared_expert(const std::string& b, MoeWeights* m);
  // The router and the routed experts (ffn_gate_inp, ffn_{gate,up,down}_exps).
  Status experts(const std::string& b, MoeWeights* m);

  const ModelConfig& config() const { return c_; }
  const WeightStore& store() const { return s_; }

  // Kimi Linear (gguf_kda_weights.cc).
  Status kda(const std::string& b, KdaWeights* w);
  Status mla(const std::string& b, MlaWeights* w);
  Status grouped_moe(const std::string& b, MoeWeights* m);
  // A depthwise conv [channels, kernel] (stored with any dims of 1 around them) appended
  // tap-major to `tap_major` ([kernel, total]) from channel `first`.
  Status conv(const std::string& name, int channels, int first, int total,
              std::vector<float>* tap_major);

 private:
  const ModelConfig& c_;
  const WeightStore& s_;
  DType dt_;                           // storage of the projections
  bool keep_blocks_;                   // quantized projections stay in their blocks
  std::optional<QuantType> quantize_;  // plain projections quantized at load
  HeadOrder order_;
  // fp32 copies of the tensor being converted, kept between tensors: fresh ones of up to
  // hundreds of MB each would cost their page faults and zeroing again every time.
  std::vector<float> scratch_[2];
};

// The tensors of a Kimi Linear GGUF by llama.cpp's names (MLA's up-projection as attn_k_b /
// attn_v_b, or a legacy file's attn_kv_b, whichever `store` has).
std::vector<ExpectedTensor> kimi_linear_gguf_weight_table(const ModelConfig& c,
                                                          const WeightStore& store);
// Kimi Linear's layer i (its norms, KDA or MLA, dense MLP or MoE).
Status convert_kimi_linear_gguf_layer(GgufConverter& cv, int i, LayerWeights* l);

}  // namespace hanpu::model
