// The Ascend-class NPU simulator. Kernels are programs against this API: they allocate tiles
// in a core's buffers (L1, L0A, L0B, L0C, UB — capacity and alignment checked; an over-full
// buffer is an error, so a kernel that cannot fit must spill explicitly), move data along the
// machine's paths, multiply on the cube and compute on the vector unit. Every call does its
// work on the data at once (the outputs are real and checked against float64 references)
// and records an instruction: its engine, its cost from the machine's rates, the bytes it
// moved and, from the tiles it read and wrote, the instructions it depends on.
//
// finish() then replays the recorded instructions as a deterministic discrete-event
// simulation: per core, each engine (MTE2 GM->buffers, MTE1 L1->L0/UB, MTE3 UB->GM/L1, cube,
// vector) runs its queue in program order and engines overlap wherever the dependencies
// allow (what Ascend's set_flag/wait_flag pipelines do); transfers that touch GM also share
// the chip's GM bandwidth with every other core; a kernel launch boundary waits for all
// cores. Latency, busy time per engine, traffic by path, spills, peak buffer occupancy and
// energy all come out of what ran.
//
// Functional shortcut, stated: a tile's values are kept as a logical row-major fp32 array
// whatever its layout tag (fp16 tiles hold fp16-rounded values). The layout tag decides what
// is legal (the cube takes only fractal NZ operands) and what costs what (a transform is a
// vector pass; row-wise vector work on NZ data runs slower); the element order itself is not
// materialised because no result depends on it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hanpu/status.h"
#include "npu/machine/npu_machine.h"
#include "npu/sim/event_core.h"

namespace hanpu::npu {

enum class Layout : uint8_t { kND, kNZ };
enum class Engine : uint8_t { kMte2, kMte1, kMte3, kCube, kVector };
inline constexpr int kNumEngines = 5;

// A [rows x cols] matrix in one buffer of one core.
struct Tile {
  int core = 0;
  Buf buf = Buf::kUB;
  int rows = 0, cols = 0;
  bool fp16 = false;  // else fp32
  Layout layout = Layout::kND;
  int64_t offset = 0, bytes = 0;
  std::vector<float> v;                    // row-major values
  int64_t last_write = -1, last_use = -1;  // instruction ids
  std::string name;
  float& at(int r, int c) { return v[static_cast<size_t>(r) * cols + c]; }
  float at(int r, int c) const { return v[static_cast<size_t>(r) * cols + c]; }
};

// A tensor in global memory (row-major), fp16 or fp32.
struct GmTensor {
  std::string name;
  int64_t rows = 0, cols = 0;
  bool fp16 = false;
  // Stored in the cube's fractal order (NZ: 16-column strips, each contiguous down all the
  // rows), as an Ascend runtime keeps weights it casts to FRACTAL_NZ once at load: a block
  // moves as one burst per strip (one in all when it spans every row), straight into an NZ
  // tile in L1.
  bool nz = false;
  std::vector<float> v;
  // The last store into it from each core (instruction ids, -1: none). A load waits for its
  // own core's last store only: a core reading what another core wrote is ordered by the
  // launch or cross-core sync between them, as on the device, and two cores' blocks of one
  // tensor inside a launch do not wait for each other.
  std::vector<int64_t> last_write_on_core;
};

// Rows [row0, row0 + n) of columns [col0, col0 + w) of a GM tensor, rows `row_step` apart
// (e.g. token rows of one head in a [T, H*K] tensor: row_step 1, col0 = head*K).
struct GmBlock {
  GmTensor* t = nullptr;
  int64_t row0 = 0;
  int rows = 0;
  int64_t col0 = 0;
  int cols = 0;
};

struct SimStats {
  double latency_cycles = 0, latency_ms = 0;
  int64_t gm_read_bytes = 0, gm_write_bytes = 0;
  int64_t l1_l0_bytes = 0;  // L1 -> L0A / L0B
  int64_t spill_bytes = 0;  // transfers a kernel marked as spill or reload (both directions)
  int64_t gm_workspace_bytes =
      0;  // GM the kernel's intermediates occupy (FLA's W, U, h, Vn; spill slots)
  // Every GM tensor the kernel holds (inputs, outputs, states, workspace, sync flags): the
  // device memory it needs at its peak, all of them being live for the whole kernel.
  int64_t gm_device_bytes = 0;
  int64_t path_bytes[kNumPaths] = {};
  int64_t peak_bytes[kNumBufs] = {};            // the largest peak of any core
  int64_t cube_macs = 0;                        // fractal-padded MACs the cube executed
  double engine_busy_cycles[kNumEngines] = {};  // summed over cores
  double cube_util = 0;                         // executed MACs / (cores x cube peak x latency)
  double vector_util = 0;                       // vector busy / (cores x latency)
  double energy_mj = 0;
  int64_t instructions = 0;
  int launches = 0;
  int framework_ops = 0;  // eager operators the host dispatched (see NpuSim::launch)
  // Per NpuSim::region, in program order: its name and its time, from the end of the work
  // before it (so the host's dispatch and the launch overheads of its own launches count)
  // to the end of its own.
  std::vector<std::pair<std::string, double>> region_ms;
};

class NpuSim {
 public:
  explicit NpuSim(const NpuMachine& machine);
  ~NpuSim();
  NpuSim(const NpuSim&) = delete;
  NpuSim& operator=(const NpuSim&) = delete;

