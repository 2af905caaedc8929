// CoreOps (see chunk_ops.h).
#include "npu/kernels/chunk_ops.h"

#include "hanpu/dtype.h"

#include "plan/la_plan.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hanpu::npu {

Status CoreOps::stage_to_l1(Tile* ub, const std::string& name, Tile** l1) {
  Tile* half = ub;
  if (!ub->fp16) {
    HANPU_RETURN_IF_ERROR(
        alloc(Buf::kUB, ub->rows, ub->cols, true, ub->layout, name + "_f16", &half));
    HANPU_RETURN_IF_ERROR(sim_.vector({ub}, {half}, matrix_bytes(ub->rows, ub->cols, false), false,
                                      [&] { half->v = ub->v; }));
  }
  HANPU_RETURN_IF_ERROR(sim_.relayout(half, Layout::kNZ));
  HANPU_RETURN_IF_ERROR(alloc(Buf::kL1, ub->rows, ub->cols, true, Layout::kNZ, name, l1));
  HANPU_RETURN_IF_ERROR(sim_.move(*l1, half));
  if (half != ub) sim_.free(half);
  return Status::Ok();
}

Status CoreOps::l2norm_rows(Tile* t) {
  // One pass for the sums of squares, one to scale: a read, a read and a write of the tile.
  const int64_t bytes = 3 * matrix_bytes(t->rows, t->cols, t->fp16);
  return sim_.vector({t}, {t}, bytes, true, [t] {
    for (int i = 0; i < t->rows; ++i) {
      float ss = 0;
      for (int j = 0; j < t->cols; ++j) ss += t->at(i, j) * t->at(i, j);
      const float r = 1.0f / std::sqrt(ss + 1e-6f);
      for (int j = 0; j < t->cols; ++j) t->at(i, j) *= r;
    }
    if (t->fp16) {
      for (float& x : t->v) x = f16_bits_to_f32(f32_to_f16_bits(x));
    }
  });
}

Status CoreOps::to_layout(Tile* t, Layout l) { return sim_.relayout(t, l); }

Status CoreOps::to_l0(Buf l0, Tile* l1, bool transpose, const std::string& name, Tile** out) {
  const int rows = transpose ? l1->cols : l1->rows, cols = transpose ? l1->rows : l1->cols;
  HANPU_RETURN_IF_ERROR(alloc(l0, rows, cols, true, Layout::kNZ, name, out));
  return sim_.move(*out, l1, transpose);
}

Status CoreOps::from_l0c(Tile* l0c, const std::string& name, Tile** ub) {
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, l0c->rows, l0c->cols, false, Layout::kNZ, name, ub));
  HANPU_RETURN_IF_ERROR(sim_.move(*ub, l0c));
  sim_.free(l0c);
  return Status::Ok();
}

Status CoreOps::gates(const GdnGm& gm, int64_t t0, int c, int h, Tile** beta, Tile** gam,
                      Tile** egam) {
  Tile* g = nullptr;
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, 1, false, Layout::kND, "g", &g));
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, 1, false, Layout::kND, "beta", beta));
  HANPU_RETURN_IF_ERROR(sim_.load(g, {gm.g, t0, c, h, 1}));
  HANPU_RETURN_IF_ERROR(sim_.load(*beta, {gm.beta, t0, c, h, 1}));
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, 1, false, Layout::kND, "gam", gam));
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, 1, false, Layout::kND, "egam", egam));
  Tile *G = *gam, *E = *egam;
  HANPU_RETURN_IF_ERROR(sim_.vector({g}, {G, E}, 3 * matrix_bytes(c, 1, false), false, [&] {
    float run = 0;
    for (int i = 0; i < c; ++i) {
      run += g->v[i];
      G->v[i] = run;
      E->v[i] = std::exp(run);
    }
  }));
  sim_.free(g);
  return Status::Ok();
}

Status CoreOps::kda_gates(const GdnGm& gm, int64_t t0, int c, int h, Tile** beta, Tile** gam,
                          Tile** elast) {
  const int K = gm.K;
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, 1, false, Layout::kND, "beta", beta));
  HANPU_RETURN_IF_ERROR(sim_.load(*beta, {gm.beta, t0, c, h, 1}));
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, K, false, Layout::kND, "gam", gam));
  HANPU_RETURN_IF_ERROR(sim_.load(*gam, {gm.g, t0, c, static_cast<int64_t>(h) * K, K}));
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, K, 1, false, Layout::kND, "elast", elast));
  Tile *G = *gam, *E = *elast;
  return sim_.vector({G}, {G, E}, 2 * matrix_bytes(c, K, false), false, [&] {
    for (int i = 1; i < c; ++i) {
      for (int d = 0; d < K; ++d) G->at(i, d) += G->at(i - 1, d);
    }
    for (int d = 0; d < K; ++d) E->v[d] = std::exp(G->at(c - 1, d));
  });
}

