// A hybrid model's layers on the Ascend model against a float64 layer computed here from the
// same inputs and weights (read back from the simulator's GM): Qwen3.5's GDN layer with every
// LA core, and its gated attention layer, prefill and a decode step after a cache. The NPU
// holds activations in fp16 between operators, so the bound is on their rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hanpu/npu.h"
#include "hybrid_shape_util.h"
#include "la_test_util.h"
#include "npu/kernels/prefill_ascend.h"
#include "npu/machine/npu_machine.h"

namespace hanpu::npu {
namespace {

using Mat = std::vector<double>;  // row-major

struct Ref {
  const NpuSim& sim;
  const GmTensor& t(const std::string& name) const {
    const GmTensor* x = sim.find_gm(name);
    EXPECT_NE(x, nullptr) << name;
    return *x;
  }
  Mat m(const std::string& name) const {
    const GmTensor& x = t(name);
    return Mat(x.v.begin(), x.v.end());
  }
};

double sig(double x) { return 1 / (1 + std::exp(-x)); }
double silu(double x) { return x * sig(x); }

// y [T x N] = x [T x K] w [K x N]
Mat matmul(const Mat& x, const Mat& w, int64_t T, int64_t K, int64_t N) {
  Mat y(static_cast<size_t>(T * N));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < N; ++n) y[t * N + n] += x[t * K + k] * w[k * N + n];
    }
  }
  return y;
}

// h = a + b, hn = RMSNorm(h) (1 + w)
void add_norm(const Mat& a, const Mat& b, const Mat& w, int64_t T, int H, Mat* h, Mat* hn) {
  h->assign(a.size(), 0);
  hn->assign(a.size(), 0);
  for (int64_t t = 0; t < T; ++t) {
    double ss = 0;
    for (int c = 0; c < H; ++c) {
      (*h)[t * H + c] = a[t * H + c] + b[t * H + c];
      ss += (*h)[t * H + c] * (*h)[t * H + c];
    }
    const double r = 1 / std::sqrt(ss / H + 1e-6);
    for (int c = 0; c < H; ++c) (*hn)[t * H + c] = (*h)[t * H + c] * r * (1 + w[c]);
  }
}

Mat mlp(const Ref& r, const Mat& hn, int64_t T, int H, int F) {
  const Mat gu = matmul(hn, r.m("mlp.w_gate_up"), T, H, 2 * F);
  Mat a(static_cast<size_t>(T * F));
  for (int64_t t = 0; t < T; ++t) {
    for (int c = 0; c < F; ++c) a[t * F + c] = silu(gu[t * 2 * F + c]) * gu[t * 2 * F + F + c];
  }
  return matmul(a, r.m("mlp.w_down"), T, F, H);
}

