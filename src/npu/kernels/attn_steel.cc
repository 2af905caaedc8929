// STEEL on the spatial model (see attn_steel.h).
#include "npu/kernels/attn_host_math.h"
#include "npu/kernels/attn_steel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "hanpu/dtype.h"

namespace hanpu::npu {

namespace {

float bf16(float x) { return bf16_bits_to_f32(f32_to_bf16_bits(x)); }

// The pipeline's arithmetic for one (head, query block): per key block, S = Q K^T scaled by
// log2(e)/sqrt(D) (folded), masked, a running row max; P = exp2(S - m) rounded to bf16;
// O = O 2^(m_old - m) + P V; at the end O / l.
void block_math(const AttnShape& s, const float* q, const float* k, const float* v, float* o, int h,
                int64_t qb) {
  const int D = s.D;
  const int64_t HD = static_cast<int64_t>(s.H) * D;
  const int64_t r0 = qb * kSteelTile, r1 = std::min(s.T, r0 + kSteelTile);
  const float c = s.scale * 1.4426950408889634f;
  std::vector<float> acc(static_cast<size_t>(D));  // O accumulates in fp32, as on the core
  std::vector<float> p;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t kend = s.causal ? i + 1 : s.T;
    float m = -std::numeric_limits<float>::infinity(), l = 0;
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t j0 = 0; j0 < kend; j0 += kSteelTile) {
      const int64_t j1 = std::min(kend, j0 + kSteelTile);
      p.assign(static_cast<size_t>(j1 - j0), 0.0f);
      float mb = m;
      for (int64_t j = j0; j < j1; ++j) {
        p[j - j0] = dot_lanes(q + i * HD + h * D, k + j * HD + h * D, D) * c;
        mb = std::max(mb, p[j - j0]);
      }
      const float rescale = std::exp2(m - mb);
      l *= rescale;
      for (float& a : acc) a *= rescale;
      for (int64_t j = j0; j < j1; ++j) {
        const float pj = bf16(std::exp2(p[j - j0] - mb));
        l += pj;
        const float* vj = v + j * HD + h * D;
        for (int d = 0; d < D; ++d) acc[d] += pj * vj[d];
      }
      m = mb;
    }
    for (int d = 0; d < D; ++d) o[i * HD + h * D + d] = acc[d] / l;
  }
}

struct Pipe {
  TileId qk, sm, pv;
  int q = 0, a = 0, pin = 0, pout = 0, scale = 0, o = 0;  // FIFO ids
  int group = 0, member = 0;
};

}  // namespace

