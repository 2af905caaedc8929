// The LA planner (see la_plan.h).
#include "plan/la_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace hanpu::plan {

namespace {

int add_tensor(ChunkGraph& g, const std::string& name, int64_t bytes, bool state = false) {
  g.tensors.push_back({name, bytes, state});
  return static_cast<int>(g.tensors.size()) - 1;
}

int find(const ChunkGraph& g, const std::string& name) {
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    if (g.tensors[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// Chunk inputs: live from the start of the chunk (loaded before it) until their last read.
bool is_input(const Tensor& t) {
  return t.name == "q" || t.name == "k" || t.name == "v" || t.name == "g" || t.name == "beta" ||
         t.name == "S0";
}

}  // namespace

ChunkGraph chunk_fla_order(bool kda, int C, int K, int V) {
  ChunkGraph g;
  g.order = "fla";
  g.kda = kda;
  const int64_t c = C;
  const int q = add_tensor(g, "q", c * K * 2), k = add_tensor(g, "k", c * K * 2),
            v = add_tensor(g, "v", c * V * 2);
  // KDA's gates are loaded into gam's buffer and summed there in place: g takes no room of
  // its own.
  const int gt = add_tensor(g, "g", kda ? 0 : c * 4), beta = add_tensor(g, "beta", c * 4);
  const int s0 = add_tensor(g, "S0", int64_t{K} * V * 4, true);
  // gam and exp(gam) (GDN); KDA: gam [C x K] and exp(gam_last) [K].
  const int gam = add_tensor(g, "gam", kda ? c * K * 4 + K * 4 : 2 * c * 4);
  const int L = add_tensor(g, "L", c * C * 4), A = add_tensor(g, "A", c * C * 4);
  const int W = add_tensor(g, "W", c * K * 4), U = add_tensor(g, "U", c * V * 4);
  const int vn = add_tensor(g, "Vn", c * V * 4), s1 = add_tensor(g, "S1", int64_t{K} * V * 4, true);
  const int o = add_tensor(g, "o", c * V * 2);
  if (kda) {
    const int aqk = add_tensor(g, "Aqk", c * C * 4);
    g.ops = {
        {"Gate", Unit::kVector, {gt}, {gam}},
        {"Intra", Unit::kVector, {q, k, beta, gam}, {L, aqk}},
        {"Solve", Unit::kVector, {L}, {A}},
        {"WU", Unit::kCube, {A, k, v, beta, gam}, {W, U}},
        {"H", Unit::kCube, {W, U, s0, k, gam}, {vn, s1}},
        {"O", Unit::kCube, {q, s0, vn, gam, aqk}, {o}},
    };
    return g;
  }
  g.ops = {
      {"Gate", Unit::kVector, {gt}, {gam}},
      {"KKT", Unit::kCube, {k, beta, gam}, {L}},
      {"Solve", Unit::kVector, {L}, {A}},
      {"WU", Unit::kCube, {A, k, v, beta, gam}, {W, U}},
      {"H", Unit::kCube, {W, U, s0, k, gam}, {vn, s1}},  // state-first: S1 while S0 lives on
      {"O", Unit::kCube, {q, k, s0, vn, gam}, {o}},
  };
  return g;
}

ChunkGraph reorder(const ChunkGraph& f) {
  ChunkGraph g;
  g.order = "hanpu";
  g.kda = f.kda;
  // Keep the chunk's inputs, the gates and the output; W, U, S1 disappear (rewrite and
  // in-place update); the products the GEMM-first group shares come in.
  for (const char* name : {"q", "k", "v", "g", "beta", "S0", "gam", "L", "A", "Vn", "o"}) {
    const int i = find(f, name);
    if (i >= 0) g.tensors.push_back(f.tensors[i]);
  }
  const auto id = [&](const char* n) { return find(g, n); };
  const int64_t cv = f.tensors[find(f, "Vn")].bytes, cc = f.tensors[find(f, "L")].bytes;
  const int ks = add_tensor(g, "KS0", cv), qs = add_tensor(g, "QS0", cv),
            kk = add_tensor(g, "KKT", cc), qk = add_tensor(g, "QKT", cc),
            qm = add_tensor(g, "Qm", cc);
  g.ops = {{"Gate", Unit::kVector, {id("g")}, {id("gam")}}};
  if (g.kda) {
    // GEMM-first, KDA: the decayed intra-chunk products, then [K; Q] o exp(gam) against S0
    // (in that order, so K S0 and Q S0 arrive after the intra work's scratch is gone).
    // The intra products are summed straight into L's and Qm's storage block by block and
    // masked there in place (no K K^T / Q K^T of their own, unlike GDN's cube products).
    g.ops.push_back({"Intra", Unit::kVector, {id("k"), id("q"), id("gam")}, {id("L"), qm}});
    g.ops.push_back({"H-read", Unit::kCube, {id("k"), id("q"), id("S0"), id("gam")}, {ks, qs}});
    g.ops.push_back({"Masks", Unit::kVector, {id("L"), qm, id("beta")}, {id("L"), qm}});
  } else {
    // GEMM-first group: every product that reads K or Q (and S0), before the inverse.
    g.ops.push_back({"H-read+KKT", Unit::kCube, {id("k"), id("q"), id("S0")}, {ks, qs, kk, qk}});
    g.ops.push_back({"Masks", Unit::kVector, {kk, qk, id("beta"), id("gam")}, {id("L"), qm}});
  }
  const std::vector<Op> tail = {
      // rhs = beta (V - exp(gam) K S0) written over K S0, its last use.
      {"Rhs", Unit::kVector, {id("v"), ks, id("beta"), id("gam")}, {ks}},
      {"Solve", Unit::kVector, {id("L")}, {id("A")}},
      {"ApplyA", Unit::kCube, {id("A"), ks}, {id("Vn")}},
      {"O", Unit::kCube, {qs, qm, id("Vn"), id("gam")}, {id("o")}},
      // Chunk-first: the state is updated in place after its last read by O.
      {"H-update", Unit::kCube, {id("S0"), id("k"), id("Vn"), id("gam")}, {id("S0")}},
  };
  g.ops.insert(g.ops.end(), tail.begin(), tail.end());
  return g;
}

bool order_is_legal(const ChunkGraph& g) {
  std::vector<bool> ready(g.tensors.size(), false);
  for (size_t i = 0; i < g.tensors.size(); ++i) ready[i] = is_input(g.tensors[i]);
  for (const Op& op : g.ops) {
    for (int r : op.reads) {
      if (!ready[r]) return false;
    }
    for (int w : op.writes) ready[w] = true;
  }
  return true;
}

namespace {

// [first op, last op] each tensor is live for (inputs from op 0).
std::vector<std::pair<int, int>> lifetimes(const ChunkGraph& g) {
  std::vector<std::pair<int, int>> life(g.tensors.size(), {-1, -1});
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    if (is_input(g.tensors[i])) life[i] = {0, 0};
  }
  for (int o = 0; o < static_cast<int>(g.ops.size()); ++o) {
    for (int w : g.ops[o].writes) {
      if (life[w].first < 0) life[w].first = o;
      life[w].second = std::max(life[w].second, o);
    }
    for (int r : g.ops[o].reads) life[r].second = std::max(life[r].second, o);
  }
  // A new state version is the next chunk's input: it lives to the end of the chunk.
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    if (g.tensors[i].state && life[i].first >= 0)
      life[i].second = static_cast<int>(g.ops.size()) - 1;
  }
  return life;
}

}  // namespace

int64_t peak_live_bytes(const ChunkGraph& g) {
  const auto life = lifetimes(g);
  int64_t peak = 0;
  for (int o = 0; o < static_cast<int>(g.ops.size()); ++o) {
    int64_t live = 0;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      if (life[t].first >= 0 && life[t].first <= o && o <= life[t].second)
        live += g.tensors[t].bytes;
    }
    peak = std::max(peak, live);
  }
  return peak;
}

