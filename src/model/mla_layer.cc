// MLA layer over the compressed cache, both attention forms (see mla_layer.h).
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

namespace {

int round_up16(int d) { return (d + 15) / 16 * 16; }

// Cached rows the decompressed form up-projects at a time: its keys and values are
// [rows, H, D] each, so a long cache never becomes one [L, H, D] copy.
constexpr int64_t kDecompressRows = 1024;

struct MlaDims {
  int H, N, Rr, Dq, Dv, C, L, Lp, Dk16, Dv16;
  MlaDims(const ModelConfig& c)
      : H(c.attn_heads),
        N(c.mla.qk_nope_dim),
        Rr(c.mla.qk_rope_dim),
        Dq(c.mla.qk_dim()),
        Dv(c.mla.v_dim),
        C(c.mla.kv_lora_rank),
        L(C + Rr),
        Lp(mla_cache_dim(c.mla)),
        Dk16(mla_key_dim(c.mla)),
        Dv16(mla_value_dim(c.mla)) {}
};

// Decompressed: o [R, H, Dv16] over the cache's rows, block by block, merged by log-sum-exp;
// q [R, H, Dq] (roped), the last R cached rows being the queries' own.
Status attend_decompressed(const MlaDims& d, const MlaWeights& w, const LayerKv& kv, const float* q,
                           int64_t R, float scale, const ForwardOptions& opt, float* o,
                           Workspace& ws) {
  const int H = d.H, Dk = d.Dk16, Dv = d.Dv16, KV = d.N + d.Dv;
  const int64_t L = kv.length(), own0 = L - R;
  float* qp = ws.layer(4, static_cast<size_t>(R) * H * Dk);
  for (int64_t r = 0; r < R * H; ++r) {
    std::copy_n(q + r * d.Dq, d.Dq, qp + r * Dk);
    std::fill(qp + r * Dk + d.Dq, qp + (r + 1) * Dk, 0.0f);
  }
  const int64_t most = std::max(R, std::min(kDecompressRows, own0));
  float* lat = ws.layer(5, static_cast<size_t>(most) * d.Lp);
  float* kvb = ws.layer(6, static_cast<size_t>(most) * H * KV);
  float* k = ws.layer(3, static_cast<size_t>(most) * H * (Dk + Dv));
  float* v = k + static_cast<size_t>(most) * H * Dk;
  float* lse = ws.layer(8, static_cast<size_t>(H) * R * 2 + static_cast<size_t>(R) * H * Dv);
  float* part_lse = lse + static_cast<size_t>(H) * R;
  float* part_o = part_lse + static_cast<size_t>(H) * R;
  bool first = true;
  const auto block = [&](int64_t b0, int64_t n, bool own) -> Status {
    HANPU_RETURN_IF_ERROR(kv.read_f32(b0, n, lat, nullptr));
    cpu::linear(lat, d.Lp, n, w.kv_b, kvb, H * KV, opt.threads, opt.projection);
    parallel_rows(opt.threads, n, int64_t{H} * (Dk + Dv), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        for (int h = 0; h < H; ++h) {
          const float* src = kvb + (t * H + h) * KV;
          float* kr = k + (t * H + h) * Dk;
          float* vr = v + (t * H + h) * Dv;
          std::copy_n(src, d.N, kr);
          std::copy_n(lat + t * d.Lp + d.C, d.Rr, kr + d.N);
          std::fill(kr + d.Dq, kr + Dk, 0.0f);
          std::copy_n(src + d.N, d.Dv, vr);
          std::fill(vr + d.Dv, vr + Dv, 0.0f);
        }
      }
    });
    AttnArgs a;
    a.q = {qp, DType::kF32, {R, H, Dk}};
    a.k = {k, DType::kF32, {n, H, Dk}};
    a.v = {v, DType::kF32, {n, H, Dv}};
    a.o = {first ? o : part_o, DType::kF32, {R, H, Dv}};
    a.lse = {first ? lse : part_lse, DType::kF32, {H, R}};
    a.mask = own ? AttnMask::kCausal : AttnMask::kNone;  // earlier rows are seen whole
    a.scale = scale;
    HANPU_RETURN_IF_ERROR(run_attention(a, R, attend_run(opt)));
    if (!first) attn_merge_splits(R, H, Dv, o, lse, part_o, part_lse);
    first = false;
    return Status::Ok();
  };
  for (int64_t b0 = 0; b0 < own0; b0 += kDecompressRows)
    HANPU_RETURN_IF_ERROR(block(b0, std::min(kDecompressRows, own0 - b0), false));
  return block(own0, R, true);
}

