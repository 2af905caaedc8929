// Gated DeltaNet layer (transformers' Qwen3_5GatedDeltaNet.forward) on hanpu's kernels.
#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "cpu/nn/conv1d.h"
#include "cpu/nn/linear.h"
#include "hanpu/la.h"
#include "model/layer_ops.h"
#include "model/layers.h"

namespace hanpu::model {

Status la_call(LaMech mech, const ModelConfig& c, const float* q, const float* k, const float* v,
               const float* g, const float* beta, int64_t T, AlignedFloats* recurrent,
               const ForwardOptions& opt, float* o, double* kernel_ms) {
  const int H = c.la_key_heads, HV = c.la_value_heads, K = c.la_key_dim, V = c.la_value_dim;
  LaArgs args;
  args.mech = mech;
  args.q = {q, DType::kF32, {T, H, K}};
  args.k = {k, DType::kF32, {T, H, K}};
  args.v = {v, DType::kF32, {T, HV, V}};
  args.g = mech == LaMech::kGdn ? TensorView{g, DType::kF32, {T, HV}}
                                : TensorView{g, DType::kF32, {T, HV, K}};
  args.beta = {beta, DType::kF32, {T, HV}};
  args.initial_state = {recurrent->data(), DType::kF32, {1, HV, K, V}};
  args.o = {o, DType::kF32, {T, HV, V}};
  args.final_state = {recurrent->data(), DType::kF32, {1, HV, K, V}};  // updated in place
  args.qk_l2norm = true;  // use_qk_l2norm_in_kernel=True
  LaOptions lo;
  lo.strategy =
      T == 1 ? "recurrent" : opt.la_strategy;  // one token: the recurrent step is the decode kernel
  lo.threads = opt.threads;
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = la_prefill(args, lo);
  *kernel_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) return Status::Error(fmt::format("{} layer: {}", la_mech_name(mech), st.message()));
  return Status::Ok();
}

Status gdn_layer(const ModelConfig& c, const GdnWeights& w, const float* x, int64_t T,
                 std::vector<float>* conv, AlignedFloats* recurrent, const ForwardOptions& opt,
                 int64_t out_rows, float* out, double* kernel_ms, Workspace& ws) {
  const int H = c.la_key_heads, HV = c.la_value_heads, K = c.la_key_dim, V = c.la_value_dim;
  const int C = c.la_conv_channels(), hidden = c.hidden;
  // mixed [T, C] = q heads | k heads | v heads; z [T, HV V]; b, a [T, HV].
  float* mixed = ws.layer(0, static_cast<size_t>(T) * C);
  float* b = ws.layer(2, static_cast<size_t>(T) * HV);
  float* a = ws.layer(3, static_cast<size_t>(T) * HV);
  // z is read only by the output norm. A prefill makes it after the LA kernel, for the output
  // rows alone, in q's slot (free by then), so no [T, HV V] buffer lives beside q, k and v; a
  // decode step keeps it in the one call with qkv, b and a (x quantized once, one wait).
  const bool z_after = T > 1;
  float* z = z_after ? nullptr : ws.layer(1, static_cast<size_t>(T) * HV * V);
  std::vector<cpu::LinearOut> in_proj = {{&w.qkv, mixed, C}, {&w.b, b, HV}, {&w.a, a, HV}};
  if (!z_after) in_proj.push_back({&w.z, z, HV * V});
  cpu::linear_many(x, hidden, T, in_proj, opt.threads, opt.projection);
  // The LA kernel takes contiguous q, k [T, H, K] and v [T, HV, V]: the convolution writes
  // its output channels straight into them.
  float* q = ws.layer(4, static_cast<size_t>(T) * H * K);
  float* k = ws.layer(5, static_cast<size_t>(T) * H * K);
  float* v = ws.layer(6, static_cast<size_t>(T) * HV * V);
  cpu::causal_conv1d_silu(
      mixed, T, C, w.conv.data(), c.conv_kernel, conv,
      {{0, H * K, q, H * K}, {H * K, H * K, k, H * K}, {2 * H * K, HV * V, v, HV * V}},
      opt.threads);
  float* beta = ws.layer(7, static_cast<size_t>(T) * HV);
  float* g = ws.layer(8, static_cast<size_t>(T) * HV);
  gdn_gates(b, a, T, HV, w.neg_A.data(), w.dt_bias.data(), beta, g);
  float* o = ws.layer(0, static_cast<size_t>(T) * HV * V);  // over mixed: read by now
  HANPU_RETURN_IF_ERROR(
      la_call(LaMech::kGdn, c, q, k, v, g, beta, T, recurrent, opt, o, kernel_ms));
  // The output path of the last out_rows rows (layers.h).
  const int64_t r0 = T - out_rows;
  float* o_out = o + r0 * HV * V;
  const float* z_out = z_after ? nullptr : z + r0 * HV * V;
  if (z_after) {
    float* zr = ws.layer(4, static_cast<size_t>(out_rows) * HV * V);  // over q: read by now
    cpu::linear(x + r0 * hidden, hidden, out_rows, w.z, zr, HV * V, opt.threads, opt.projection);
    z_out = zr;
  }
  gated_rms_norm(o_out, z_out, out_rows * HV, V, w.norm.data(), c.rms_eps, opt.threads);
  cpu::linear(o_out, HV * V, out_rows, w.out, out, hidden, opt.threads, opt.projection);
  return Status::Ok();
}

}  // namespace hanpu::model
