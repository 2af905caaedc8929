// DATO's FlashAttention on the spatial model (see attn_steel.h), the prior state of the art
// STEEL compares against on XDNA1. From allo's library module (allo/library/aie/modules/
// flash_attn.py, cornell-zhang/allo; STEEL §V-C): query and key chunks of 32; a four-stage
// pipeline per column — QK (Q chained in), online softmax, P V, and a separate accumulate
// stage that rescales the running output and adds each P V product — on four columns
// (col_num = 4), each column walking its share of the query chunks one after another; K and
// V replicated to every column's pipeline for every query chunk; one head per call of the
// module (a launch per head). The accumulate stage does D times less work than QK, the
// imbalance STEEL's three balanced stages remove. Every value between stages is bf16,
// the running output too (allo's Ty = bfloat16). DATO's kernels have no mask: on causal
// inputs this model applies the mask in its softmax and skips nothing (every chunk is
// computed), which is what a causal run of the design would have to do.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "hanpu/dtype.h"
#include "npu/kernels/attn_host_math.h"
#include "npu/kernels/attn_steel.h"

namespace hanpu::npu {

namespace {

constexpr int kDatoChunk = 32;   // q_chunk_size = kv_chunk_size in allo's attention example
constexpr int kDatoColumns = 4;  // col_num in flash_attn.py

float bf16(float x) { return bf16_bits_to_f32(f32_to_bf16_bits(x)); }

// One query chunk of one head with DATO's bf16 arithmetic: per key chunk, scores in bf16, a
// running max, P = exp(S - m) in bf16, the row sums and the output rescaled and summed in
// bf16 once per chunk (within a chunk the kernels accumulate in fp32).
void chunk_math(const AttnShape& s, const float* q, const float* k, const float* v, float* o, int h,
                int64_t qc) {
  const int D = s.D;
  const int64_t HD = static_cast<int64_t>(s.H) * D;
  const int64_t r0 = qc * kDatoChunk, r1 = std::min(s.T, r0 + kDatoChunk);
  std::vector<float> acc(static_cast<size_t>(D)), sc(kDatoChunk);
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t kend = s.causal ? i + 1 : s.T;
    float m = -std::numeric_limits<float>::infinity(), l = 0;
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t j0 = 0; j0 < kend; j0 += kDatoChunk) {
      const int64_t j1 = std::min(kend, j0 + kDatoChunk);
      float mb = m;
      for (int64_t j = j0; j < j1; ++j) {
        sc[j - j0] = bf16(dot_lanes(q + i * HD + h * D, k + j * HD + h * D, D) * s.scale);
        mb = std::max(mb, sc[j - j0]);
      }
      const float rescale = bf16(std::exp(m - mb));
      l = bf16(l * rescale);
      for (float& a : acc) a = bf16(a * rescale);
      std::vector<float> pv(static_cast<size_t>(D), 0.0f);
      float row_sum = 0;  // a chunk's sum in the kernel's fp32 accumulator, then stored as bf16
      for (int64_t j = j0; j < j1; ++j) {
        const float p = bf16(std::exp(sc[j - j0] - mb));
        row_sum += p;
        for (int d = 0; d < D; ++d) pv[d] += p * v[j * HD + h * D + d];
      }
      l = bf16(l + row_sum);
      for (int d = 0; d < D; ++d) acc[d] = bf16(acc[d] + bf16(pv[d]));
      m = mb;
    }
    for (int d = 0; d < D; ++d) o[i * HD + h * D + d] = acc[d] / l;
  }
}

struct DatoPipe {
  TileId qk, sm, pv, acc;
  int q = 0, score = 0, weight = 0, part = 0, rescale = 0, sum = 0, o = 0;  // FIFO ids
};

}  // namespace

