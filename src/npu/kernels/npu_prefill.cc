// npu_hybrid_prefill (include/hanpu/npu.h): validates the shape, runs one layer of each kind
// on the target (hybrid_layer) and sums the prefill by layer counts and operator groups.
#include <fmt/format.h>

#include "hanpu/npu.h"
#include "npu/kernels/prefill_ascend.h"
#include "npu/machine/npu_machine.h"

namespace hanpu {

namespace {

// Figure 3's groups, by the operator's prefix.
std::string group_of(const std::string& op) {
  if (op.rfind("la.", 0) == 0) return "linear attention";
  if (op.rfind("attn.", 0) == 0) return "full attention";
  if (op.rfind("mlp.", 0) == 0) return "mlp";
  return "norm";
}

}  // namespace

Status npu_hybrid_prefill(const NpuHybridShape& s, int64_t T, const NpuPrefillOptions& o,
                          NpuPrefillStats* stats) {
  const auto bad = [](const std::string& what) { return Status::Error("npu prefill: " + what); };
  if (T < 1 || T > (int64_t{1} << 20)) return bad(fmt::format("T {} must be in [1, 2^20]", T));
  if (s.hidden < 16 || s.hidden % 16 || s.ffn < 16 || s.ffn % 16 || s.hidden > 16384 ||
      s.ffn > 65536)
    return bad(fmt::format("hidden {} and ffn {} must be multiples of 16 (up to 16384 and 65536)",
                           s.hidden, s.ffn));
  if (s.la_layers < 0 || s.attn_layers < 0 || s.la_layers + s.attn_layers < 1)
    return bad("the layer counts must be >= 0, at least one layer in all");
  if (s.la_qk_heads < 1 || s.la_v_heads < 1 || s.la_v_heads % s.la_qk_heads || s.la_key_dim < 16 ||
      s.la_key_dim > 128 || s.la_key_dim % 16 || s.la_value_dim < 16 || s.la_value_dim > 128 ||
      s.la_value_dim % 16 || s.conv_kernel < 1 || s.conv_kernel > 8)
    return bad(fmt::format(
        "LA heads {} (q/k) and {} (v), dims {} and {}, conv kernel {}: value heads a multiple of "
        "the q/k heads, dims multiples of 16 up to 128, the kernel 1-8",
        s.la_qk_heads, s.la_v_heads, s.la_key_dim, s.la_value_dim, s.conv_kernel));
  if (s.attn_heads < 1 || s.kv_heads < 1 || s.attn_heads % s.kv_heads || s.head_dim < 16 ||
      s.head_dim % 16 || s.head_dim > 512 || !(s.rotary_fraction >= 0 && s.rotary_fraction <= 1) ||
      !(s.rope_theta > 0))
    return bad(fmt::format(
        "attention heads {} over {} kv heads of {}: the heads a multiple of the kv heads, the dim "
        "a multiple of 16 up to 512, rotary fraction in [0, 1], theta > 0",
        s.attn_heads, s.kv_heads, s.head_dim));
  HANPU_RETURN_IF_ERROR(npu::check_hybrid_size(s, T, 0));
  npu::NpuMachine m;
  HANPU_RETURN_IF_ERROR(npu::load_npu_machine(o.target, &m));
  NpuPrefillStats r;
  r.target = m.name;
  r.la_variant = o.la_variant;
  for (const bool attention : {false, true}) {
    const int count = attention ? s.attn_layers : s.la_layers;
    if (count == 0) continue;
    npu::LayerRun run;
    HANPU_RETURN_IF_ERROR(npu::hybrid_layer(m, s, T, 0, attention, o.la_variant, o.seed, &run));
    (attention ? r.attn_layer_ms : r.la_layer_ms) = run.ms;
    (attention ? r.attn_layer_energy_mj : r.la_layer_energy_mj) = run.energy_mj;
    r.prefill_ms += count * run.ms;
    r.energy_mj += count * run.energy_mj;
    for (const auto& [op, ms] : run.ops) {
      r.ops.emplace_back(op, ms);
      const std::string g = group_of(op);
      r.group_ms[g] += count * ms;
      if (g != "norm") (attention ? r.attn_mixer_ms : r.la_mixer_ms) += g == "mlp" ? 0 : ms;
      if (op == "la.core") r.la_core_ms = ms;
      if (op == "attn.core") r.attn_core_ms = ms;
    }
  }
  if (stats != nullptr) *stats = std::move(r);
  return Status::Ok();
}

}  // namespace hanpu