Status steel_attention(SpatialSim& sim, const AttnShape& s, const std::string& placement,
                       const float* q, const float* k, const float* v, float* o) {
  const SpatialMachine& m = sim.machine();
  if (m.compute_rows < 3)
    return Status::Error(fmt::format("{}: STEEL needs 3 compute rows per pipeline", m.name));
  if (s.D != kSteelTile)
    return Status::Error(fmt::format("npu attn: D = {}: STEEL's tiles are 64 x 64 (D = 64)", s.D));
  if (placement != "uniform" && placement != "sparsity-aware") {
    return Status::Error(
        fmt::format("npu attn: unknown placement '{}' (uniform, sparsity-aware)", placement));
  }
  // STEEL's layout (§IV-B, §V-C): one pipeline down each column on compute rows 2-4, and
  // with a fourth compute row one more along it for every three columns (10 pipelines on
  // XDNA2's 8 columns, 6 on XDNA1's 5). Neighbouring stages hand A and the rescale factors
  // over in shared memory.
  std::vector<Pipe> pipes;
  for (int c = 0; c < m.columns; ++c) pipes.push_back({.qk = {c, 2}, .sm = {c, 3}, .pv = {c, 4}});
  if (m.compute_rows >= 4) {
    for (int c = 0; c + 2 < m.columns; c += 3)
      pipes.push_back({.qk = {c, 5}, .sm = {c + 1, 5}, .pv = {c + 2, 5}});
  }
  const int P = static_cast<int>(pipes.size());
  const int64_t tile = static_cast<int64_t>(kSteelTile) * kSteelTile * 2;  // a 64 x 64 bf16 tile
  const int64_t NB = (s.T + kSteelTile - 1) / kSteelTile;                  // query and key blocks
  // Q is split and O joined through a mem tile per group of pipelines: a group's mem tile
  // sends its members' Q and O to DRAM (members + 1 output channels), so a group has at
  // most (channels - 1) members (two groups of 5 on XDNA2, as STEEL). K and V are broadcast
  // from two more mem tiles; P is swizzled through a mem tile near each pipeline.
  const int max_members = m.memtile_dma_out - 1;
  const int groups = (P + max_members - 1) / max_members, per_group = (P + groups - 1) / groups;
  const auto group_col = [&](int g) { return std::min(g * per_group, m.columns - 1); };
  const int kcol = std::min(1, m.columns - 1), vcol = std::min(2, m.columns - 1);
  std::vector<int> q_in(groups), o_out(groups);
  int k_in = 0, k_bc = 0, v_in = 0, v_bc = 0;
  for (int g = 0; g < groups; ++g) {
    const int members = std::min(per_group, P - g * per_group);
    HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("q{}.in", g), {group_col(g), 0}, {{group_col(g), 1}},
                                   tile * members, 2, &q_in[g]));
    HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("o{}.out", g), {group_col(g), 1},
                                   {{group_col(g), 0}}, tile * members, 1, &o_out[g]));
  }
  std::vector<TileId> qk_tiles, pv_tiles;
  for (const Pipe& p : pipes) {
    qk_tiles.push_back(p.qk);
    pv_tiles.push_back(p.pv);
  }
  HANPU_RETURN_IF_ERROR(sim.fifo("k.in", {kcol, 0}, {{kcol, 1}}, tile, 2, &k_in));
  HANPU_RETURN_IF_ERROR(sim.fifo("k.broadcast", {kcol, 1}, qk_tiles, tile, 2, &k_bc));
  HANPU_RETURN_IF_ERROR(sim.fifo("v.in", {vcol, 0}, {{vcol, 1}}, tile, 2, &v_in));
  HANPU_RETURN_IF_ERROR(sim.fifo("v.broadcast", {vcol, 1}, pv_tiles, tile, 2, &v_bc));
  for (int i = 0; i < P; ++i) {
    Pipe& p = pipes[static_cast<size_t>(i)];
    p.group = i / per_group;
    p.member = i % per_group;
    const TileId gm{group_col(p.group), 1};
    HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("q{}", i), gm, {p.qk}, tile, 2, &p.q));
    HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("o{}", i), p.pv, {gm}, tile, 1, &p.o));
  }
  for (int i = 0; i < P; ++i) {
    Pipe& p = pipes[static_cast<size_t>(i)];
    HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("a{}", i), p.qk, {p.sm}, tile, 2, &p.a));
    // P's mem tile: the nearest one (from the softmax stage's column) with a channel free
    // each way after the groups' Q/O and the K/V broadcasts took theirs.
    TileId pm{-1, 1};
    for (int d = 0; d < m.columns && pm.col < 0; ++d) {
      for (const int c : {p.sm.col - d, p.sm.col + d}) {
        if (pm.col < 0 && sim.free_dma({c, 1}, true) > 0 && sim.free_dma({c, 1}, false) > 0)
          pm.col = c;
      }
    }
    if (pm.col < 0) {
      return Status::Error(
          fmt::format("{}: no mem tile has a channel left each way to swizzle pipeline {}'s P "
                      "({} pipelines)",
                      m.name, i, P));
    }
    HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("p{}.in", i), p.sm, {pm}, tile, 2, &p.pin));
    HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("p{}.out", i), pm, {p.pv}, tile, 2, &p.pout));
    HANPU_RETURN_IF_ERROR(
        sim.fifo(fmt::format("s{}", i), p.sm, {p.pv}, 4 * kSteelTile * 2, 2, &p.scale));
    HANPU_RETURN_IF_ERROR(
        sim.reserve(p.pv, static_cast<int64_t>(kSteelTile) * kSteelTile * 4, "O accumulator"));
  }
  // Query blocks per pipeline, in waves: pipeline i's w-th block.
  const int64_t waves = (NB + P - 1) / P;
  const auto block_of = [&](int i, int64_t w) -> int64_t {
    const int64_t b = placement == "sparsity-aware" ? (waves - 1 - w) * P + i : i * waves + w;
    return b < NB ? b : -1;
  };
  const double tile_macs = static_cast<double>(kSteelTile) * kSteelTile * kSteelTile;
  const int64_t tile_vec = static_cast<int64_t>(kSteelTile) * kSteelTile * 4;
  std::vector<int64_t> o_put(static_cast<size_t>(P));
  for (int h = 0; h < s.H; ++h) {
    for (int64_t w = 0; w < waves; ++w) {
      std::vector<int64_t> q_put(groups);
      for (int g = 0; g < groups; ++g) q_put[g] = sim.put(q_in[g], {});
      std::vector<std::vector<int64_t>> q_split(groups);
      for (Pipe& p : pipes) q_split[p.group].push_back(sim.put(p.q, {q_put[p.group]}));
      for (int g = 0; g < groups; ++g) sim.release(q_in[g], 0, q_split[g]);
      for (int64_t j = 0; j < NB; ++j) {
        const int64_t kb = sim.forward(k_in, k_bc);
        const int64_t vb = sim.forward(v_in, v_bc);
        for (int i = 0; i < P; ++i) {
          Pipe& p = pipes[static_cast<size_t>(i)];
          const int64_t b = block_of(i, w);
          // Fully masked blocks (and idle pipelines) skip the work; K and V still arrive.
          const bool work = b >= 0 && (!s.causal || j <= b);
          const int64_t qk = sim.compute(p.qk, work ? tile_macs : 0, work ? tile_vec : 0, 0, {kb});
          sim.release(k_bc, i, {qk});
          const int64_t a = sim.put(p.a, {qk});
          const int64_t sm = sim.compute(p.sm, 0, work ? 3 * tile_vec : 0,
                                         work ? kSteelTile * kSteelTile : 0, {a});
          sim.release(p.a, 0, {sm});
          const int64_t pin = sim.put(p.pin, {sm});
          const int64_t sc = sim.put(p.scale, {sm});
          const int64_t pout = sim.put(p.pout, {pin});
          sim.release(p.pin, 0, {pout});
          const int64_t pv =
              sim.compute(p.pv, work ? tile_macs : 0, work ? 2 * tile_vec : 0, 0, {pout, vb, sc});
          sim.release(p.pout, 0, {pv});
          sim.release(p.scale, 0, {pv});
          sim.release(v_bc, i, {pv});
          if (j == NB - 1) {
            const int64_t fin = sim.compute(p.pv, 0, b >= 0 ? tile_vec : 0, 0,
                                            {pv});  // O / l (an idle pipeline: nothing)
            sim.release(p.q, 0, {qk});
            o_put[static_cast<size_t>(i)] = sim.put(p.o, {fin});
          }
        }
      }
      // O: every pipeline's tile joined in its group's mem tile, then to DRAM.
      for (int g = 0; g < groups; ++g) {
        std::vector<int64_t> members;
        for (int i = 0; i < P; ++i) {
          if (pipes[static_cast<size_t>(i)].group == g)
            members.push_back(o_put[static_cast<size_t>(i)]);
        }
        const int64_t out = sim.put(o_out[g], members);
        for (Pipe& p : pipes) {
          if (p.group == g) sim.release(p.o, 0, {out});
        }
        sim.release(o_out[g], 0, {out});
      }
      for (int i = 0; i < P; ++i) {
        const int64_t b = block_of(i, w);
        if (b >= 0) block_math(s, q, k, v, o, h, b);
      }
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
