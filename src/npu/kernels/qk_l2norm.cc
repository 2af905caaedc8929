// q and k L2-normalised in a pass of their own, as the baselines run it (see gdn_kernels.h).
#include <set>

#include "npu/kernels/gdn_kernels.h"

namespace hanpu::npu {

std::vector<int> all_value_heads(const GdnGm& gm) {
  std::vector<int> h(static_cast<size_t>(gm.H));
  for (int i = 0; i < gm.H; ++i) h[static_cast<size_t>(i)] = i;
  return h;
}

Status l2norm_qk(NpuSim& sim, const GdnGm& gm, const std::vector<int>& value_heads,
                 int framework_ops, bool own_launch, GdnGm* out) {
  std::set<int> qk_heads;
  for (int h : value_heads) qk_heads.insert(h / gm.group);
  *out = gm;
  out->qk_l2norm = false;
  const int P = sim.machine().cores, K = gm.K;
  const int64_t NT = (gm.T + gm.chunk - 1) / gm.chunk;
  for (const auto& [src, dst] : {std::pair{gm.q, &out->q}, std::pair{gm.k, &out->k}}) {
    *dst = sim.gm(src->name + "_l2norm", src->rows, src->cols, true, true);
    if (own_launch) sim.launch(framework_ops);
    int64_t unit = 0;
    for (int64_t n = 0; n < NT; ++n) {
      const int64_t t0 = n * gm.chunk;
      const int c = static_cast<int>(std::min<int64_t>(gm.chunk, gm.T - t0));
      for (int qh : qk_heads) {
        CoreOps op(sim, static_cast<int>(unit++ % P));
        const GmBlock block{src, t0, c, static_cast<int64_t>(qh) * K, K};
        Tile* t;
        HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kND, src->name, &t));
        HANPU_RETURN_IF_ERROR(sim.load(t, block));
        HANPU_RETURN_IF_ERROR(op.l2norm_rows(t));
        HANPU_RETURN_IF_ERROR(sim.store({*dst, t0, c, block.col0, K}, t));
        op.free({t});
      }
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
