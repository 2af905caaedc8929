// NpuSim: functional execution of the machine API and the timing replay (see npu_sim.h).
#include "npu/sim/npu_sim.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "hanpu/dtype.h"
#include "simd/gemm.h"
#include "simd/vec_ops.h"

namespace hanpu::npu {

namespace {

// x[0, n) rounded to fp16 and back, with the SIMD converters (the hot loop of functional
// execution: every fp16 tile write goes through it).
void round_f16(float* x, size_t n) {
  thread_local std::vector<uint16_t> bits;
  bits.resize(n);
  simd::store_f32(bits.data(), DType::kF16, x, n);
  simd::load_f32(x, bits.data(), DType::kF16, n);
}

int64_t align_up(int64_t x, int a) { return (x + a - 1) / a * a; }

Engine engine_of(Path p) {
  switch (p) {
    case Path::kGmToL1:
    case Path::kGmToUb:
      return Engine::kMte2;
    case Path::kUbToGm:
    case Path::kUbToL1:
      return Engine::kMte3;
    case Path::kL1ToL0A:
    case Path::kL1ToL0B:
    case Path::kL1ToUb:
      return Engine::kMte1;
    case Path::kL0CToUb:
      return Engine::kVector;  // 310P: L0C -> UB goes through the vector unit
  }
  return Engine::kMte2;
}

// A GM block's transfer as bursts: one when its rows span the tensor's whole width (they
// are contiguous), else one a row. `moved`: the bytes the bursts take from the DMA path and
// the shared bandwidth, each burst at least the target's minimum efficient burst.
struct GmBursts {
  int64_t count = 0, moved = 0;
  double cycles(const NpuMachine& m, Path p) const {
    return static_cast<double>(moved) / m.path_bytes_per_cycle(p) +
           static_cast<double>(count) * m.dma_burst_setup_cycles;
  }
};

GmBursts gm_bursts(const GmBlock& b, int64_t bytes, int64_t min_burst) {
  GmBursts out;
  if (b.t->nz) {  // 16-column strips, each contiguous down every row
    out.count = b.rows == b.t->rows ? 1 : (b.cols + 15) / 16;
  } else {
    out.count = b.cols == b.t->cols || b.rows <= 1 ? 1 : b.rows;
  }
  out.moved = out.count * std::max(bytes / out.count, min_burst);
  return out;
}

}  // namespace

// First-fit placement in one buffer of one core, tracking the live and the peak bytes.
struct Placement {
  int64_t capacity = 0;
  int align = 32;
  std::map<int64_t, int64_t> used;  // offset -> bytes
  int64_t live = 0, peak = 0;

  bool take(int64_t bytes, int64_t* offset) {
    int64_t at = 0;
    for (const auto& [off, n] : used) {
      if (off - at >= bytes) break;
      at = align_up(off + n, align);
    }
    if (at + bytes > capacity) return false;
    used[at] = bytes;
    live += bytes;
    peak = std::max(peak, live);
    *offset = at;
    return true;
  }
  // The bytes a tile at `offset` held (0: none there).
  int64_t give(int64_t offset) {
    const auto it = used.find(offset);
    if (it == used.end()) return 0;
    const int64_t bytes = it->second;
    live -= bytes;
    used.erase(it);
    return bytes;
  }
};

// One buffer of one core: its placement and, for the free space, the last instruction that
// used each byte: a tile placed over bytes a freed tile held may not be written before that
// tile's last reader is done (the write-after-read order Ascend's set_flag/wait_flag pairs
// keep on a reused buffer; without it a load into a freed buffer started while the cube
// still read the old tile).
struct NpuSim::Arena {
  Placement space;
  struct FreedBytes {
    int64_t end = 0;
    int64_t last_use = -1;
  };
  std::map<int64_t, FreedBytes> freed;  // disjoint ranges [begin, end) of free bytes once used

