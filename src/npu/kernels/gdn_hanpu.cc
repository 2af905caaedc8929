// HA-NPU's fused GDN kernel on the simulated Ascend core, with each technique switchable for
// the ablation (see gdn_kernels.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "npu/kernels/gdn_kernels.h"

namespace hanpu::npu {

namespace {

Layout to_sim(plan::Layout l) { return l == plan::Layout::kDense ? Layout::kND : Layout::kNZ; }

// One chunk's inputs, loaded one chunk ahead (double buffering: MTE2 fetches chunk n + 1
// while the cube and vector units work on chunk n).
struct ChunkIn {
  int64_t t0 = 0;
  int c = 0;
  Tile *k = nullptr, *q = nullptr, *v = nullptr, *beta = nullptr, *gam = nullptr, *egam = nullptr;
  Tile* elast = nullptr;  // KDA: exp(gam_last) per key channel [K x 1]
};

class FusedHead {
 public:
  FusedHead(CoreOps& op, const GdnGm& gm, const plan::HeadPart& part,
            const plan::LayoutPlan& layouts, const GdnTechniques& tech)
      : op_(op),
        sim_(op.sim()),
        gm_(gm),
        h_(part.head),
        c0_(part.col_begin),
        w_(part.col_end - part.col_begin),
        plan_(layouts),
        tech_(tech) {}

