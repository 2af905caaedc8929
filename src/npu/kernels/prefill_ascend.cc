// hybrid_layer (see prefill_ascend.h) and npu_hybrid_prefill (include/hanpu/npu.h). The
// arithmetic is Qwen3.5's: zero-centred RMSNorms (x r (1 + w)) with the residual added in the
// same operator (as vLLM-Ascend's add_rms_norm), the depthwise causal conv with SiLU over q,
// k and v, beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias), q/k L2-normalised in
// the LA core, the per-head gated norm w norm(o) silu(z), SwiGLU; attention with per-head
// q/k norms, RoPE on the first quarter of each head (rotate-half pairs), and the output
// gated by sigmoid of the query projection's second half.
#include "npu/kernels/prefill_ascend.h"

#include <cmath>
#include <algorithm>
#include <functional>
#include <random>

#include <fmt/format.h>

#include "npu/kernels/attn_ascend.h"
#include "npu/kernels/cube_gemm.h"
#include "npu/kernels/gdn_kernels.h"
#include "npu/kernels/row_pass.h"
#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

class LayerProgram {
 public:
  LayerProgram(NpuSim& sim, int64_t T, uint64_t seed) : sim_(sim), T_(T), rng_(seed) {}

  GmTensor* act(const std::string& name, int64_t cols, bool fp16 = true) {
    return sim_.gm(name, T_, cols, fp16);
  }
  GmTensor* random_act(const std::string& name, int64_t cols) {
    GmTensor* t = act(name, cols);
    std::normal_distribution<float> n;
    for (float& x : t->v) x = n(rng_);
    return t;
  }
  // A projection's weight [in, out] in NZ order, scaled so activations keep unit size.
  GmTensor* weight(const std::string& name, int64_t in, int64_t out) {
    GmTensor* t = sim_.gm(name, in, out, true);
    t->nz = true;
    std::normal_distribution<float> n(0.0f, 1.0f / std::sqrt(static_cast<float>(in)));
    for (float& x : t->v) x = n(rng_);
    return t;
  }
  GmTensor* param(const std::string& name, int64_t cols, float mean, float sd) {
    GmTensor* t = sim_.gm(name, 1, cols, false);
    std::normal_distribution<float> n(mean, sd);
    for (float& x : t->v) x = n(rng_);
    return t;
  }
  // One operator: a region of its own, dispatched by the host as one eager operator.
  Status op(const std::string& name, const std::function<Status()>& body) {
    sim_.region(name);
    sim_.launch(1);
    return body();
  }
  Status gemm(const std::string& name, GmTensor* x, GmTensor* w, GmTensor* y) {
    return op(name, [&] { return cube_gemm(sim_, x, w, y); });
  }
  // h = a + b; hn = RMSNorm(h) (1 + w).
  Status add_norm(const std::string& name, GmTensor* a, GmTensor* b, GmTensor* h, GmTensor* hn) {
    const int H = static_cast<int>(a->cols);
    GmTensor* w = param(name + ".w", H, 0.0f, 0.1f);
    RowPass p;
    p.in = {{a, 0, H}, {b, 0, H}};
    p.params = {w};
    p.out = {{h, 0, H}, {hn, 0, H}};
    p.passes = 2;
    p.fn = [H](const std::vector<Tile*>& in, const std::vector<Tile*>& pr,
               const std::vector<Tile*>& out, int, int64_t) {
      for (int i = 0; i < out[0]->rows; ++i) {
        double ss = 0;
        for (int c = 0; c < H; ++c) {
          const float x = in[0]->at(i, c) + in[1]->at(i, c);
          out[0]->at(i, c) = x;
          ss += static_cast<double>(x) * x;
        }
        const float r = static_cast<float>(1.0 / std::sqrt(ss / H + 1e-6));
        for (int c = 0; c < H; ++c) out[1]->at(i, c) = out[0]->at(i, c) * r * (1 + pr[0]->v[c]);
      }
    };
    return op(name, [&] { return row_pass(sim_, T_, p); });
  }
  // gate_up, SwiGLU, down: the MLP's output into `y`.
  Status mlp(GmTensor* hn, int ffn, GmTensor* y) {
    const int H = static_cast<int>(hn->cols);
    GmTensor* gu = act("mlp.gate_up", 2 * static_cast<int64_t>(ffn));
    GmTensor* a = act("mlp.act", ffn);
    HANPU_RETURN_IF_ERROR(gemm("mlp.gate_up", hn, weight("mlp.w_gate_up", H, 2 * ffn), gu));
    RowPass p;
    p.in = {{gu, 0, ffn}, {gu, ffn, ffn}};
    p.out = {{a, 0, ffn}};
    p.fn = [ffn](const std::vector<Tile*>& in, const std::vector<Tile*>&,
                 const std::vector<Tile*>& out, int, int64_t) {
      for (int i = 0; i < out[0]->rows; ++i) {
        for (int c = 0; c < ffn; ++c) out[0]->at(i, c) = silu(in[0]->at(i, c)) * in[1]->at(i, c);
      }
    };
    HANPU_RETURN_IF_ERROR(op("mlp.swiglu", [&] { return row_pass(sim_, T_, p); }));
    return gemm("mlp.down", a, weight("mlp.w_down", ffn, H), y);
  }