  void give(int64_t offset, int64_t last_use) {
    const int64_t bytes = space.give(offset);
    if (bytes > 0 && last_use >= 0) freed[offset] = {offset + bytes, last_use};
  }
  // The newest last use over [b, e), which leaves the freed map (what lies outside stays).
  int64_t claim_freed(int64_t b, int64_t e) {
    int64_t newest = -1;
    auto it = freed.lower_bound(b);
    if (it != freed.begin() && std::prev(it)->second.end > b) --it;
    while (it != freed.end() && it->first < e) {
      const int64_t rb = it->first;
      const FreedBytes r = it->second;
      newest = std::max(newest, r.last_use);
      it = freed.erase(it);
      if (rb < b) freed[rb] = {b, r.last_use};
      if (r.end > e) freed[e] = {r.end, r.last_use};
    }
    return newest;
  }
};

NpuSim::NpuSim(const NpuMachine& machine) : m_(machine) {
  for (int c = 0; c < m_.cores; ++c) {
    for (int b = 0; b < kNumBufs; ++b) {
      auto a = std::make_unique<Arena>();
      a->space.capacity = m_.buffers[b].bytes;
      a->space.align = m_.buffers[b].align;
      arenas_.push_back(std::move(a));
    }
  }
}

NpuSim::~NpuSim() = default;

GmTensor* NpuSim::gm(const std::string& name, int64_t rows, int64_t cols, bool fp16,
                     bool workspace) {
  const int64_t bytes = rows * cols * (fp16 ? 2 : 4);
  if (workspace) stats_.gm_workspace_bytes += bytes;
  stats_.gm_device_bytes += bytes;
  GmTensor& t = gm_.emplace_back();
  t.name = name;
  t.rows = rows;
  t.cols = cols;
  t.fp16 = fp16;
  t.v.assign(static_cast<size_t>(rows * cols), 0.0f);
  return &t;
}

Status NpuSim::alloc(int core, Buf buf, int rows, int cols, bool fp16, Layout layout,
                     const std::string& name, Tile** out) {
  Arena& a = *arenas_[static_cast<size_t>(core) * kNumBufs + static_cast<int>(buf)];
  // Fractal operands occupy whole 16 x 16 fractals.
  const int r = layout == Layout::kNZ ? (rows + 15) / 16 * 16 : rows;
  const int c = layout == Layout::kNZ ? (cols + 15) / 16 * 16 : cols;
  const int64_t bytes = align_up(matrix_bytes(r, c, fp16), a.space.align);
  int64_t offset = 0;
  if (!a.space.take(bytes, &offset)) {
    return Status::Error(fmt::format(
        "core {}: {} cannot hold {} ({} x {} {}, {} B): {} of {} B in use", core, buf_name(buf),
        name, rows, cols, fp16 ? "fp16" : "fp32", bytes, a.space.live, a.space.capacity));
  }
  Tile& t = tiles_.emplace_back();
  t.core = core;
  t.buf = buf;
  t.rows = rows;
  t.cols = cols;
  t.fp16 = fp16;
  t.layout = layout;
  t.offset = offset;
  t.bytes = bytes;
  t.last_use = a.claim_freed(offset, offset + bytes);  // its first write waits for them
  t.name = name;
  t.v.assign(static_cast<size_t>(rows) * cols, 0.0f);
  *out = &t;
  return Status::Ok();
}

bool NpuSim::fits(int core, Buf buf, std::initializer_list<int64_t> bytes) const {
  // A copy of the placement alone: whether they fit does not depend on who used the bytes.
  Placement probe = arenas_[static_cast<size_t>(core) * kNumBufs + static_cast<int>(buf)]->space;
  int64_t offset = 0;
  for (int64_t b : bytes) {
    if (!probe.take(align_up(b, probe.align), &offset)) return false;
  }
  return true;
}

void NpuSim::free(Tile* t) {
  if (t == nullptr) return;
  arenas_[static_cast<size_t>(t->core) * kNumBufs + static_cast<int>(t->buf)]->give(t->offset,
                                                                                    t->last_use);
  t->v.clear();
  t->v.shrink_to_fit();
}

int64_t NpuSim::record(int core, Engine e, double cycles, double latency, int64_t gm_bytes,
                       const std::vector<Tile*>& reads, const std::vector<Tile*>& writes,
                       const std::vector<GmTensor*>& gm_reads, GmTensor* gm_write) {
  const int64_t id = static_cast<int64_t>(instrs_.size());
  Event in;
  in.queue = core * kNumEngines + static_cast<int>(e);
  in.cycles = cycles;
  in.latency = latency;
  in.shared_bytes = gm_bytes;
  in.epoch = epoch_;
  for (Tile* t : reads) {  // read after write
    if (t->last_write >= 0) in.deps.push_back(t->last_write);
  }
  for (Tile* t : writes) {  // write after read or write
    if (t->last_use >= 0) in.deps.push_back(t->last_use);
  }
  for (GmTensor* g : gm_reads) {
    if (static_cast<size_t>(core) < g->last_write_on_core.size() &&
        g->last_write_on_core[core] >= 0)
      in.deps.push_back(g->last_write_on_core[core]);
  }
  for (Tile* t : reads) t->last_use = std::max(t->last_use, id);
  for (Tile* t : writes) t->last_write = t->last_use = id;
  if (gm_write != nullptr) {
    if (gm_write->last_write_on_core.size() <= static_cast<size_t>(core))
      gm_write->last_write_on_core.resize(static_cast<size_t>(core) + 1, -1);
    gm_write->last_write_on_core[core] = id;
  }
  instrs_.push_back(std::move(in));
  return id;
}

void NpuSim::account_transfer(Path p, int64_t bytes, bool spill) {
  stats_.path_bytes[static_cast<int>(p)] += bytes;
  if (p == Path::kGmToL1 || p == Path::kGmToUb) stats_.gm_read_bytes += bytes;
  if (p == Path::kUbToGm) stats_.gm_write_bytes += bytes;
  if (p == Path::kL1ToL0A || p == Path::kL1ToL0B) stats_.l1_l0_bytes += bytes;
  if (spill) stats_.spill_bytes += bytes;
}

Status NpuSim::load(Tile* dst, const GmBlock& src, bool spill, int tile_row0) {
  if (dst->buf != Buf::kL1 && dst->buf != Buf::kUB) {
    return Status::Error(
        fmt::format("load into {}: GM reaches only L1 and UB", buf_name(dst->buf)));
  }
  const bool whole = tile_row0 == 0 && src.rows == dst->rows;
  if (tile_row0 < 0 || tile_row0 + src.rows > dst->rows || src.cols != dst->cols || src.row0 < 0 ||
      src.col0 < 0 || src.row0 + src.rows > src.t->rows || src.col0 + src.cols > src.t->cols ||
      (!whole && dst->layout == Layout::kNZ && tile_row0 % 16 != 0)) {
    return Status::Error(fmt::format(
        "load {} [{} x {}] rows {}+ from {} rows {}+{} cols {}+{}: shapes or bounds differ",
        dst->name, dst->rows, dst->cols, tile_row0, src.t->name, src.row0, src.rows, src.col0,
        src.cols));
  }
  if (src.t->nz && (dst->buf != Buf::kL1 || dst->layout != Layout::kNZ || src.col0 % 16 != 0)) {
    return Status::Error(fmt::format(
        "load {} from {}: an NZ tensor goes into NZ tiles in L1, whole 16-column strips", dst->name,
        src.t->name));
  }
  for (int r = 0; r < src.rows; ++r) {
    const float* row = src.t->v.data() + (src.row0 + r) * src.t->cols + src.col0;
    std::copy_n(row, src.cols, &dst->at(tile_row0 + r, 0));
  }
  if (dst->fp16) {
    round_f16(&dst->at(tile_row0, 0), static_cast<size_t>(src.rows) * src.cols);
  }
  const Path p = dst->buf == Buf::kL1 ? Path::kGmToL1 : Path::kGmToUb;
  const int64_t bytes = matrix_bytes(src.rows, src.cols, src.t->fp16);
  account_transfer(p, bytes, spill);
  const GmBursts b = gm_bursts(src, bytes, m_.dma_min_burst_bytes);
  record(dst->core, engine_of(p), b.cycles(m_, p), m_.gm_latency_cycles, b.moved, {}, {dst},
         {src.t});
  return Status::Ok();
}

Status NpuSim::store(const GmBlock& dst, Tile* src, bool spill, int tile_row0) {
  if (src->buf != Buf::kUB || src->layout != Layout::kND) {
    return Status::Error(fmt::format("store {}: only ND tiles in UB go to GM", src->name));
  }
  if (tile_row0 < 0 || tile_row0 + dst.rows > src->rows || dst.cols != src->cols ||
      dst.row0 + dst.rows > dst.t->rows || dst.col0 + dst.cols > dst.t->cols) {
    return Status::Error(
        fmt::format("store {} into {}: shapes or bounds differ", src->name, dst.t->name));
  }
  for (int r = 0; r < dst.rows; ++r) {
    float* row = dst.t->v.data() + (dst.row0 + r) * dst.t->cols + dst.col0;
    std::copy_n(&src->at(tile_row0 + r, 0), dst.cols, row);
    if (dst.t->fp16) round_f16(row, dst.cols);
  }
  const int64_t bytes = matrix_bytes(dst.rows, dst.cols, dst.t->fp16);
  account_transfer(Path::kUbToGm, bytes, spill);
  const GmBursts b = gm_bursts(dst, bytes, m_.dma_min_burst_bytes);
  record(src->core, Engine::kMte3, b.cycles(m_, Path::kUbToGm), m_.gm_latency_cycles, b.moved,
         {src}, {}, {}, dst.t);
  return Status::Ok();
}

Status NpuSim::move(Tile* dst, Tile* src, bool transpose, int row0, int col0) {
  Path p;
  if (src->buf == Buf::kUB && dst->buf == Buf::kL1) {
    p = Path::kUbToL1;
  } else if (src->buf == Buf::kL1 && dst->buf == Buf::kL0A) {
    p = Path::kL1ToL0A;
  } else if (src->buf == Buf::kL1 && dst->buf == Buf::kL0B) {
    p = Path::kL1ToL0B;
  } else if (src->buf == Buf::kL1 && dst->buf == Buf::kUB) {
    p = Path::kL1ToUb;
  } else if (src->buf == Buf::kL0C && dst->buf == Buf::kUB) {
    p = Path::kL0CToUb;
  } else {
    return Status::Error(
        fmt::format("move {} -> {}: no such path", buf_name(src->buf), buf_name(dst->buf)));
  }
  // The block of src that moves: dst's shape (before the transpose) at (row0, col0).
  const int src_rows = transpose ? dst->cols : dst->rows;
  const int src_cols = transpose ? dst->rows : dst->cols;
  const bool whole = row0 == 0 && col0 == 0 && src_rows == src->rows && src_cols == src->cols;
  if (src->core != dst->core || row0 < 0 || col0 < 0 || row0 + src_rows > src->rows ||
      col0 + src_cols > src->cols) {
    return Status::Error(
        fmt::format("move {} [{} x {}] rows {}+ cols {}+ -> {} [{} x {}]{}: shapes differ",
                    src->name, src->rows, src->cols, row0, col0, dst->name, dst->rows, dst->cols,
                    transpose ? " transposed" : ""));
  }
  if (!whole && src->layout == Layout::kNZ && (row0 % 16 != 0 || col0 % 16 != 0)) {
    return Status::Error(fmt::format("move {} rows {}+ cols {}+: an NZ block starts on a fractal",
                                     src->name, row0, col0));
  }
  const int rows = dst->rows, cols = dst->cols;
  if (src->layout != dst->layout) {
    // Only the L0 loads reorder data (between the NZ family's fractal orders); every other
    // path copies bytes as they are, so a layout change is a separate relayout.
    if (dst->buf != Buf::kL0A && dst->buf != Buf::kL0B) {
      return Status::Error(fmt::format(
          "move {} -> {}: layouts differ ({} vs {}); relayout first", src->name, dst->name,
          src->layout == Layout::kNZ ? "NZ" : "ND", dst->layout == Layout::kNZ ? "NZ" : "ND"));
    }
    if (src->layout == Layout::kND)
      return Status::Error(fmt::format("move {}: the cube's L0 takes NZ tiles", src->name));
  }
  if (transpose) {
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) dst->at(r, c) = src->at(row0 + c, col0 + r);
    }
  } else if (whole) {
    dst->v = src->v;
  } else {
    for (int r = 0; r < rows; ++r) std::copy_n(&src->at(row0 + r, col0), cols, &dst->at(r, 0));
  }
  if (dst->fp16 && !src->fp16) round_f16(dst->v.data(), dst->v.size());
  const int64_t bytes = matrix_bytes(rows, cols, src->fp16);
  account_transfer(p, bytes, false);
  record(src->core, engine_of(p), bytes / m_.path_bytes_per_cycle(p), m_.local_latency_cycles, 0,
         {src}, {dst});
  return Status::Ok();
}

