// cube_gemm (see cube_gemm.h): per output tile, the reduction walks L1 panels of x and w, each
// fed to L0 a k-step at a time and accumulated in L0C; the tile then goes L0C -> UB, back to
// rows and fp16 on the vector unit, and out to GM.
#include "npu/kernels/cube_gemm.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "npu/kernels/chunk_ops.h"

namespace hanpu::npu {

namespace {

Status output_tile(CoreOps& op, GmTensor* x, GmTensor* w, GmTensor* y, int64_t m0, int64_t n0,
                   const GemmTiling& t) {
  NpuSim& sim = op.sim();
  const int bm = static_cast<int>(std::min<int64_t>(t.bm, x->rows - m0));
  const int bn = static_cast<int>(std::min<int64_t>(t.bn, w->cols - n0));
  const int64_t K = x->cols;
  Tile* acc;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, bm, bn, false, Layout::kNZ, "y_acc", &acc));
  bool first = true;
  for (int64_t k1 = 0; k1 < K; k1 += t.bk_l1) {
    const int kb1 = static_cast<int>(std::min<int64_t>(t.bk_l1, K - k1));
    Tile *xp, *wp;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, bm, kb1, true, Layout::kNZ, "x_panel", &xp));
    HANPU_RETURN_IF_ERROR(sim.load(xp, {x, m0, bm, k1, kb1}));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, kb1, bn, true, Layout::kNZ, "w_panel", &wp));
    HANPU_RETURN_IF_ERROR(sim.load(wp, {w, k1, kb1, n0, bn}));
    for (int k0 = 0; k0 < kb1; k0 += t.bk_l0) {
      const int kb0 = std::min(t.bk_l0, kb1 - k0);
      Tile *a, *b;
      HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0A, bm, kb0, true, Layout::kNZ, "x_step", &a));
      HANPU_RETURN_IF_ERROR(sim.move(a, xp, false, 0, k0));
      HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0B, kb0, bn, true, Layout::kNZ, "w_step", &b));
      HANPU_RETURN_IF_ERROR(sim.move(b, wp, false, k0, 0));
      HANPU_RETURN_IF_ERROR(sim.mmad(acc, a, b, !first));
      first = false;
      op.free({a, b});
    }
    op.free({xp, wp});
  }
  Tile *u, *h;
  HANPU_RETURN_IF_ERROR(op.from_l0c(acc, "y_tile", &u));
  HANPU_RETURN_IF_ERROR(sim.relayout(u, Layout::kND));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, bm, bn, true, Layout::kND, "y_f16", &h));
  HANPU_RETURN_IF_ERROR(
      sim.vector({u}, {h}, matrix_bytes(bm, bn, false), false, [&] { h->v = u->v; }));
  op.free({u});
  HANPU_RETURN_IF_ERROR(sim.store({y, m0, bm, n0, bn}, h));
  op.free({h});
  return Status::Ok();
}

}  // namespace

GemmTiling gemm_tiling(const NpuMachine& m, int64_t M, int64_t K, int64_t N) {
  GemmTiling best;
  double best_cycles = 0;
  // Up to 32K outputs a tile: its fp32 result and fp16 copy fit UB beside nothing else, and
  // two accumulators fit L0C, so one tile drains while the next multiplies.
  for (const auto [bm, bn] : {std::pair{128, 128}, {128, 256}, {256, 128}}) {
    const int64_t row_tiles = (M + bm - 1) / bm, col_tiles = (N + bn - 1) / bn;
    const int64_t rounds = (row_tiles * col_tiles + m.cores - 1) / m.cores;
    const double tile_cycles = static_cast<double>(bm / m.cube_m) * (bn / m.cube_n) *
                               static_cast<double>((K + m.cube_k - 1) / m.cube_k);
    const double gm_bytes = 2.0 * (static_cast<double>(col_tiles) * M * K +
                                   static_cast<double>(row_tiles) * K * N + M * N);
    const double cycles =
        std::max(static_cast<double>(rounds) * tile_cycles, gm_bytes / (m.gm_gbps / m.clock_ghz));
    if (best_cycles == 0 || cycles < best_cycles) {
      best_cycles = cycles;
      best.bm = bm;
      best.bn = bn;
    }
  }
  return best;
}

Status cube_gemm(NpuSim& sim, GmTensor* x, GmTensor* w, GmTensor* y,
                 std::optional<GemmTiling> tiling) {
  if (x->cols != w->rows || y->rows != x->rows || y->cols != w->cols || !x->fp16 || !w->fp16 ||
      !y->fp16 || !w->nz || x->nz || y->nz) {
    return Status::Error(fmt::format(
        "cube gemm: {} [{} x {}] = {} [{} x {}] x {} [{} x {}]: shapes differ, or not fp16 with "
        "the weight (only) in NZ order",
        y->name, y->rows, y->cols, x->name, x->rows, x->cols, w->name, w->rows, w->cols));
  }
  const GemmTiling t = tiling ? *tiling : gemm_tiling(sim.machine(), x->rows, x->cols, w->cols);
  if (t.bm < 16 || t.bn < 16 || t.bk_l0 < 16 || t.bm % 16 || t.bn % 16 || t.bk_l0 % 16 ||
      t.bk_l1 % t.bk_l0) {
    return Status::Error(fmt::format(
        "cube gemm: tiles bm {} bn {} bk_l1 {} bk_l0 {} must be multiples of 16 (bk_l1 of bk_l0)",
        t.bm, t.bn, t.bk_l1, t.bk_l0));
  }
  const int P = sim.machine().cores;
  const int64_t tiles_n = (w->cols + t.bn - 1) / t.bn;
  int64_t unit = 0;
  for (int64_t m0 = 0; m0 < x->rows; m0 += t.bm) {
    for (int64_t nt = 0; nt < tiles_n; ++nt) {
      CoreOps op(sim, static_cast<int>(unit++ % P));
      HANPU_RETURN_IF_ERROR(output_tile(op, x, w, y, m0, nt * t.bn, t));
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
