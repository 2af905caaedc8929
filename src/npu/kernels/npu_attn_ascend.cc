// npu_attn_prefill_ascend (include/hanpu/npu.h): validates the call, lays q, k, v out in the
// simulator's GM as fp16 [T, H * D] rows, runs the fused attention kernel, writes o.
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hanpu/npu.h"
#include "npu/kernels/ascend_stats.h"
#include "npu/kernels/attn_ascend.h"
#include "npu/machine/npu_machine.h"
#include "npu/sim/npu_sim.h"

namespace hanpu {

Status npu_attn_prefill_ascend(const AttnArgs& a, const NpuAscendAttnOptions& opt,
                               NpuLaStats* stats) {
  const auto shape_of = [](const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); };
  if (a.q.shape.size() != 3 || a.k.shape.size() != 3 || a.k.shape != a.v.shape ||
      a.o.shape != a.q.shape || a.k.shape[0] != a.q.shape[0] || a.k.shape[2] != a.q.shape[2]) {
    return Status::Error(fmt::format(
        "npu attn: q {} and o {} must be [T, Hq, D], k {} and v {} [T, Hkv, D] of the same T "
        "and D",
        shape_of(a.q.shape), shape_of(a.o.shape), shape_of(a.k.shape), shape_of(a.v.shape)));
  }
  if (a.mask == AttnMask::kSliding || (a.q_offset && *a.q_offset != 0) || a.kv_row_stride != 0 ||
      a.kv_head_stride != 0) {
    return Status::Error(
        "npu attn: causal or unmasked, with no query offset and contiguous k and v, only");
  }
  if (a.scale && !std::isfinite(*a.scale)) return Status::Error("npu attn: scale must be finite");
  npu::NpuMachine m;
  HANPU_RETURN_IF_ERROR(npu::load_npu_machine(opt.target, &m));
  npu::NpuSim sim(m);
  npu::AscendAttnGm g;
  g.T = a.q.shape[0];
  g.Hq = static_cast<int>(a.q.shape[1]);
  g.Hkv = static_cast<int>(a.k.shape[1]);
  g.D = static_cast<int>(a.q.shape[2]);
  g.causal = a.mask == AttnMask::kCausal;
  g.scale = a.scale.value_or(1.0f / std::sqrt(static_cast<float>(g.D)));
  // The kernel checks the shape before anything is allocated for it.
  if (g.T < 1 || g.Hq < 1 || g.Hkv < 1 || g.D < 16 || g.D % 16 != 0 || g.D > 512 ||
      g.Hq % g.Hkv != 0) {
    return Status::Error(fmt::format(
        "npu attn: T {}, {} query heads over {} kv heads, D {}: T >= 1, the query heads a "
        "multiple of the kv heads, D a multiple of 16 up to 512",
        g.T, g.Hq, g.Hkv, g.D));
  }
  {  // the run's size, before anything is allocated for it
    npu::AscendAttnGm probe = g;
    if (const double events = npu::ascend_attention_events(probe, {.skip_masked = opt.skip_masked});
        events > npu::kMaxAttentionEvents) {
      return Status::Error(fmt::format(
          "npu attn: T {} with {} kv heads would record ~{:.0f} M events on the model (~{:.1f} "
          "GiB); the limit is {:.0f} M: a shorter T or fewer heads",
          g.T, g.Hkv, events / 1e6, events * 135 / (1 << 30), npu::kMaxAttentionEvents / 1e6));
    }
  }
  const auto fill = [&](const char* name, const TensorView& t) {
    npu::GmTensor* x = sim.gm(name, g.T, t.shape[1] * g.D, true);
    for (size_t i = 0; i < x->v.size(); ++i) x->v[i] = load_as_f32(t.data, t.dtype, i);
    return x;
  };
  g.q = fill("q", a.q);
  g.k = fill("k", a.k);
  g.v = fill("v", a.v);
  g.o = sim.gm("o", g.T, static_cast<int64_t>(g.Hq) * g.D, true);
  sim.launch();
  HANPU_RETURN_IF_ERROR(npu::ascend_flash_attention(sim, g, {.skip_masked = opt.skip_masked}));
  const npu::SimStats s = sim.finish();
  // Outputs only after the whole run succeeded: an error leaves the caller's tensor untouched.
  for (size_t i = 0; i < g.o->v.size(); ++i) store_from_f32(a.o.data, a.o.dtype, i, g.o->v[i]);
  if (stats != nullptr) *stats = npu::ascend_stats(m, s, "flash");
  return Status::Ok();
}

}  // namespace hanpu
