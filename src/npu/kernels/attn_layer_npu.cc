// The layer-by-layer attention baseline on the spatial model (see attn_steel.h), as STEEL's
// Figure 5 builds it from IRON operators: four kernel launches, each over every head, with
// the score and probability matrices through DRAM. A GEMM writes S = Q K^T for every (query
// block, key block), a scale pass reads S and writes scale S, a softmax pass reads each row
// twice (running max and sum, then normalise) and writes P, a GEMM reads P and V and writes
// O. Each launch runs its own design (IRON compiles a GEMM per shape, so Q K^T and P V are
// two), so each loads another design onto the array (the target's design_switch_us), the
// cost the paper names as this baseline's context switches. Nothing is skipped above the
// causal diagonal (the GEMMs are generic; the mask is applied in the softmax). Workers: two
// compute tiles per column, fed and drained through the column's mem tile and shim.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "hanpu/dtype.h"
#include "npu/kernels/attn_host_math.h"
#include "npu/kernels/attn_steel.h"

namespace hanpu::npu {

namespace {

float bf16(float x) { return bf16_bits_to_f32(f32_to_bf16_bits(x)); }

// The baseline's arithmetic: Q K^T stored as bf16, scaled and stored as bf16 again,
// P = softmax(S) stored as bf16, O = P V.
void layer_math(const AttnShape& s, const float* q, const float* k, const float* v, float* o) {
  const int D = s.D;
  const int64_t HD = static_cast<int64_t>(s.H) * D;
  std::vector<float> row(static_cast<size_t>(s.T));
  for (int h = 0; h < s.H; ++h) {
    for (int64_t i = 0; i < s.T; ++i) {
      const int64_t kend = s.causal ? i + 1 : s.T;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < kend; ++j) {
        row[j] = bf16(bf16(dot_lanes(q + i * HD + h * D, k + j * HD + h * D, D)) * s.scale);
        mx = std::max(mx, row[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < kend; ++j) sum += std::exp(static_cast<double>(row[j]) - mx);
      std::vector<double> acc(static_cast<size_t>(D), 0.0);
      for (int64_t j = 0; j < kend; ++j) {
        const float p = bf16(static_cast<float>(std::exp(static_cast<double>(row[j]) - mx) / sum));
        for (int d = 0; d < D; ++d) acc[d] += static_cast<double>(p) * v[j * HD + h * D + d];
      }
      for (int d = 0; d < D; ++d) o[i * HD + h * D + d] = static_cast<float>(acc[d]);
    }
  }
}

// One column's plumbing for a kernel: `ins` streams from DRAM and one stream back, each
// through the mem tile, split to / joined from the column's workers.
struct Column {
  std::vector<int> in;               // shim -> mem tile, per input stream
  std::vector<std::vector<int>> to;  // mem tile -> worker, per input stream, per worker
  std::vector<int> from;             // worker -> mem tile
  int out = 0;                       // mem tile -> shim
};

constexpr int kWorkersPerColumn = 2;

Status columns(SpatialSim& sim, const std::string& kernel, int ins, int64_t tile,
               std::vector<Column>* cols) {
  const SpatialMachine& m = sim.machine();
  cols->assign(static_cast<size_t>(m.columns), Column{});
  for (int c = 0; c < m.columns; ++c) {
    Column& col = (*cols)[static_cast<size_t>(c)];
    col.to.resize(static_cast<size_t>(ins));
    for (int i = 0; i < ins; ++i) {
      int id = 0;
      HANPU_RETURN_IF_ERROR(
          sim.fifo(fmt::format("{}.in{}.c{}", kernel, i, c), {c, 0}, {{c, 1}}, tile, 2, &id));
      col.in.push_back(id);
      for (int w = 0; w < kWorkersPerColumn; ++w) {
        HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("{}.in{}.c{}.w{}", kernel, i, c, w), {c, 1},
                                       {{c, 2 + w}}, tile, 2, &id));
        col.to[static_cast<size_t>(i)].push_back(id);
      }
    }
    for (int w = 0; w < kWorkersPerColumn; ++w) {
      int id = 0;
      HANPU_RETURN_IF_ERROR(sim.fifo(fmt::format("{}.out.c{}.w{}", kernel, c, w), {c, 2 + w},
                                     {{c, 1}}, tile, 2, &id));
      col.from.push_back(id);
    }
    HANPU_RETURN_IF_ERROR(
        sim.fifo(fmt::format("{}.out.c{}", kernel, c), {c, 1}, {{c, 0}}, tile, 2, &col.out));
  }
  return Status::Ok();
}

// Brings a tile of input stream `i` from DRAM to worker w of column c; returns its arrival.
int64_t fetch(SpatialSim& sim, const Column& col, int i, int w, const std::vector<int64_t>& after) {
  return sim.forward(col.in[static_cast<size_t>(i)],
                     col.to[static_cast<size_t>(i)][static_cast<size_t>(w)], after);
}

// Sends worker w's result tile to DRAM once `after` are done (the shim takes it at once).
void store(SpatialSim& sim, const Column& col, int w, const std::vector<int64_t>& after) {
  const int64_t out = sim.forward(col.from[static_cast<size_t>(w)], col.out, after);
  sim.release(col.out, 0, {out});
}

// A 64 x 64 x 64 product on worker w of column c from one tile of each input stream, both
// released after it; returns the product's event.
int64_t product(SpatialSim& sim, const Column& col, int c, int w, double macs,
                int64_t vector_bytes) {
  const int64_t a = fetch(sim, col, 0, w, {}), b = fetch(sim, col, 1, w, {});
  const int64_t mm = sim.compute({c, 2 + w}, macs, vector_bytes, 0, {a, b});
  sim.release(col.to[0][static_cast<size_t>(w)], 0, {mm});
  sim.release(col.to[1][static_cast<size_t>(w)], 0, {mm});
  return mm;
}

}  // namespace