Status dato_attention(SpatialSim& sim, const AttnShape& s, const float* q, const float* k,
                      const float* v, float* o) {
  const SpatialMachine& m = sim.machine();
  if (m.compute_rows < 4 || m.columns < kDatoColumns) {
    return Status::Error(
        fmt::format("{}: DATO's design needs {} columns of 4 compute rows", m.name, kDatoColumns));
  }
  if (s.D != 64)
    return Status::Error(fmt::format("npu attn: D = {}: DATO's module is built for D = 64", s.D));
  const int D = s.D, C = kDatoChunk;
  const int64_t qkv_chunk = static_cast<int64_t>(C) * D * 2, tile = static_cast<int64_t>(C) * C * 2;
  const int64_t NC = (s.T + C - 1) / C;  // query and key chunks
  const double chunk_macs = static_cast<double>(C) * C * D;
  for (int h = 0; h < s.H; ++h) {
    sim.launch();  // allo's module takes one head's Q, K, V, O per call
    std::vector<DatoPipe> pipes;
    for (int c = 0; c < kDatoColumns; ++c)
      pipes.push_back({.qk = {c, 2}, .sm = {c, 3}, .pv = {c, 4}, .acc = {c, 5}});
    // Q distributed and O gathered through column 0's mem tile; K and V replicated to every
    // pipeline from columns 1 and 2's.
    int q_in = 0, o_out = 0, k_in = 0, k_bc = 0, v_in = 0, v_bc = 0;
    std::vector<TileId> qk_tiles, pv_tiles;
    for (const DatoPipe& p : pipes) {
      qk_tiles.push_back(p.qk);
      pv_tiles.push_back(p.pv);
    }
    HANPU_RETURN_IF_ERROR(sim.fifo("q.in", {0, 0}, {{0, 1}}, qkv_chunk * kDatoColumns, 2, &q_in));
    HANPU_RETURN_IF_ERROR(sim.fifo("o.out", {0, 1}, {{0, 0}}, qkv_chunk * kDatoColumns, 1, &o_out));
    HANPU_RETURN_IF_ERROR(sim.fifo("k.in", {1, 0}, {{1, 1}}, qkv_chunk, 2, &k_in));
    HANPU_RETURN_IF_ERROR(sim.fifo("k.broadcast", {1, 1}, qk_tiles, qkv_chunk, 2, &k_bc));
    HANPU_RETURN_IF_ERROR(sim.fifo("v.in", {2, 0}, {{2, 1}}, qkv_chunk, 2, &v_in));
    HANPU_RETURN_IF_ERROR(sim.fifo("v.broadcast", {2, 1}, pv_tiles, qkv_chunk, 2, &v_bc));
    for (size_t i = 0; i < pipes.size(); ++i) {
      DatoPipe& p = pipes[i];
      HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("q{}", i), {0, 1}, {p.qk}, qkv_chunk, 2, &p.q));
      HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("score{}", i), p.qk, {p.sm}, tile, 2, &p.score));
      HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("weight{}", i), p.sm, {p.pv}, tile, 2, &p.weight));
      HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("pv{}", i), p.pv, {p.acc}, qkv_chunk, 2, &p.part));
      // Softmax (row 3) to accumulate (row 5) is not a neighbour: a stream each.
      HANPU_RETURN_IF_ERROR(
          sim.fifo(fmt::format("rescale{}", i), p.sm, {p.acc}, C * 2, 2, &p.rescale));
      HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("sum{}", i), p.sm, {p.acc}, C * 2, 2, &p.sum));
      HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("o{}", i), p.acc, {{0, 1}}, qkv_chunk, 1, &p.o));
      HANPU_RETURN_IF_ERROR(sim.reserve(p.acc, qkv_chunk, "running output"));
    }
    // Column c takes query chunks c, c + 4, ... in rounds; every round streams all of K and V.
    const int64_t rounds = (NC + kDatoColumns - 1) / kDatoColumns;
    const int64_t chunk_vec = static_cast<int64_t>(C) * C * 4;
    std::vector<int64_t> o_put(pipes.size());
    for (int64_t r = 0; r < rounds; ++r) {
      const int64_t qp = sim.put(q_in, {});
      std::vector<int64_t> split;
      for (DatoPipe& p : pipes) split.push_back(sim.put(p.q, {qp}));
      sim.release(q_in, 0, split);
      for (int64_t j = 0; j < NC; ++j) {
        const int64_t kb = sim.forward(k_in, k_bc);
        const int64_t vb = sim.forward(v_in, v_bc);
        for (size_t i = 0; i < pipes.size(); ++i) {
          DatoPipe& p = pipes[i];
          const bool work =
              r * kDatoColumns + static_cast<int64_t>(i) < NC;  // idle past the last chunk
          const int64_t qk =
              sim.compute(p.qk, work ? chunk_macs : 0, work ? chunk_vec : 0, 0, {kb});
          sim.release(k_bc, static_cast<int>(i), {qk});
          const int64_t sc = sim.put(p.score, {qk});
          const int64_t sm =
              sim.compute(p.sm, 0, work ? 4 * chunk_vec : 0, work ? C * C + C : 0, {sc});
          sim.release(p.score, 0, {sm});
          const int64_t wt = sim.put(p.weight, {sm});
          const int64_t rs = sim.put(p.rescale, {sm});
          const int64_t pv = sim.compute(p.pv, work ? chunk_macs : 0, 0, 0, {wt, vb});
          sim.release(p.weight, 0, {pv});
          sim.release(v_bc, static_cast<int>(i), {pv});
          const int64_t part = sim.put(p.part, {pv});
          // Rescale the running output (C x D), add the product (C x D), bf16 throughout.
          const int64_t acc =
              sim.compute(p.acc, 0, work ? 2 * static_cast<int64_t>(C) * D * 2 : 0, 0, {part, rs});
          sim.release(p.part, 0, {acc});
          sim.release(p.rescale, 0, {acc});
          if (j == NC - 1) {
            const int64_t sum = sim.put(p.sum, {sm});
            const int64_t fin =
                sim.compute(p.acc, 0, work ? static_cast<int64_t>(C) * D * 2 : 0, 0, {acc, sum});
            sim.release(p.sum, 0, {fin});
            sim.release(p.q, 0, {qk});
            o_put[i] = sim.put(p.o, {fin});
          }
        }
      }
      const int64_t out = sim.put(o_out, o_put);
      for (DatoPipe& p : pipes) sim.release(p.o, 0, {out});
      sim.release(o_out, 0, {out});
      for (int64_t i = 0; i < kDatoColumns; ++i) {
        const int64_t qc = r * kDatoColumns + i;
        if (qc < NC) chunk_math(s, q, k, v, o, h, qc);
      }
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
