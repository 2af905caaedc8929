// Reads a checkpoint's tensors into hanpu's compute layout, one architecture family per
// file: the Qwen layers in model_weights.cc, the KDA hybrids' in kda_weights.cc.
#pragma once

#include <array>
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

inline std::vector<int> iota_rows(int n, int first = 0) {
  std::vector<int> r(n);
  std::iota(r.begin(), r.end(), first);
  return r;
}

class Converter {
 public:
  Converter(const ModelConfig& c, const WeightStore& s, DType dt, std::optional<QuantType> q)
      : c_(c), s_(s), dt_(dt), quantize_(q) {}
  // Rows `rows` of W [out_all, in] as a projection onto rows.size() outputs.
  Linear linear_from_rows(const std::vector<float>& w, int in, const std::vector<int>& rows) const {
    return pack_rows(w.data(), in, rows, dt_, quantize_);
  }
  Status f32(const std::string& name, const Shape& shape, std::vector<float>* out) const {
    return s_.get_f32(name, shape, out);
  }
  // An RMSNorm's plain weight w [n] as the zero-centred w - 1 the stack's norms apply as
  // 1 + w (rms_norm_zero_centred): exact for the weights near 1 norms hold (Sterbenz).
  Status plain_norm(const std::string& name, int n, std::vector<float>* out) const;
  // nn.Linear weight [out, in] -> W^T.
  Status linear(const std::string& name, int out, int in, Linear* l);
  // gate_proj, up_proj, down_proj under prefix `p` (the names `names` gives, in that order).
  Status mlp(const std::string& p, int inter, MlpWeights* m,
             const std::array<const char*, 3>& names = {"gate_proj.weight", "up_proj.weight",
                                                        "down_proj.weight"});
  // A depthwise causal conv [channels, 1, kernel] appended tap-major to `tap_major`, which
  // holds `total` channels per tap in the end, this one from channel `first`.
  Status conv(const std::string& name, int channels, int first, int total,
              std::vector<float>* tap_major);

  // Qwen3.5 / Qwen3-Next (model_weights.cc).
  Status gdn(const std::string& p, GdnWeights* w);
  Status attn(const std::string& p, AttnWeights* w);
  Status moe(const std::string& p, MoeWeights* m);
  // Kimi Linear / Ling (kda_weights.cc): the KDA mixer, MLA, the grouped-router MoE.
  Status kda(const std::string& p, KdaWeights* w);
  Status mla(const std::string& p, MlaWeights* w);
  Status grouped_moe(const std::string& p, MoeWeights* m);

  const ModelConfig& config() const { return c_; }
  const WeightStore& store() const { return s_; }

 private:
  const ModelConfig& c_;
  const WeightStore& s_;
  DType dt_;  // storage of the projections
  std::optional<QuantType> quantize_;
  // fp32 copies of the tensor being converted, kept between tensors: fresh ones of up to
  // hundreds of MB each would cost their page faults and zeroing again every time.
  std::vector<float> scratch_[2];
};

// The tensors of a Kimi Linear or Ling checkpoint, by the names its own release writes.
std::vector<ExpectedTensor> kda_hybrid_weight_table(const ModelConfig& config,
                                                    const WeightStore& store);
// The KDA hybrids' embedding table (under the weight prefix: Kimi's embed_tokens, Ling's
// word_embeddings) and layer i, converted (kda_weights.cc).
std::string hybrid_embedding_name(const ModelConfig& c);
Status convert_kda_hybrid_layer(Converter& cv, int i, LayerWeights* l);
// MLA's up-projection kv_b [H (N + Dv), C] (nn.Linear's layout, fp32) as w's kv_b and its
// per-head absorbed halves uk, uv (model_weights.h); a half the caller takes from a file's
// blocks instead is not packed (pack_uk, pack_uv false: its entries are left empty).
void pack_mla_up_projection(const ModelConfig& c, const std::vector<float>& kv_b, DType dtype,
                            std::optional<QuantType> quantize, MlaWeights* w, bool pack_uk = true,
                            bool pack_uv = true);

}  // namespace hanpu::model
