// npu_la_prefill (include/hanpu/npu.h): validates the call, lays the tensors out in the
// simulator's GM, runs the chosen kernel variant and turns its measures into NpuLaStats.
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "hanpu/npu.h"
#include "npu/kernels/ascend_stats.h"
#include "npu/kernels/gdn_kernels.h"
#include "npu/machine/npu_machine.h"
#include "npu/sim/npu_sim.h"
#include "plan/la_plan.h"

#include <sstream>

namespace hanpu {

namespace {

// Head dims the NPU path takes; a head's state is at most kMaxStateCells (K x V) on a core.
constexpr int kMaxHeadDim = 256;
constexpr int kMaxStateCells = 128 * 128;
// A varlen batch's rectangle (sequences by the longest) may hold at most this many times its
// tokens.
constexpr int64_t kMaxPaddedFactor = 4;

// Value-column parts per value head: the fewest that divide V into multiples of 16 whose
// K x (V / parts) state fits what a core's buffers were sized for (the 128 x 128 of Qwen3.5's
// and Kimi's heads; half that for KDA keys wider than 128, whose gated q and k copies are
// K wide beside the state). A state's value columns evolve independently (column j of S reads
// only v's column j and q, k, g, beta), so each part runs as a value head of its own sharing
// the q/k head, as grouped value heads do: what FLA's kernels do with their value-block grid
// axis for wide heads, re-reading q, k, g and beta per part.
int value_parts(bool kda, int K, int V) {
  const int64_t budget = kda && K > 128 ? kMaxStateCells / 2 : kMaxStateCells;
  for (int parts = 1;; ++parts) {
    if (V % parts != 0 || (V / parts) % 16 != 0) continue;
    if (static_cast<int64_t>(K) * (V / parts) <= budget || V / parts == 16) return parts;
  }
}

// H: the value heads (each with a state); QH: the q/k heads, H / QH value heads sharing one.
Status validate(const LaArgs& a, const NpuLaOptions& o, int64_t* T, int* H, int* QH, int* K,
                int* V) {
  if (a.q.shape.size() != 3 || a.k.shape != a.q.shape || a.v.shape.size() != 3 ||
      a.o.shape != a.v.shape) {
    return Status::Error(fmt::format(
        "npu: q {} and k {} must be [T, H, K], v {} and o {} [T, HV, V]", shape_str(a.q.shape),
        shape_str(a.k.shape), shape_str(a.v.shape), shape_str(a.o.shape)));
  }
  *T = a.q.shape[0];
  *QH = static_cast<int>(a.q.shape[1]);
  *H = static_cast<int>(a.v.shape[1]);
  *K = static_cast<int>(a.q.shape[2]);
  *V = static_cast<int>(a.v.shape[2]);
  if (*T < 1 || *QH < 1) return Status::Error("npu: T and H must be >= 1");
  if (a.v.shape[0] != *T || *H < *QH || *H % *QH != 0) {
    return Status::Error(
        fmt::format("npu: v {} must be [T, HV, V] with T {} and HV a multiple of the {} q/k heads",
                    shape_str(a.v.shape), *T, *QH));
  }
  for (const auto& [name, d] : {std::pair{"K", *K}, std::pair{"V", *V}}) {
    if (d < 16 || d > kMaxHeadDim || d % 16 != 0) {
      return Status::Error(
          fmt::format("npu: {} = {} must be a multiple of 16 in [16, {}]", name, d, kMaxHeadDim));
    }
  }
  const Shape gshape = a.mech == LaMech::kKda ? Shape{*T, *H, *K} : Shape{*T, *H};
  if (a.g.shape != gshape || a.g.dtype != DType::kF32 || a.beta.shape != Shape{*T, *H} ||
      a.beta.dtype != DType::kF32) {
    return Status::Error(fmt::format("npu: g {} must be f32 {} and beta {} f32 [{}, {}]",
                                     shape_str(a.g.shape), shape_str(gshape),
                                     shape_str(a.beta.shape), *T, *H));
  }
  int64_t N = 1, longest = *T;
  if (!a.cu_seqlens.empty()) {
    const std::vector<int64_t>& cu = a.cu_seqlens;
    if (cu.size() < 2 || cu.front() != 0 || cu.back() != *T)
      return Status::Error(
          fmt::format("npu: cu_seqlens must be N + 1 offsets from 0 to T = {} (got {} offsets)", *T,
                      cu.size()));
    N = static_cast<int64_t>(cu.size()) - 1;
    longest = 0;
    for (int64_t n = 0; n < N; ++n) {
      if (cu[n + 1] < cu[n])
        return Status::Error(fmt::format("npu: cu_seqlens[{}] = {} is below cu_seqlens[{}] = {}",
                                         n + 1, cu[n + 1], n, cu[n]));
      longest = std::max(longest, cu[n + 1] - cu[n]);
    }
    // The batch runs as a rectangle of N sequences by the longest one (see npu_la_prefill):
    // bounded so that padding cannot multiply the work past a small factor.
    if (N * longest > kMaxPaddedFactor * *T) {
      return Status::Error(fmt::format(
          "npu: varlen batch of {} sequences, the longest {} tokens: padded to {} rows, more "
          "than {}x its {} tokens (run the long sequences apart)",
          N, longest, N * longest, kMaxPaddedFactor, *T));
    }
  }
  const Shape st{N, *H, *K, *V};
  if (!a.initial_state.empty() &&
      (a.initial_state.shape != st || a.initial_state.dtype != DType::kF32)) {
    return Status::Error(fmt::format("npu: initial_state {} must be f32 {}",
                                     shape_str(a.initial_state.shape), shape_str(st)));
  }
  if (!a.final_state.empty() && (a.final_state.shape != st || a.final_state.dtype != DType::kF32)) {
    return Status::Error(fmt::format("npu: final_state {} must be f32 {}",
                                     shape_str(a.final_state.shape), shape_str(st)));
  }
  if (o.chunk_size != 16 && o.chunk_size != 32 && o.chunk_size != 64) {
    return Status::Error(fmt::format("npu: chunk_size {} must be 16, 32 or 64", o.chunk_size));
  }
  for (int64_t i = 0; i < shape_numel(gshape); ++i) {
    const float g = static_cast<const float*>(a.g.data)[i];
    if (!std::isfinite(g) || g > 0)
      return Status::Error(fmt::format("npu: g[{}] = {} must be finite and <= 0", i, g));
  }
  return Status::Ok();
}

}  // namespace

std::vector<NpuVariantInfo> npu_la_variants() {
  std::vector<NpuVariantInfo> out;
  for (const npu::GdnVariant& v : npu::gdn_variants())
    out.push_back({v.name, v.summary, v.ablation_only});
  return out;
}

std::vector<std::string> npu_targets() { return npu::npu_machine_names(); }

Status describe_npu_plan(const std::string& target, LaMech mech, int heads, int64_t seq, int dim,
                         int chunk, std::string* out) {
  const bool kda = mech == LaMech::kKda;
  if (heads < 1 || seq < 1 || dim < 16 || dim > 128 || dim % 16 != 0 ||
      (chunk != 16 && chunk != 32 && chunk != 64)) {
    return Status::Error(
        fmt::format("plan: heads {} and seq {} must be >= 1, dim {} a multiple of 16 in [16, 128], "
                    "chunk {} 16, 32 or 64",
                    heads, seq, dim, chunk));
  }
  npu::NpuMachine m;
  HANPU_RETURN_IF_ERROR(npu::load_npu_machine(target, &m));
  const plan::TargetDesc t = npu::plan_target(m);
  std::ostringstream os;
  os << fmt::format("# {} ({} cores, UB {} KiB), {}, {} heads, T = {}, C = {}, K = V = {}\n",
                    m.name, m.cores, t.ub_bytes / 1024, kda ? "KDA" : "GDN", heads, seq, chunk,
                    dim);
  const plan::ChunkGraph fla = plan::chunk_fla_order(kda, chunk, dim, dim);
  const plan::ChunkGraph ha = plan::reorder(fla);
  for (const plan::ChunkGraph* g : {&fla, &ha}) {
    os << fmt::format("\noperator order ({}): ",
                      g->order == "fla" ? "FLA's default" : "after lifetime-aware reordering");
    for (size_t i = 0; i < g->ops.size(); ++i) os << (i ? " -> " : "") << g->ops[i].name;
    const int64_t peak = plan::peak_live_bytes(*g);
    os << fmt::format(
        "\n  predicted peak of live tensors {:.1f} KiB ({} the UB), state versions live at once: "
        "{}\n",
        peak / 1024.0, peak > t.ub_bytes ? "exceeds" : "fits", plan::max_live_state_versions(*g));
  }
  const plan::LayoutPlan lp = plan::plan_layouts(chunk, dim, dim, t);
  const auto costs = plan::gdn_chain_costs(chunk, dim, dim);
  os << "\nlayout plan (dynamic programme over the chunk's vector chains; cube operands are always "
        "blocked):\n";
  for (int i = 0; i < plan::kNumChains; ++i) {
    const plan::Layout l = costs[i].state_chain ? lp.state : lp.chain[i];
    const char* sites =
        l == plan::Layout::kDense
            ? "transforms at entry (from the cube) and exit (to the cube)"
            : (costs[i].transform_out < 0 ? "one transform at exit (GM takes dense rows)"
                                          : "no transforms");
    os << fmt::format("  {:<14} {:<8} {}\n", plan::chain_name(static_cast<plan::Chain>(i)),
                      plan::layout_name(l), sites);
  }
  os << fmt::format("  state in UB across chunks: {}\n", plan::layout_name(lp.state));
  os << fmt::format(
      "  vector + transform cycles per chunk: plan {:.0f}, all dense {:.0f}, all blocked {:.0f}\n",
      lp.cycles_per_chunk,
      plan::uniform_plan(plan::Layout::kDense, chunk, dim, dim, t).cycles_per_chunk,
      plan::uniform_plan(plan::Layout::kBlocked, chunk, dim, dim, t).cycles_per_chunk);
  if (kda) {
    os << "  KDA: masks+inverse and kd run on dense rows in the kernel (its intra-chunk products "
          "are\n"
          "  formed from rows scaled per channel); the plan above applies to rhs, output and "
          "state\n";
  }
  npu::GdnGm shape;  // no tensors: the schedule's probes make their own
  shape.kda = kda;
  shape.T = seq;
  shape.H = heads;
  shape.K = shape.V = dim;
  shape.chunk = chunk;
  shape.scale = 1.0f / std::sqrt(static_cast<float>(dim));
  const plan::CoreSchedule sched = npu::fused_schedule(m, shape, lp, {});
  const double whole = plan::chunk_part_cycles(kda, chunk, dim, dim, lp, t);
  os << fmt::format(
      "\ncore schedule (modelled cycles per chunk: whole head {:.0f}, 16 columns {:.0f}", whole,
      plan::chunk_part_cycles(kda, chunk, dim, 16, lp, t));
  if (sched.chunk_split == 0)
    os << fmt::format("; busiest core {:.2f} heads' worth", sched.makespan / whole);
  os << "): " << sched.describe();
  *out = os.str();
  return Status::Ok();
}

Status npu_la_prefill(const LaArgs& a, const NpuLaOptions& o, NpuLaStats* stats) {
  int64_t T = 0;
  int H = 0, QH = 0, K = 0, V = 0;
  HANPU_RETURN_IF_ERROR(validate(a, o, &T, &H, &QH, &K, &V));
  const npu::GdnVariant* variant = nullptr;
  std::string names;
  for (const npu::GdnVariant& v : npu::gdn_variants()) {
    if (v.name == o.variant) variant = &v;
    names += (names.empty() ? "" : ", ") + std::string(v.name);
  }
  if (variant == nullptr)
    return Status::Error(fmt::format("npu: unknown variant '{}' (one of: {})", o.variant, names));
  npu::NpuMachine m;
  HANPU_RETURN_IF_ERROR(npu::load_npu_machine(o.target, &m));
  npu::NpuSim sim(m);
  // A varlen batch as a rectangle: sequence n's heads are head block n (q/k heads n QH .., value
  // heads n H ..), its tokens rows 0 .. its length, padded to the longest with rows that leave a
  // state as it was (g = 0, beta = 0, k = v = 0), so every result is exact and the kernels run
  // as on one sequence of N times the heads. The model then charges the padding's chunks, which
  // FLA's chunk indices and hanpu's queue of (sequence, head) items would skip: with sequences
  // of equal length there is none.
  const int64_t N = a.cu_seqlens.empty() ? 1 : static_cast<int64_t>(a.cu_seqlens.size()) - 1;
  std::vector<int64_t> first(N, 0), len(N, T);
  int64_t rows = T;
  if (!a.cu_seqlens.empty()) {
    rows = 1;  // a batch of empty sequences still runs a row (its states pass through)
    for (int64_t n = 0; n < N; ++n) {
      first[n] = a.cu_seqlens[n];
      len[n] = a.cu_seqlens[n + 1] - a.cu_seqlens[n];
      rows = std::max(rows, len[n]);
    }
  }
  const int QHr = static_cast<int>(N * QH), Hr = static_cast<int>(N * H);
  // Wide value heads as `parts` value heads of V / parts columns each (value_parts).
  const int parts = value_parts(a.mech == LaMech::kKda, K, V), Vp = V / parts, Hp = Hr * parts;
  npu::GdnGm gm;
  gm.T = rows;
  gm.H = Hp;
  gm.K = K;
  gm.V = Vp;
  gm.group = Hp / QHr;
  gm.qk_l2norm = a.qk_l2norm;
  gm.chunk = o.chunk_size;
  gm.scale = a.scale.value_or(1.0f / std::sqrt(static_cast<float>(K)));
  gm.q = sim.gm("q", rows, static_cast<int64_t>(QHr) * K, true);
  gm.k = sim.gm("k", rows, static_cast<int64_t>(QHr) * K, true);
  // v and o as [rows, Hr, V]: a head's parts are its consecutive column ranges.
  gm.v = sim.gm("v", rows, static_cast<int64_t>(Hp) * Vp, true);
  gm.o = sim.gm("o", rows, static_cast<int64_t>(Hp) * Vp, true);
  gm.kda = a.mech == LaMech::kKda;
  const int gate_cols = gm.kda ? K : 1;  // per value head
  gm.g = sim.gm("g", rows, static_cast<int64_t>(Hp) * gate_cols, false);
  gm.beta = sim.gm("beta", rows, Hp, false);
  // Element (row r of sequence n, head h, column c) of a [T, heads, cols] input into a
  // rectangle tensor whose head hr = n heads + h has `copies` consecutive slots (the parts).
  const auto place = [&](npu::GmTensor* t, const void* data, DType dt, int heads, int cols,
                         int copies) {
    const int64_t width = static_cast<int64_t>(N) * heads * copies * cols;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t r = 0; r < len[n]; ++r) {
        for (int h = 0; h < heads; ++h) {
          for (int c = 0; c < cols; ++c) {
            const float x = load_as_f32(data, dt, ((first[n] + r) * heads + h) * cols + c);
            const float stored = t->fp16 ? f16_bits_to_f32(f32_to_f16_bits(x)) : x;
            for (int p = 0; p < copies; ++p)
              t->v[static_cast<size_t>(r * width + ((n * heads + h) * copies + p) * cols + c)] =
                  stored;
          }
        }
      }
    }
  };
  place(gm.q, a.q.data, a.q.dtype, QH, K, 1);
  place(gm.k, a.k.data, a.k.dtype, QH, K, 1);
  place(gm.v, a.v.data, a.v.dtype, H, V, 1);
  place(gm.g, a.g.data, DType::kF32, H, gate_cols, parts);  // once per part
  place(gm.beta, a.beta.data, DType::kF32, H, 1, parts);
  // States [N, H, K, V] = [Hr, K, V] as [Hr parts, K, V / parts]: part p of head hr holds
  // columns p Vp .. + Vp.
  const auto state_at = [&](int hp, int64_t kk, int c) {
    const int hr = hp / parts, p = hp % parts;
    return (static_cast<size_t>(hr) * K + kk) * V + static_cast<size_t>(p) * Vp + c;
  };
  // f(index in the caller's state, index in the parts' state) for every cell.
  const auto each_state_cell = [&](const auto& f) {
    for (int hp = 0; hp < Hp; ++hp)
      for (int64_t kk = 0; kk < K; ++kk)
        for (int c = 0; c < Vp; ++c)
          f(state_at(hp, kk, c), static_cast<size_t>((hp * K + kk) * Vp + c));
  };
  if (!a.initial_state.empty()) {
    gm.state0 = sim.gm("state0", static_cast<int64_t>(Hp) * K, Vp, false);
    const float* s0 = static_cast<const float*>(a.initial_state.data);
    each_state_cell([&](size_t caller, size_t part) { gm.state0->v[part] = s0[caller]; });
  }
  if (!a.final_state.empty()) gm.state1 = sim.gm("state1", static_cast<int64_t>(Hp) * K, Vp, false);
  HANPU_RETURN_IF_ERROR(variant->run(sim, gm));
  const npu::SimStats s = sim.finish();
  // Outputs only after the whole run succeeded: an error leaves the caller's tensors untouched.
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t r = 0; r < len[n]; ++r) {
      for (int64_t i = 0; i < static_cast<int64_t>(H) * V; ++i) {
        store_from_f32(a.o.data, a.o.dtype, (first[n] + r) * H * V + i,
                       gm.o->v[static_cast<size_t>((r * Hr + n * H) * V + i)]);
      }
    }
  }
  if (gm.state1 != nullptr) {
    float* s1 = static_cast<float*>(a.final_state.data);
    each_state_cell([&](size_t caller, size_t part) { s1[caller] = gm.state1->v[part]; });
  }
  if (stats != nullptr) *stats = npu::ascend_stats(m, s, o.variant);
  return Status::Ok();
}

}  // namespace hanpu