Status CoreOps::decay_masks(Tile* kk, Tile* qk, const Tile* beta, const Tile* gam, float scale) {
  Tile* any = kk != nullptr ? kk : qk;
  const int c = any->rows;
  Tile* b = const_cast<Tile*>(beta);
  Tile* gm = const_cast<Tile*>(gam);
  std::vector<Tile*> io;
  for (Tile* t : {kk, qk}) {
    if (t != nullptr) io.push_back(t);
  }
  std::vector<Tile*> in = io;
  in.push_back(gm);
  if (kk != nullptr) in.push_back(b);
  return sim_.vector(in, io, static_cast<int64_t>(io.size()) * matrix_bytes(c, c, false) * 2, true,
                     [&] {
                       for (int i = 0; i < c; ++i) {
                         for (int j = 0; j < c; ++j) {
                           const float d = j <= i ? std::exp(gm->v[i] - gm->v[j]) : 0.0f;
                           if (kk != nullptr)
                             kk->at(i, j) = j < i ? b->v[i] * kk->at(i, j) * d : 0.0f;
                           if (qk != nullptr)
                             qk->at(i, j) = j <= i ? scale * qk->at(i, j) * d : 0.0f;
                         }
                       }
                     });
}

Status CoreOps::unit_lower_inverse(Tile* L, const std::string& name, Tile** ainv) {
  const int c = L->rows;
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, c, false, L->layout, name, ainv));
  Tile* A = *ainv;
  const auto bytes = static_cast<int64_t>(plan::inverse_vector_bytes(c));
  return sim_.vector({L}, {A}, bytes, true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int col = 0; col < c; ++col) A->at(i, col) = col == i ? 1.0f : 0.0f;
      for (int j = 0; j < i; ++j) {
        const float f = L->at(i, j);
        if (f == 0.0f) continue;
        for (int col = 0; col <= j; ++col) A->at(i, col) -= f * A->at(j, col);
      }
    }
  });
}

Status CoreOps::channel_scaled(Tile* src, Tile* gam, int r0, int rows, const std::string& name,
                               const std::function<float(int, int)>& f, Tile** out) {
  const int K = src->cols;
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, rows, K, true, Layout::kND, name, out));
  Tile* o = *out;
  return sim_.vector({src, gam}, {o}, 3 * matrix_bytes(rows, K, false), false, [&] {
    for (int i = 0; i < rows; ++i) {
      for (int d = 0; d < K; ++d) o->at(i, d) = src->at(r0 + i, d) * f(r0 + i, d);
    }
  });
}

Status CoreOps::decay_to_chunk_end(Tile* k, const Tile* gam_in, bool kda) {
  Tile* gam = const_cast<Tile*>(gam_in);
  const int c = k->rows, K = k->cols;
  if (kda) {
    return sim_.vector({k, gam}, {k}, 3 * matrix_bytes(c, K, true), false, [&] {
      for (int i = 0; i < c; ++i) {
        for (int d = 0; d < K; ++d) k->at(i, d) *= std::exp(gam->at(c - 1, d) - gam->at(i, d));
      }
    });
  }
  const float glast = gam->v[c - 1];
  return sim_.vector({k, gam}, {k}, 2 * matrix_bytes(c, K, true), true, [&] {
    for (int i = 0; i < c; ++i) {
      const float f = std::exp(glast - gam->v[i]);
      for (int j = 0; j < K; ++j) k->at(i, j) *= f;
    }
  });
}

Status CoreOps::l1_to_ub_rows(Tile* l1, const std::string& name, Tile** ub) {
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, l1->rows, l1->cols, true, Layout::kNZ, name, ub));
  HANPU_RETURN_IF_ERROR(sim_.move(*ub, l1));
  return to_layout(*ub, Layout::kND);
}

