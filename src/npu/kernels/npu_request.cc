// npu_hybrid_request (include/hanpu/npu.h): the prefill's layers per LA variant, the attention
// layers, the LM head and every decode step once, composed per variant.
#include <fmt/format.h>

#include "hanpu/npu.h"
#include "npu/kernels/prefill_ascend.h"
#include "npu/machine/npu_machine.h"

namespace hanpu {

Status npu_hybrid_request(const NpuHybridShape& s, int64_t input, int64_t output,
                          const std::vector<std::string>& la_variants, const NpuPrefillOptions& o,
                          std::vector<NpuRequestStats>* out) {
  if (output < 1 || output > 256)
    return Status::Error(fmt::format("npu request: {} output tokens: 1 to 256", output));
  if (la_variants.empty()) return Status::Error("npu request: no LA variant");
  HANPU_RETURN_IF_ERROR(npu::check_hybrid_size(s, input, 0));
  HANPU_RETURN_IF_ERROR(npu::check_hybrid_size(s, 1, input + output));
  if (static_cast<double>(s.hidden) * static_cast<double>(s.vocab) * 4 > npu::kMaxLayerBytes) {
    return Status::Error(
        fmt::format("npu request: the LM head [{} x {}] would hold more than "
                    "{:.0f} GiB on the model",
                    s.hidden, s.vocab, npu::kMaxLayerBytes / (1 << 30)));
  }
  npu::NpuMachine m;
  HANPU_RETURN_IF_ERROR(npu::load_npu_machine(o.target, &m));
  // The shape's checks and the attention layers' prefill: npu_hybrid_prefill with a layer
  // count of LA layers of zero would skip them, so the first variant's prefill runs whole.
  std::vector<NpuPrefillStats> prefills;
  for (const std::string& v : la_variants) {
    NpuHybridShape only_la = s;
    if (!prefills.empty()) only_la.attn_layers = 0;  // the attention layers run once
    NpuPrefillStats p;
    if (only_la.la_layers + only_la.attn_layers > 0) {
      NpuPrefillOptions po = o;
      po.la_variant = v;
      HANPU_RETURN_IF_ERROR(npu_hybrid_prefill(only_la, input, po, &p));
    }
    if (!prefills.empty()) {  // the shared attention layers, from the first run
      const NpuPrefillStats& first = prefills.front();
      p.attn_layer_ms = first.attn_layer_ms;
      p.prefill_ms += s.attn_layers * first.attn_layer_ms;
      p.energy_mj += s.attn_layers * first.attn_layer_energy_mj;
    }
    prefills.push_back(std::move(p));
  }
  npu::LayerRun head, la_step;
  HANPU_RETURN_IF_ERROR(npu::lm_head(m, s, o.seed, &head));
  double decode_ms = 0, decode_mj = 0, last_step = 0;
  if (output > 1 && s.la_layers > 0) {
    HANPU_RETURN_IF_ERROR(
        npu::hybrid_layer(m, s, 1, input, false, la_variants[0], o.seed, &la_step));
  }
  for (int64_t n = 1; n < output; ++n) {
    const int64_t past = input + n - 1;  // tokens in the cache before this step's
    npu::LayerRun attn;
    if (s.attn_layers > 0)
      HANPU_RETURN_IF_ERROR(npu::hybrid_layer(m, s, 1, past, true, la_variants[0], o.seed, &attn));
    last_step = s.la_layers * la_step.ms + s.attn_layers * attn.ms + head.ms;
    decode_ms += last_step;
    decode_mj += s.la_layers * la_step.energy_mj + s.attn_layers * attn.energy_mj + head.energy_mj;
  }
  out->clear();
  for (size_t i = 0; i < la_variants.size(); ++i) {
    NpuRequestStats r;
    r.target = m.name;
    r.la_variant = la_variants[i];
    r.input_tokens = input;
    r.output_tokens = output;
    r.prefill_ms = prefills[i].prefill_ms;
    r.ttft_ms = r.prefill_ms + head.ms;
    r.decode_ms = decode_ms;
    r.latency_ms = r.ttft_ms + decode_ms;
    r.energy_mj = prefills[i].energy_mj + head.energy_mj + decode_mj;
    r.decode_step_ms = last_step;
    out->push_back(std::move(r));
  }
  return Status::Ok();
}

}  // namespace hanpu
