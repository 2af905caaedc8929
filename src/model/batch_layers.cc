// One decode step of several sequences at once (continuous batching, layers.h): the weights
// are read once for all the sequences' rows, each sequence's state is its own.
#include <chrono>

#include <fmt/format.h>

#include "cpu/nn/conv1d.h"
#include "cpu/nn/linear.h"
#include "hanpu/attn.h"
#include "model/layer_ops.h"
#include "model/layers.h"

namespace hanpu::model {

Status gdn_layer_batch(const ModelConfig& c, const GdnWeights& w, const float* x, int n,
                       SequenceState* const* states, int layer, const ForwardOptions& opt,
                       float* out, double* kernel_ms, Workspace& ws) {
  const int H = c.la_key_heads, HV = c.la_value_heads, K = c.la_key_dim, V = c.la_value_dim;
  const int C = c.la_conv_channels(), hidden = c.hidden, HK = H * K, HVV = HV * V;
  float* mixed = ws.layer(0, static_cast<size_t>(n) * C);
  float* z = ws.layer(1, static_cast<size_t>(n) * HVV);
  float* b = ws.layer(2, static_cast<size_t>(n) * HV);
  float* a = ws.layer(3, static_cast<size_t>(n) * HV);
  cpu::linear_many(x, hidden, n, {{&w.qkv, mixed, C}, {&w.z, z, HVV}, {&w.b, b, HV}, {&w.a, a, HV}},
                   opt.threads, opt.projection);
  float* q = ws.layer(4, static_cast<size_t>(n) * HK);
  float* k = ws.layer(5, static_cast<size_t>(n) * HK);
  float* v = ws.layer(6, static_cast<size_t>(n) * HVV);
  for (int s = 0; s < n; ++s) {  // each row's convolution continues its own sequence's window
    cpu::causal_conv1d_silu(mixed + static_cast<int64_t>(s) * C, 1, C, w.conv.data(), c.conv_kernel,
                            &states[s]->conv[layer],
                            {{0, HK, q + s * HK, HK},
                             {HK, HK, k + s * HK, HK},
                             {2 * HK, HVV, v + static_cast<int64_t>(s) * HVV, HVV}},
                            opt.threads);
  }
  float* beta = ws.layer(7, static_cast<size_t>(n) * HV);
  float* g = ws.layer(8, static_cast<size_t>(n) * HV);
  gdn_gates(b, a, n, HV, w.neg_A.data(), w.dt_bias.data(), beta, g);
  float* o = ws.layer(0, static_cast<size_t>(n) * HVV);  // over mixed: read by now
  for (int s = 0; s < n; ++s) {
    HANPU_RETURN_IF_ERROR(la_call(LaMech::kGdn, c, q + s * HK, k + s * HK,
                                  v + static_cast<int64_t>(s) * HVV, g + s * HV, beta + s * HV, 1,
                                  &states[s]->recurrent[layer], opt,
                                  o + static_cast<int64_t>(s) * HVV, kernel_ms));
  }
  gated_rms_norm(o, z, static_cast<int64_t>(n) * HV, V, w.norm.data(), c.rms_eps, opt.threads);
  cpu::linear(o, HVV, n, w.out, out, hidden, opt.threads, opt.projection);
  return Status::Ok();
}

Status attention_layer_batch(const ModelConfig& c, const AttnWeights& w, const float* x, int n,
                             SequenceState* const* states, int layer, const ForwardOptions& opt,
                             float* out, double* kernel_ms, Workspace& ws) {
  const int Hq = c.attn_heads, Hkv = c.kv_heads, D = c.head_dim, hidden = c.hidden;
  float* qg = ws.layer(0, static_cast<size_t>(n) * Hq * 2 * D);
  float* q = ws.layer(1, static_cast<size_t>(n) * Hq * D);
  float* k = ws.layer(2, static_cast<size_t>(n) * Hkv * D);
  float* v = ws.layer(3, static_cast<size_t>(n) * Hkv * D);
  cpu::linear_many(x, hidden, n, {{&w.q, qg, Hq * 2 * D}, {&w.k, k, Hkv * D}, {&w.v, v, Hkv * D}},
                   opt.threads, opt.projection);
  rms_norm_zero_centred(qg, 2 * D, static_cast<int64_t>(n) * Hq, D, w.q_norm.data(), c.rms_eps, q,
                        D, opt.threads);
  rms_norm_zero_centred(k, D, static_cast<int64_t>(n) * Hkv, D, w.k_norm.data(), c.rms_eps, k, D,
                        opt.threads);
  float* o = ws.layer(4, static_cast<size_t>(n) * Hq * D);
  float* scratch = ws.layer(5, LayerKv::attend_scratch_floats(1, Hq, D));
  const AttendRun run = attend_run(opt);
  for (int s = 0; s < n; ++s) {  // RoPE at its own position, its own cache
    const int64_t pos = states[s]->position;
    float* qs = q + static_cast<int64_t>(s) * Hq * D;
    float* ks = k + static_cast<int64_t>(s) * Hkv * D;
    const float* vs = v + static_cast<int64_t>(s) * Hkv * D;
    apply_rope(qs, 1, Hq, D, c.rotary_dims(), c.rope_theta, pos);
    apply_rope(ks, 1, Hkv, D, c.rotary_dims(), c.rope_theta, pos);
    LayerKv* kv = states[s]->kv[layer].get();
    HANPU_RETURN_IF_ERROR(
        kv->append({ks, DType::kF32, {1, Hkv, D}}, {vs, DType::kF32, {1, Hkv, D}}));
    const auto t0 = std::chrono::steady_clock::now();
    const Status st = kv->attend(qs, 1, Hq, o + static_cast<int64_t>(s) * Hq * D, run, scratch);
    *kernel_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok()) return Status::Error(fmt::format("attention layer: {}", st.message()));
  }
  attn_output_gate(o, qg, n, Hq, D, opt.threads);
  cpu::linear(o, Hq * D, n, w.o, out, hidden, opt.threads, opt.projection);
  return Status::Ok();
}

}  // namespace hanpu::model
