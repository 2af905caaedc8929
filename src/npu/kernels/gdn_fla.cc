// FLA's chunk-head-chunk GDN flow on the simulated Ascend cores (see gdn_kernels.h): three
// launches, every intermediate through GM, (chunk, head) units dealt round robin to cores.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "npu/kernels/gdn_kernels.h"
#include "npu/kernels/wy_prepare.h"
#include "npu/kernels/wy_walk.h"

namespace hanpu::npu {

namespace {

struct FlaScratch {  // the GM intermediates FLA materialises, for `heads` heads
  WyGm wy;
  GmTensor *h, *vn;
  int64_t heads = 0;
};

int64_t chunks_of(const GdnGm& gm) { return (gm.T + gm.chunk - 1) / gm.chunk; }

// Launch 2, one (head, value block): every chunk's input state h to GM, Vn = U - W h to GM,
// S updated, for the state's value columns [v0, v0 + bv).
Status recurrence(CoreOps& op, const GdnGm& gm, const FlaScratch& x, int h, int v0, int bv) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile* S;
  HANPU_RETURN_IF_ERROR(wy_initial_state(op, gm, h, &S, v0, bv));
  for (int64_t n = 0, t0 = 0; t0 < gm.T; ++n, t0 += gm.chunk) {
    const int c = static_cast<int>(std::min<int64_t>(gm.chunk, gm.T - t0));
    const int64_t slot = x.wy.at(h);
    const GmBlock h_out{x.h, (n * x.heads + slot) * K, K, v0, bv},
        vn_out{x.vn, t0, c, slot * V + v0, bv};
    HANPU_RETURN_IF_ERROR(
        wy_advance(op, gm, x.wy, h, t0, c, S, &h_out, &vn_out, false, nullptr, v0));
  }
  if (gm.state1 != nullptr) {
    HANPU_RETURN_IF_ERROR(sim.store({gm.state1, static_cast<int64_t>(h) * K, K, v0, bv}, S));
  }
  op.free({S});
  return Status::Ok();
}

// Launch 3, one (chunk, head): o = scale exp(gam) Q h + Qm Vn.
Status outputs(CoreOps& op, const GdnGm& gm, const FlaScratch& x, int h, int64_t n, int64_t t0,
               int c) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile *Qc, *Kc, *H1, *Vn1, *gam;
  HANPU_RETURN_IF_ERROR(wy_output_operands(op, gm, h, t0, c, &Qc, &Kc));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, K, V, true, Layout::kNZ, "h", &H1));
  const int64_t slot = x.wy.at(h);
  HANPU_RETURN_IF_ERROR(sim.load(H1, {x.h, (n * x.heads + slot) * K, K, 0, V}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, V, true, Layout::kNZ, "vn", &Vn1));
  HANPU_RETURN_IF_ERROR(sim.load(Vn1, {x.vn, t0, c, slot * V, V}));
  HANPU_RETURN_IF_ERROR(wy_load_gam(op, gm, x.wy, h, t0, c, &gam));
  return wy_output(op, gm, x.wy, h, t0, c, Qc, Kc, H1, Vn1, gam);
}

}  // namespace

