// MLA layer (see mla_layer.h).
#include "model/mla_layer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "cpu/nn/linear.h"
#include "model/layer_ops.h"
#include "model/layers.h"
#include "parallel/parallel_rows.h"

namespace hanpu::model {

int mla_kernel_head_dim(const MlaShape& m) {
  const int d = std::max(m.qk_dim(), m.v_dim);
  return (d + 15) / 16 * 16;
}

Status mla_layer(const ModelConfig& c, const MlaWeights& w, const float* x, int64_t T, int64_t pos0,
                 LayerKv* kv, const ForwardOptions& opt, int64_t out_rows, float* out,
                 double* kernel_ms, Workspace& ws) {
  const MlaShape& m = c.mla;
  const int H = c.attn_heads, N = m.qk_nope_dim, Rr = m.qk_rope_dim, Dq = m.qk_dim();
  const int Dv = m.v_dim, C = m.kv_lora_rank, L = C + Rr, Dp = mla_kernel_head_dim(m);
  const int hidden = c.hidden;
  // Keys and values of all T rows go to the cache; queries only for the R = out_rows rows
  // whose output is wanted (layers.h), the last ones.
  const int64_t R = out_rows, r0 = T - R;
  const float* xr = x + r0 * hidden;
  // q [R, H, Dq].
  float* q = ws.layer(0, static_cast<size_t>(R) * H * Dq);
  if (w.q_b.out == 0) {
    cpu::linear(xr, hidden, R, w.q, q, H * Dq, opt.threads, opt.projection);
  } else {
    const int qr = w.q.out;
    float* qa = ws.layer(1, static_cast<size_t>(R) * qr);
    cpu::linear(xr, hidden, R, w.q, qa, qr, opt.threads, opt.projection);
    rms_norm_zero_centred(qa, qr, R, qr, w.q_a_norm.data(), c.rms_eps, qa, qr, opt.threads);
    cpu::linear(qa, qr, R, w.q_b, q, H * Dq, opt.threads, opt.projection);
  }
  // latent [T, C + Rr]: the normed latent, then the shared rope key.
  float* latent = ws.layer(2, static_cast<size_t>(T) * L);
  cpu::linear(x, hidden, T, w.kv_a, latent, L, opt.threads, opt.projection);
  rms_norm_zero_centred(latent, L, T, C, w.kv_a_norm.data(), c.rms_eps, latent, L, opt.threads);
  if (m.rope) {
    apply_rope_interleaved(q + N, R, H, Dq, Rr, c.rope_theta, pos0 + r0);
    apply_rope_interleaved(latent + C, T, 1, L, Rr, c.rope_theta, pos0);
  }
  // kvb [T, H, N + Dv]: per head the key's nope dims, then the value.
  float* kvb = ws.layer(3, static_cast<size_t>(T) * H * (N + Dv));
  cpu::linear(latent, L, T, w.kv_b, kvb, H * (N + Dv), opt.threads, opt.projection);
  // The kernel's rows [*, H, Dp]: keys [nope | rope | 0], values [v | 0], queries [q | 0].
  float* k = ws.layer(4, static_cast<size_t>(T) * H * Dp);
  float* v = ws.layer(5, static_cast<size_t>(T) * H * Dp);
  float* qp = ws.layer(6, static_cast<size_t>(R) * H * Dp);
  parallel_rows(opt.threads, T, int64_t{2} * H * Dp, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      for (int h = 0; h < H; ++h) {
        const float* src = kvb + (t * H + h) * (N + Dv);
        float* kr = k + (t * H + h) * Dp;
        float* vr = v + (t * H + h) * Dp;
        std::copy_n(src, N, kr);
        std::copy_n(latent + t * L + C, Rr, kr + N);
        std::fill(kr + Dq, kr + Dp, 0.0f);
        std::copy_n(src + N, Dv, vr);
        std::fill(vr + Dv, vr + Dp, 0.0f);
      }
    }
  });
  for (int64_t r = 0; r < R * H; ++r) {
    std::copy_n(q + r * Dq, Dq, qp + r * Dp);
    std::fill(qp + r * Dp + Dq, qp + (r + 1) * Dp, 0.0f);
  }
  HANPU_RETURN_IF_ERROR(kv->append({k, DType::kF32, {T, H, Dp}}, {v, DType::kF32, {T, H, Dp}}));
  float* o = ws.layer(7, static_cast<size_t>(R) * H * Dp);
  float* scratch = ws.layer(8, LayerKv::attend_scratch_floats(R, H, Dp));
  AttendRun run = attend_run(opt);
  run.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dq)));
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = kv->attend(qp, R, H, o, run, scratch);
  *kernel_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) return Status::Error(fmt::format("MLA layer: {}", st.message()));
  // ov [R, H, Dv]: the value columns, times Ling's per-head gate.
  float* ov = ws.layer(9, static_cast<size_t>(R) * H * Dv);
  float* gate = nullptr;
  if (w.gate.out > 0) {
    gate = ws.layer(1, static_cast<size_t>(R) * H);
    cpu::linear(xr, hidden, R, w.gate, gate, H, opt.threads, opt.projection);
  }
  for (int64_t r = 0; r < R * H; ++r) {
    const float s = gate != nullptr ? sigmoid(gate[r]) : 1.0f;
    for (int d = 0; d < Dv; ++d) ov[r * Dv + d] = o[r * Dp + d] * s;
  }
  cpu::linear(ov, H * Dv, R, w.o, out, hidden, opt.threads, opt.projection);
  return Status::Ok();
}

}  // namespace hanpu::model