Status NpuSim::mmad(Tile* c, Tile* a, Tile* b, bool accumulate) {
  if (a->buf != Buf::kL0A || b->buf != Buf::kL0B || c->buf != Buf::kL0C) {
    return Status::Error(fmt::format("mmad {} = {} x {}: operands must sit in L0A, L0B and L0C",
                                     c->name, a->name, b->name));
  }
  if (a->layout != Layout::kNZ || b->layout != Layout::kNZ || !a->fp16 || !b->fp16 || c->fp16) {
    return Status::Error(fmt::format("mmad {} = {} x {}: the cube takes fp16 NZ operands into fp32",
                                     c->name, a->name, b->name));
  }
  if (a->cols != b->rows || c->rows != a->rows || c->cols != b->cols) {
    return Status::Error(
        fmt::format("mmad {} [{} x {}] = {} [{} x {}] x {} [{} x {}]: shapes differ", c->name,
                    c->rows, c->cols, a->name, a->rows, a->cols, b->name, b->rows, b->cols));
  }
  simd::gemm(a->rows, b->cols, a->cols, simd::row_major(a->v.data(), a->cols), b->v.data(), b->cols,
             c->v.data(), c->cols, 1.0f, accumulate ? 1.0f : 0.0f);
  const int64_t fm = (a->rows + m_.cube_m - 1) / m_.cube_m,
                fk = (a->cols + m_.cube_k - 1) / m_.cube_k,
                fn = (b->cols + m_.cube_n - 1) / m_.cube_n;
  stats_.cube_macs += fm * fk * fn * static_cast<int64_t>(m_.cube_macs_per_cycle());
  const double cycles = static_cast<double>(fm * fk * fn);
  if (accumulate) {
    record(c->core, Engine::kCube, cycles, m_.cube_startup_cycles, 0, {a, b, c}, {c});
  } else {
    record(c->core, Engine::kCube, cycles, m_.cube_startup_cycles, 0, {a, b}, {c});
  }
  return Status::Ok();
}

