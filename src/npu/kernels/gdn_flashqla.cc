// FlashQLA's segment-parallel GDN flow on the simulated Ascend cores (see gdn_kernels.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "npu/kernels/gdn_kernels.h"
#include "npu/kernels/wy_prepare.h"
#include "npu/kernels/wy_walk.h"

namespace hanpu::npu {

namespace {

struct QlaGm {
  WyGm wy;          // the WY form, as FLA's
  GmTensor *m, *b;  // per (segment, head): transition [K x K] and local state [K x V], fp32
  GmTensor* hseg;   // per (segment, head): the state entering the segment, fp32
};

// Launch 2, one (segment, head): the local state B (from zero) and the transition M of the
// segment's chunks, M <- (exp(gam_last) I - Kd^T W) M per chunk.
Status local_walk(CoreOps& op, const GdnGm& gm, const QlaGm& x, int h, int seg, int64_t n0,
                  int64_t n1) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile *B, *M;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, K, V, false, Layout::kND, "B", &B));
  HANPU_RETURN_IF_ERROR(sim.vector({}, {B}, matrix_bytes(K, V, false), false, [] {}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, K, K, false, Layout::kND, "M", &M));
  HANPU_RETURN_IF_ERROR(sim.vector({}, {M}, matrix_bytes(K, K, false), false, [&] {
    for (int i = 0; i < K; ++i) M->at(i, i) = 1.0f;
  }));
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t t0 = n * gm.chunk;
    const int c = static_cast<int>(std::min<int64_t>(gm.chunk, gm.T - t0));
    WyStep w;
    HANPU_RETURN_IF_ERROR(wy_advance(op, gm, x.wy, h, t0, c, B, nullptr, nullptr, true, &w));
    // T = exp(gam_last) I - Kd^T W, then M = T M.
    Tile *Wb, *KWc, *Tm, *M1, *Mb, *T1, *Ta, *Mc;
    HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, w.w1, false, "w", &Wb));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, K, K, false, Layout::kNZ, "KdW", &KWc));
    HANPU_RETURN_IF_ERROR(sim.mmad(KWc, w.kdt, Wb, false));
    op.free({Wb, w.kdt, w.w1, w.vn1, w.s16});
    if (w.k1 != nullptr) op.free({w.k1});
    HANPU_RETURN_IF_ERROR(op.from_l0c(KWc, "T", &Tm));
    HANPU_RETURN_IF_ERROR(op.to_layout(Tm, Layout::kND));
    Tile* gam = w.gam;  // the decay: exp(gam_last), one per key channel for KDA
    const auto decay = [&](int i) { return std::exp(gm.kda ? gam->at(c - 1, i) : gam->v[c - 1]); };
    HANPU_RETURN_IF_ERROR(sim.vector({Tm, gam}, {Tm}, 2 * matrix_bytes(K, K, false), false, [&] {
      for (int i = 0; i < K; ++i) {
        for (int j = 0; j < K; ++j) Tm->at(i, j) = (i == j ? decay(i) : 0.0f) - Tm->at(i, j);
      }
    }));
    op.free({w.gam});
    HANPU_RETURN_IF_ERROR(op.stage_to_l1(Tm, "T", &T1));
    HANPU_RETURN_IF_ERROR(op.stage_to_l1(M, "M", &M1));
    op.free({Tm});
    HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, T1, false, "T", &Ta));
    HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, M1, false, "M", &Mb));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, K, K, false, Layout::kNZ, "TM", &Mc));
    HANPU_RETURN_IF_ERROR(sim.mmad(Mc, Ta, Mb, false));
    op.free({Ta, Mb, T1, M1, M});
    HANPU_RETURN_IF_ERROR(op.from_l0c(Mc, "M", &M));
    HANPU_RETURN_IF_ERROR(op.to_layout(M, Layout::kND));
  }
  const int64_t row = (static_cast<int64_t>(seg) * gm.H + h) * K;
  HANPU_RETURN_IF_ERROR(sim.store({x.m, row, K, 0, K}, M));
  HANPU_RETURN_IF_ERROR(sim.store({x.b, row, K, 0, V}, B));
  op.free({M, B});
  return Status::Ok();
}