// y [R, H, ldy] head h = x [R, H, ldx] head h through ws[h] (the absorbed halves): a decode
// row's heads in one job (cpu::linear_each), a prefill's one call a head.
void per_head(const std::vector<Linear>& ws, const float* x, int ldx, int64_t R, int H, float* y,
              int ldy, const ForwardOptions& opt) {
  if (R == 1) {
    std::vector<cpu::LinearRow> rows;
    for (int h = 0; h < H; ++h) rows.push_back({x + h * ldx, &ws[h], y + h * ldy});
    return cpu::linear_each(rows, opt.threads, opt.projection);
  }
  for (int h = 0; h < H; ++h) {
    cpu::linear(x + h * ldx, int64_t{H} * ldx, R, ws[h], y + h * ldy, int64_t{H} * ldy, opt.threads,
                opt.projection);
  }
}

}  // namespace

int mla_cache_dim(const MlaShape& m) { return round_up16(m.kv_lora_rank + m.qk_rope_dim); }

int mla_key_dim(const MlaShape& m) { return round_up16(m.qk_dim()); }

int mla_value_dim(const MlaShape& m) { return round_up16(m.v_dim); }

bool mla_runs_absorbed(const MlaShape& m, int64_t R, int64_t L) {
  const double C = m.kv_lora_rank, N = m.qk_nope_dim, Dv = m.v_dim, Dq = m.qk_dim();
  const double decompressed = L * C * (N + Dv) + static_cast<double>(R) * L * (Dq + Dv);
  const double absorbed = R * C * (N + Dv) + 2.0 * R * L * mla_cache_dim(m);
  return absorbed < decompressed;
}