// The GDN mixer in float64 from hn: returns its output [T x H].
Mat gdn_mixer(const Ref& r, const NpuHybridShape& s, const Mat& hn, int64_t T) {
  const int H = s.hidden, QH = s.la_qk_heads, HV = s.la_v_heads, K = s.la_key_dim,
            V = s.la_value_dim, CK = s.conv_kernel, qk = QH * K, vv = HV * V, conv = 2 * qk + vv;
  const Mat qkvz = matmul(hn, r.m("la.w_qkvz"), T, H, conv + vv);
  const Mat ba = matmul(hn, r.m("la.w_ba"), T, H, 2 * HV);
  const Mat cw = r.m("la.conv_w"), A = r.m("la.A_log"), dt = r.m("la.dt_bias");
  Mat y(static_cast<size_t>(T * conv));
  for (int64_t t = 0; t < T; ++t) {
    for (int c = 0; c < conv; ++c) {
      double acc = 0;
      for (int j = 0; j < CK; ++j) {
        const int64_t u = t - (CK - 1) + j;
        if (u >= 0) acc += cw[static_cast<size_t>(c) * CK + j] * qkvz[u * (conv + vv) + c];
      }
      y[t * conv + c] = silu(acc);
    }
  }
  Mat o(static_cast<size_t>(T * vv));
  for (int h = 0; h < HV; ++h) {
    const int qh = h / (HV / QH);
    Mat S(static_cast<size_t>(K * V));
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> q(K), k(K);
      double nq = 0, nk = 0;
      for (int i = 0; i < K; ++i) {
        q[i] = y[t * conv + qh * K + i];
        k[i] = y[t * conv + qk + qh * K + i];
        nq += q[i] * q[i];
        nk += k[i] * k[i];
      }
      for (int i = 0; i < K; ++i) {
        q[i] /= std::sqrt(nq + 1e-6);
        k[i] /= std::sqrt(nk + 1e-6);
      }
      const double beta = sig(ba[t * 2 * HV + h]);
      const double a = ba[t * 2 * HV + HV + h] + dt[h];
      const double g = -std::exp(A[h]) * (a > 20 ? a : std::log1p(std::exp(a)));
      for (double& x : S) x *= std::exp(g);
      for (int j = 0; j < V; ++j) {
        double kv = 0;
        for (int i = 0; i < K; ++i) kv += S[i * V + j] * k[i];
        const double delta = beta * (y[t * conv + 2 * qk + h * V + j] - kv);
        double out = 0;
        for (int i = 0; i < K; ++i) {
          S[i * V + j] += k[i] * delta;
          out += S[i * V + j] * q[i];
        }
        o[t * vv + h * V + j] = out / std::sqrt(static_cast<double>(K));
      }
    }
  }
  const Mat nw = r.m("la.norm_w");
  Mat gated(o.size());
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < HV; ++h) {
      double ss = 0;
      for (int d = 0; d < V; ++d) ss += o[t * vv + h * V + d] * o[t * vv + h * V + d];
      const double rr = 1 / std::sqrt(ss / V + 1e-6);
      for (int d = 0; d < V; ++d) {
        const int c = h * V + d;
        gated[t * vv + c] = nw[d] * o[t * vv + c] * rr * silu(qkvz[t * (conv + vv) + conv + c]);
      }
    }
  }
  return matmul(gated, r.m("la.w_out"), T, vv, H);
}

// The attention mixer in float64 from hn after `past` cached tokens (their keys and values
// read from the caches the layer made).
Mat attention_mixer(const Ref& r, const NpuHybridShape& s, const Mat& hn, int64_t T, int64_t past) {
  const int H = s.hidden, HQ = s.attn_heads, HKV = s.kv_heads, D = s.head_dim, q = HQ * D,
            kv = HKV * D, rd = static_cast<int>(s.rotary_fraction * D) / 2 * 2;
  const Mat x = matmul(hn, r.m("attn.w_qgkv"), T, H, 2 * q + 2 * kv);
  const Mat qn = r.m("attn.q_norm"), kn = r.m("attn.k_norm");
  const int64_t L = past + T;
  Mat Q(static_cast<size_t>(T * q)), Kc(static_cast<size_t>(L * kv)), Vc(Kc.size());
  if (past > 0) {  // the cache rows before the new ones, as the layer holds them
    const Mat kc = r.m("attn.k_cache"), vc = r.m("attn.v_cache");
    std::copy_n(kc.begin(), past * kv, Kc.begin());
    std::copy_n(vc.begin(), past * kv, Vc.begin());
  }
  const auto norm_rope = [&](const double* in, const Mat& w, int64_t pos, double* out) {
    double ss = 0;
    for (int d = 0; d < D; ++d) ss += in[d] * in[d];
    const double rr = 1 / std::sqrt(ss / D + 1e-6);
    for (int d = 0; d < D; ++d) out[d] = in[d] * rr * (1 + w[d]);
    for (int d = 0; d < rd / 2; ++d) {
      const double a =
          static_cast<double>(pos) * std::pow(static_cast<double>(s.rope_theta), -2.0 * d / rd);
      const double x0 = out[d], x1 = out[d + rd / 2];
      out[d] = x0 * std::cos(a) - x1 * std::sin(a);
      out[d + rd / 2] = x1 * std::cos(a) + x0 * std::sin(a);
    }
  };
  for (int64_t t = 0; t < T; ++t) {
    const double* row = &x[t * (2 * q + 2 * kv)];
    for (int h = 0; h < HQ; ++h) norm_rope(row + h * D, qn, past + t, &Q[t * q + h * D]);
    for (int h = 0; h < HKV; ++h) {
      norm_rope(row + 2 * q + h * D, kn, past + t, &Kc[(past + t) * kv + h * D]);
      for (int d = 0; d < D; ++d) Vc[(past + t) * kv + h * D + d] = row[2 * q + kv + h * D + d];
    }
  }
  Mat og(static_cast<size_t>(T * q));
  for (int h = 0; h < HQ; ++h) {
    const int hk = h / (HQ / HKV);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t n = past + t + 1;
      std::vector<double> p(static_cast<size_t>(n));
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double d = 0;
        for (int e = 0; e < D; ++e) d += Q[t * q + h * D + e] * Kc[j * kv + hk * D + e];
        p[j] = d / std::sqrt(static_cast<double>(D));
        mx = std::max(mx, p[j]);
      }
      for (double& v : p) sum += v = std::exp(v - mx);
      for (int e = 0; e < D; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += p[j] * Vc[j * kv + hk * D + e];
        og[t * q + h * D + e] = acc / sum * sig(x[t * (2 * q + 2 * kv) + q + h * D + e]);
      }
    }
  }
  return matmul(og, r.m("attn.w_o"), T, q, H);
}

