// ascend_flash_attention (see attn_ascend.h). A unit stacks `heads` query heads of one kv
// group, `bq` rows each (head i's rows at i * bq, whole fractals; rows past T are padding,
// fully masked). The running row max m, row sum l and output O stay in UB across the unit's
// key blocks (O in fractal order, as the cube leaves P V, so adding each block's product
// needs no relayout). D is reduced (Q K^T) in 128-wide steps and produced (P V) in steps of
// 128 (64 above D 128) so every operand step fits L0A / L0B and the UB holds two blocks' S.
#include "npu/kernels/attn_ascend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "npu/kernels/chunk_ops.h"

namespace hanpu::npu {

namespace {

constexpr int kReduceStep = 128;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Unit {
  int kv = 0, head0 = 0, heads = 0;  // query heads head0 .. head0 + heads - 1 of kv head kv
  int64_t q0 = 0;
  int bq = 0;     // rows per head in the tile (a multiple of 16)
  int valid = 0;  // rows per head inside T
  int rows() const { return heads * bq; }
  int64_t offset = 0;  // the position of query row 0 (keys before it: a cache)
  // The query position of stacked row r, or -1 for padding.
  int64_t position(int r) const { return r % bq < valid ? offset + q0 + r % bq : -1; }
};

// One key block after its first half: V in L1 and S = Q K^T in UB (fractal fp32).
struct KeyBlock {
  int64_t k0 = 0;
  int kr = 0;
  Tile *V1 = nullptr, *S = nullptr;
};

Status scores(CoreOps& op, const AscendAttnGm& gm, const Unit& u, Tile* Q1, int64_t k0, int kr,
              KeyBlock* out) {
  NpuSim& sim = op.sim();
  const int D = gm.D, R = u.rows();
  const int64_t col = static_cast<int64_t>(u.kv) * D;
  Tile *K1, *S;
  out->k0 = k0;
  out->kr = kr;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, kr, D, true, Layout::kNZ, "k_block", &K1));
  HANPU_RETURN_IF_ERROR(sim.load(K1, {gm.k, k0, kr, gm.k_col + col, D}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, kr, D, true, Layout::kNZ, "v_block", &out->V1));
  HANPU_RETURN_IF_ERROR(sim.load(out->V1, {gm.v, k0, kr, gm.v_col + col, D}));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, R, kr, false, Layout::kNZ, "s", &S));
  for (int d0 = 0; d0 < D; d0 += kReduceStep) {
    const int dk = std::min(kReduceStep, D - d0);
    Tile *a, *b;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0A, R, dk, true, Layout::kNZ, "q_step", &a));
    HANPU_RETURN_IF_ERROR(sim.move(a, Q1, false, 0, d0));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0B, dk, kr, true, Layout::kNZ, "kt_step", &b));
    HANPU_RETURN_IF_ERROR(sim.move(b, K1, true, 0, d0));
    HANPU_RETURN_IF_ERROR(sim.mmad(S, a, b, d0 > 0));
    op.free({a, b});
  }
  op.free({K1});
  return op.from_l0c(S, "s_ub", &out->S);
}