  NpuSim& sim() { return sim_; }
  int64_t T() const { return T_; }

 private:
  NpuSim& sim_;
  int64_t T_;
  std::mt19937_64 rng_;
};

Status gdn_mixer(LayerProgram& L, const NpuHybridShape& s, const GdnVariant& core, GmTensor* xn,
                 GmTensor* out) {
  NpuSim& sim = L.sim();
  const int H = s.hidden, QH = s.la_qk_heads, HV = s.la_v_heads, K = s.la_key_dim,
            V = s.la_value_dim, CK = s.conv_kernel;
  const int qk = QH * K, vv = HV * V, conv = 2 * qk + vv;
  GmTensor* qkvz = L.act("la.qkvz", conv + vv);
  GmTensor* ba = L.act("la.ba", 2 * HV);
  HANPU_RETURN_IF_ERROR(L.gemm("la.in_proj_qkvz", xn, L.weight("la.w_qkvz", H, conv + vv), qkvz));
  HANPU_RETURN_IF_ERROR(L.gemm("la.in_proj_ba", xn, L.weight("la.w_ba", H, 2 * HV), ba));
  GdnGm gm;
  gm.T = L.T();
  gm.H = HV;
  gm.K = K;
  gm.V = V;
  gm.group = HV / QH;
  gm.qk_l2norm = true;
  gm.scale = 1.0f / std::sqrt(static_cast<float>(K));
  gm.q = L.act("la.q", qk);
  gm.k = L.act("la.k", qk);
  gm.v = L.act("la.v", vv);
  gm.o = L.act("la.o", vv);
  gm.g = L.act("la.g", HV, false);
  gm.beta = L.act("la.beta", HV, false);
  gm.state1 = sim.gm("la.state", static_cast<int64_t>(HV) * K, V, false);
  {  // the causal depthwise conv over q, k, v, then SiLU: one operator, a pass per tensor (the
     // channels of all three with their weights would not fit a block of rows in the UB)
    GmTensor* w = L.param("la.conv_w", static_cast<int64_t>(conv) * CK, 0.0f, 0.5f);
    const auto pass = [&, CK](int64_t c0, int cols, GmTensor* dst) {
      GmTensor* wt = sim.gm("la.conv_w_part", 1, static_cast<int64_t>(cols) * CK, true);
      std::copy_n(w->v.begin() + c0 * CK, static_cast<int64_t>(cols) * CK, wt->v.begin());
      RowPass p;
      p.in = {{qkvz, c0, cols}};
      p.params = {wt};
      p.out = {{dst, 0, cols}};
      p.halo = CK - 1;
      p.passes = CK;
      p.fn = [cols, CK](const std::vector<Tile*>& in, const std::vector<Tile*>& pr,
                        const std::vector<Tile*>& out, int halo, int64_t) {
        for (int i = 0; i < out[0]->rows; ++i) {
          for (int c = 0; c < cols; ++c) {
            float acc = 0;
            for (int j = 0; j < CK; ++j) {
              const int r = halo + i - (CK - 1) + j;  // the tile row of token t - (CK - 1) + j
              if (r >= 0) acc += pr[0]->v[static_cast<size_t>(c) * CK + j] * in[0]->at(r, c);
            }
            out[0]->at(i, c) = silu(acc);
          }
        }
      };
      return row_pass(sim, L.T(), p);
    };
    HANPU_RETURN_IF_ERROR(L.op("la.conv", [&]() -> Status {
      HANPU_RETURN_IF_ERROR(pass(0, qk, gm.q));
      HANPU_RETURN_IF_ERROR(pass(qk, qk, gm.k));
      return pass(2 * qk, vv, gm.v);
    }));
  }
  {  // beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias)
    RowPass p;
    p.in = {{ba, 0, HV}, {ba, HV, HV}};
    p.params = {L.param("la.A_log", HV, 0.0f, 0.5f), L.param("la.dt_bias", HV, 0.0f, 0.5f)};
    p.out = {{gm.beta, 0, HV}, {gm.g, 0, HV}};
    p.passes = 4;
    p.fn = [HV](const std::vector<Tile*>& in, const std::vector<Tile*>& pr,
                const std::vector<Tile*>& out, int, int64_t) {
      for (int i = 0; i < out[0]->rows; ++i) {
        for (int h = 0; h < HV; ++h) {
          out[0]->at(i, h) = sigmoid(in[0]->at(i, h));
          out[1]->at(i, h) = -std::exp(pr[0]->v[h]) * softplus(in[1]->at(i, h) + pr[1]->v[h]);
        }
      }
    };
    HANPU_RETURN_IF_ERROR(L.op("la.gates", [&] { return row_pass(sim, L.T(), p); }));
  }
  // The LA core: vLLM-Ascend's chain pays the host for each of its own operators; any other
  // kernel is one operator the host dispatches.
  sim.region("la.core");
  if (core.name != "vllm-ascend") sim.host_ops(1);
  HANPU_RETURN_IF_ERROR(core.run(sim, gm));
  GmTensor* y = L.act("la.gated", vv);
  {  // w RMSNorm(o) silu(z), per head
    RowPass p;
    p.in = {{gm.o, 0, vv}, {qkvz, conv, vv}};
    p.params = {L.param("la.norm_w", V, 1.0f, 0.1f)};
    p.out = {{y, 0, vv}};
    p.passes = 3;
    p.fn = [HV, V](const std::vector<Tile*>& in, const std::vector<Tile*>& pr,
                   const std::vector<Tile*>& out, int, int64_t) {
      for (int i = 0; i < out[0]->rows; ++i) {
        for (int h = 0; h < HV; ++h) {
          double ss = 0;
          for (int d = 0; d < V; ++d)
            ss += static_cast<double>(in[0]->at(i, h * V + d)) * in[0]->at(i, h * V + d);
          const float r = static_cast<float>(1.0 / std::sqrt(ss / V + 1e-6));
          for (int d = 0; d < V; ++d) {
            const int c = h * V + d;
            out[0]->at(i, c) = pr[0]->v[d] * in[0]->at(i, c) * r * silu(in[1]->at(i, c));
          }
        }
      }
    };
    HANPU_RETURN_IF_ERROR(L.op("la.gated_norm", [&] { return row_pass(sim, L.T(), p); }));
  }
  return L.gemm("la.out_proj", y, L.weight("la.w_out", vv, H), out);
}