// Launch 3, one head: S_{s+1} = M_s S_s + B_s over the segments; every S_s to GM.
Status combine(CoreOps& op, const GdnGm& gm, const QlaGm& x, int h, int segs) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile* S;
  HANPU_RETURN_IF_ERROR(wy_initial_state(op, gm, h, &S));
  for (int s = 0; s < segs; ++s) {
    const int64_t row = (static_cast<int64_t>(s) * gm.H + h) * K;
    HANPU_RETURN_IF_ERROR(sim.store({x.hseg, row, K, 0, V}, S));
    Tile *M1, *Ma, *S1, *Sb, *MSc, *MS, *B;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, K, K, true, Layout::kNZ, "M", &M1));
    HANPU_RETURN_IF_ERROR(sim.load(M1, {x.m, row, K, 0, K}));
    HANPU_RETURN_IF_ERROR(op.stage_to_l1(S, "S16", &S1));
    HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, M1, false, "M", &Ma));
    HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, S1, false, "S", &Sb));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, K, V, false, Layout::kNZ, "MS", &MSc));
    HANPU_RETURN_IF_ERROR(sim.mmad(MSc, Ma, Sb, false));
    op.free({Ma, Sb, M1, S1});
    HANPU_RETURN_IF_ERROR(op.from_l0c(MSc, "MS", &MS));
    HANPU_RETURN_IF_ERROR(op.to_layout(MS, Layout::kND));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, K, V, false, Layout::kND, "B", &B));
    HANPU_RETURN_IF_ERROR(sim.load(B, {x.b, row, K, 0, V}));
    HANPU_RETURN_IF_ERROR(sim.vector({MS, B}, {S}, 3 * matrix_bytes(K, V, false), false, [&] {
      for (size_t i = 0; i < S->v.size(); ++i) S->v[i] = MS->v[i] + B->v[i];
    }));
    op.free({MS, B});
  }
  if (gm.state1 != nullptr) {
    HANPU_RETURN_IF_ERROR(sim.store({gm.state1, static_cast<int64_t>(h) * K, K, 0, V}, S));
  }
  op.free({S});
  return Status::Ok();
}

// Launch 4 (or the only walk with one segment), one (segment, head): from the segment's true
// state, each chunk's o = scale exp(gam) Q S + Qm Vn with the state advanced in the walk.
Status output_walk(CoreOps& op, const GdnGm& gm, const QlaGm& x, int h, int seg, int64_t n0,
                   int64_t n1, bool last_writes_state) {
  NpuSim& sim = op.sim();
  const int K = gm.K, V = gm.V;
  Tile* S;
  if (x.hseg != nullptr) {
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, K, V, false, Layout::kND, "S", &S));
    HANPU_RETURN_IF_ERROR(
        sim.load(S, {x.hseg, (static_cast<int64_t>(seg) * gm.H + h) * K, K, 0, V}));
  } else {
    HANPU_RETURN_IF_ERROR(wy_initial_state(op, gm, h, &S));
  }
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t t0 = n * gm.chunk;
    const int c = static_cast<int>(std::min<int64_t>(gm.chunk, gm.T - t0));
    WyStep w;
    // The state before this chunk is what Q reads: keep its fp16 copy from the walk.
    HANPU_RETURN_IF_ERROR(wy_advance(op, gm, x.wy, h, t0, c, S, nullptr, nullptr, true, &w));
    op.free({w.kdt, w.w1});
    Tile *Q1, *K1;  // K as the step loaded it: FlashQLA's fused kernel reads it once
    HANPU_RETURN_IF_ERROR(wy_output_operands(op, gm, h, t0, c, &Q1, &K1, w.k1));
    HANPU_RETURN_IF_ERROR(wy_output(op, gm, x.wy, h, t0, c, Q1, K1, w.s16, w.vn1, w.gam));
  }
  if (last_writes_state && gm.state1 != nullptr) {
    HANPU_RETURN_IF_ERROR(sim.store({gm.state1, static_cast<int64_t>(h) * K, K, 0, V}, S));
  }
  op.free({S});
  return Status::Ok();
}