  Status run() {
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, gm_.K, w_, false, state_layout(), "S", &S_));
    if (gm_.state0 !=
        nullptr) {  // MTE2 converts to fractals on the way if the plan keeps S blocked
      HANPU_RETURN_IF_ERROR(
          sim_.load(S_, {gm_.state0, static_cast<int64_t>(h_) * gm_.K, gm_.K, c0_, w_}));
    } else {
      HANPU_RETURN_IF_ERROR(sim_.vector({}, {S_}, matrix_bytes(gm_.K, w_, false), false, [] {}));
    }
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(S_, "S16", &S16_));
    ChunkIn cur;
    HANPU_RETURN_IF_ERROR(load(0, &cur));
    while (cur.c > 0) {
      ChunkIn next;
      if (cur.t0 + cur.c < gm_.T) HANPU_RETURN_IF_ERROR(load(cur.t0 + cur.c, &next));
      HANPU_RETURN_IF_ERROR(!tech_.reorder ? chunk_state_first(cur)
                            : gm_.kda      ? chunk_reordered_kda(cur)
                                           : chunk_reordered(cur));
      cur = next;
    }
    if (gm_.state1 != nullptr) {
      HANPU_RETURN_IF_ERROR(op_.to_layout(S_, Layout::kND));  // GM takes dense rows
      HANPU_RETURN_IF_ERROR(
          sim_.store({gm_.state1, static_cast<int64_t>(h_) * gm_.K, gm_.K, c0_, w_}, S_));
    }
    op_.free({S_, S16_});
    return Status::Ok();
  }

 private:
  Layout layout(plan::Chain c) const { return to_sim(plan_.chain[static_cast<int>(c)]); }
  Layout state_layout() const { return to_sim(plan_.state); }

  Status load(int64_t t0, ChunkIn* in) {
    in->t0 = t0;
    in->c = static_cast<int>(std::min<int64_t>(gm_.chunk, gm_.T - t0));
    const int c = in->c, K = gm_.K;
    if (gm_.qk_l2norm) {  // through UB: normalised on the vector unit, then staged to L1
      HANPU_RETURN_IF_ERROR(load_normalised(gm_.k, t0, c, "k", &in->k));
      HANPU_RETURN_IF_ERROR(load_normalised(gm_.q, t0, c, "q", &in->q));
    } else {
      HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", &in->k));
      HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL1, c, K, true, Layout::kNZ, "q", &in->q));
      HANPU_RETURN_IF_ERROR(sim_.load(in->k, {gm_.k, t0, c, gm_.qk_col(h_), K}));
      HANPU_RETURN_IF_ERROR(sim_.load(in->q, {gm_.q, t0, c, gm_.qk_col(h_), K}));
    }
    // v arrives in the layout its chain works in (MTE2's Nd2Nz copy is free of vector time).
    const Layout vl = tech_.reorder ? layout(plan::Chain::kRhs) : Layout::kND;
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, c, w_, true, vl, "v", &in->v));
    HANPU_RETURN_IF_ERROR(
        sim_.load(in->v, {gm_.v, t0, c, static_cast<int64_t>(h_) * gm_.V + c0_, w_}));
    if (gm_.kda)
      return Status::Ok();  // KDA's [c x K] gates are made at the chunk's start (UB space)
    return op_.gates(gm_, t0, c, h_, &in->beta, &in->gam, &in->egam);
  }

  // One chunk of q or k rows of this head, L2-normalised, as an fp16 NZ tile in L1.
  Status load_normalised(GmTensor* src, int64_t t0, int c, const char* name, Tile** l1) {
    Tile* u;
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, c, gm_.K, true, Layout::kND, name, &u));
    HANPU_RETURN_IF_ERROR(sim_.load(u, {src, t0, c, gm_.qk_col(h_), gm_.K}));
    HANPU_RETURN_IF_ERROR(op_.l2norm_rows(u));
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(u, name, l1));
    op_.free({u});
    return Status::Ok();
  }

  // The GEMM-first group: K and Q go to L0A once and serve K S0, Q S0 (when `with_state`),
  // K K^T and Q K^T.
  Status gemm_group(const ChunkIn& in, bool with_state, Tile** KS, Tile** QS, Tile** KK,
                    Tile** QK) {
    const int c = in.c;
    Tile *Ka, *Qa, *Sb, *KTb;
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0A, in.k, false, "K", &Ka));
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0A, in.q, false, "Q", &Qa));
    Tile *ks = nullptr, *qs = nullptr, *kk, *qk;
    if (with_state) {
      HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0B, S16_, false, "S0", &Sb));
      HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, c, w_, false, Layout::kNZ, "KS0", &ks));
      HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, c, w_, false, Layout::kNZ, "QS0", &qs));
      HANPU_RETURN_IF_ERROR(sim_.mmad(ks, Ka, Sb, false));
      HANPU_RETURN_IF_ERROR(sim_.mmad(qs, Qa, Sb, false));
      op_.free({Sb});
    }
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0B, in.k, true, "KT", &KTb));
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, c, c, false, Layout::kNZ, "KKT", &kk));
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, c, c, false, Layout::kNZ, "QKT", &qk));
    HANPU_RETURN_IF_ERROR(sim_.mmad(kk, Ka, KTb, false));
    HANPU_RETURN_IF_ERROR(sim_.mmad(qk, Qa, KTb, false));
    op_.free({KTb, Ka, Qa});
    if (with_state) {
      HANPU_RETURN_IF_ERROR(op_.from_l0c(ks, "KS0", KS));
      HANPU_RETURN_IF_ERROR(op_.from_l0c(qs, "QS0", QS));
    }
    HANPU_RETURN_IF_ERROR(op_.from_l0c(kk, "L", KK));
    return op_.from_l0c(qk, "Qm", QK);
  }

  // C = A B on the cube from a UB matrix A (staged to L1 as fp16 fractals) and an L1 B.
  Status product(Tile* a_ub, Tile* b_l1, const std::string& name, int rows, int cols,
                 Tile** out_ub) {
    Tile* A1;
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(a_ub, name + ".a", &A1));
    HANPU_RETURN_IF_ERROR(product_l1(A1, b_l1, name, rows, cols, out_ub));
    op_.free({A1});
    return Status::Ok();
  }
  Status product_l1(Tile* a_l1, Tile* b_l1, const std::string& name, int rows, int cols,
                    Tile** out_ub) {
    Tile *Aa, *Bb, *C;
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0A, a_l1, false, name + ".a", &Aa));
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0B, b_l1, false, name + ".b", &Bb));
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, rows, cols, false, Layout::kNZ, name, &C));
    HANPU_RETURN_IF_ERROR(sim_.mmad(C, Aa, Bb, false));
    op_.free({Aa, Bb});
    return op_.from_l0c(C, name, out_ub);
  }
  // The same with B already in L0B (a B two products share is loaded once: GEMM-first).
  Status product_l0b(Tile* a_l1, Tile* b_l0, const std::string& name, int rows, int cols,
                     Tile** out_ub) {
    Tile *Aa, *C;
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0A, a_l1, false, name + ".a", &Aa));
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, rows, cols, false, Layout::kNZ, name, &C));
    HANPU_RETURN_IF_ERROR(sim_.mmad(C, Aa, b_l0, false));
    op_.free({Aa});
    return op_.from_l0c(C, name, out_ub);
  }

  // Kd^T Vn: Kd = exp(gam_last - gam) o K computed in UB in the kd chain's layout (GDN: one
  // factor per row; KDA: one per element, from the per-channel gates).
  Status state_delta(const ChunkIn& in, Tile* Vn1, Layout kd_layout, Tile** dS) {
    Tile* Vnb;
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0B, Vn1, false, "Vn", &Vnb));
    HANPU_RETURN_IF_ERROR(state_delta_l0b(in, Vnb, kd_layout, dS));
    op_.free({Vnb});
    return Status::Ok();
  }
  // The same with Vn already in L0B.
  Status state_delta_l0b(const ChunkIn& in, Tile* Vnb, Layout kd_layout, Tile** dS) {
    const int c = in.c, K = gm_.K;
    Tile *Kub, *Kd1, *KdT, *U;
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, c, K, true, Layout::kNZ, "kd", &Kub));
    HANPU_RETURN_IF_ERROR(sim_.move(Kub, in.k));
    HANPU_RETURN_IF_ERROR(op_.to_layout(Kub, kd_layout));
    HANPU_RETURN_IF_ERROR(op_.decay_to_chunk_end(Kub, in.gam, gm_.kda));
    HANPU_RETURN_IF_ERROR(op_.to_layout(Kub, Layout::kNZ));
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL1, c, K, true, Layout::kNZ, "kd", &Kd1));
    HANPU_RETURN_IF_ERROR(sim_.move(Kd1, Kub));
    op_.free({Kub});
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0A, Kd1, true, "kdT", &KdT));
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, K, w_, false, Layout::kNZ, "dS", &U));
    HANPU_RETURN_IF_ERROR(sim_.mmad(U, KdT, Vnb, false));
    op_.free({KdT, Kd1});
    return op_.from_l0c(U, "dS", dS);
  }

  // o = O + scale exp(gam) Q S0 in the output chain's layout, stored as dense rows.
  Status output(const ChunkIn& in, Tile* O, Tile* QS, Layout l) {
    const int c = in.c;
    HANPU_RETURN_IF_ERROR(op_.to_layout(O, l));
    HANPU_RETURN_IF_ERROR(op_.to_layout(QS, l));
    Tile* o16;
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, c, w_, true, l, "o", &o16));
    const float scale = gm_.scale;
    Tile* egam = in.egam;
    const bool kda = gm_.kda;  // KDA's Q S0 already carries exp(gam) per channel
    std::vector<Tile*> ins = {O, QS};
    if (!kda) ins.push_back(egam);
    HANPU_RETURN_IF_ERROR(sim_.vector(ins, {o16}, 3 * matrix_bytes(c, w_, false), !kda, [&] {
      for (int i = 0; i < c; ++i) {
        const float f = kda ? scale : scale * egam->v[i];
        for (int j = 0; j < w_; ++j) o16->at(i, j) = O->at(i, j) + f * QS->at(i, j);
      }
    }));
    op_.free({O, QS});
    HANPU_RETURN_IF_ERROR(op_.to_layout(o16, Layout::kND));
    HANPU_RETURN_IF_ERROR(
        sim_.store({gm_.o, in.t0, c, static_cast<int64_t>(h_) * gm_.V + c0_, w_}, o16));
    op_.free({o16});
    return Status::Ok();
  }

  // S = exp(gam_last) S + dS in place (KDA: diag(exp(gam_last)) S, a factor per state row);
  // S16 refreshed.
  Status commit_state(const ChunkIn& in, Tile* dS) {
    Tile* S = S_;
    HANPU_RETURN_IF_ERROR(op_.to_layout(dS, S->layout));
    if (gm_.kda) {
      Tile* elast = in.elast;
      HANPU_RETURN_IF_ERROR(
          sim_.vector({S, dS, elast}, {S}, 3 * matrix_bytes(gm_.K, w_, false), true, [&] {
            for (int d = 0; d < gm_.K; ++d) {
              for (int j = 0; j < w_; ++j) S->at(d, j) = elast->v[d] * S->at(d, j) + dS->at(d, j);
            }
          }));
    } else {
      const float decay = std::exp(in.gam->v[in.c - 1]);
      HANPU_RETURN_IF_ERROR(
          sim_.vector({S, dS}, {S}, 3 * matrix_bytes(gm_.K, w_, false), false, [&] {
            for (size_t i = 0; i < S->v.size(); ++i) S->v[i] = decay * S->v[i] + dS->v[i];
          }));
    }
    op_.free({dS, S16_});
    return op_.stage_to_l1(S, "S16", &S16_);
  }

  // The reordered chunk's common tail once L, Qm, rhs (written over K S0) and Q S0 are in
  // UB: Vn = (I + L)^-1 rhs (the GEMM-first rewrite: A applied to one right-hand side), the
  // outputs, then the state updated in place (chunk-first).
  Status solve_output_update(ChunkIn& in, Tile* L, Tile* rhs, Tile* Qm, Tile* QS) {
    const int c = in.c;
    Tile *Ainv, *R1, *Vn, *Vn1, *O, *dS;
    HANPU_RETURN_IF_ERROR(op_.unit_lower_inverse(L, "Ainv", &Ainv));
    op_.free({L});
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(rhs, "rhs", &R1));
    op_.free({rhs});
    HANPU_RETURN_IF_ERROR(product(Ainv, R1, "Vn", c, w_, &Vn));
    op_.free({Ainv, R1});
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(Vn, "Vn", &Vn1));
    op_.free({Vn});
    // Vn is the right operand of both the output's Qm Vn and the state's Kd^T Vn: it goes to
    // L0B once and stays there for both (GEMM-first: shared inputs reused on the core).
    Tile *Vnb, *Qm1;
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0B, Vn1, false, "Vn", &Vnb));
    op_.free({Vn1});
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(Qm, "O.a", &Qm1));
    op_.free({Qm});
    HANPU_RETURN_IF_ERROR(product_l0b(Qm1, Vnb, "O", c, w_, &O));
    op_.free({Qm1});
    HANPU_RETURN_IF_ERROR(output(in, O, QS, layout(plan::Chain::kOutput)));
    // KDA's kd chain is not planned yet (the DP's chain costs are GDN's): dense rows.
    HANPU_RETURN_IF_ERROR(
        state_delta_l0b(in, Vnb, gm_.kda ? Layout::kND : layout(plan::Chain::kKd), &dS));
    op_.free({Vnb});
    HANPU_RETURN_IF_ERROR(commit_state(in, dS));
    release(in);
    return Status::Ok();
  }

  // Spill slot `slot` of this head's GM scratch: row offset of the slot (each K rows high).
  int64_t spill_row(int slot) const {
    return static_cast<int64_t>(slot) * std::max(gm_.K, gm_.chunk);
  }
  // Writes a UB tile to the head's GM scratch (counted as spill) and frees it.
  Status spill_out(Tile*& t, int slot) {
    if (spill_ == nullptr)
      spill_ = sim_.gm("spill", 2 * spill_row(1), std::max(gm_.chunk, w_), false, true);
    HANPU_RETURN_IF_ERROR(op_.to_layout(t, Layout::kND));
    HANPU_RETURN_IF_ERROR(
        sim_.store({spill_, spill_row(slot), t->rows, 0, t->cols}, t, /*spill=*/true));
    op_.free({t});
    t = nullptr;
    return Status::Ok();
  }
  Status spill_in(Tile** t, int rows, int cols, int slot) {
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, rows, cols, false, Layout::kND, "reload", t));
    return sim_.load(*t, {spill_, spill_row(slot), rows, 0, cols}, /*spill=*/true);
  }

  void release(ChunkIn& in) { op_.free({in.k, in.q, in.v, in.beta, in.gam, in.egam, in.elast}); }

  // KDA, HA-NPU's order: the decay is per key channel and inside every sum, so K and Q are
  // scaled before the products: [K; Q] o exp(gam) against S0; the intra-chunk K K^T / Q K^T
  // as 16-row sub-chunk blocks — off-diagonal blocks on the cube with both factors taken at
  // the block's first row (exponents <= 0), diagonal blocks on the vector unit with
  // exp(gam_i - gam_j) directly; then rhs, (I + L)^-1, outputs and the in-place update with
  // diag(exp(gam_last)) S + (K o exp(gam_last - gam))^T Vn.
  Status chunk_reordered_kda(ChunkIn& in) {
    const int c = in.c;
    HANPU_RETURN_IF_ERROR(op_.kda_gates(gm_, in.t0, c, h_, &in.beta, &in.gam, &in.elast));
    Tile *Ku, *Qu;
    HANPU_RETURN_IF_ERROR(op_.l1_to_ub_rows(in.k, "k", &Ku));
    HANPU_RETURN_IF_ERROR(op_.l1_to_ub_rows(in.q, "q", &Qu));
    Tile* gam = in.gam;
    // [K; Q] o exp(gam) against S0.
    Tile *Kg, *Qg, *Kg1, *Qg1, *KS, *QS;
    const auto egam = [&](int i, int d) { return std::exp(gam->at(i, d)); };
    HANPU_RETURN_IF_ERROR(op_.channel_scaled(Ku, gam, 0, c, "kg", egam, &Kg));
    HANPU_RETURN_IF_ERROR(op_.channel_scaled(Qu, gam, 0, c, "qg", egam, &Qg));
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(Kg, "kg", &Kg1));
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(Qg, "qg", &Qg1));
    op_.free({Kg, Qg});
    // Intra-chunk decayed products (before K S0 and Q S0 come back to UB: less live at once).
    Tile *L, *Qm;
    HANPU_RETURN_IF_ERROR(op_.kda_intra(Ku, Qu, gam, &L, &Qm));
    op_.free({Ku, Qu});
    // S0 is the right operand of both: to L0B once (GEMM-first).
    Tile* Sb;
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0B, S16_, false, "S0", &Sb));
    HANPU_RETURN_IF_ERROR(product_l0b(Kg1, Sb, "KS0", c, w_, &KS));
    HANPU_RETURN_IF_ERROR(product_l0b(Qg1, Sb, "QS0", c, w_, &QS));
    op_.free({Kg1, Qg1, Sb});
    Tile* beta = in.beta;
    HANPU_RETURN_IF_ERROR(op_.kda_masks(L, Qm, beta, gm_.scale));
    // rhs = beta (V - K S0 e), over K S0's storage.
    const Layout rl = layout(plan::Chain::kRhs);
    HANPU_RETURN_IF_ERROR(op_.to_layout(KS, rl));
    Tile* v = in.v;
    HANPU_RETURN_IF_ERROR(
        sim_.vector({v, KS, beta}, {KS}, 3 * matrix_bytes(c, w_, false), true, [&] {
          for (int i = 0; i < c; ++i) {
            for (int j = 0; j < w_; ++j) KS->at(i, j) = beta->v[i] * (v->at(i, j) - KS->at(i, j));
          }
        }));
    return solve_output_update(in, L, KS, Qm, QS);
  }

  // HA-NPU's order: GEMM-first group, masks, rhs, (I + L)^-1 rhs, outputs, then the state
  // updated in place (chunk-first). Each vector chain runs in its planned layout.
  Status chunk_reordered(ChunkIn& in) {
    const int c = in.c;
    Tile *KS, *QS, *L, *Qm;
    HANPU_RETURN_IF_ERROR(gemm_group(in, true, &KS, &QS, &L, &Qm));
    const Layout ml = layout(plan::Chain::kMasks);
    HANPU_RETURN_IF_ERROR(op_.to_layout(L, ml));
    HANPU_RETURN_IF_ERROR(op_.to_layout(Qm, ml));
    HANPU_RETURN_IF_ERROR(op_.decay_masks(L, Qm, in.beta, in.gam, gm_.scale));
    // rhs = beta (V - exp(gam) K S0), written over K S0 (its last use).
    const Layout rl = layout(plan::Chain::kRhs);
    HANPU_RETURN_IF_ERROR(op_.to_layout(KS, rl));
    Tile *v = in.v, *beta = in.beta, *egam = in.egam;
    HANPU_RETURN_IF_ERROR(
        sim_.vector({v, KS, beta, egam}, {KS}, 3 * matrix_bytes(c, w_, false), true, [&] {
          for (int i = 0; i < c; ++i) {
            for (int j = 0; j < w_; ++j)
              KS->at(i, j) = beta->v[i] * (v->at(i, j) - egam->v[i] * KS->at(i, j));
          }
        }));
    return solve_output_update(in, L, KS, Qm, QS);
  }

  // FLA's operator order fused on the core (the ablation's "+mapping" step): explicit
  // A = (I + L)^-1, W and U, Vn = U - W S0, the new state S1 computed state-first into a
  // second buffer while S0 lives on for the output, then S0 <- S1. Dense layouts throughout
  // (a transform at every cube <-> vector hand-off), as without a layout plan.
  // KDA: the same with the per-channel decays inside the intra-chunk products, in K's
  // scaling for W and Q S0, and per state row in the update.
  Status chunk_state_first(ChunkIn& in) {
    const int c = in.c, K = gm_.K;
    const bool kda = gm_.kda;
    Tile *L, *Qm, *Qg1 = nullptr;
    if (kda) {
      HANPU_RETURN_IF_ERROR(op_.kda_gates(gm_, in.t0, c, h_, &in.beta, &in.gam, &in.elast));
      Tile *Ku, *Qu, *Qg;
      HANPU_RETURN_IF_ERROR(op_.l1_to_ub_rows(in.k, "k", &Ku));
      HANPU_RETURN_IF_ERROR(op_.l1_to_ub_rows(in.q, "q", &Qu));
      HANPU_RETURN_IF_ERROR(op_.kda_intra(Ku, Qu, in.gam, &L, &Qm));
      HANPU_RETURN_IF_ERROR(op_.kda_masks(L, Qm, in.beta, gm_.scale));
      Tile* gam = in.gam;
      const auto egam = [&](int i, int d) { return std::exp(gam->at(i, d)); };
      HANPU_RETURN_IF_ERROR(op_.channel_scaled(Qu, gam, 0, c, "qg", egam, &Qg));
      HANPU_RETURN_IF_ERROR(op_.stage_to_l1(Qg, "qg", &Qg1));
      op_.free({Ku, Qu, Qg});
    } else {
      HANPU_RETURN_IF_ERROR(gemm_group(in, false, nullptr, nullptr, &L, &Qm));
      HANPU_RETURN_IF_ERROR(op_.to_layout(L, Layout::kND));
      HANPU_RETURN_IF_ERROR(op_.to_layout(Qm, Layout::kND));
      HANPU_RETURN_IF_ERROR(op_.decay_masks(L, Qm, in.beta, in.gam, gm_.scale));
    }
    Tile *Ainv, *A1;
    HANPU_RETURN_IF_ERROR(op_.unit_lower_inverse(L, "A", &Ainv));
    op_.free({L});
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(Ainv, "A", &A1));
    op_.free({Ainv});
    // W = A diag(beta exp(gam)) K and U = A diag(beta) V.
    Tile *kb, *vb, *kb1, *vb1, *W, *U, *W1, *WS;
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, c, K, true, Layout::kNZ, "kb", &kb));
    HANPU_RETURN_IF_ERROR(sim_.move(kb, in.k));
    HANPU_RETURN_IF_ERROR(op_.to_layout(kb, Layout::kND));
    Tile *beta = in.beta, *egam = in.egam, *v = in.v;
    Tile* gam = in.gam;
    if (kda) {
      HANPU_RETURN_IF_ERROR(
          sim_.vector({kb, beta, gam}, {kb}, 3 * matrix_bytes(c, K, true), true, [&] {
            for (int i = 0; i < c; ++i) {
              for (int j = 0; j < K; ++j) kb->at(i, j) *= beta->v[i] * std::exp(gam->at(i, j));
            }
          }));
    } else {
      HANPU_RETURN_IF_ERROR(
          sim_.vector({kb, beta, egam}, {kb}, 2 * matrix_bytes(c, K, true), true, [&] {
            for (int i = 0; i < c; ++i) {
              for (int j = 0; j < K; ++j) kb->at(i, j) *= beta->v[i] * egam->v[i];
            }
          }));
    }
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, c, w_, true, Layout::kND, "vb", &vb));
    HANPU_RETURN_IF_ERROR(sim_.vector({v, beta}, {vb}, 2 * matrix_bytes(c, w_, true), true, [&] {
      for (int i = 0; i < c; ++i) {
        for (int j = 0; j < w_; ++j) vb->at(i, j) = beta->v[i] * v->at(i, j);
      }
    }));
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(kb, "kb", &kb1));
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(vb, "vb", &vb1));
    op_.free({kb, vb});
    HANPU_RETURN_IF_ERROR(product_l1(A1, kb1, "W", c, K, &W));
    HANPU_RETURN_IF_ERROR(product_l1(A1, vb1, "U", c, w_, &U));
    op_.free({A1, kb1, vb1});
    HANPU_RETURN_IF_ERROR(op_.to_layout(W, Layout::kND));
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(W, "W", &W1));
    op_.free({W});
    // Vn = U - W S0
    Tile *Wa, *Sb, *WSc;
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0A, W1, false, "W", &Wa));
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0B, S16_, false, "S0", &Sb));
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, c, w_, false, Layout::kNZ, "WS0", &WSc));
    HANPU_RETURN_IF_ERROR(sim_.mmad(WSc, Wa, Sb, false));
    op_.free({Wa, Sb, W1});
    HANPU_RETURN_IF_ERROR(op_.from_l0c(WSc, "WS0", &WS));
    HANPU_RETURN_IF_ERROR(op_.to_layout(WS, Layout::kND));
    HANPU_RETURN_IF_ERROR(op_.to_layout(U, Layout::kND));
    HANPU_RETURN_IF_ERROR(sim_.vector({U, WS}, {U}, 3 * matrix_bytes(c, w_, false), false, [&] {
      for (size_t i = 0; i < U->v.size(); ++i) U->v[i] -= WS->v[i];
    }));
    op_.free({WS});
    Tile* Vn1;
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(U, "Vn", &Vn1));
    op_.free({U});
    // State-first: S1 = exp(gam_last) S0 + Kd^T Vn into a second buffer; S0 stays live.
    Tile *dS, *S1;
    bool qm_spilled = false;
    if (!sim_.fits(op_.core(), Buf::kUB, {matrix_bytes(c, K, true), matrix_bytes(K, w_, false)})) {
      // Not even dS fits beside S0 and the chunk's tensors (KDA's [c x K] gates take more
      // room): Qm, read again by the output, goes to GM first.
      HANPU_RETURN_IF_ERROR(spill_out(Qm, 0));
      qm_spilled = true;
    }
    HANPU_RETURN_IF_ERROR(state_delta(in, Vn1, Layout::kND, &dS));
    HANPU_RETURN_IF_ERROR(op_.to_layout(dS, Layout::kND));
    // The state's decay per row: one factor (GDN) or one per key channel (KDA).
    std::vector<float> decay(K);
    for (int d = 0; d < K; ++d) decay[d] = kda ? in.elast->v[d] : std::exp(in.gam->v[c - 1]);
    if (!op_.alloc(Buf::kUB, K, w_, false, Layout::kND, "S1", &S1).ok()) {
      // The second state does not fit beside the chunk's tensors: spill Qm (read again by
      // the output) and, if that is not enough, S0 itself, then stream S0 back in slices to
      // form S1 (the output reads S0 through its fp16 copy in L1).
      if (!qm_spilled) HANPU_RETURN_IF_ERROR(spill_out(Qm, 0));
      qm_spilled = true;
      if (!op_.alloc(Buf::kUB, K, w_, false, Layout::kND, "S1", &S1).ok()) {
        HANPU_RETURN_IF_ERROR(spill_out(S_, 1));
        HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, K, w_, false, Layout::kND, "S1", &S1));
        const int slice = std::max(1, K / 4);
        for (int r0 = 0; r0 < K; r0 += slice) {
          const int n = std::min(slice, K - r0);
          Tile* part;
          HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kUB, n, w_, false, Layout::kND, "S0 slice", &part));
          HANPU_RETURN_IF_ERROR(
              sim_.load(part, {spill_, spill_row(1) + r0, n, 0, w_}, /*spill=*/true));
          HANPU_RETURN_IF_ERROR(
              sim_.vector({part, dS}, {S1}, 3 * matrix_bytes(n, w_, false), false, [&] {
                for (int i = 0; i < n; ++i) {
                  for (int j = 0; j < w_; ++j)
                    S1->at(r0 + i, j) = decay[r0 + i] * part->at(i, j) + dS->at(r0 + i, j);
                }
              }));
          op_.free({part});
        }
      }
    }
    if (S_ != nullptr) {
      HANPU_RETURN_IF_ERROR(sim_.vector({S_, dS}, {S1}, 3 * matrix_bytes(K, w_, false), kda, [&] {
        for (int d = 0; d < K; ++d) {
          for (int j = 0; j < w_; ++j) S1->at(d, j) = decay[d] * S_->at(d, j) + dS->at(d, j);
        }
      }));
    }
    op_.free({dS});
    if (kda) {  // KDA's [c x K] gates are done with (its output needs no exp(gam) factor)
      op_.free({in.gam});
      in.gam = nullptr;
    }
    if (qm_spilled) HANPU_RETURN_IF_ERROR(spill_in(&Qm, c, c, 0));
    // O = scale exp(gam) Q S0 + Qm Vn, Q S0 from the old state's version (KDA: Q already
    // scaled per channel).
    Tile *Qa, *Sb0, *QSc, *QSu, *O;
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0A, kda ? Qg1 : in.q, false, "Q", &Qa));
    HANPU_RETURN_IF_ERROR(op_.to_l0(Buf::kL0B, S16_, false, "S0", &Sb0));
    HANPU_RETURN_IF_ERROR(op_.alloc(Buf::kL0C, c, w_, false, Layout::kNZ, "QS0", &QSc));
    HANPU_RETURN_IF_ERROR(sim_.mmad(QSc, Qa, Sb0, false));
    op_.free({Qa, Sb0, Qg1});
    HANPU_RETURN_IF_ERROR(op_.from_l0c(QSc, "QS0", &QSu));
    HANPU_RETURN_IF_ERROR(product(Qm, Vn1, "O", c, w_, &O));
    op_.free({Qm, Vn1});
    HANPU_RETURN_IF_ERROR(output(in, O, QSu, Layout::kND));
    // S0 <- S1
    op_.free({S_, S16_});  // S_ is null if it was spilled
    S_ = S1;
    HANPU_RETURN_IF_ERROR(op_.stage_to_l1(S_, "S16", &S16_));
    release(in);
    return Status::Ok();
  }

  CoreOps& op_;
  NpuSim& sim_;
  const GdnGm& gm_;
  int h_, c0_, w_;
  const plan::LayoutPlan& plan_;
  GdnTechniques tech_;
  Tile *S_ = nullptr, *S16_ = nullptr;
  GmTensor* spill_ = nullptr;
};

}  // namespace