Status layer_attention(SpatialSim& sim, const AttnShape& s, const float* q, const float* k,
                       const float* v, float* o) {
  const SpatialMachine& m = sim.machine();
  if (m.compute_rows < kWorkersPerColumn)
    return Status::Error(fmt::format("{}: too few compute rows", m.name));
  if (s.D != kSteelTile)
    return Status::Error(fmt::format("npu attn: D = {}: the tiles are 64 x 64 (D = 64)", s.D));
  const int64_t tile = static_cast<int64_t>(kSteelTile) * kSteelTile * 2;
  const int64_t NB = (s.T + kSteelTile - 1) / kSteelTile;
  const double tile_macs = static_cast<double>(kSteelTile) * kSteelTile * kSteelTile;
  const int64_t tile_vec = static_cast<int64_t>(kSteelTile) * kSteelTile * 4;
  const int workers = m.columns * kWorkersPerColumn;
  // Work items are dealt round-robin over every worker: (column, worker in the column).
  const auto worker_of = [&](int64_t item) {
    const int x = static_cast<int>(item % workers);
    return std::pair<int, int>{x / kWorkersPerColumn, x % kWorkersPerColumn};
  };
  std::vector<Column> cols;
  // 1. S = Q K^T, every block, to DRAM.
  sim.launch("gemm_qk");
  HANPU_RETURN_IF_ERROR(columns(sim, "gemm_qk", 2, tile, &cols));
  int64_t item = 0;
  for (int h = 0; h < s.H; ++h) {
    for (int64_t qb = 0; qb < NB; ++qb) {
      for (int64_t kb = 0; kb < NB; ++kb, ++item) {
        const auto [c, w] = worker_of(item);
        const Column& col = cols[static_cast<size_t>(c)];
        store(sim, col, w, {product(sim, col, c, w, tile_macs, tile_vec)});
      }
    }
  }
  // 2. S = scale S, every block: read, multiplied, written back.
  sim.launch("scale");
  HANPU_RETURN_IF_ERROR(columns(sim, "scale", 1, tile, &cols));
  item = 0;
  for (int h = 0; h < s.H; ++h) {
    for (int64_t qb = 0; qb < NB; ++qb) {
      for (int64_t kb = 0; kb < NB; ++kb, ++item) {
        const auto [c, w] = worker_of(item);
        const Column& col = cols[static_cast<size_t>(c)];
        const int64_t in = fetch(sim, col, 0, w, {});
        const int64_t e = sim.compute({c, 2 + w}, 0, tile_vec, 0, {in});
        sim.release(col.to[0][static_cast<size_t>(w)], 0, {e});
        store(sim, col, w, {e});
      }
    }
  }
  // 3. P = softmax(S) row by row: S read twice (running max and sum, then normalise).
  sim.launch("softmax");
  HANPU_RETURN_IF_ERROR(columns(sim, "softmax", 1, tile, &cols));
  item = 0;
  for (int h = 0; h < s.H; ++h) {
    for (int64_t qb = 0; qb < NB; ++qb, ++item) {
      const auto [c, w] = worker_of(item);
      const Column& col = cols[static_cast<size_t>(c)];
      const TileId t{c, 2 + w};
      for (int pass = 0; pass < 2; ++pass) {
        for (int64_t kb = 0; kb < NB; ++kb) {
          const int64_t in = fetch(sim, col, 0, w, {});
          const int64_t e = sim.compute(t, 0, 3 * tile_vec, kSteelTile * kSteelTile, {in});
          sim.release(col.to[0][static_cast<size_t>(w)], 0, {e});
          if (pass == 1) store(sim, col, w, {e});
        }
      }
    }
  }
  // 4. O = P V, each query block accumulated over every key block, to DRAM.
  sim.launch("gemm_pv");
  HANPU_RETURN_IF_ERROR(columns(sim, "gemm_pv", 2, tile, &cols));
  item = 0;
  for (int h = 0; h < s.H; ++h) {
    for (int64_t qb = 0; qb < NB; ++qb, ++item) {
      const auto [c, w] = worker_of(item);
      const Column& col = cols[static_cast<size_t>(c)];
      int64_t last = -1;
      for (int64_t kb = 0; kb < NB; ++kb) last = product(sim, col, c, w, tile_macs, tile_vec);
      store(sim, col, w, {last});
    }
  }
  layer_math(s, q, k, v, o);
  return Status::Ok();
}

}  // namespace hanpu::npu