Status attention_mixer(LayerProgram& L, const NpuHybridShape& s, GmTensor* xn, GmTensor* out) {
  NpuSim& sim = L.sim();
  const int H = s.hidden, HQ = s.attn_heads, HKV = s.kv_heads, D = s.head_dim;
  const int q = HQ * D, kv = HKV * D;
  GmTensor* qkv = L.act("attn.qgkv", 2 * q + 2 * kv);  // [q | gate | k | v]
  HANPU_RETURN_IF_ERROR(
      L.gemm("attn.qkv_proj", xn, L.weight("attn.w_qgkv", H, 2 * q + 2 * kv), qkv));
  AscendAttnGm gm;
  gm.T = L.T();
  gm.Hq = HQ;
  gm.Hkv = HKV;
  gm.D = D;
  gm.scale = 1.0f / std::sqrt(static_cast<float>(D));
  gm.q = L.act("attn.q", q);
  gm.k = L.act("attn.k", kv);
  gm.v = qkv;
  gm.v_col = 2 * q + kv;
  gm.o = L.act("attn.o", q);
  {  // per-head RMSNorm of q and k (1 + w), then RoPE on each head's first rotary dims
    const int rd = static_cast<int>(s.rotary_fraction * D) / 2 * 2;
    const float theta = s.rope_theta;
    RowPass p;
    p.in = {{qkv, 0, q}, {qkv, 2 * q, kv}};
    p.params = {L.param("attn.q_norm", D, 0.0f, 0.1f), L.param("attn.k_norm", D, 0.0f, 0.1f)};
    p.out = {{gm.q, 0, q}, {gm.k, 0, kv}};
    p.passes = 4;
    p.fn = [=](const std::vector<Tile*>& in, const std::vector<Tile*>& pr,
               const std::vector<Tile*>& out, int, int64_t row0) {
      for (int t = 0; t < 2; ++t) {
        const int heads = t == 0 ? HQ : HKV;
        for (int i = 0; i < out[t]->rows; ++i) {
          const auto pos = static_cast<double>(row0 + i);
          for (int h = 0; h < heads; ++h) {
            float* x = &out[t]->at(i, h * D);
            double ss = 0;
            for (int d = 0; d < D; ++d)
              ss += static_cast<double>(in[t]->at(i, h * D + d)) * in[t]->at(i, h * D + d);
            const float r = static_cast<float>(1.0 / std::sqrt(ss / D + 1e-6));
            for (int d = 0; d < D; ++d) x[d] = in[t]->at(i, h * D + d) * r * (1 + pr[t]->v[d]);
            for (int d = 0; d < rd / 2; ++d) {
              const double a = pos * std::pow(static_cast<double>(theta), -2.0 * d / rd);
              const float c = static_cast<float>(std::cos(a)), sn = static_cast<float>(std::sin(a));
              const float x0 = x[d], x1 = x[d + rd / 2];
              x[d] = x0 * c - x1 * sn;
              x[d + rd / 2] = x1 * c + x0 * sn;
            }
          }
        }
      }
    };
    HANPU_RETURN_IF_ERROR(L.op("attn.qk_norm_rope", [&] { return row_pass(sim, L.T(), p); }));
  }
  HANPU_RETURN_IF_ERROR(L.op("attn.core", [&] { return ascend_flash_attention(sim, gm); }));
  GmTensor* og = L.act("attn.gated", q);
  {  // o sigmoid(gate)
    RowPass p;
    p.in = {{gm.o, 0, q}, {qkv, q, q}};
    p.out = {{og, 0, q}};
    p.passes = 2;
    p.fn = [q](const std::vector<Tile*>& in, const std::vector<Tile*>&,
               const std::vector<Tile*>& out, int, int64_t) {
      for (int i = 0; i < out[0]->rows; ++i) {
        for (int c = 0; c < q; ++c) out[0]->at(i, c) = in[0]->at(i, c) * sigmoid(in[1]->at(i, c));
      }
    };
    HANPU_RETURN_IF_ERROR(L.op("attn.gate", [&] { return row_pass(sim, L.T(), p); }));
  }
  return L.gemm("attn.o_proj", og, L.weight("attn.w_o", q, H), out);
}

}  // namespace