Status NpuSim::vector(const std::vector<Tile*>& in, const std::vector<Tile*>& out, int64_t bytes,
                      bool row_op, const std::function<void()>& fn) {
  // Element order must agree: every matrix operand (more than one column) in one layout; a
  // [rows x 1] column of per-row scalars broadcasts in either.
  const Tile* first = nullptr;
  for (const std::vector<Tile*>* list : {&in, &out}) {
    for (const Tile* t : *list) {
      if (t->cols == 1) continue;
      if (first == nullptr) first = t;
      if (t->layout != first->layout) {
        return Status::Error(fmt::format("vector op on {} ({}) and {} ({}): layouts differ",
                                         first->name, first->layout == Layout::kNZ ? "NZ" : "ND",
                                         t->name, t->layout == Layout::kNZ ? "NZ" : "ND"));
      }
    }
  }
  bool nz = false;
  for (const Tile* t : in) {
    if (t->buf != Buf::kUB)
      return Status::Error(
          fmt::format("vector op reads {} in {}: UB only", t->name, buf_name(t->buf)));
    nz |= t->layout == Layout::kNZ;
  }
  for (const Tile* t : out) {
    if (t->buf != Buf::kUB)
      return Status::Error(
          fmt::format("vector op writes {} in {}: UB only", t->name, buf_name(t->buf)));
    nz |= t->layout == Layout::kNZ;
  }
  fn();
  for (Tile* t : out) {
    if (t->fp16) round_f16(t->v.data(), t->v.size());
  }
  const double factor = row_op && nz ? m_.vector_nz_row_op_factor : 1.0;
  vector_bytes_ += static_cast<double>(bytes);
  record((in.empty() ? out.front() : in.front())->core, Engine::kVector,
         factor * static_cast<double>(bytes) / m_.vector_bytes_per_cycle, m_.vector_startup_cycles,
         0, in, out);
  return Status::Ok();
}