// The block's second half: scale and mask S, the online softmax update of m, l and O's
// scale, then O += P V.
Status accumulate(CoreOps& op, const AscendAttnGm& gm, const Unit& u, const KeyBlock& blk, Tile* O,
                  Tile* m, Tile* l) {
  NpuSim& sim = op.sim();
  const int D = gm.D, R = u.rows(), kr = blk.kr;
  Tile *S = blk.S, *P, *alpha;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, R, kr, true, Layout::kNZ, "p", &P));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, R, 1, false, Layout::kND, "alpha", &alpha));
  // A read of S, a pass for the max, a write of P.
  HANPU_RETURN_IF_ERROR(
      sim.vector({S, m, l}, {P, m, l, alpha}, 3 * matrix_bytes(R, kr, false), true, [&] {
        for (int i = 0; i < R; ++i) {
          const int64_t qi = u.position(i);
          float mx = m->v[i];
          for (int j = 0; j < kr; ++j) {
            const bool masked = qi < 0 || (gm.causal && blk.k0 + j > qi);
            S->at(i, j) = masked ? kNegInf : S->at(i, j) * gm.scale;
            mx = std::max(mx, S->at(i, j));
          }
          // A row with every key so far masked keeps m = -inf: its P is 0 and O untouched.
          const bool none = mx == kNegInf;
          float sum = 0;
          for (int j = 0; j < kr; ++j) {
            const float p = none ? 0.0f : std::exp(S->at(i, j) - mx);
            P->at(i, j) = p;
            sum += p;
          }
          alpha->v[i] = none ? 1.0f : m->v[i] == kNegInf ? 0.0f : std::exp(m->v[i] - mx);
          l->v[i] = alpha->v[i] * l->v[i] + sum;
          m->v[i] = mx;
        }
      }));
  op.free({S});
  // O *= alpha row by row (O is fractal: a row op at the NZ rate).
  HANPU_RETURN_IF_ERROR(sim.vector({O, alpha}, {O}, 2 * matrix_bytes(R, D, false), true, [&] {
    for (int i = 0; i < R; ++i) {
      for (int d = 0; d < D; ++d) O->at(i, d) *= alpha->v[i];
    }
  }));
  op.free({alpha});
  Tile *P1, *Pa;
  HANPU_RETURN_IF_ERROR(op.stage_to_l1(P, "p_l1", &P1));
  op.free({P});
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, P1, false, "p_l0", &Pa));
  op.free({P1});
  const int produce_step = D > 128 ? 64 : 128;
  for (int d0 = 0; d0 < D; d0 += produce_step) {
    const int dv = std::min(produce_step, D - d0);
    Tile *b, *pv, *pvu;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0B, kr, dv, true, Layout::kNZ, "v_step", &b));
    HANPU_RETURN_IF_ERROR(sim.move(b, blk.V1, false, 0, d0));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, R, dv, false, Layout::kNZ, "pv", &pv));
    HANPU_RETURN_IF_ERROR(sim.mmad(pv, Pa, b, false));
    op.free({b});
    HANPU_RETURN_IF_ERROR(op.from_l0c(pv, "pv_ub", &pvu));
    HANPU_RETURN_IF_ERROR(sim.vector({O, pvu}, {O}, 3 * matrix_bytes(R, dv, false), false, [&] {
      for (int i = 0; i < R; ++i) {
        for (int d = 0; d < dv; ++d) O->at(i, d0 + d) += pvu->at(i, d);
      }
    }));
    op.free({pvu});
  }
  op.free({Pa, blk.V1});
  return Status::Ok();
}