plan::TargetDesc plan_target(const NpuMachine& m) {
  plan::TargetDesc t;
  t.cores = m.cores;
  t.vector_bytes_per_cycle = m.vector_bytes_per_cycle;
  t.nz_row_op_factor = m.vector_nz_row_op_factor;
  t.ub_bytes = m.buffers[static_cast<int>(Buf::kUB)].bytes;
  t.cube_macs_per_cycle = static_cast<double>(m.cube_m) * m.cube_k * m.cube_n;
  return t;
}

namespace {

// Runs every core's head parts of `sched` (tiers I and II) in the current launch.
Status run_parts(NpuSim& sim, const GdnGm& gm, const plan::CoreSchedule& sched,
                 const plan::LayoutPlan& layouts, const GdnTechniques& tech) {
  for (int core = 0; core < static_cast<int>(sched.per_core.size()); ++core) {
    for (const plan::HeadPart& part : sched.per_core[core]) {
      CoreOps op(sim, core);
      FusedHead head(op, gm, part, layouts, tech);
      HANPU_RETURN_IF_ERROR(head.run());
    }
  }
  return Status::Ok();
}

plan::PartCost part_cost(const NpuMachine& m, const GdnGm& shape, const plan::LayoutPlan& layouts) {
  const plan::TargetDesc t = plan_target(m);
  return [=](int w) {
    return plan::chunk_part_cycles(shape.kda, shape.chunk, shape.K, w, layouts, t);
  };
}

// Runs `sched` in one launch: every core's head parts (tiers I and II), then the
// chunk-split heads (tier III) over all cores after a cross-core sync.
Status run_schedule(NpuSim& sim, const GdnGm& gm, const plan::CoreSchedule& sched,
                    const plan::LayoutPlan& layouts, const GdnTechniques& tech) {
  sim.launch();
  HANPU_RETURN_IF_ERROR(run_parts(sim, gm, sched, layouts, tech));
  if (sched.chunk_split_heads.empty()) return Status::Ok();
  if (!gm.qk_l2norm)
    return fla_flow(sim, gm, sched.chunk_split_heads, /*one_launch=*/true, /*starts_launch=*/false);
  // FLA's flow reads q and k from GM: their normalised rows go there first, in this launch
  // (the flow's first cross-core sync orders them before its reads).
  GdnGm normed;
  HANPU_RETURN_IF_ERROR(
      l2norm_qk(sim, gm, sched.chunk_split_heads, 0, /*own_launch=*/false, &normed));
  return fla_flow(sim, normed, sched.chunk_split_heads, /*one_launch=*/true,
                  /*starts_launch=*/false);
}

// Cycles of the whole kernel under `sched` over the sequence's first `chunks` chunks, on
// zero inputs (timing does not depend on values).
double probe_run(const NpuMachine& m, const GdnGm& shape, int64_t chunks,
                 const plan::CoreSchedule& sched, const plan::LayoutPlan& layouts,
                 const GdnTechniques& tech) {
  NpuSim sim(m);
  const GdnGm g = zero_inputs(sim, shape, std::min<int64_t>(shape.T, chunks * shape.chunk));
  if (!run_schedule(sim, g, sched, layouts, tech).ok())
    return std::numeric_limits<double>::infinity();
  return sim.finish().latency_cycles;
}

// The kernel's cycles over the whole sequence under `sched`: measured outright when it is
// short, else extrapolated from runs over 4 and 12 chunks (the run grows linearly in the
// chunks; the fixed part — launch, syncs, pipeline fill — is what the two points separate).
double probe(const NpuMachine& m, const GdnGm& shape, const plan::CoreSchedule& sched,
             const plan::LayoutPlan& layouts, const GdnTechniques& tech) {
  const int64_t NT = (shape.T + shape.chunk - 1) / shape.chunk;
  constexpr int64_t kShort = 4, kLong = 12;
  if (NT <= kLong) return probe_run(m, shape, NT, sched, layouts, tech);
  const double a = probe_run(m, shape, kShort, sched, layouts, tech);
  const double b = probe_run(m, shape, kLong, sched, layouts, tech);
  return a + (b - a) / static_cast<double>(kLong - kShort) * static_cast<double>(NT - kShort);
}

}  // namespace