int max_live_state_versions(const ChunkGraph& g) {
  const auto life = lifetimes(g);
  int peak = 0;
  for (int o = 0; o < static_cast<int>(g.ops.size()); ++o) {
    int n = 0;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      if (g.tensors[t].state && life[t].first >= 0 && life[t].first <= o && o <= life[t].second)
        ++n;
    }
    peak = std::max(peak, n);
  }
  return peak;
}

const char* layout_name(Layout l) { return l == Layout::kDense ? "dense" : "blocked"; }

const char* chain_name(Chain c) {
  static const char* kNames[kNumChains] = {"masks+inverse", "rhs", "output", "kd", "state"};
  return kNames[static_cast<int>(c)];
}

std::array<ChainCost, kNumChains> gdn_chain_costs(int C, int K, int V) {
  const double c = C, k = K, v = V;
  std::array<ChainCost, kNumChains> out{};
  // Masks and inverse: K K^T, Q K^T in from the cube (fp32); L's inverse row by row; Ainv
  // and Qm out to the cube (fp16).
  out[0].row_wise = 2 * (2 * c * c * 4) + inverse_vector_bytes(C);
  out[0].transform_in = 2 * (2 * c * c * 4);
  out[0].transform_out = 2 * (2 * c * c * 2);
  // rhs = beta (V - exp(gam) K S0): K S0 in, rhs out (v loads in either layout for free).
  out[1].row_wise = 3 * c * v * 4;
  out[1].transform_in = 2 * c * v * 4;
  out[1].transform_out = 2 * c * v * 2;
  // o = O + scale exp(gam) Q S0: O and Q S0 in; o leaves for GM, which takes dense rows
  // only — a blocked chain pays its transform at the exit instead.
  out[2].row_wise = 3 * c * v * 4;
  out[2].transform_in = 2 * (2 * c * v * 4);
  out[2].transform_out = -(2 * c * v * 2);  // negative: charged to the blocked choice
  // Kd = exp(gam_last - gam) o K: K from L1 and back to L1.
  out[3].row_wise = 2 * c * k * 2;
  out[3].transform_in = 2 * c * k * 2;
  out[3].transform_out = 2 * c * k * 2;
  // S = decay S + dS; S16 = fp16(S) for the cube: element-wise; dS in, S16 out.
  out[4].elementwise = 3 * k * v * 4 + k * v * 4;
  out[4].transform_in = 2 * k * v * 4;
  out[4].transform_out = 2 * k * v * 2;
  out[4].state_chain = true;
  return out;
}

