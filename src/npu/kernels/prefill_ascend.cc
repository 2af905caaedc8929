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
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "npu/kernels/attn_ascend.h"
#include "npu/kernels/cube_gemm.h"
#include "npu/kernels/gdn_decode.h"
#include "npu/kernels/gdn_kernels.h"
#include "npu/kernels/layer_program.h"
#include "npu/kernels/row_pass.h"
#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

namespace {

// Channels [c0, c0 + cols) of the conv weights (CK taps a channel, channel-major) as a GM
// tensor of their own: the conv runs a pass per q, k and v, each with its channels' taps.
GmTensor* conv_weights_part(NpuSim& sim, const GmTensor& w, int64_t c0, int cols, int CK,
                            bool fp16) {
  const int64_t n = static_cast<int64_t>(cols) * CK;
  GmTensor* part = sim.gm("la.conv_w_part", 1, n, fp16);
  std::copy_n(w.v.begin() + c0 * CK, n, part->v.begin());
  return part;
}

// A decode step's causal conv: each of q, k, v on a core of its own, the window of the last
// CK - 1 tokens (the conv state) and the new one in UB, the state shifted and stored back.
Status conv_step(LayerProgram& L, GmTensor* qkvz, GmTensor* w, int CK,
                 const std::vector<std::pair<int64_t, GmTensor*>>& parts) {
  NpuSim& sim = L.sim();
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto [c0, dst] = parts[i];
    const int cols = static_cast<int>(dst->cols);
    CoreOps op(sim, static_cast<int>(i) % sim.machine().cores);
    GmTensor* state = L.param("la.conv_state", cols, 0.0f, 1.0f, CK - 1);
    GmTensor* wt = conv_weights_part(sim, *w, c0, cols, CK, false);
    Tile *win, *wu, *y;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, CK, cols, false, Layout::kND, "conv_window", &win));
    HANPU_RETURN_IF_ERROR(sim.load(win, {state, 0, CK - 1, 0, cols}));
    HANPU_RETURN_IF_ERROR(sim.load(win, {qkvz, 0, 1, c0, cols}, false, CK - 1));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, cols * CK, false, Layout::kND, "conv_w", &wu));
    HANPU_RETURN_IF_ERROR(sim.load(wu, {wt, 0, 1, 0, cols * CK}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, 1, cols, true, Layout::kND, "conv_out", &y));
    HANPU_RETURN_IF_ERROR(sim.vector({win, wu}, {y, win}, 2 * win->bytes + wu->bytes, false, [&] {
      for (int c = 0; c < cols; ++c) {
        float acc = 0;
        for (int j = 0; j < CK; ++j) acc += wu->v[static_cast<size_t>(c) * CK + j] * win->at(j, c);
        y->v[c] = silu(acc);
      }
      for (int j = 0; j + 1 < CK; ++j) {  // the window moves on a token
        for (int c = 0; c < cols; ++c) win->at(j, c) = win->at(j + 1, c);
      }
    }));
    HANPU_RETURN_IF_ERROR(sim.store({dst, 0, 1, 0, cols}, y));
    HANPU_RETURN_IF_ERROR(sim.store({state, 0, CK - 1, 0, cols}, win));
    op.free({win, wu, y});
  }
  return Status::Ok();
}

