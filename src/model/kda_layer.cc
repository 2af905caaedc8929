// KDA layer (see kda_layer.h).
#include "model/kda_layer.h"

#include <cmath>

#include "cpu/nn/conv1d.h"
#include "cpu/nn/linear.h"
#include "model/kda_gates.h"
#include "model/layer_ops.h"
#include "model/layers.h"

namespace hanpu::model {

namespace {

// y [R, n] = b(a(x)) where b has rows, else a(x); tmp holds a(x) [R, a.out] in between.
void low_rank_or_full(const float* x, int64_t ldx, int64_t R, const Linear& a, const Linear& b,
                      float* tmp, float* y, const ForwardOptions& opt) {
  if (b.out == 0) {
    cpu::linear(x, ldx, R, a, y, a.out, opt.threads, opt.projection);
    return;
  }
  cpu::linear(x, ldx, R, a, tmp, a.out, opt.threads, opt.projection);
  cpu::linear(tmp, a.out, R, b, y, b.out, opt.threads, opt.projection);
}

}  // namespace

Status kda_layer(const ModelConfig& c, const KdaWeights& w, const float* x, int64_t T,
                 std::vector<float>* conv, AlignedFloats* recurrent, const ForwardOptions& opt,
                 int64_t out_rows, float* out, double* kernel_ms, Workspace& ws) {
  const int H = c.la_key_heads, K = c.la_key_dim, HK = H * K, C = 3 * HK, hidden = c.hidden;
  // mixed [T, C] = q | k | v projections; beta [T, H].
  float* mixed = ws.layer(0, static_cast<size_t>(T) * C);
  float* beta = ws.layer(2, static_cast<size_t>(T) * H);
  // g [T, H K]: the forget gate's input f (Kimi: f_b(f_a(x)); Ling: f_proj(x)), then the gate.
  float* g = ws.layer(7, static_cast<size_t>(T) * HK);
  const bool low_rank = w.f_b.out > 0;
  float* fa = low_rank ? ws.layer(3, static_cast<size_t>(T) * w.f_a.out) : g;
  std::vector<cpu::LinearOut> outs = {{&w.q, mixed, C},
                                      {&w.k, mixed + HK, C},
                                      {&w.v, mixed + 2 * HK, C},
                                      {&w.b, beta, H},
                                      {&w.f_a, fa, w.f_a.out}};
  // A decode step takes the output gate's projections here too: one call for every product
  // of x, and one for the two low-rank second halves (cpu::linear_each). A prefill makes the
  // output gate later, for its output rows only, so no [T, H K] buffer of it sits beside q, k,
  // v and g.
  const bool decode = T == 1;
  float* gate = decode ? ws.layer(8, static_cast<size_t>(HK)) : nullptr;
  float* ga = decode && low_rank ? ws.layer(9, static_cast<size_t>(w.g_a.out)) : gate;
  if (decode) outs.push_back({&w.g_a, ga, w.g_a.out});
  cpu::linear_many(x, hidden, T, outs, opt.threads, opt.projection);
  if (low_rank && decode) {
    cpu::linear_each({{fa, &w.f_b, g}, {ga, &w.g_b, gate}}, opt.threads, opt.projection);
  } else if (low_rank) {
    cpu::linear(fa, w.f_a.out, T, w.f_b, g, HK, opt.threads, opt.projection);
  }
  for (int64_t i = 0; i < T * H; ++i) beta[i] = 1.0f / (1.0f + std::exp(-beta[i]));
  float* q = ws.layer(4, static_cast<size_t>(T) * HK);
  float* k = ws.layer(5, static_cast<size_t>(T) * HK);
  float* v = ws.layer(6, static_cast<size_t>(T) * HK);
  cpu::causal_conv1d_silu(mixed, T, C, w.conv.data(), c.conv_kernel, conv,
                          {{0, HK, q, HK}, {HK, HK, k, HK}, {2 * HK, HK, v, HK}}, opt.threads);
  kda_forget_gate(g, T, H, K, w.a_rate.data(), w.dt_bias.data(), w.gate_lower_bound, g,
                  opt.threads);
  float* o = ws.layer(0, static_cast<size_t>(T) * HK);  // over mixed: read by now
  HANPU_RETURN_IF_ERROR(
      la_call(LaMech::kKda, c, q, k, v, g, beta, T, recurrent, opt, o, kernel_ms));
  // The output path of the last out_rows rows: o * rsqrt(mean o^2 + eps) * w * sigmoid(gate)
  // per head, then the output projection. q's and k's slots are free now.
  const int64_t r0 = T - out_rows;
  if (!decode) {
    gate = ws.layer(5, static_cast<size_t>(out_rows) * HK);
    low_rank_or_full(x + r0 * hidden, hidden, out_rows, w.g_a, w.g_b,
                     ws.layer(4, static_cast<size_t>(out_rows) * w.g_a.out), gate, opt);
  }
  float* o_out = o + r0 * HK;
  sigmoid_gated_rms_norm(o_out, gate, out_rows * H, K, w.o_norm.data(), c.rms_eps, opt.threads);
  cpu::linear(o_out, HK, out_rows, w.out, out, hidden, opt.threads, opt.projection);
  return Status::Ok();
}

}  // namespace hanpu::model