namespace {

// One chain's cycles in layout `l` (for the state chain, l is the state's layout).
double chain_cycles(const ChainCost& cc, Layout l, const TargetDesc& t) {
  const double bpc = t.vector_bytes_per_cycle;
  const double transforms_blocked = cc.transform_out < 0 ? -cc.transform_out : 0;
  const double transforms_dense = cc.transform_in + std::max(cc.transform_out, 0.0);
  if (l == Layout::kDense) return (cc.elementwise + cc.row_wise + transforms_dense) / bpc;
  return (cc.elementwise + cc.row_wise * t.nz_row_op_factor + transforms_blocked) / bpc;
}

}  // namespace

double inverse_vector_bytes(int C) {
  // Forward substitution: row i = e_i - sum_{j<i} L_ij row_j, row j non-zero in columns
  // <= j: sum_i sum_{j<i} (j + 1) ~ C^3 / 6 multiply-adds, each reading and writing fp32.
  const double c = C;
  return c * (c - 1) * (c + 1) / 6 * 4 * 3;
}

double plan_cycles(const LayoutPlan& plan, const std::array<ChainCost, kNumChains>& costs,
                   const TargetDesc& t) {
  double cycles = 0;
  for (int i = 0; i < kNumChains; ++i) {
    cycles += chain_cycles(costs[i], costs[i].state_chain ? plan.state : plan.chain[i], t);
  }
  return cycles;
}

LayoutPlan plan_layouts(int C, int K, int V, const TargetDesc& t) {
  const auto costs = gdn_chain_costs(C, K, V);
  // D[i][s]: least cost of chains [0, i) with the state held in layout s; choice[i][s]: the
  // layout chain i took on the best path into (i + 1, s).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::array<std::array<double, 2>, kNumChains + 1> D{};
  std::array<std::array<Layout, 2>, kNumChains> choice{};
  std::array<std::array<int, 2>, kNumChains> from{};
  D[0] = {0.0, 0.0};  // the state enters either way: MTE2 converts the initial state on load
  for (int i = 0; i < kNumChains; ++i) {
    D[i + 1] = {kInf, kInf};
    for (int p = 0; p < 2; ++p) {
      for (int s = 0; s < 2; ++s) {
        // A non-state chain keeps the state's layout (s == p) and takes its cheaper layout;
        // the state chain sets it.
        if (!costs[i].state_chain && s != p) continue;
        for (int l = 0; l < 2; ++l) {
          const Layout lay = static_cast<Layout>(l);
          if (costs[i].state_chain && l != s) continue;
          const double c = D[i][p] + chain_cycles(costs[i], lay, t);
          if (c < D[i + 1][s]) {
            D[i + 1][s] = c;
            choice[i][s] = lay;
            from[i][s] = p;
          }
        }
      }
    }
  }
  LayoutPlan plan;
  int s = D[kNumChains][0] <= D[kNumChains][1] ? 0 : 1;
  plan.state = static_cast<Layout>(s);
  for (int i = kNumChains - 1; i >= 0; --i) {
    plan.chain[i] = choice[i][s];
    s = from[i][s];
  }
  plan.cycles_per_chunk = plan_cycles(plan, costs, t);
  return plan;
}

