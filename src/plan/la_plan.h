// HA-NPU's offline stage: pure functions of (shape, target description), no execution.
//   - the LA chunk dataflow as a small IR (GDN's operators and their tensors) in FLA's
//     default order, and the lifetime-aware reordering pass (chunk-first split of the state
//     update, GEMM-first rewrite that takes the inverse off the shared-input GEMMs' path),
//     with a lifetime analysis that predicts the peak on-core footprint of an order;
//   - layout planning: every vector chain between cube operations runs either Dense (row-
//     major, transforms at its boundaries) or Blocked (fractal, no transforms, row-wise
//     work slower); a dynamic programme over the chunk's chains carrying the recurrent
//     state's layout (the only tensor that crosses chunks) picks the cheapest plan;
//   - the three-tier core schedule: whole heads per core, tail heads split by value columns,
//     and the chunk-split fallback for extreme tails.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hanpu::plan {

// What the planner needs to know of a target (filled from an NPU machine description).
struct TargetDesc {
  int cores = 1;
  double vector_bytes_per_cycle = 256;
  double nz_row_op_factor = 2;  // row-wise vector work on fractal data runs this much slower
  int64_t ub_bytes = 256 * 1024;
  double cube_macs_per_cycle = 16 * 16 * 16;
};

// ---- IR and reordering -------------------------------------------------------------------

enum class Unit : uint8_t { kCube, kVector };

struct Tensor {
  std::string name;
  int64_t bytes = 0;
  bool state = false;  // a version of the recurrent state
};

struct Op {
  std::string name;  // Gate, KKT, Solve, WU, H, O and their split / rewritten parts
  Unit unit = Unit::kVector;
  std::vector<int> reads, writes;  // tensor ids
};

struct ChunkGraph {
  std::vector<Tensor> tensors;
  std::vector<Op> ops;  // in execution order
  std::string order;    // "fla" or "hanpu"
  bool kda = false;     // KDA's chunk (gates per key channel)
};

// The chunk in FLA's order: Gate, KKT, Solve (explicit inverse), W/U, H (state-first:
// Vn = U - W S0 and S1 = decay S0 + Kd^T Vn while S0 lives on), O (reads S0), then S0 <- S1.
// KDA: g and its cumsum are [C x K]; KKT becomes Intra, which forms the decayed K K^T and
// Q K^T (Aqk, kept for O) together, the decay inside the sums (FLA's chunk_kda).
ChunkGraph chunk_fla_order(bool kda, int C, int K, int V);
// The reordering pass: H split into H-read (K S0, Q S0, grouped with K K^T, Q K^T before the
// inverse: GEMM-first; KDA: with the intra-chunk products, [K; Q] scaled by exp(gam)) and H-update
// after O, in place (chunk-first); W = A K and U = A V rewritten as Vn = A [beta (V - exp(gam) K
// S0)].
ChunkGraph reorder(const ChunkGraph& fla_order);
// An order is legal when every tensor an op reads was written before (or is a chunk input).
bool order_is_legal(const ChunkGraph& g);
// Lifetime analysis in the graph's order: the largest sum of live tensor bytes, and the
// largest number of state versions alive at once.
int64_t peak_live_bytes(const ChunkGraph& g);
int max_live_state_versions(const ChunkGraph& g);

// ---- Layout planning ---------------------------------------------------------------------

enum class Layout : uint8_t { kDense, kBlocked };
const char* layout_name(Layout l);

// The vector chains of the reordered GDN chunk, between cube operations.
enum class Chain : uint8_t { kMasks, kRhs, kOutput, kKd, kState };
inline constexpr int kNumChains = 5;
const char* chain_name(Chain c);

// Bytes a chain's vector work touches: `elementwise` runs at full speed in either layout,
// `row_wise` is slower on fractal data; transforms into Dense at the chain's entry and back
// to Blocked at its exit (each a read and a write pass), for its inputs from the cube and
// its outputs to the cube.
struct ChainCost {
  double elementwise = 0, row_wise = 0, transform_in = 0, transform_out = 0;
  bool state_chain = false;  // reads and writes the recurrent state (cost depends on its layout)
};
std::array<ChainCost, kNumChains> gdn_chain_costs(int C, int K, int V);
// Vector bytes of (I + L)^-1 for a C x C chunk by forward substitution (the kernels charge
// the same).
double inverse_vector_bytes(int C);

