// npu_attn_prefill (include/hanpu/npu.h): validates the call, rounds the inputs to bf16 as
// the array holds them, runs the chosen dataflow on the spatial model, writes o.
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hanpu/npu.h"
#include "npu/kernels/attn_steel.h"
#include "npu/machine/spatial_machine.h"
#include "npu/sim/spatial_sim.h"

namespace hanpu {

std::vector<std::string> npu_attn_variants() { return {"steel", "dato", "layer"}; }
std::vector<std::string> npu_spatial_targets() { return npu::spatial_machine_names(); }

Status npu_attn_prefill(const AttnArgs& a, const NpuAttnOptions& opt, NpuAttnStats* stats) {
  const auto shape_of = [](const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); };
  if (a.q.shape.size() != 3 || a.q.shape != a.k.shape || a.q.shape != a.v.shape ||
      a.o.shape != a.q.shape) {
    return Status::Error(fmt::format(
        "npu attn: q {}, k {}, v {}, o {} must all be [T, H, D] of one shape", shape_of(a.q.shape),
        shape_of(a.k.shape), shape_of(a.v.shape), shape_of(a.o.shape)));
  }
  const int64_t T = a.q.shape[0];
  const int H = static_cast<int>(a.q.shape[1]), D = static_cast<int>(a.q.shape[2]);
  if (T < 1 || H < 1)
    return Status::Error(fmt::format("npu attn: T {} and H {} must be >= 1", T, H));
  if (a.mask == AttnMask::kSliding || (a.q_offset && *a.q_offset != 0)) {
    return Status::Error(
        "npu attn: masks none and causal without a query offset only (the STEEL dataflow)");
  }
  if (a.scale && !std::isfinite(*a.scale)) return Status::Error("npu attn: scale must be finite");
  if (a.kv_row_stride != 0 || a.kv_head_stride != 0) {
    return Status::Error("npu attn: k and v must be contiguous [T, H, D] (no kv strides)");
  }
  if (opt.variant != "steel" && opt.variant != "dato" && opt.variant != "layer") {
    return Status::Error(fmt::format("npu attn: unknown variant '{}' (one of: {})", opt.variant,
                                     fmt::join(npu_attn_variants(), ", ")));
  }
  // The simulator records every event of the program before replaying it (~135 bytes an
  // event), so a run too long for memory is refused up front rather than killed midway.
  // Events per head and (64-row block)^2, measured: steel ~23, dato ~85, layer ~58.
  {
    const double blocks = std::ceil(static_cast<double>(T) / 64);
    const double per = opt.variant == "steel" ? 24 : opt.variant == "dato" ? 86 : 59;
    const double events = per * H * blocks * blocks;
    constexpr double kMaxEvents = 64e6;
    if (events > kMaxEvents) {
      return Status::Error(
          fmt::format("npu attn: {} at T = {} with {} heads would record ~{:.0f} M events on the "
                      "model (~{:.1f} GiB); the limit is "
                      "{:.0f} M: use fewer heads (each head runs the same program, one after "
                      "another) or a shorter T",
                      opt.variant, T, H, events / 1e6, events * 135 / (1 << 30), kMaxEvents / 1e6));
    }
  }
  npu::SpatialMachine m;
  HANPU_RETURN_IF_ERROR(npu::load_spatial_machine(opt.target, &m));
  npu::AttnShape s;
  s.T = T;
  s.H = H;
  s.D = D;
  s.causal = a.mask == AttnMask::kCausal;
  s.scale = a.scale.value_or(1.0f / std::sqrt(static_cast<float>(D)));
  const size_t n = static_cast<size_t>(T) * H * D;
  std::vector<float> q(n), k(n), v(n), o(n);
  const auto bf16 = [](float x) { return bf16_bits_to_f32(f32_to_bf16_bits(x)); };
  for (size_t i = 0; i < n; ++i) {
    q[i] = bf16(load_as_f32(a.q.data, a.q.dtype, i));
    k[i] = bf16(load_as_f32(a.k.data, a.k.dtype, i));
    v[i] = bf16(load_as_f32(a.v.data, a.v.dtype, i));
  }
  npu::SpatialSim sim(m);
  if (opt.variant == "steel") {
    HANPU_RETURN_IF_ERROR(
        npu::steel_attention(sim, s, opt.placement, q.data(), k.data(), v.data(), o.data()));
  } else if (opt.variant == "dato") {  // placement does not apply: fixed dealing, nothing skipped
    HANPU_RETURN_IF_ERROR(npu::dato_attention(sim, s, q.data(), k.data(), v.data(), o.data()));
  } else {  // layer: placement does not apply (every block is computed)
    HANPU_RETURN_IF_ERROR(npu::layer_attention(sim, s, q.data(), k.data(), v.data(), o.data()));
  }
  npu::SpatialStats st;
  HANPU_RETURN_IF_ERROR(sim.finish(&st));
  // Outputs only after the whole run succeeded: an error leaves the caller's tensor untouched.
  for (size_t i = 0; i < n; ++i) store_from_f32(a.o.data, a.o.dtype, i, o[i]);
  if (stats != nullptr) {
    NpuAttnStats r;
    r.target = m.name;
    r.variant = opt.variant;
    r.placement = opt.variant == "steel" ? opt.placement : "none";
    r.latency_ms = st.latency_ms;
    r.offchip_bytes = st.offchip_bytes;
    r.stall_ms = st.stall_ms;
    r.compute_util = st.compute_util;
    r.design_switches = st.design_switches;
    for (double u : st.tile_util) r.busy_tiles += u > 0 ? 1 : 0;
    r.tile_util = st.tile_util;
    r.macs = st.macs;
    r.energy_mj = st.energy_mj;
    r.events = st.events;
    *stats = std::move(r);
  }
  return Status::Ok();
}

}  // namespace hanpu
