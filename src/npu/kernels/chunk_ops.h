// Building blocks of the GDN chunk on one simulated Ascend core, shared by every kernel
// variant so they compute the same math and differ only in mapping, order and traffic:
// staging a UB matrix as a cube operand, bringing a cube result back, the gates, the decay
// masks, the (I + L)^-1 of the chunk, and freeing tiles in bulk.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>

#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

// The GM tensors of one GDN call: q, k [T, (H / group) * K], v, o [T, H*V] fp16; g, beta
// [T, H] fp32; states [H*K, V] fp32 (state0 may be null: zeros). H counts the value heads,
// each with its own state; with grouped value attention (GVA, `group` > 1) each q/k head is
// shared by `group` consecutive value heads, as in Qwen3-Next.
struct GdnGm {
  bool kda = false;  // KDA: g is [T, H*K] (a gate per key channel) instead of [T, H]
  int64_t T = 0;
  int H = 0, K = 0, V = 0, chunk = 64;
  int group = 1;
  // q and k rows scaled to unit L2 norm before use (Qwen3.5's use_qk_l2norm_in_kernel): the
  // fused kernels do it as they load a chunk, the baselines in a pass of their own first.
  bool qk_l2norm = false;
  // The first column of value head h's q/k head in q and k.
  int64_t qk_col(int h) const { return static_cast<int64_t>(h / group) * K; }
  float scale = 1.0f;
  GmTensor *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *g = nullptr, *beta = nullptr;
  GmTensor *state0 = nullptr, *state1 = nullptr;
};

class CoreOps {
 public:
  CoreOps(NpuSim& sim, int core) : sim_(sim), core_(core) {}
  int core() const { return core_; }
  NpuSim& sim() { return sim_; }

  Status alloc(Buf b, int rows, int cols, bool fp16, Layout l, const std::string& name,
               Tile** out) {
    return sim_.alloc(core_, b, rows, cols, fp16, l, name, out);
  }
  void free(std::initializer_list<Tile*> tiles) {
    for (Tile* t : tiles) sim_.free(t);
  }

  // Every row of a UB tile times rsqrt(sum of its squares + 1e-6), FLA's l2norm.
  Status l2norm_rows(Tile* t);
  // A UB matrix (fp32 or fp16, either layout) as an fp16 NZ tile in L1: convert on the
  // vector unit, re-lay it out to fractals if it is dense, move UB -> L1.
  Status stage_to_l1(Tile* ub, const std::string& name, Tile** l1);
  // An L1 operand into L0A (or L0B), optionally transposed by the load.
  Status to_l0(Buf l0, Tile* l1, bool transpose, const std::string& name, Tile** out);
  // A cube result L0C -> UB: fp32 and still in fractal (NZ) order, L0C freed.
  Status from_l0c(Tile* l0c, const std::string& name, Tile** ub);

  // Gates of chunk rows [t0, t0 + c) of head h: g, beta loaded to UB; gam = inclusive
  // cumsum of g; egam = exp(gam). Each [c x 1] fp32.
  // Re-lays a UB tile out (no-op when it already is in `l`).
  Status to_layout(Tile* t, Layout l);

  Status gates(const GdnGm& gm, int64_t t0, int c, int h, Tile** beta, Tile** gam, Tile** egam);
  // KDA's gates of chunk rows [t0, t0 + c) of head h, per key channel: gam [c x K] fp32 =
  // inclusive cumsum of g down the rows, and elast [K x 1] = exp(gam_last) (the state's
  // per-row decay). beta [c x 1].
  Status kda_gates(const GdnGm& gm, int64_t t0, int c, int h, Tile** beta, Tile** gam,
                   Tile** elast);
  // Rows [r0, r0 + rows) of a dense [c x K] UB tile scaled per element by f(i, d), as an fp16
  // dense tile (they are cube operands); f reads `gam`, the chunk's [c x K] gates.
  Status channel_scaled(Tile* src, Tile* gam, int r0, int rows, const std::string& name,
                        const std::function<float(int, int)>& f, Tile** out);
  // KDA's intra-chunk decayed products from dense UB rows K, Q [c x K] (fp16) and gam [c x K]:
  // L_ij = sum_d k_id k_jd exp(gam_id - gam_jd) (j < i) and Qm_ij the same with q_i (j <= i),
  // [c x c] fp32 dense, zero above. The decay sits inside the sum, so it cannot be applied
  // to K K^T afterwards: 16-row sub-chunk blocks below the diagonal go to the cube with both
  // factors taken at the block's first row (every exponent <= 0, nothing overflows), the
  // diagonal blocks are summed on the vector unit with exp(gam_i - gam_j) directly.
  Status kda_intra(Tile* Ku, Tile* Qu, Tile* gam, Tile** L, Tile** Qm);
  // In place: L = StrictTril(diag(beta) L), Qm = scale Tril(Qm) (KDA's masks; the decay is
  // already inside the products).
  Status kda_masks(Tile* L, Tile* Qm, const Tile* beta, float scale);
  // In place: K's rows [c x K] decayed to the chunk's end, Kd = exp(gam_last - gam) o K (the
  // state update's left factor): one factor per row (GDN, gam [c x 1]) or per element (KDA).
  Status decay_to_chunk_end(Tile* k, const Tile* gam, bool kda);
  // An L1 tile (fp16 NZ) copied into UB as dense rows, for vector work.
  Status l1_to_ub_rows(Tile* l1, const std::string& name, Tile** ub);

  // In place: KK -> L = StrictTril(diag(beta) KK o D), QK -> Qm = scale Tril(QK o D),
  // D_ij = exp(gam_i - gam_j). Either of kk, qk may be null.
  Status decay_masks(Tile* kk, Tile* qk, const Tile* beta, const Tile* gam, float scale);
  // Ainv = (I + L)^-1 of a strictly lower L by forward substitution on the vector unit.
  Status unit_lower_inverse(Tile* L, const std::string& name, Tile** ainv);

 private:
  NpuSim& sim_;
  int core_;
};

}  // namespace hanpu::npu