Status hybrid_layer(const NpuMachine& m, const NpuHybridShape& s, int64_t T, bool attention,
                    const std::string& la_variant, uint64_t seed, LayerRun* out) {
  const GdnVariant* core = nullptr;
  for (const GdnVariant& v : gdn_variants()) {
    if (v.name == la_variant) core = &v;
  }
  if (core == nullptr)
    return Status::Error(fmt::format("npu prefill: unknown LA variant '{}'", la_variant));
  NpuSim sim(m);
  LayerProgram L(sim, T, seed);
  const int H = s.hidden;
  GmTensor *res = L.random_act("residual", H), *prev = L.random_act("mlp_out", H);
  GmTensor *h = L.act("h", H), *hn = L.act("hn", H), *mix = L.act("mixer_out", H);
  GmTensor *h2 = L.act("h2", H), *hn2 = L.act("hn2", H), *y = L.act("layer_out", H);
  HANPU_RETURN_IF_ERROR(L.add_norm("norm.input", res, prev, h, hn));
  if (attention) {
    HANPU_RETURN_IF_ERROR(attention_mixer(L, s, hn, mix));
  } else {
    HANPU_RETURN_IF_ERROR(gdn_mixer(L, s, *core, hn, mix));
  }
  HANPU_RETURN_IF_ERROR(L.add_norm("norm.post", h, mix, h2, hn2));
  HANPU_RETURN_IF_ERROR(L.mlp(hn2, s.ffn, y));
  const SimStats st = sim.finish();
  for (float x : y->v) {
    if (!std::isfinite(x)) return Status::Error("npu prefill: the layer's output is not finite");
  }
  out->ms = st.latency_ms;
  out->energy_mj = st.energy_mj;
  out->ops = st.region_ms;
  return Status::Ok();
}

}  // namespace hanpu::npu