  const NpuMachine& machine() const { return m_; }
  // The GM tensor made last under `name` (nullptr: none), for a test to read what a program
  // made.
  const GmTensor* find_gm(const std::string& name) const;

  // A GM tensor. `workspace`: an intermediate the kernel materialises (counted in
  // SimStats::gm_workspace_bytes, the device memory a variant needs beyond inputs and outputs).
  GmTensor* gm(const std::string& name, int64_t rows, int64_t cols, bool fp16,
               bool workspace = false);

  // A tile in `buf` of `core`; an error names the buffer, its use and the request when it
  // does not fit. Tiles live until free().
  Status alloc(int core, Buf buf, int rows, int cols, bool fp16, Layout layout,
               const std::string& name, Tile** out);
  void free(Tile* t);
  // Whether tiles of these byte sizes, allocated in order, would fit in `buf` of `core` now
  // (nothing is allocated): kernels that spill decide with it before a step, not after a
  // failed one.
  bool fits(int core, Buf buf, std::initializer_list<int64_t> bytes) const;

  // GM -> L1 or UB (MTE2). An NZ destination is converted on the way (MTE2's Nd2Nz copy).
  // `tile_row0`: the block fills rows [tile_row0, tile_row0 + src.rows) of dst (whole
  // fractal rows on an NZ tile), e.g. the query rows of several heads stacked for one pass.
  Status load(Tile* dst, const GmBlock& src, bool spill = false, int tile_row0 = 0);
  // UB -> GM (MTE3); the tile must be ND (310P has no NZ->ND on this path).
  // `tile_row0`: the block is rows [tile_row0, tile_row0 + dst.rows) of src.
  Status store(const GmBlock& dst, Tile* src, bool spill = false, int tile_row0 = 0);
  // On-core moves: UB->L1 (MTE3), L1->L0A/L0B/UB (MTE1), L0C->UB (the vector path on 310P).
  // `transpose` stores src^T (L1->L0B's transposing load). fp32 -> fp16 rounds on the way;
  // the layout becomes dst's. `row0`, `col0`: the corner of the block of src that moves (its
  // shape dst's, before any transpose; whole fractals on an NZ src), e.g. one k-step of an L1
  // panel into L0.
  Status move(Tile* dst, Tile* src, bool transpose = false, int row0 = 0, int col0 = 0);
  // L0C (+)= L0A x L0B: a [m x k], b [k x n] fp16 NZ, c fp32. One 16x16x16 fractal a cycle.
  Status mmad(Tile* c, Tile* a, Tile* b, bool accumulate);
  // A vector-unit pass over `bytes` bytes that reads `in` and writes `out` (UB tiles only);
  // `fn` does the arithmetic on the tiles' values. Row-wise ops on NZ tiles run slower.
  Status vector(const std::vector<Tile*>& in, const std::vector<Tile*>& out, int64_t bytes,
                bool row_op, const std::function<void()>& fn);
  // Re-lays a UB tile out (ND <-> NZ) with the vector unit: one read and one write pass.
  Status relayout(Tile* t, Layout to);
  // A kernel launch boundary: nothing after it starts before everything before it is done,
  // plus the launch overhead. `framework_ops`: the eager framework operators the host
  // dispatches for it (each costs the machine's framework_op_us of host time, and the launch
  // cannot start before the host has issued it); 0 for a kernel launched directly.
  void launch(int framework_ops = 0);
  // The host dispatches `framework_ops` eager operators before the next launch (e.g. one
  // for a kernel whose own launches count none).
  void host_ops(int framework_ops);
  // Names the work recorded from here to the next region() (whole launches: call it before
  // a launch), so finish() reports each region's time (SimStats::region_ms).
  void region(const std::string& name);
  // All cores meet through GM inside one launch (each writes a flag, then reads them all):
  // nothing after it starts before everything before it is done and the flags went round.
  Status cross_core_sync();

  // Replays the recorded instructions (see the header comment) and returns the measures.
  SimStats finish();

 private:
  struct Arena;
  // Appends an instruction whose dependencies come from the tiles it reads (after their last
  // write) and writes (after their last use) and the GM tensors it reads.
  int64_t record(int core, Engine e, double cycles, double latency, int64_t gm_bytes,
                 const std::vector<Tile*>& reads, const std::vector<Tile*>& writes,
                 const std::vector<GmTensor*>& gm_reads = {}, GmTensor* gm_write = nullptr);
  void account_transfer(Path p, int64_t bytes, bool spill);

  const NpuMachine& m_;
  std::deque<GmTensor> gm_;
  std::vector<std::unique_ptr<Arena>> arenas_;  // [core * kNumBufs + buf]
  std::deque<Tile> tiles_;
  std::vector<Event> instrs_;  // queue = core * kNumEngines + engine; shared bytes = GM bytes
  int epoch_ = 0;
  std::vector<double> epoch_overhead_;  // per epoch boundary (launch overhead or 0)
  std::vector<double> epoch_issue_;     // per epoch boundary: when the host has issued it
  double host_cycles_ = 0;              // the host's dispatch clock
  GmTensor* sync_flags_ = nullptr;
  std::vector<std::pair<std::string, int>> regions_;  // name, the epoch open at its start
  SimStats stats_;
  double vector_bytes_ = 0;
};

// Bytes of a [rows x cols] fp16/fp32 matrix.
inline int64_t matrix_bytes(int rows, int cols, bool fp16) {
  return static_cast<int64_t>(rows) * cols * (fp16 ? 2 : 4);
}

}  // namespace hanpu::npu