Status CoreOps::kda_intra(Tile* Ku, Tile* Qu, Tile* gam, Tile** Lout, Tile** Qmout) {
  const int c = Ku->rows, K = Ku->cols;
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, c, false, Layout::kND, "L", Lout));
  HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, c, c, false, Layout::kND, "Qm", Qmout));
  Tile *L = *Lout, *Qm = *Qmout;
  constexpr int kSub = 16;
  for (int r0 = kSub; r0 < c; r0 += kSub) {
    const int n = std::min(kSub, c - r0);
    Tile *Kr, *Qr, *Kc, *Kr1, *Qr1, *Kc1, *KcT, *Lb, *Qb;
    const auto row_f = [&](int i, int d) { return std::exp(gam->at(i, d) - gam->at(r0, d)); };
    const auto col_f = [&](int j, int d) { return std::exp(gam->at(r0, d) - gam->at(j, d)); };
    HANPU_RETURN_IF_ERROR(channel_scaled(Ku, gam, r0, n, "kr", row_f, &Kr));
    HANPU_RETURN_IF_ERROR(channel_scaled(Qu, gam, r0, n, "qr", row_f, &Qr));
    HANPU_RETURN_IF_ERROR(channel_scaled(Ku, gam, 0, r0, "kc", col_f, &Kc));
    HANPU_RETURN_IF_ERROR(stage_to_l1(Kr, "kr", &Kr1));
    HANPU_RETURN_IF_ERROR(stage_to_l1(Qr, "qr", &Qr1));
    HANPU_RETURN_IF_ERROR(stage_to_l1(Kc, "kc", &Kc1));
    free({Kr, Qr, Kc});
    Tile *Ka, *Qa, *Lc, *Qc;
    HANPU_RETURN_IF_ERROR(to_l0(Buf::kL0A, Kr1, false, "kr", &Ka));
    HANPU_RETURN_IF_ERROR(to_l0(Buf::kL0A, Qr1, false, "qr", &Qa));
    HANPU_RETURN_IF_ERROR(to_l0(Buf::kL0B, Kc1, true, "kcT", &KcT));
    HANPU_RETURN_IF_ERROR(alloc(Buf::kL0C, n, r0, false, Layout::kNZ, "Lblk", &Lc));
    HANPU_RETURN_IF_ERROR(alloc(Buf::kL0C, n, r0, false, Layout::kNZ, "Qblk", &Qc));
    HANPU_RETURN_IF_ERROR(sim_.mmad(Lc, Ka, KcT, false));
    HANPU_RETURN_IF_ERROR(sim_.mmad(Qc, Qa, KcT, false));
    free({Ka, Qa, KcT, Kr1, Qr1, Kc1});
    HANPU_RETURN_IF_ERROR(from_l0c(Lc, "Lblk", &Lb));
    HANPU_RETURN_IF_ERROR(from_l0c(Qc, "Qblk", &Qb));
    HANPU_RETURN_IF_ERROR(to_layout(Lb, Layout::kND));
    HANPU_RETURN_IF_ERROR(to_layout(Qb, Layout::kND));
    HANPU_RETURN_IF_ERROR(
        sim_.vector({Lb, Qb}, {L, Qm}, 2 * matrix_bytes(n, r0, false), false, [&] {
          for (int i = 0; i < n; ++i) {
            for (int j = 0; j < r0; ++j) {
              L->at(r0 + i, j) = Lb->at(i, j);
              Qm->at(r0 + i, j) = Qb->at(i, j);
            }
          }
        }));
    free({Lb, Qb});
  }
  // Diagonal blocks: sum_d k_id k_jd exp(gam_id - gam_jd), j <= i inside each block.
  int64_t pairs = 0;
  for (int b0 = 0; b0 < c; b0 += kSub) {
    const int n = std::min(kSub, c - b0);
    pairs += static_cast<int64_t>(n) * (n + 1) / 2;
  }
  return sim_.vector({Ku, Qu, gam}, {L, Qm}, pairs * K * 4 * 5, true, [&] {
    for (int b0 = 0; b0 < c; b0 += kSub) {
      const int b1 = std::min(c, b0 + kSub);
      for (int i = b0; i < b1; ++i) {
        for (int j = b0; j <= i; ++j) {
          float lk = 0, lq = 0;
          for (int d = 0; d < K; ++d) {
            const float e = std::exp(gam->at(i, d) - gam->at(j, d));
            lk += Ku->at(i, d) * Ku->at(j, d) * e;
            lq += Qu->at(i, d) * Ku->at(j, d) * e;
          }
          if (j < i) L->at(i, j) = lk;
          Qm->at(i, j) = lq;
        }
      }
    }
  });
}

Status CoreOps::kda_masks(Tile* L, Tile* Qm, const Tile* beta, float scale) {
  const int c = L->rows;
  Tile* b = const_cast<Tile*>(beta);
  return sim_.vector({L, Qm, b}, {L, Qm}, 2 * matrix_bytes(c, c, false), true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < c; ++j) {
        L->at(i, j) = j < i ? b->v[i] * L->at(i, j) : 0.0f;
        Qm->at(i, j) = j <= i ? scale * Qm->at(i, j) : 0.0f;
      }
    }
  });
}

}  // namespace hanpu::npu
