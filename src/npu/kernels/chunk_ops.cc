// CoreOps (see chunk_ops.h).
#include "npu/kernels/chunk_ops.h"

#include "plan/la_plan.h"

#include <cmath>
#include <vector>

namespace hanpu::npu {

Status CoreOps::stage_to_l1(Tile* ub, const std::string& name, Tile** l1) {
  Tile* half = ub;
  if (!ub->fp16) {
    HANPU_RETURN_IF_ERROR(alloc(Buf::kUB, ub->rows, ub->cols, true, ub->layout, name + "_f16", &half));
    HANPU_RETURN_IF_ERROR(sim_.vector({ub}, {half}, matrix_bytes(ub->rows, ub->cols, false), false,
                                      [&] { half->v = ub->v; }));
  }
  HANPU_RETURN_IF_ERROR(sim_.relayout(half, Layout::kNZ));
  HANPU_RETURN_IF_ERROR(alloc(Buf::kL1, ub->rows, ub->cols, true, Layout::kNZ, name, l1));
  HANPU_RETURN_IF_ERROR(sim_.move(*l1, half));
  if (half != ub) sim_.free(half);
  return Status::Ok();
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

Status CoreOps::gates(const GdnGm& gm, int64_t t0, int c, int h, Tile** beta, Tile** gam, Tile** egam) {
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

Status CoreOps::kda_gates(const GdnGm& gm, int64_t t0, int c, int h, Tile** beta, Tile** gam, Tile** elast) {
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
  return sim_.vector(in, io, static_cast<int64_t>(io.size()) * matrix_bytes(c, c, false) * 2, true, [&] {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < c; ++j) {
        const float d = j <= i ? std::exp(gm->v[i] - gm->v[j]) : 0.0f;
        if (kk != nullptr) kk->at(i, j) = j < i ? b->v[i] * kk->at(i, j) * d : 0.0f;
        if (qk != nullptr) qk->at(i, j) = j <= i ? scale * qk->at(i, j) * d : 0.0f;
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

}  // namespace hanpu::npu
