// The GDN kernel variants on the modelled NPU, listed once (see gdn_kernels.h).
#include "npu/kernels/gdn_kernels.h"

namespace hanpu::npu {

std::span<const GdnVariant> gdn_variants() {
  static const GdnVariant kVariants[] = {
      {"vllm-ascend",
       "vLLM-Ascend's native path: the PyTorch reference's eager operators (a 63-step row loop "
       "for the solve), each dispatched by the host, every intermediate through GM",
       &gdn_vllm_ascend},
      {"fla",
       "FLA's chunk-head-chunk flow: three launches, every intermediate through GM (the "
       "recurrence's value block searched)",
       &gdn_fla},
      {"fla-mega", "the same flow in one launch (FLA + MegaKernel), cores meeting through GM flags",
       &gdn_fla_mega},
      {"hanpu-fused", "+ head-level mapping and fusion (FLA's operator order, dense layouts)",
       [](NpuSim& sim, const GdnGm& gm) {
         return gdn_fused(sim, gm, {.reorder = false, .plan_layout = false});
       },
       true},
      {"hanpu-reordered", "+ lifetime-aware reordering (chunk-first, GEMM-first; dense layouts)",
       [](NpuSim& sim, const GdnGm& gm) {
         return gdn_fused(sim, gm, {.reorder = true, .plan_layout = false});
       },
       true},
      {"flashqla",
       "FlashQLA's flow: A to GM, segment-parallel local states, a short combine, fused "
       "outputs (W and U rebuilt on the core)",
       &gdn_flashqla},
      {"hanpu", "HA-NPU: + the planner's layouts (all three techniques)", &gdn_hanpu},
      {"hanpu-colsplit",
       "hanpu with the tail heads split by value columns evenly over all cores, as the paper "
       "places them, whatever the planner picks",
       [](NpuSim& sim, const GdnGm& gm) {
         return gdn_fused(sim, gm, {.tail_columns_evenly = true});
       },
       true},
  };
  return kVariants;
}

}  // namespace hanpu::npu