LayoutPlan uniform_plan(Layout l, int C, int K, int V, const TargetDesc& t) {
  LayoutPlan plan;
  plan.chain.fill(l);
  plan.state = l;
  plan.cycles_per_chunk = plan_cycles(plan, gdn_chain_costs(C, K, V), t);
  return plan;
}

double kda_intra_vector_bytes(int C, int K) {
  const double k = K;
  constexpr int kSub = 16;                       // the kernels' sub-chunk height
  double bytes = 2 * C * k * 4;                  // gates: cumsum, exp(gam_last)
  bytes += 2 * (3 * C * k * 4 + 2 * C * k * 2);  // [K; Q] o exp(gam), staged to L1
  int64_t pairs = 0;
  for (int r0 = 0; r0 < C; r0 += kSub) {
    const int n = std::min(kSub, C - r0);
    pairs += static_cast<int64_t>(n) * (n + 1) / 2;
    if (r0 == 0) continue;
    bytes += 3 * (2 * n + r0) * k * 4 + 2 * (2 * n + r0) * k * 2;  // scaled rows, staged
    bytes += 3 * (2 * n * r0 * 4);                                 // blocks back, copied in
  }
  return bytes + static_cast<double>(pairs) * k * 4 * 5;  // diagonal blocks
}

double chunk_part_cycles(bool kda, int C, int K, int w, const LayoutPlan& plan,
                         const TargetDesc& t) {
  double cycles = plan_cycles(plan, gdn_chain_costs(C, K, w), t);
  if (kda) cycles += kda_intra_vector_bytes(C, K) / t.vector_bytes_per_cycle;
  // K K^T, Q K^T (independent of w); K S0, Q S0, (I + L)^-1 rhs, Qm Vn, Kd^T Vn.
  const double c = C, k = K, v = w;
  const double macs = 2 * c * c * k + 2 * c * k * v + 2 * c * c * v + k * c * v;
  return cycles + macs / t.cube_macs_per_cycle;
}

namespace {

// The even column split of tier II: the R tail heads' columns in col_align units,
// head-major, dealt as contiguous ranges over all cores.
void deal_columns_evenly(int first_head, int R, int V, int col_align, CoreSchedule* s) {
  const int P = static_cast<int>(s->per_core.size());
  const int units_per_head = (V + col_align - 1) / col_align;
  const int units = R * units_per_head;
  int u = 0;
  for (int core = 0; core < P && u < units; ++core) {
    const int take = units / P + (core < units % P ? 1 : 0);
    int left = take;
    while (left > 0 && u < units) {
      const int head = u / units_per_head, first = u % units_per_head;
      const int n = std::min(left, units_per_head - first);
      s->per_core[core].push_back(
          {first_head + head, first * col_align, std::min(V, (first + n) * col_align)});
      u += n;
      left -= n;
    }
  }
}

// Each tail head in p parts of near-equal aligned widths, longest first to the least loaded
// core (ties: the lowest core).
void deal_parts(int first_head, int R, int V, int col_align, int p, const PartCost& cost,
                CoreSchedule* s) {
  const int P = static_cast<int>(s->per_core.size());
  const int units = (V + col_align - 1) / col_align;
  std::vector<HeadPart> parts;
  for (int h = 0; h < R; ++h) {
    for (int i = 0; i < p; ++i) {
      const int u0 = units * i / p, u1 = units * (i + 1) / p;
      parts.push_back({first_head + h, u0 * col_align, std::min(V, u1 * col_align)});
    }
  }
  std::stable_sort(parts.begin(), parts.end(), [&](const HeadPart& a, const HeadPart& b) {
    return a.col_end - a.col_begin > b.col_end - b.col_begin;
  });
  std::vector<double> load(P, 0.0);
  for (const HeadPart& part : parts) {
    const int core = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[core] += cost(part.col_end - part.col_begin);
    s->per_core[core].push_back(part);
  }
}

double makespan(const CoreSchedule& s, const PartCost& cost) {
  double worst = 0;
  for (const auto& parts : s.per_core) {
    double sum = 0;
    for (const HeadPart& p : parts) sum += cost(p.col_end - p.col_begin);
    worst = std::max(worst, sum);
  }
  return worst;
}

}  // namespace