Status NpuSim::relayout(Tile* t, Layout to) {
  if (t->layout == to) return Status::Ok();
  const int64_t bytes = 2 * matrix_bytes(t->rows, t->cols, t->fp16);  // read + write
  HANPU_RETURN_IF_ERROR(vector({t}, {t}, bytes, false, [] {}));
  t->layout = to;
  return Status::Ok();
}

void NpuSim::launch(int framework_ops) {
  ++epoch_;
  ++stats_.launches;
  stats_.framework_ops += framework_ops;
  host_cycles_ += framework_ops * m_.framework_op_us * 1e3 * m_.clock_ghz;
  epoch_overhead_.push_back(m_.launch_overhead_us * 1e3 * m_.clock_ghz);
  epoch_issue_.push_back(host_cycles_);
}

void NpuSim::host_ops(int framework_ops) {
  stats_.framework_ops += framework_ops;
  host_cycles_ += framework_ops * m_.framework_op_us * 1e3 * m_.clock_ghz;
}

Status NpuSim::cross_core_sync() {
  // Each core writes its flag to GM and then reads every core's: the GM round trip a
  // single-launch kernel pays where a multi-kernel flow pays a launch.
  if (sync_flags_ == nullptr) sync_flags_ = gm("sync_flags", 1, 8 * m_.cores, false, true);
  std::vector<Tile*> flag(m_.cores);
  for (int c = 0; c < m_.cores; ++c) {
    HANPU_RETURN_IF_ERROR(alloc(c, Buf::kUB, 1, 8, false, Layout::kND, "flag", &flag[c]));
    HANPU_RETURN_IF_ERROR(store({sync_flags_, 0, 1, 8 * c, 8}, flag[c]));
  }
  ++epoch_;
  epoch_overhead_.push_back(0.0);
  epoch_issue_.push_back(host_cycles_);
  for (int c = 0; c < m_.cores; ++c) {
    Tile* all;
    HANPU_RETURN_IF_ERROR(alloc(c, Buf::kUB, 1, 8 * m_.cores, false, Layout::kND, "flags", &all));
    HANPU_RETURN_IF_ERROR(load(all, {sync_flags_, 0, 1, 0, 8 * m_.cores}));
    free(all);
    free(flag[c]);
  }
  return Status::Ok();
}