struct LayoutPlan {
  std::array<Layout, kNumChains> chain{};
  Layout state = Layout::kBlocked;  // the recurrent state's layout in UB across chunks
  double cycles_per_chunk = 0;      // the plan's vector + transform cycles under the model
};
// Vector + transform cycles of one chunk under `plan` (state kept in plan.state).
double plan_cycles(const LayoutPlan& plan, const std::array<ChainCost, kNumChains>& costs,
                   const TargetDesc& t);
// The dynamic programme: D_i(s) = min_p D_{i-1}(p) + c_i(p, s) over the chunk's chains in
// order, with s the state's layout carried through and across chunks; backtracked into a plan.
LayoutPlan plan_layouts(int C, int K, int V, const TargetDesc& t);
LayoutPlan uniform_plan(Layout l, int C, int K, int V, const TargetDesc& t);

// KDA's extra vector bytes per chunk, none of them dependent on the value width: the
// per-channel gates, [K; Q] o exp(gam), the sub-chunk blocks' scaled rows and the diagonal
// blocks summed with the decay inside (the kernels charge the same).
double kda_intra_vector_bytes(int C, int K);
// Modelled cycles of one chunk of a head part `w` value columns wide: the plan's vector
// chains, KDA's intra-chunk work and the cube's products, serialised (inside a chunk they
// mostly wait on each other). The work that does not shrink with w is what a column split
// repeats on every core that holds a part.
double chunk_part_cycles(bool kda, int C, int K, int w, const LayoutPlan& plan,
                         const TargetDesc& t);

// ---- Core schedule -----------------------------------------------------------------------

struct HeadPart {
  int head = 0;
  int col_begin = 0, col_end = 0;           // value columns [col_begin, col_end)
  int64_t chunk_begin = 0, chunk_end = -1;  // chunk-split tier: chunks [begin, end); -1: all
};
struct CoreSchedule {
  std::vector<std::vector<HeadPart>> per_core;
  int whole_rounds = 0;  // tier I: rounds of whole heads
  int split_heads = 0;   // tier II: tail heads split by columns
  int chunk_split = 0;   // tier III: tail heads run chunk-head-chunk over all cores
  std::vector<int> chunk_split_heads;
  std::string tail;     // how the tail was placed and why
  double makespan = 0;  // the busiest core's cost under the part-cost model
  std::string describe() const;
};
// The cost of a head part `w` value columns wide (any unit). Empty: proportional to w.
using PartCost = std::function<double(int w)>;
// Tier I: H / P rounds of whole heads. Tier II: the R = H mod P tail heads' V columns dealt
// as evenly as col_align allows over all P cores (each part a contiguous column range of one
// head). Example, 16 heads on 10 cores, V = 128: heads 0-9 whole, heads 10-15 as 10 parts
// of 64 / 80 columns (768 columns over 10 cores, multiples of 16).
// With a part cost that has a fixed share (work every part repeats: the inverse, KDA's
// intra-chunk products), splitting can cost more than it balances: the tail is then also
// tried as whole heads and as p equal parts per head (dealt longest first to the least
// loaded core), and the placement with the smallest makespan wins (ties: fewer parts).
// `tail_columns_evenly`: the tail's even column split whatever its makespan (HA-NPU's own
// choice for 16 heads on 10 cores, reported beside the planner's).
CoreSchedule schedule_heads(int H, int V, int cores, int col_align,
                            const PartCost& part_cost = nullptr, bool tail_columns_evenly = false);
// Tier III: the tail heads (from first_tail_head on) leave the per-core lists and run
// chunk-head-chunk over all cores after the whole rounds; `why` says what decided it.
void chunk_split_tail(CoreSchedule* s, int first_tail_head, int H, const std::string& why);

}  // namespace hanpu::plan