// FlashQLA's cycles with `segs` segments over the sequence's first `chunks` chunks, on zero
// inputs.
double segments_run(const NpuMachine& m, const GdnGm& shape, int segs, int64_t chunks) {
  NpuSim sim(m);
  const GdnGm g = zero_inputs(sim, shape, std::min<int64_t>(shape.T, chunks * shape.chunk));
  if (!gdn_flashqla_segments(sim, g, segs).ok()) return std::numeric_limits<double>::infinity();
  return sim.finish().latency_cycles;
}

}  // namespace

int flashqla_segments(const NpuMachine& m, const GdnGm& shape,
                      std::vector<std::pair<int, double>>* cycles) {
  const int64_t NT = (shape.T + shape.chunk - 1) / shape.chunk;
  int best = 1;
  double best_cycles = std::numeric_limits<double>::infinity();
  for (int segs : {1, 2, 4, 8, 16}) {
    if (segs > NT) break;
    const double c = probe_cycles(NT, [&](int64_t n) { return segments_run(m, shape, segs, n); });
    if (cycles != nullptr) cycles->push_back({segs, c});
    if (c < best_cycles) {
      best = segs;
      best_cycles = c;
    }
  }
  return best;
}

Status gdn_flashqla(NpuSim& sim, const GdnGm& gm) {
  if (gm.qk_l2norm) {  // q and k normalised first, each in a kernel of its own, as FLA's
    GdnGm normed;
    HANPU_RETURN_IF_ERROR(l2norm_qk(sim, gm, all_value_heads(gm), 0, true, &normed));
    return gdn_flashqla(sim, normed);
  }
  return gdn_flashqla_segments(sim, gm, flashqla_segments(sim.machine(), gm));
}

Status gdn_flashqla_segments(NpuSim& sim, const GdnGm& gm, int segs) {
  const int P = sim.machine().cores, H = gm.H, K = gm.K, V = gm.V;
  const int64_t NT = (gm.T + gm.chunk - 1) / gm.chunk;
  if (segs < 1 || segs > std::max<int64_t>(1, NT)) {
    return Status::Error(fmt::format("flashqla: {} segments for {} chunks", segs, NT));
  }
  QlaGm x;
  x.wy = wy_workspace(sim, gm, "qla", {}, WyForm::kA);
  x.m = x.b = x.hseg = nullptr;
  if (segs > 1) {
    x.m = sim.gm("qla.transition", static_cast<int64_t>(segs) * H * K, K, false, true);
    x.b = sim.gm("qla.local_state", static_cast<int64_t>(segs) * H * K, V, false, true);
    x.hseg = sim.gm("qla.segment_state", static_cast<int64_t>(segs) * H * K, V, false, true);
  }
  const auto seg_chunks = [&](int s) {
    return std::pair<int64_t, int64_t>{NT * s / segs, NT * (s + 1) / segs};
  };
  sim.launch();
  int64_t unit = 0;
  for (int64_t n = 0; n < NT; ++n) {
    for (int h = 0; h < H; ++h, ++unit) {
      CoreOps op(sim, static_cast<int>(unit % P));
      const int64_t t0 = n * gm.chunk;
      HANPU_RETURN_IF_ERROR(wy_prepare(op, gm, x.wy, h, t0,
                                       static_cast<int>(std::min<int64_t>(gm.chunk, gm.T - t0))));
    }
  }
  if (segs > 1) {
    sim.launch();
    unit = 0;
    for (int s = 0; s < segs; ++s) {
      for (int h = 0; h < H; ++h, ++unit) {
        CoreOps op(sim, static_cast<int>(unit % P));
        const auto [n0, n1] = seg_chunks(s);
        HANPU_RETURN_IF_ERROR(local_walk(op, gm, x, h, s, n0, n1));
      }
    }
    sim.launch();
    for (int h = 0; h < H; ++h) {
      CoreOps op(sim, h % P);
      HANPU_RETURN_IF_ERROR(combine(op, gm, x, h, segs));
    }
  }
  sim.launch();
  unit = 0;
  for (int s = 0; s < segs; ++s) {
    for (int h = 0; h < H; ++h, ++unit) {
      CoreOps op(sim, static_cast<int>(unit % P));
      const auto [n0, n1] = seg_chunks(s);
      HANPU_RETURN_IF_ERROR(output_walk(op, gm, x, h, s, n0, n1, segs == 1));
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