const GmTensor* NpuSim::find_gm(const std::string& name) const {
  for (auto it = gm_.rbegin(); it != gm_.rend(); ++it) {
    if (it->name == name) return &*it;
  }
  return nullptr;
}

void NpuSim::region(const std::string& name) { regions_.emplace_back(name, epoch_); }

SimStats NpuSim::finish() {
  SimStats s = stats_;
  const int C = m_.cores;
  s.instructions = static_cast<int64_t>(instrs_.size());
  const Replay r =
      replay(instrs_, C * kNumEngines, epoch_overhead_, m_.gm_gbps / m_.clock_ghz, epoch_issue_);
  for (size_t q = 0; q < r.busy.size(); ++q) s.engine_busy_cycles[q % kNumEngines] += r.busy[q];
  const double latency = r.latency_cycles;
  s.latency_cycles = latency;
  s.latency_ms = latency / (m_.clock_ghz * 1e6);
  const auto done_before = [&](size_t i) {  // when the work before region i is done
    return i < regions_.size() ? r.epoch_done[static_cast<size_t>(regions_[i].second)] : latency;
  };
  for (size_t i = 0; i < regions_.size(); ++i) {
    s.region_ms.emplace_back(regions_[i].first,
                             (done_before(i + 1) - done_before(i)) / (m_.clock_ghz * 1e6));
  }
  for (size_t i = 0; i < arenas_.size(); ++i) {
    const int b = static_cast<int>(i % kNumBufs);
    s.peak_bytes[b] = std::max(s.peak_bytes[b], arenas_[i]->space.peak);
  }
  s.cube_util = static_cast<double>(s.cube_macs) / (m_.cube_macs_per_cycle() * C * latency);
  s.vector_util = s.engine_busy_cycles[static_cast<int>(Engine::kVector)] / (C * latency);
  // Energy: every byte is charged at the memory it leaves and the one it enters.
  const EnergyTable& e = m_.energy;
  const auto level = [&](Buf b) {
    return b == Buf::kL1 ? e.l1_byte : b == Buf::kUB ? e.ub_byte : e.l0_byte;
  };
  double pj = 0;
  const Buf src[kNumPaths] = {Buf::kL1, Buf::kUB, Buf::kUB,  Buf::kUB,
                              Buf::kL1, Buf::kL1, Buf::kL0C, Buf::kL1};
  const Buf dst[kNumPaths] = {Buf::kL1,  Buf::kUB,  Buf::kUB, Buf::kL1,
                              Buf::kL0A, Buf::kL0B, Buf::kUB, Buf::kUB};
  for (int p = 0; p < kNumPaths; ++p) {
    const double b = static_cast<double>(s.path_bytes[p]);
    if (path_touches_gm(static_cast<Path>(p))) {
      pj += b * (e.gm_byte + level(p == static_cast<int>(Path::kUbToGm) ? src[p] : dst[p]));
    } else {
      pj += b * (level(src[p]) + level(dst[p]));
    }
  }
  pj += static_cast<double>(s.cube_macs) * e.cube_mac + vector_bytes_ * (e.vector_byte + e.ub_byte);
  s.energy_mj = pj * 1e-9 + e.static_w * s.latency_ms;  // pJ -> mJ; W x ms = mJ
  return s;
}

}  // namespace hanpu::npu