plan::CoreSchedule fused_schedule(const NpuMachine& m, const GdnGm& shape,
                                  const plan::LayoutPlan& layouts, const GdnTechniques& tech) {
  plan::CoreSchedule s = plan::schedule_heads(
      shape.H, shape.V, m.cores, 16, part_cost(m, shape, layouts), tech.tail_columns_evenly);
  const int R = shape.H % m.cores;
  if (R == 0 || tech.tail_columns_evenly) return s;
  plan::CoreSchedule split = s;
  plan::chunk_split_tail(&split, shape.H - R, shape.H, "");
  const double keep = probe(m, shape, s, layouts, tech);
  const double cut = probe(m, shape, split, layouts, tech);
  // Only a gain beyond the extrapolation's error (about 1% at the sweep's shapes) is taken:
  // the chunk-split tail moves its intermediates through GM, costing traffic and energy.
  constexpr double kMargin = 0.01;
  if (cut < keep * (1 - kMargin)) {
    plan::chunk_split_tail(
        &s, shape.H - R, shape.H,
        fmt::format("the kernel runs {:.0f} cycles so against {:.0f} with tiers I/II only (runs "
                    "on the target's model over 4 and 12 chunks, extrapolated)",
                    cut, keep));
  }
  return s;
}

Status gdn_fused(NpuSim& sim, const GdnGm& gm, const GdnTechniques& tech) {
  const NpuMachine& m = sim.machine();
  const plan::TargetDesc t = plan_target(m);
  const plan::LayoutPlan layouts =
      tech.plan_layout ? plan::plan_layouts(gm.chunk, gm.K, gm.V, t)
                       : plan::uniform_plan(plan::Layout::kDense, gm.chunk, gm.K, gm.V, t);
  // Whole heads per core; the tail heads split by value columns when that balances the
  // cores better than it repeats the work every part redoes, or chunk-split (tier III).
  return run_schedule(sim, gm, fused_schedule(m, gm, layouts, tech), layouts, tech);
}

Status gdn_hanpu(NpuSim& sim, const GdnGm& gm) { return gdn_fused(sim, gm, {}); }

}  // namespace hanpu::npu