Status mla_layer(const ModelConfig& c, const MlaWeights& w, const float* x, int64_t T, int64_t pos0,
                 LayerKv* kv, const ForwardOptions& opt, int64_t out_rows, float* out,
                 double* kernel_ms, Workspace& ws) {
  const MlaDims d(c);
  const int H = d.H, hidden = c.hidden;
  // Latent rows of all T rows go to the cache; queries only for the R = out_rows rows whose
  // output is wanted (layers.h), the last ones.
  const int64_t R = out_rows, r0 = T - R;
  const float* xr = x + r0 * hidden;
  // q [R, H, Dq]; rows [T, Lp]: the normed latent, the shared rope key, zeros (the cache's
  // rows); ov [R, H, Dv] each head's attention output, then Ling's gate [R, H].
  float* q = ws.layer(0, static_cast<size_t>(R) * H * d.Dq);
  float* rows = ws.layer(2, static_cast<size_t>(T) * d.Lp);
  float* ov = ws.layer(9, static_cast<size_t>(R) * H * (d.Dv + 1));
  float* gate = ov + static_cast<size_t>(R) * H * d.Dv;
  const bool low_rank_q = w.q_b.out > 0;
  const int qr = w.q.out;
  float* qa = low_rank_q ? ws.layer(1, static_cast<size_t>(R) * qr) : q;
  // Every product of x in one call where the queries are all the rows (a decode step).
  std::vector<cpu::LinearOut> of_x = {{&w.kv_a, rows, d.Lp}};
  if (R == T) of_x.push_back({&w.q, qa, qr});
  if (R == T && w.gate.out > 0) of_x.push_back({&w.gate, gate, H});
  cpu::linear_many(x, hidden, T, of_x, opt.threads, opt.projection);
  if (R < T) {
    cpu::linear(xr, hidden, R, w.q, qa, qr, opt.threads, opt.projection);
    if (w.gate.out > 0) cpu::linear(xr, hidden, R, w.gate, gate, H, opt.threads, opt.projection);
  }
  if (low_rank_q) {
    rms_norm_zero_centred(qa, qr, R, qr, w.q_a_norm.data(), c.rms_eps, qa, qr, opt.threads);
    cpu::linear(qa, qr, R, w.q_b, q, H * d.Dq, opt.threads, opt.projection);
  }
  rms_norm_zero_centred(rows, d.Lp, T, d.C, w.kv_a_norm.data(), c.rms_eps, rows, d.Lp, opt.threads);
  for (int64_t t = 0; t < T; ++t) std::fill(rows + t * d.Lp + d.L, rows + (t + 1) * d.Lp, 0.0f);
  if (c.mla.rope) {
    apply_rope_interleaved(q + d.N, R, H, d.Dq, d.Rr, c.rope_theta, pos0 + r0);
    apply_rope_interleaved(rows + d.C, T, 1, d.Lp, d.Rr, c.rope_theta, pos0);
  }
  const TensorView cached{rows, DType::kF32, {T, 1, d.Lp}};
  HANPU_RETURN_IF_ERROR(kv->append(cached, cached));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.Dq)));
  const bool absorbed =
      opt.mla_form == MlaForm::kAbsorbed ||
      (opt.mla_form == MlaForm::kAuto && mla_runs_absorbed(c.mla, R, kv->length()));
  const auto t0 = std::chrono::steady_clock::now();
  Status st;
  if (absorbed) {
    // qa [R, H, Lp] = [q_nope W_uk | q_rope | 0] per head; o [R, H, Lp] the latent output.
    float* qa = ws.layer(4, static_cast<size_t>(R) * H * d.Lp);
    per_head(w.uk, q, d.Dq, R, H, qa, d.Lp, opt);
    for (int64_t r = 0; r < R * H; ++r) {
      std::copy_n(q + r * d.Dq + d.N, d.Rr, qa + r * d.Lp + d.C);
      std::fill(qa + r * d.Lp + d.L, qa + (r + 1) * d.Lp, 0.0f);
    }
    float* o = ws.layer(7, static_cast<size_t>(R) * H * d.Lp);
    float* scratch = ws.layer(8, LayerKv::attend_scratch_floats(R, H, d.Lp));
    AttendRun run = attend_run(opt);
    run.scale = scale;
    st = kv->attend(qa, R, H, o, run, scratch);
    if (st.ok()) per_head(w.uv, o, d.Lp, R, H, ov, d.Dv, opt);
  } else {
    float* o = ws.layer(7, static_cast<size_t>(R) * H * d.Dv16);
    st = attend_decompressed(d, w, *kv, q, R, scale, opt, o, ws);
    for (int64_t r = 0; st.ok() && r < R * H; ++r) std::copy_n(o + r * d.Dv16, d.Dv, ov + r * d.Dv);
  }
  *kernel_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) return Status::Error(fmt::format("MLA layer: {}", st.message()));
  if (w.gate.out > 0) {  // Ling: o_h *= sigmoid(gate_h(x))
    for (int64_t r = 0; r < R * H; ++r) {
      const float s = sigmoid(gate[r]);
      for (int j = 0; j < d.Dv; ++j) ov[r * d.Dv + j] *= s;
    }
  }
  cpu::linear(ov, H * d.Dv, R, w.o, out, hidden, opt.threads, opt.projection);
  return Status::Ok();
}

}  // namespace hanpu::model
