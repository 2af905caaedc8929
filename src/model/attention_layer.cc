// Gated full-attention layer (transformers' Qwen3_5Attention.forward) on hanpu's kernels.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "cpu/nn/linear.h"
#include "hanpu/attn.h"
#include "model/layer_ops.h"
#include "model/layers.h"
#include "parallel/parallel_rows.h"

namespace hanpu::model {

void attn_output_gate(float* o, const float* qg, int64_t R, int Hq, int D, int threads) {
  parallel_rows(threads, R, static_cast<int64_t>(Hq) * D * 20, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      for (int h = 0; h < Hq; ++h) {
        float* orow = o + (t * Hq + h) * D;
        const float* gate = qg + (t * Hq + h) * 2 * D + D;
        for (int d = 0; d < D; ++d) orow[d] *= sigmoid(gate[d]);
      }
    }
  });
}

AttendRun attend_run(const ForwardOptions& opt) {
  AttendRun r;
  r.threads = opt.threads;
  r.placement = opt.attn_placement;
  r.products = opt.attn_products;
  return r;
}

Status attention_layer(const ModelConfig& c, const AttnWeights& w, const float* x, int64_t T,
                       int64_t pos0, LayerKv* kv, const ForwardOptions& opt, int64_t out_rows,
                       float* out, double* kernel_ms, Workspace& ws) {
  const int Hq = c.attn_heads, Hkv = c.kv_heads, D = c.head_dim, hidden = c.hidden;
  // Keys and values of all T rows go to the cache; queries only for the R = out_rows rows
  // whose output is wanted (layers.h), the last ones, at positions pos0 + r0 ...
  const int64_t R = out_rows, r0 = T - R;
  // qg [R, Hq, 2D]: per head D query dims, then D output-gate dims.
  float* qg = ws.layer(0, static_cast<size_t>(R) * Hq * 2 * D);
  // q in slot 6 (a GDN layer's v), not 1: slot 1 is a decode step's z alone, so a prefill
  // never holds a [T, 2048]-sized buffer there (the slots' sizes add up to a prefill's peak).
  float* q = ws.layer(6, static_cast<size_t>(R) * Hq * D);
  float* k = ws.layer(2, static_cast<size_t>(T) * Hkv * D);
  float* v = ws.layer(3, static_cast<size_t>(T) * Hkv * D);
  if (R == T) {  // one call for the three: x is packed once
    cpu::linear_many(x, hidden, T, {{&w.q, qg, Hq * 2 * D}, {&w.k, k, Hkv * D}, {&w.v, v, Hkv * D}},
                     opt.threads, opt.projection);
  } else {
    cpu::linear_many(x, hidden, T, {{&w.k, k, Hkv * D}, {&w.v, v, Hkv * D}}, opt.threads,
                     opt.projection);
    cpu::linear(x + r0 * hidden, hidden, R, w.q, qg, Hq * 2 * D, opt.threads, opt.projection);
  }
  rms_norm_zero_centred(qg, 2 * D, R * Hq, D, w.q_norm.data(), c.rms_eps, q, D, opt.threads);
  rms_norm_zero_centred(k, D, T * Hkv, D, w.k_norm.data(), c.rms_eps, k, D, opt.threads);
  apply_rope(q, R, Hq, D, c.rotary_dims(), c.rope_theta, pos0 + r0);
  apply_rope(k, T, Hkv, D, c.rotary_dims(), c.rope_theta, pos0);
  HANPU_RETURN_IF_ERROR(kv->append({k, DType::kF32, {T, Hkv, D}}, {v, DType::kF32, {T, Hkv, D}}));
  float* o = ws.layer(4, static_cast<size_t>(R) * Hq * D);
  float* scratch = ws.layer(5, LayerKv::attend_scratch_floats(R, Hq, D));
  const auto t0 = std::chrono::steady_clock::now();
  // One call over the own rows (one query row: the decode kernel), and one per shared segment.
  const Status st = kv->attend(q, R, Hq, o, attend_run(opt), scratch);
  *kernel_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) return Status::Error(fmt::format("attention layer: {}", st.message()));
  attn_output_gate(o, qg, R, Hq, D, opt.threads);
  cpu::linear(o, Hq * D, R, w.o, out, hidden, opt.threads, opt.projection);
  return Status::Ok();
}

}  // namespace hanpu::model