Status fla_flow(NpuSim& sim, const GdnGm& gm, const std::vector<int>& heads, bool one_launch,
                bool starts_launch, int value_block) {
  const int P = sim.machine().cores;
  const int bv = value_block > 0 ? value_block : gm.V;
  if (value_block > 0 && (gm.V % bv != 0 || bv % 16 != 0)) {
    return Status::Error(fmt::format("fla: value block {} for {} value columns", bv, gm.V));
  }
  const int64_t NT = chunks_of(gm);
  const bool all = static_cast<int>(heads.size()) == gm.H;
  FlaScratch x;
  x.heads = static_cast<int64_t>(heads.size());
  x.wy = wy_workspace(sim, gm, "fla", all ? std::vector<int>{} : heads);
  x.h = sim.gm("fla.h", NT * x.heads * gm.K, gm.V, true, true);
  x.vn = sim.gm("fla.v_new", gm.T, x.heads * gm.V, true, true);
  int64_t unit = 0;
  const auto next_phase = [&]() -> Status {
    if (one_launch) return sim.cross_core_sync();
    sim.launch();
    return Status::Ok();
  };
  if (starts_launch) {
    sim.launch();
  } else {
    HANPU_RETURN_IF_ERROR(sim.cross_core_sync());
  }
  for (int64_t n = 0; n < NT; ++n) {
    for (int h : heads) {
      CoreOps op(sim, static_cast<int>(unit++ % P));
      const int64_t t0 = n * gm.chunk;
      HANPU_RETURN_IF_ERROR(wy_prepare(op, gm, x.wy, h, t0,
                                       static_cast<int>(std::min<int64_t>(gm.chunk, gm.T - t0))));
    }
  }
  HANPU_RETURN_IF_ERROR(next_phase());
  unit = 0;  // FLA's grid (V / BV, heads): a head's value blocks side by side
  for (int h : heads) {
    for (int v0 = 0; v0 < gm.V; v0 += bv) {
      CoreOps op(sim, static_cast<int>(unit++ % P));
      HANPU_RETURN_IF_ERROR(recurrence(op, gm, x, h, v0, bv));
    }
  }
  HANPU_RETURN_IF_ERROR(next_phase());
  unit = 0;
  for (int64_t n = 0; n < NT; ++n) {
    for (int h : heads) {
      CoreOps op(sim, static_cast<int>(unit++ % P));
      const int64_t t0 = n * gm.chunk;
      HANPU_RETURN_IF_ERROR(
          outputs(op, gm, x, h, n, t0, static_cast<int>(std::min<int64_t>(gm.chunk, gm.T - t0))));
    }
  }
  return Status::Ok();
}

namespace {

// FLA's flow with value blocks of `bv` over the sequence's first `chunks` chunks, on zero
// inputs.
double value_block_run(const NpuMachine& m, const GdnGm& shape, bool one_launch, int bv,
                       int64_t chunks) {
  NpuSim sim(m);
  const GdnGm g = zero_inputs(sim, shape, std::min<int64_t>(shape.T, chunks * shape.chunk));
  if (!fla_flow(sim, g, all_value_heads(g), one_launch, true, bv).ok()) {
    return std::numeric_limits<double>::infinity();
  }
  return sim.finish().latency_cycles;
}

}  // namespace

int fla_value_block(const NpuMachine& m, const GdnGm& shape, bool one_launch,
                    std::vector<std::pair<int, double>>* cycles) {
  const int64_t NT = (shape.T + shape.chunk - 1) / shape.chunk;
  int best = shape.V;
  double best_cycles = std::numeric_limits<double>::infinity();
  std::vector<int> candidates{shape.V};
  for (int bv : {64, 32}) {
    if (bv < shape.V && shape.V % bv == 0) candidates.push_back(bv);
  }
  for (int bv : candidates) {
    const double c =
        probe_cycles(NT, [&](int64_t n) { return value_block_run(m, shape, one_launch, bv, n); });
    if (cycles != nullptr) cycles->push_back({bv, c});
    if (c < best_cycles) {
      best = bv;
      best_cycles = c;
    }
  }
  return best;
}

Status gdn_fla(NpuSim& sim, const GdnGm& gm) {
  if (gm.qk_l2norm) {  // FLA's l2norm_fwd on q, then on k, each a kernel of its own
    GdnGm normed;
    HANPU_RETURN_IF_ERROR(l2norm_qk(sim, gm, all_value_heads(gm), 0, true, &normed));
    return gdn_fla(sim, normed);
  }
  return fla_flow(sim, gm, all_value_heads(gm), false, true,
                  fla_value_block(sim.machine(), gm, false));
}
Status gdn_fla_mega(NpuSim& sim, const GdnGm& gm) {
  if (gm.qk_l2norm) {
    GdnGm normed;
    HANPU_RETURN_IF_ERROR(l2norm_qk(sim, gm, all_value_heads(gm), 0, true, &normed));
    return gdn_fla_mega(sim, normed);
  }
  return fla_flow(sim, gm, all_value_heads(gm), true, true,
                  fla_value_block(sim.machine(), gm, true));
}

}  // namespace hanpu::npu