// The whole layer in float64 from its inputs: the mixer's output and the MLP's.
void layer_reference(const Ref& r, const NpuHybridShape& s, int64_t T, bool attention, int64_t past,
                     Mat* mix, Mat* out) {
  Mat h, hn, h2, hn2;
  add_norm(r.m("residual"), r.m("mlp_out"), r.m("norm.input.w"), T, s.hidden, &h, &hn);
  *mix = attention ? attention_mixer(r, s, hn, T, past) : gdn_mixer(r, s, hn, T);
  add_norm(h, *mix, r.m("norm.post.w"), T, s.hidden, &h2, &hn2);
  *out = mlp(r, hn2, T, s.hidden, s.ffn);
}

struct Case {
  bool attention;
  const char* variant;
  int64_t T, past;
};

TEST(HybridLayer, MatchesAFloat64Layer) {
  NpuMachine m;
  ASSERT_TRUE(load_npu_machine("ascend-310p", &m).ok());
  const NpuHybridShape s = tiny_hybrid_shape();
  for (const Case c :
       {Case{false, "hanpu", 70, 0}, Case{false, "vllm-ascend", 70, 0}, Case{false, "fla", 70, 0},
        Case{false, "flashqla", 70, 0}, Case{true, "hanpu", 70, 0}, Case{true, "hanpu", 1, 90}}) {
    SCOPED_TRACE(testing::Message() << (c.attention ? "attention" : "GDN") << " " << c.variant
                                    << " T " << c.T << " after " << c.past);
    double err_mix = INFINITY, err_out = INFINITY;
    LayerRun run;
    const Status st =
        hybrid_layer(m, s, c.T, c.past, c.attention, c.variant, 11, &run, [&](const NpuSim& sim) {
          const Ref r{sim};
          Mat mix, out;
          layer_reference(r, s, c.T, c.attention, c.past, &mix, &out);
          err_mix = test::nmse(mix, r.t("mixer_out").v);
          err_out = test::nmse(out, r.t("layer_out").v);
        });
    ASSERT_TRUE(st.ok()) << st.message();
    // fp16 activations between about a dozen operators: ~1e-6 when right.
    EXPECT_LT(err_mix, 1e-4);
    EXPECT_LT(err_out, 1e-4);
  }
}

}  // namespace
}  // namespace hanpu::npu