// `past` > 0: a decode step after `past` tokens (T = 1): the conv over its state window and
// the native backend's recurrent step in place of the chunked core.
Status gdn_mixer(LayerProgram& L, const NpuHybridShape& s, const GdnVariant& core, int64_t past,
                 GmTensor* xn, GmTensor* out) {
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
  if (past > 0) {
    gm.state0 = L.param("la.state", V, 0.0f, 0.1f, static_cast<int64_t>(HV) * K);
    GmTensor* w = L.param("la.conv_w", static_cast<int64_t>(conv) * CK, 0.0f, 0.5f);
    HANPU_RETURN_IF_ERROR(L.op("la.conv", [&] {
      return conv_step(L, qkvz, w, CK, {{0, gm.q}, {qk, gm.k}, {2 * qk, gm.v}});
    }));
  } else {
    gm.state1 = sim.gm("la.state", static_cast<int64_t>(HV) * K, V, false);
  }
  if (past == 0) {  // the causal depthwise conv over q, k, v, then SiLU: one operator, a pass per
                    // tensor (the
    // channels of all three with their weights would not fit a block of rows in the UB)
    GmTensor* w = L.param("la.conv_w", static_cast<int64_t>(conv) * CK, 0.0f, 0.5f);
    const auto pass = [&, CK](int64_t c0, int cols, GmTensor* dst) {
      GmTensor* wt = conv_weights_part(sim, *w, c0, cols, CK, true);
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
  // kernel is one operator the host dispatches. A decode step runs the recurrent step.
  if (past > 0) {
    HANPU_RETURN_IF_ERROR(L.op("la.core", [&] { return gdn_decode_step(sim, gm); }));
  } else {
    sim.region("la.core");
    if (core.name != "vllm-ascend") sim.host_ops(1);
    HANPU_RETURN_IF_ERROR(core.run(sim, gm));
  }
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

// `past` > 0: the T new tokens' keys and values go into caches after `past` rows and the
// queries attend to all of them.
Status attention_mixer(LayerProgram& L, const NpuHybridShape& s, int64_t past, GmTensor* xn,
                       GmTensor* out) {
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
  if (past > 0) {  // append the new rows to the caches (the cache holds `past` before them)
    const int64_t T = L.T();
    GmTensor* kc = sim.gm("attn.k_cache", past + T, kv, true);
    GmTensor* vc = sim.gm("attn.v_cache", past + T, kv, true);
    HANPU_RETURN_IF_ERROR(L.op("attn.cache_append", [&]() -> Status {
      const std::pair<GmBlock, GmTensor*> rows[] = {
          {{gm.k, 0, static_cast<int>(T), 0, kv}, kc},
          {{qkv, 0, static_cast<int>(T), 2 * q + kv, kv}, vc}};
      for (int i = 0; i < 2; ++i) {
        Tile* t;
        HANPU_RETURN_IF_ERROR(
            sim.alloc(i, Buf::kUB, static_cast<int>(T), kv, true, Layout::kND, "kv_row", &t));
        HANPU_RETURN_IF_ERROR(sim.load(t, rows[i].first));
        HANPU_RETURN_IF_ERROR(sim.store({rows[i].second, past, static_cast<int>(T), 0, kv}, t));
        sim.free(t);
      }
      return Status::Ok();
    }));
    gm.k = kc;
    gm.v = vc;
    gm.v_col = 0;
    gm.Tk = past + T;
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

Status hybrid_layer(const NpuMachine& m, const NpuHybridShape& s, int64_t T, int64_t past,
                    bool attention, const std::string& la_variant, uint64_t seed, LayerRun* out,
                    const std::function<void(const NpuSim&)>& inspect) {
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
    HANPU_RETURN_IF_ERROR(attention_mixer(L, s, past, hn, mix));
  } else {
    HANPU_RETURN_IF_ERROR(gdn_mixer(L, s, *core, past, hn, mix));
  }
  HANPU_RETURN_IF_ERROR(L.add_norm("norm.post", h, mix, h2, hn2));
  HANPU_RETURN_IF_ERROR(L.mlp(hn2, s.ffn, y));
  const SimStats st = sim.finish();
  for (float x : y->v) {
    if (!std::isfinite(x)) return Status::Error("npu prefill: the layer's output is not finite");
  }
  if (inspect) inspect(sim);
  out->ms = st.latency_ms;
  out->energy_mj = st.energy_mj;
  out->ops = st.region_ms;
  return Status::Ok();
}

Status check_hybrid_size(const NpuHybridShape& s, int64_t T, int64_t past) {
  const double H = s.hidden, F = s.ffn, qk = static_cast<double>(s.la_qk_heads) * s.la_key_dim,
               vv = static_cast<double>(s.la_v_heads) * s.la_value_dim, conv = 2 * qk + vv,
               q = static_cast<double>(s.attn_heads) * s.head_dim,
               kv = static_cast<double>(s.kv_heads) * s.head_dim;
  // Per token: the residual stream's tensors, the MLP's, and the larger mixer's.
  const double la_row = conv + vv + 2.0 * s.la_v_heads + conv + 2 * vv + 2.0 * s.la_v_heads;
  const double attn_row = 2 * q + 2 * kv + 2 * q + kv + q;
  const double row = 8 * H + 3 * F + std::max(la_row, attn_row);
  const double la_weights = H * (conv + vv) + H * 2.0 * s.la_v_heads + vv * H;
  const double attn_weights = H * (2 * q + 2 * kv) + q * H;
  const double weights = std::max(la_weights, attn_weights) + 3 * H * F;
  const double bytes =
      4 * (static_cast<double>(T) * row + weights + 2.0 * static_cast<double>(past + T) * kv);
  AscendAttnGm a;
  a.T = T;
  a.Tk = past + T;
  a.Hq = s.attn_heads;
  a.Hkv = s.kv_heads;
  a.D = s.head_dim;
  const double events = s.attn_layers > 0 ? ascend_attention_events(a) : 0;
  if (bytes > kMaxLayerBytes || events > kMaxAttentionEvents) {
    return Status::Error(fmt::format(
        "npu prefill: a layer over {} tokens after {} holds ~{:.1f} GiB on the model and its "
        "attention records ~{:.0f} M events; the limits are {:.0f} GiB and {:.0f} M: a shorter T",
        T, past, bytes / (1 << 30), events / 1e6, kMaxLayerBytes / (1 << 30),
        kMaxAttentionEvents / 1e6));
  }
  return Status::Ok();
}

Status lm_head(const NpuMachine& m, const NpuHybridShape& s, uint64_t seed, LayerRun* out) {
  if (s.vocab < 16 || s.vocab > (int64_t{1} << 22))
    return Status::Error(fmt::format("npu request: vocab {} must be in [16, 2^22]", s.vocab));
  NpuSim sim(m);
  LayerProgram L(sim, 1, seed);
  GmTensor *res = L.random_act("residual", s.hidden), *prev = L.random_act("mlp_out", s.hidden);
  GmTensor *h = L.act("h", s.hidden), *hn = L.act("hn", s.hidden),
           *logits = L.act("logits", s.vocab);
  HANPU_RETURN_IF_ERROR(L.add_norm("norm.final", res, prev, h, hn));
  HANPU_RETURN_IF_ERROR(L.gemm("lm_head", hn, L.weight("lm_head.w", s.hidden, s.vocab), logits));
  const SimStats st = sim.finish();
  out->ms = st.latency_ms;
  out->energy_mj = st.energy_mj;
  out->ops = st.region_ms;
  return Status::Ok();
}

}  // namespace hanpu::npu