Status run_unit(CoreOps& op, const AscendAttnGm& gm, const AscendAttnTiling& t, const Unit& u) {
  NpuSim& sim = op.sim();
  const int D = gm.D, R = u.rows();
  Tile *Q1, *O, *m, *l;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, R, D, true, Layout::kNZ, "q_rows", &Q1));
  for (int i = 0; i < u.heads; ++i) {
    const int64_t col = gm.q_col + static_cast<int64_t>(u.head0 + i) * D;
    HANPU_RETURN_IF_ERROR(sim.load(Q1, {gm.q, u.q0, u.valid, col, D}, false, i * u.bq));
  }
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, R, D, false, Layout::kNZ, "o_acc", &O));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, R, 1, false, Layout::kND, "m", &m));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, R, 1, false, Layout::kND, "l", &l));
  HANPU_RETURN_IF_ERROR(sim.vector({}, {O, m, l}, matrix_bytes(R, D, false), false, [&] {
    std::fill(O->v.begin(), O->v.end(), 0.0f);
    std::fill(m->v.begin(), m->v.end(), kNegInf);
    std::fill(l->v.begin(), l->v.end(), 0.0f);
  }));
  const int64_t Tk = gm.Tk > 0 ? gm.Tk : gm.T;
  const int64_t last_row = u.offset + u.q0 + u.valid - 1;
  std::vector<int64_t> starts;
  for (int64_t k0 = 0; k0 < Tk; k0 += t.bkv) {
    if (gm.causal && t.skip_masked && k0 > last_row) break;
    starts.push_back(k0);
  }
  const auto rows_at = [&](int64_t k0) {
    return static_cast<int>(std::min<int64_t>(t.bkv, Tk - k0));
  };
  // Software pipelining: block j + 1's Q K^T is issued before block j's softmax and P V.
  KeyBlock cur, next;
  HANPU_RETURN_IF_ERROR(scores(op, gm, u, Q1, starts[0], rows_at(starts[0]), &cur));
  for (size_t j = 0; j < starts.size(); ++j) {
    if (j + 1 < starts.size()) {
      HANPU_RETURN_IF_ERROR(scores(op, gm, u, Q1, starts[j + 1], rows_at(starts[j + 1]), &next));
    }
    HANPU_RETURN_IF_ERROR(accumulate(op, gm, u, cur, O, m, l));
    cur = next;
  }
  op.free({Q1});
  // O / l, back to rows, fp16, out.
  HANPU_RETURN_IF_ERROR(sim.vector({O, l}, {O}, 2 * matrix_bytes(R, D, false), true, [&] {
    for (int i = 0; i < R; ++i) {
      const float r = l->v[i] > 0 ? 1.0f / l->v[i] : 0.0f;
      for (int d = 0; d < D; ++d) O->at(i, d) *= r;
    }
  }));
  op.free({m, l});
  HANPU_RETURN_IF_ERROR(sim.relayout(O, Layout::kND));
  Tile* h;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, R, D, true, Layout::kND, "o_f16", &h));
  HANPU_RETURN_IF_ERROR(
      sim.vector({O}, {h}, matrix_bytes(R, D, false), false, [&] { h->v = O->v; }));
  op.free({O});
  for (int i = 0; i < u.heads; ++i) {
    const int64_t col = gm.o_col + static_cast<int64_t>(u.head0 + i) * D;
    HANPU_RETURN_IF_ERROR(sim.store({gm.o, u.q0, u.valid, col, D}, h, false, i * u.bq));
  }
  op.free({h});
  return Status::Ok();
}

// A unit's heads stacked and rows a head.
struct UnitShape {
  int stack = 1, bq = 16;
};

UnitShape unit_shape(const AscendAttnGm& gm, const AscendAttnTiling& t) {
  // The running O (fp32) takes at most half the UB: 128 rows up to D 256.
  const int max_rows = std::max(16, std::min(t.rows, 32768 / gm.D) / 16 * 16);
  const int group = gm.Hq / gm.Hkv;
  UnitShape u;  // the most heads of a group that divide it and fit 16 rows each
  for (int s = 1; s <= group; ++s) {
    if (group % s == 0 && s * 16 <= max_rows) u.stack = s;
  }
  // Rows a head: as many as fit, no more than the queries need (a decode step: 16).
  u.bq = static_cast<int>(std::min<int64_t>(max_rows / u.stack / 16 * 16, (gm.T + 15) / 16 * 16));
  return u;
}

}  // namespace

double ascend_attention_events(const AscendAttnGm& gm, const AscendAttnTiling& t) {
  const UnitShape us = unit_shape(gm, t);
  const int64_t Tk = gm.Tk > 0 ? gm.Tk : gm.T;
  const int dv = gm.D > 128 ? 64 : 128;
  // Per key block: its loads, the Q K^T steps (an L0 move each way and the product), the
  // softmax and O's scale, P to L0, and each P V step (a move, the product, L0C out, the add).
  const double per_block = 10.0 + 3.0 * ((gm.D + 127) / 128) + 4.0 * ((gm.D + dv - 1) / dv);
  double blocks = 0;
  for (int64_t q0 = 0; q0 < gm.T; q0 += us.bq) {
    const int64_t last = Tk - gm.T + std::min<int64_t>(q0 + us.bq, gm.T) - 1;
    const int64_t keys = gm.causal && t.skip_masked ? std::min(Tk, last + 1) : Tk;
    blocks += static_cast<double>((keys + t.bkv - 1) / t.bkv);
  }
  const double units_a_block = static_cast<double>(gm.Hq) / us.stack;
  return units_a_block *
         (blocks * per_block + 12.0 * static_cast<double>((gm.T + us.bq - 1) / us.bq));
}