CoreSchedule schedule_heads(int H, int V, int cores, int col_align, const PartCost& part_cost,
                            bool tail_columns_evenly) {
  const PartCost cost =
      part_cost ? part_cost : PartCost([](int w) { return static_cast<double>(w); });
  CoreSchedule base;
  base.per_core.resize(static_cast<size_t>(std::max(cores, 1)));
  const int P = static_cast<int>(base.per_core.size());
  base.whole_rounds = H / P;
  for (int h = 0; h < base.whole_rounds * P; ++h) base.per_core[h % P].push_back({h, 0, V});
  const int R = H - base.whole_rounds * P;
  if (R == 0) {
    base.tail = "no tail";
    base.makespan = makespan(base, cost);
    return base;
  }
  const int first = base.whole_rounds * P;
  const int units_per_head = (V + col_align - 1) / col_align;
  // Candidates in order of preference on ties: whole tail heads, p parts per head, then the
  // even column split.
  CoreSchedule best;
  bool have = false;
  const auto consider = [&](CoreSchedule s) {
    s.makespan = makespan(s, cost);
    if (!have || s.makespan < best.makespan * (1 - 1e-9)) {
      best = std::move(s);
      have = true;
    }
  };
  for (int p = 1; p <= units_per_head && !tail_columns_evenly; ++p) {
    CoreSchedule s = base;
    deal_parts(first, R, V, col_align, p, cost, &s);
    s.split_heads = p > 1 ? R : 0;
    s.tail = p == 1
                 ? fmt::format(
                       "{} tail head(s) whole: a column split would cost more than it balances", R)
                 : fmt::format("{} tail head(s) in {} column parts each", R, p);
    consider(std::move(s));
  }
  CoreSchedule even = base;
  deal_columns_evenly(first, R, V, col_align, &even);
  even.split_heads = R;
  even.tail = fmt::format("{} tail head(s) split by columns evenly over all cores", R);
  consider(std::move(even));
  return best;
}

void chunk_split_tail(CoreSchedule* s, int first_tail_head, int H, const std::string& why) {
  for (auto& parts : s->per_core) {
    std::erase_if(parts, [&](const HeadPart& p) { return p.head >= first_tail_head; });
  }
  s->chunk_split_heads.clear();
  for (int h = first_tail_head; h < H; ++h) s->chunk_split_heads.push_back(h);
  s->split_heads = 0;
  s->chunk_split = H - first_tail_head;
  s->tail = fmt::format(
      "{} tail head(s) chunk-split over all cores (FLA's chunk-head-chunk flow after the whole "
      "rounds): {}",
      s->chunk_split, why);
}

std::string CoreSchedule::describe() const {
  std::ostringstream os;
  os << whole_rounds << " whole round(s); " << tail;
  os << "\n";
  for (size_t c = 0; c < per_core.size(); ++c) {
    os << "  core " << c << ":";
    for (const HeadPart& p : per_core[c]) {
      os << " h" << p.head;
      if (p.col_begin != 0 || p.col_end < 0 ||
          per_core[c].size() > static_cast<size_t>(whole_rounds)) {
        os << "[" << p.col_begin << ":" << p.col_end << ")";
      }
    }
    os << "\n";
  }
  if (!chunk_split_heads.empty()) {
    os << "  then all cores, chunk-head-chunk:";
    for (int h : chunk_split_heads) os << " h" << h;
    os << "\n";
  }
  return os.str();
}

}  // namespace hanpu::plan
