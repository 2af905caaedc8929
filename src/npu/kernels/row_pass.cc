// row_pass (see row_pass.h).
#include "npu/kernels/row_pass.h"

#include <algorithm>

#include <fmt/format.h>

namespace hanpu::npu {

Status row_pass(NpuSim& sim, int64_t T, const RowPass& p) {
  int64_t row_bytes = 0, param_bytes = 0;
  for (const GmCols& c : p.in) {
    if (c.t == nullptr || c.t->rows != T || c.col0 < 0 || c.col0 + c.cols > c.t->cols)
      return Status::Error(fmt::format("row pass: an input is not {} rows of its columns", T));
    row_bytes += matrix_bytes(1, c.cols, c.t->fp16);
  }
  for (const GmCols& c : p.out) {
    if (c.t == nullptr || c.t->rows != T || c.col0 < 0 || c.col0 + c.cols > c.t->cols)
      return Status::Error(fmt::format("row pass: an output is not {} rows of its columns", T));
    row_bytes += matrix_bytes(1, c.cols, c.t->fp16);
  }
  for (const GmTensor* t : p.params) {
    if (t == nullptr || t->rows != 1) return Status::Error("row pass: a parameter is not one row");
    param_bytes += matrix_bytes(1, static_cast<int>(t->cols), t->fp16);
  }
  const NpuMachine& m = sim.machine();
  const int64_t budget = m.buffers[static_cast<int>(Buf::kUB)].bytes / 2 - param_bytes;
  const int64_t halo_bytes = row_bytes * p.halo;
  if (row_bytes <= 0 || budget < row_bytes + halo_bytes) {
    return Status::Error(fmt::format("row pass: a row of {} B (halo {} rows) does not fit the UB",
                                     row_bytes, p.halo));
  }
  int64_t rows = (budget - halo_bytes) / row_bytes;
  rows = std::max<int64_t>(1, std::min(rows, (T + m.cores - 1) / m.cores));
  int unit = 0;
  for (int64_t r0 = 0; r0 < T; r0 += rows, ++unit) {
    const int n = static_cast<int>(std::min(rows, T - r0));
    const int halo = static_cast<int>(std::min<int64_t>(p.halo, r0));
    const int core = unit % m.cores;
    std::vector<Tile*> in, params, out;
    for (const GmCols& c : p.in) {
      Tile* t;
      HANPU_RETURN_IF_ERROR(
          sim.alloc(core, Buf::kUB, halo + n, c.cols, c.t->fp16, Layout::kND, c.t->name, &t));
      HANPU_RETURN_IF_ERROR(sim.load(t, {c.t, r0 - halo, halo + n, c.col0, c.cols}));
      in.push_back(t);
    }
    for (GmTensor* g : p.params) {
      Tile* t;
      HANPU_RETURN_IF_ERROR(sim.alloc(core, Buf::kUB, 1, static_cast<int>(g->cols), g->fp16,
                                      Layout::kND, g->name, &t));
      HANPU_RETURN_IF_ERROR(sim.load(t, {g, 0, 1, 0, static_cast<int>(g->cols)}));
      params.push_back(t);
    }
    int64_t bytes = 0;
    for (const GmCols& c : p.out) {
      Tile* t;
      HANPU_RETURN_IF_ERROR(
          sim.alloc(core, Buf::kUB, n, c.cols, c.t->fp16, Layout::kND, c.t->name, &t));
      out.push_back(t);
      bytes += t->bytes;
    }
    for (Tile* t : in) bytes += t->bytes;
    std::vector<Tile*> reads = in;
    reads.insert(reads.end(), params.begin(), params.end());
    HANPU_RETURN_IF_ERROR(sim.vector(reads, out,
                                     static_cast<int64_t>(p.passes * static_cast<double>(bytes)),
                                     true, [&] { p.fn(in, params, out, halo, r0); }));
    for (Tile* t : in) sim.free(t);
    for (Tile* t : params) sim.free(t);
    for (size_t i = 0; i < out.size(); ++i) {
      HANPU_RETURN_IF_ERROR(sim.store({p.out[i].t, r0, n, p.out[i].col0, p.out[i].cols}, out[i]));
      sim.free(out[i]);
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