Status ascend_flash_attention(NpuSim& sim, const AscendAttnGm& gm, const AscendAttnTiling& t) {
  if (gm.T < 1 || gm.Hq < 1 || gm.Hkv < 1 || gm.Hq % gm.Hkv != 0 || gm.D < 16 || gm.D % 16 != 0 ||
      gm.D > 512) {
    return Status::Error(fmt::format(
        "ascend attention: T {}, {} query heads over {} kv heads, D {}: T >= 1, the query heads "
        "a multiple of the kv heads, D a multiple of 16 up to 512",
        gm.T, gm.Hq, gm.Hkv, gm.D));
  }
  const int64_t qcols = static_cast<int64_t>(gm.Hq) * gm.D;
  const int64_t kvcols = static_cast<int64_t>(gm.Hkv) * gm.D;
  const int64_t Tk = gm.Tk > 0 ? gm.Tk : gm.T;
  if (Tk < gm.T) {
    return Status::Error(
        fmt::format("ascend attention: {} key rows for {} queries (at least as many)", Tk, gm.T));
  }
  struct View {
    const GmTensor* t;
    int64_t rows, cols;
  };
  const View views[] = {{gm.q, gm.T, gm.q_col + qcols},
                        {gm.o, gm.T, gm.o_col + qcols},
                        {gm.k, Tk, gm.k_col + kvcols},
                        {gm.v, Tk, gm.v_col + kvcols}};
  for (const View& x : views) {
    if (x.t == nullptr || x.t->rows != x.rows || x.t->cols < x.cols || !x.t->fp16 || x.t->nz ||
        std::min({gm.q_col, gm.k_col, gm.v_col, gm.o_col}) < 0) {
      return Status::Error(fmt::format(
          "ascend attention: q, o must hold [{}, {}] and k, v [{}, {}] from their columns, "
          "fp16 row-major",
          gm.T, qcols, Tk, kvcols));
    }
  }
  if (t.rows < 16 || t.rows % 16 != 0 || t.bkv < 16 || t.bkv % 16 != 0) {
    return Status::Error(fmt::format(
        "ascend attention: {} stacked query rows and blocks of {} key rows must be multiples of "
        "16",
        t.rows, t.bkv));
  }
  const UnitShape us = unit_shape(gm, t);
  const int group = gm.Hq / gm.Hkv, stack = us.stack, bq = us.bq;
  if (const double events = ascend_attention_events(gm, t); events > kMaxAttentionEvents) {
    return Status::Error(fmt::format(
        "ascend attention: T {} over {} keys with {} kv heads would record ~{:.0f} M events on "
        "the model (~{:.1f} GiB); the limit is {:.0f} M: a shorter T or fewer heads",
        gm.T, Tk, gm.Hkv, events / 1e6, events * 135 / (1 << 30), kMaxAttentionEvents / 1e6));
  }
  const int P = sim.machine().cores;
  const int64_t blocks = (gm.T + bq - 1) / bq;
  int64_t unit = 0;
  for (int64_t b = blocks - 1; b >= 0; --b) {
    for (int kv = 0; kv < gm.Hkv; ++kv) {
      for (int h0 = kv * group; h0 < (kv + 1) * group; h0 += stack) {
        Unit u;
        u.kv = kv;
        u.head0 = h0;
        u.heads = stack;
        u.q0 = b * bq;
        u.bq = bq;
        u.valid = static_cast<int>(std::min<int64_t>(bq, gm.T - u.q0));
        u.offset = Tk - gm.T;
        CoreOps op(sim, static_cast<int>(unit++ % P));
        HANPU_RETURN_IF_ERROR(run_unit(op, gm, t, u));
      }
    }
  }
  return Status::Ok();
}

}  // namespace hanpu::npu
