// vLLM-Ascend's native GDN path on the simulated cores: the chunkwise algorithm as a chain of
// framework operators (torch_npu-style), each its own launch over all (chunk, head) units or,
// in the recurrence, over the heads of one chunk, and every intermediate through GM.
//
// Where Triton-Ascend kernels do not run (the 310P), vLLM-Ascend imports
// `torch_chunk_gated_delta_rule`, the transformers PyTorch reference, as its chunked path
// (FLA's naive chunk KDA has the same structure). That code is what this chain follows,
// and the host dispatches each of its eager operators one at a time: every launch below
// names the operators it stands for (`ops`), which the host pays `framework_op_us` each
// for (NpuSim::launch). Two of its features set the count:
//   - the triangular solve is a Python loop over the 63 rows of a chunk, six operators a
//     row (two clones, a product, a sum, an add, an indexed copy), each over all chunks
//     and heads at once: about 380 operators whatever T and H are;
//   - the chunk loop runs 18 operators a chunk (9 for the state, 9 for the output).
#include <algorithm>
#include <cmath>
#include <functional>

#include "npu/kernels/gdn_kernels.h"

namespace hanpu::npu {

namespace {

struct Scratch {  // every intermediate the operator chain materialises in GM
  GmTensor *gam, *kk, *L, *M, *A, *kb, *vb, *w, *u, *S, *h, *ws, *vn, *kd, *ds, *qk, *qm, *qh, *ov;
  GmTensor* qg;  // KDA: Q o exp(gam)
};

// Launches one kernel over `units` work items dealt round robin to the cores, standing for
// `ops` eager operators of the reference code (see the header comment).
Status launch_op(NpuSim& sim, int ops, int64_t units,
                 const std::function<Status(CoreOps&, int64_t)>& body) {
  sim.launch(ops);
  for (int64_t u = 0; u < units; ++u) {
    CoreOps op(sim, static_cast<int>(u % sim.machine().cores));
    HANPU_RETURN_IF_ERROR(body(op, u));
  }
  return Status::Ok();
}

// C = A B (or A^T B) from GM to GM through the cube: operands loaded as fp16 fractals, the
// fp32 result brought back through UB and stored dense.
Status gm_matmul(CoreOps& op, const GmBlock& a, bool trans_a, const GmBlock& b, const GmBlock& c) {
  NpuSim& sim = op.sim();
  Tile *A1, *B1, *Aa, *Bb, *C, *Cu;
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, a.rows, a.cols, true, Layout::kNZ, "a", &A1));
  HANPU_RETURN_IF_ERROR(sim.load(A1, a));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, b.rows, b.cols, true, Layout::kNZ, "b", &B1));
  HANPU_RETURN_IF_ERROR(sim.load(B1, b));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, A1, trans_a, "a", &Aa));
  HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, B1, false, "b", &Bb));
  HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, Aa->rows, Bb->cols, false, Layout::kNZ, "c", &C));
  HANPU_RETURN_IF_ERROR(sim.mmad(C, Aa, Bb, false));
  op.free({Aa, Bb, A1, B1});
  HANPU_RETURN_IF_ERROR(op.from_l0c(C, "c", &Cu));
  HANPU_RETURN_IF_ERROR(op.to_layout(Cu, Layout::kND));
  HANPU_RETURN_IF_ERROR(sim.store(c, Cu));
  op.free({Cu});
  return Status::Ok();
}

// A vector operator from GM to GM: inputs loaded dense into UB, `fn` over them, outputs stored.
Status gm_vector(
    CoreOps& op, const std::vector<GmBlock>& in, const std::vector<GmBlock>& out, bool row_op,
    const std::function<void(const std::vector<Tile*>&, const std::vector<Tile*>&)>& fn) {
  NpuSim& sim = op.sim();
  std::vector<Tile*> ti, to;
  int64_t bytes = 0;
  for (const GmBlock& b : in) {
    Tile* t;
    HANPU_RETURN_IF_ERROR(
        op.alloc(Buf::kUB, b.rows, b.cols, b.t->fp16, Layout::kND, b.t->name, &t));
    HANPU_RETURN_IF_ERROR(sim.load(t, b));
    bytes += matrix_bytes(b.rows, b.cols, false);
    ti.push_back(t);
  }
  for (const GmBlock& b : out) {
    Tile* t;
    HANPU_RETURN_IF_ERROR(
        op.alloc(Buf::kUB, b.rows, b.cols, b.t->fp16, Layout::kND, b.t->name, &t));
    bytes += matrix_bytes(b.rows, b.cols, false);
    to.push_back(t);
  }
  HANPU_RETURN_IF_ERROR(sim.vector(ti, to, bytes, row_op, [&] { fn(ti, to); }));
  for (size_t i = 0; i < out.size(); ++i) HANPU_RETURN_IF_ERROR(sim.store(out[i], to[i]));
  for (Tile* t : ti) op.free({t});
  for (Tile* t : to) op.free({t});
  return Status::Ok();
}

// Eager operators of the reference code per launch where a launch stands for more than one.
constexpr int kPrologueOps = 19;  // 5 layout copies, 5 casts, 5 pads, the q scale, the mask, cumsum
constexpr int kMaskOps = 7;       // the decay mask (4), its product, the masked fill, the negation
constexpr int kSolveRowOps = 6;   // per row of the solve: 2 clones, product, sum, add, indexed copy
constexpr int kIdentityOps = 2;   // eye, add
constexpr int kBetaOps = 4;       // v * beta, k * beta, exp(g), their product
constexpr int kStateInitOps = 4;  // the zero state, the zero output, the causal mask (2)
constexpr int kEpilogueOps = 2;   // the output's layout copy and cast
constexpr int kL2normOps = 5;     // per tensor (q, k): x * x, sum, + eps, rsqrt, product

}  // namespace

Status gdn_vllm_ascend(NpuSim& sim, const GdnGm& gm) {
  if (gm.qk_l2norm) {  // the reference's l2norm: x * x, sum, + eps, rsqrt, product; q then k
    GdnGm normed;
    HANPU_RETURN_IF_ERROR(
        l2norm_qk(sim, gm, all_value_heads(gm), kL2normOps, /*own_launch=*/true, &normed));
    return gdn_vllm_ascend(sim, normed);
  }
  const int H = gm.H, K = gm.K, V = gm.V, C = gm.chunk;
  const int64_t T = gm.T, NT = (T + C - 1) / C, HK = static_cast<int64_t>(H) * K,
                HV = static_cast<int64_t>(H) * V;
  Scratch x;
  const auto ws = [&](const char* n, int64_t r, int64_t c, bool f16) {
    return sim.gm(n, r, c, f16, true);
  };
  // KDA (its gate per key channel) runs the same chain with the decay inside the intra-chunk
  // products: one operator forms both decayed K K^T and Q K^T (sub-chunk blocks, as FLA's
  // intra kernel), and the decays elsewhere are per channel.
  const bool kda = gm.kda;
  const int GW = kda ? K : 1;  // gate columns per head
  x.gam = ws("g_cumsum", T, static_cast<int64_t>(H) * GW, false);
  x.qg = kda ? ws("q_gate", T, HK, true) : nullptr;
  x.kk = ws("kkt", T, static_cast<int64_t>(H) * C, false);
  x.L = ws("L", T, static_cast<int64_t>(H) * C, false);
  x.M = ws("solve", T, static_cast<int64_t>(H) * C, false);
  x.A = ws("A", T, static_cast<int64_t>(H) * C, true);
  x.kb = ws("k_beta", T, HK, true);
  x.vb = ws("v_beta", T, HV, true);
  x.w = ws("w", T, HK, true);
  x.u = ws("u", T, HV, false);
  x.S = ws("state", HK, V, false);
  x.h = ws("h", NT * HK, V, true);
  x.ws = ws("w_state", T, HV, false);
  x.vn = ws("v_new", T, HV, true);
  x.kd = ws("k_decay", T, HK, true);
  x.ds = ws("dstate", HK, V, false);
  x.qk = ws("qkt", T, static_cast<int64_t>(H) * C, false);
  x.qm = ws("qm", T, static_cast<int64_t>(H) * C, true);
  x.qh = ws("q_state", T, HV, false);
  x.ov = ws("o_intra", T, HV, false);
  const auto rows = [&](int64_t n) { return static_cast<int>(std::min<int64_t>(C, T - n * C)); };
  const int64_t units = NT * H;
  const float scale = gm.scale;

  // Map 1: gates, K K^T, masks, inverse, scaled K and V, W and U — one operator at a time.
  HANPU_RETURN_IF_ERROR(launch_op(sim, kPrologueOps, units, [&](CoreOps& op, int64_t u) {
    const int64_t n = u / H, t0 = n * C;
    const int h = static_cast<int>(u % H), c = rows(n);
    return gm_vector(op, {{gm.g, t0, c, h * int64_t{GW}, GW}},
                     {{x.gam, t0, c, h * int64_t{GW}, GW}}, false, [&](auto& in, auto& out) {
                       for (int d = 0; d < GW; ++d) {
                         float run = 0;
                         for (int i = 0; i < c; ++i) out[0]->at(i, d) = run += in[0]->at(i, d);
                       }
                     });
  }));
  HANPU_RETURN_IF_ERROR(launch_op(sim, 1, units, [&](CoreOps& op, int64_t u) {
    const int64_t n = u / H, t0 = n * C;
    const int h = static_cast<int>(u % H), c = rows(n);
    if (kda) {  // decayed K K^T and Q K^T from scaled rows, to GM
      Tile *Ku, *Qu, *gam, *Lr, *Qr;
      HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kND, "k", &Ku));
      HANPU_RETURN_IF_ERROR(op.sim().load(Ku, {gm.k, t0, c, gm.qk_col(h), K}));
      HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, true, Layout::kND, "q", &Qu));
      HANPU_RETURN_IF_ERROR(op.sim().load(Qu, {gm.q, t0, c, gm.qk_col(h), K}));
      HANPU_RETURN_IF_ERROR(op.alloc(Buf::kUB, c, K, false, Layout::kND, "gam", &gam));
      HANPU_RETURN_IF_ERROR(op.sim().load(gam, {x.gam, t0, c, h * int64_t{K}, K}));
      HANPU_RETURN_IF_ERROR(op.kda_intra(Ku, Qu, gam, &Lr, &Qr));
      op.free({Ku, Qu, gam});
      HANPU_RETURN_IF_ERROR(op.sim().store({x.kk, t0, c, h * int64_t{C}, c}, Lr));
      HANPU_RETURN_IF_ERROR(op.sim().store({x.qk, t0, c, h * int64_t{C}, c}, Qr));
      op.free({Lr, Qr});
      return Status::Ok();
    }
    Tile *K1, *Ka, *KTb, *KK, *KKu;
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", &K1));
    HANPU_RETURN_IF_ERROR(op.sim().load(K1, {gm.k, t0, c, gm.qk_col(h), K}));
    HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, K1, false, "k", &Ka));
    HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, K1, true, "kT", &KTb));
    HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, c, false, Layout::kNZ, "kkt", &KK));
    HANPU_RETURN_IF_ERROR(op.sim().mmad(KK, Ka, KTb, false));
    op.free({Ka, KTb, K1});
    HANPU_RETURN_IF_ERROR(op.from_l0c(KK, "kkt", &KKu));
    HANPU_RETURN_IF_ERROR(op.to_layout(KKu, Layout::kND));
    HANPU_RETURN_IF_ERROR(op.sim().store({x.kk, t0, c, h * int64_t{C}, c}, KKu));
    op.free({KKu});
    return Status::Ok();
  }));
  HANPU_RETURN_IF_ERROR(launch_op(sim, kMaskOps, units, [&](CoreOps& op, int64_t u) {
    const int64_t n = u / H, t0 = n * C;
    const int h = static_cast<int>(u % H), c = rows(n);
    if (kda) {  // the decay is already inside
      return gm_vector(op, {{x.kk, t0, c, h * int64_t{C}, c}, {gm.beta, t0, c, h, 1}},
                       {{x.L, t0, c, h * int64_t{C}, c}}, true, [&](auto& in, auto& out) {
                         for (int i = 0; i < c; ++i) {
                           for (int j = 0; j < c; ++j)
                             out[0]->at(i, j) = j < i ? in[1]->v[i] * in[0]->at(i, j) : 0.0f;
                         }
                       });
    }
    return gm_vector(
        op, {{x.kk, t0, c, h * int64_t{C}, c}, {gm.beta, t0, c, h, 1}, {x.gam, t0, c, h, 1}},
        {{x.L, t0, c, h * int64_t{C}, c}}, true, [&](auto& in, auto& out) {
          for (int i = 0; i < c; ++i) {
            for (int j = 0; j < c; ++j) {
              out[0]->at(i, j) =
                  j < i ? in[1]->v[i] * in[0]->at(i, j) * std::exp(in[2]->v[i] - in[2]->v[j])
                        : 0.0f;
            }
          }
        });
  }));
  // The triangular solve as the reference runs it: row i of the chunk's (I + L)^-1 - I is
  // -L[i, :i] plus that row times the rows solved before it, one launch (six eager
  // operators) per row over every chunk and head; then the identity is added.
  for (int i = 1; i < C; ++i) {
    HANPU_RETURN_IF_ERROR(launch_op(sim, kSolveRowOps, units, [&](CoreOps& op, int64_t u) {
      const int64_t n = u / H, t0 = n * C;
      const int h = static_cast<int>(u % H);
      if (i >= rows(n)) return Status::Ok();  // a short last chunk has no row i
      return gm_vector(op, {{x.L, t0 + i, 1, h * int64_t{C}, i}, {x.M, t0, i, h * int64_t{C}, i}},
                       {{x.M, t0 + i, 1, h * int64_t{C}, i}}, false, [&](auto& in, auto& out) {
                         const Tile *l = in[0], *sub = in[1];
                         for (int j = 0; j < i; ++j) {
                           float acc = -l->v[j];
                           for (int m = j + 1; m < i; ++m) acc -= l->v[m] * sub->at(m, j);
                           out[0]->v[j] = acc;
                         }
                       });
    }));
  }
  HANPU_RETURN_IF_ERROR(launch_op(sim, kIdentityOps, units, [&](CoreOps& op, int64_t u) {
    const int64_t n = u / H, t0 = n * C;
    const int h = static_cast<int>(u % H), c = rows(n);
    return gm_vector(op, {{x.M, t0, c, h * int64_t{C}, c}}, {{x.A, t0, c, h * int64_t{C}, c}},
                     false, [&](auto& in, auto& out) {
                       for (int r = 0; r < c; ++r) {
                         for (int j = 0; j < c; ++j)
                           out[0]->at(r, j) = j < r ? in[0]->at(r, j) : (j == r ? 1.0f : 0.0f);
                       }
                     });
  }));
  HANPU_RETURN_IF_ERROR(launch_op(sim, kBetaOps, units, [&](CoreOps& op, int64_t u) {
    const int64_t n = u / H, t0 = n * C;
    const int h = static_cast<int>(u % H), c = rows(n);
    return gm_vector(op,
                     {{gm.k, t0, c, gm.qk_col(h), K},
                      {gm.v, t0, c, h * int64_t{V}, V},
                      {gm.beta, t0, c, h, 1},
                      {x.gam, t0, c, h * int64_t{GW}, GW}},
                     {{x.kb, t0, c, h * int64_t{K}, K}, {x.vb, t0, c, h * int64_t{V}, V}}, true,
                     [&](auto& in, auto& out) {
                       for (int i = 0; i < c; ++i) {
                         const float b = in[2]->v[i];
                         for (int j = 0; j < K; ++j) {
                           out[0]->at(i, j) =
                               b * std::exp(in[3]->at(i, kda ? j : 0)) * in[0]->at(i, j);
                         }
                         for (int j = 0; j < V; ++j) out[1]->at(i, j) = b * in[1]->at(i, j);
                       }
                     });
  }));
  HANPU_RETURN_IF_ERROR(launch_op(sim, 2, units, [&](CoreOps& op, int64_t u) {
    const int64_t n = u / H, t0 = n * C;
    const int h = static_cast<int>(u % H), c = rows(n);
    HANPU_RETURN_IF_ERROR(gm_matmul(op, {x.A, t0, c, h * int64_t{C}, c}, false,
                                    {x.kb, t0, c, h * int64_t{K}, K},
                                    {x.w, t0, c, h * int64_t{K}, K}));
    return gm_matmul(op, {x.A, t0, c, h * int64_t{C}, c}, false, {x.vb, t0, c, h * int64_t{V}, V},
                     {x.u, t0, c, h * int64_t{V}, V});
  }));

  // Reduce: the chunk loop runs on the host; every step is a few operators over the heads.
  HANPU_RETURN_IF_ERROR(launch_op(sim, kStateInitOps, H, [&](CoreOps& op, int64_t h) {
    const GmBlock dst{x.S, h * K, K, 0, V};
    if (gm.state0 != nullptr) {
      return gm_vector(op, {{gm.state0, h * K, K, 0, V}}, {dst}, false,
                       [](auto& in, auto& out) { out[0]->v = in[0]->v; });
    }
    return gm_vector(op, {}, {dst}, false, [](auto&, auto&) {});
  }));
  for (int64_t n = 0; n < NT; ++n) {
    const int64_t t0 = n * C;
    const int c = rows(n);
    HANPU_RETURN_IF_ERROR(launch_op(sim, 0, H, [&](CoreOps& op, int64_t h) {  // h_n = S (fp16 copy)
      return gm_vector(op, {{x.S, h * K, K, 0, V}}, {{x.h, (n * H + h) * K, K, 0, V}}, false,
                       [](auto& in, auto& out) { out[0]->v = in[0]->v; });
    }));
    HANPU_RETURN_IF_ERROR(launch_op(sim, 1, H, [&](CoreOps& op, int64_t h) {  // W S
      return gm_matmul(op, {x.w, t0, c, h * K, K}, false, {x.h, (n * H + h) * K, K, 0, V},
                       {x.ws, t0, c, h * V, V});
    }));
    HANPU_RETURN_IF_ERROR(launch_op(sim, 1, H, [&](CoreOps& op, int64_t h) {  // Vn = U - W S
      return gm_vector(op, {{x.u, t0, c, h * V, V}, {x.ws, t0, c, h * V, V}},
                       {{x.vn, t0, c, h * V, V}}, false, [](auto& in, auto& out) {
                         for (size_t i = 0; i < out[0]->v.size(); ++i)
                           out[0]->v[i] = in[0]->v[i] - in[1]->v[i];
                       });
    }));
    HANPU_RETURN_IF_ERROR(
        launch_op(sim, 3, H, [&](CoreOps& op, int64_t h) {  // kd = exp(gam_last - gam) o k
          return gm_vector(op, {{gm.k, t0, c, gm.qk_col(h), K}, {x.gam, t0, c, h * GW, GW}},
                           {{x.kd, t0, c, h * K, K}}, true, [&](auto& in, auto& out) {
                             const Tile* g = in[1];
                             for (int i = 0; i < c; ++i) {
                               for (int j = 0; j < K; ++j) {
                                 const int d = kda ? j : 0;
                                 out[0]->at(i, j) =
                                     std::exp(g->at(c - 1, d) - g->at(i, d)) * in[0]->at(i, j);
                               }
                             }
                           });
        }));
    HANPU_RETURN_IF_ERROR(launch_op(sim, 1, H, [&](CoreOps& op, int64_t h) {  // dS = kd^T Vn
      return gm_matmul(op, {x.kd, t0, c, h * K, K}, true, {x.vn, t0, c, h * V, V},
                       {x.ds, h * K, K, 0, V});
    }));
    HANPU_RETURN_IF_ERROR(launch_op(sim, 3, H, [&](CoreOps& op, int64_t h) {  // S = decay S + dS
      return gm_vector(op,
                       {{x.S, h * K, K, 0, V}, {x.ds, h * K, K, 0, V}, {x.gam, t0, c, h * GW, GW}},
                       {{x.S, h * K, K, 0, V}}, kda, [&](auto& in, auto& out) {
                         for (int r = 0; r < K; ++r) {  // KDA: a decay per state row
                           const float d = std::exp(in[2]->at(c - 1, kda ? r : 0));
                           for (int j = 0; j < V; ++j)
                             out[0]->at(r, j) = d * in[0]->at(r, j) + in[1]->at(r, j);
                         }
                       });
    }));
  }
  if (gm.state1 != nullptr) {
    HANPU_RETURN_IF_ERROR(launch_op(sim, 0, H, [&](CoreOps& op, int64_t h) {
      return gm_vector(op, {{x.S, h * K, K, 0, V}}, {{gm.state1, h * K, K, 0, V}}, false,
                       [](auto& in, auto& out) { out[0]->v = in[0]->v; });
    }));
  }

  // Map 2: Q K^T (KDA: formed in map 1, and Q o exp(gam) instead), its mask, Q h, Qm Vn,
  // and the sum — again one operator at a time.
  HANPU_RETURN_IF_ERROR(
      launch_op(sim, static_cast<int>(NT) * 1, units, [&](CoreOps& op, int64_t u) {
        if (kda) {
          const int64_t n = u / H, t0 = n * C;
          const int h = static_cast<int>(u % H), c = rows(n);
          return gm_vector(op, {{gm.q, t0, c, gm.qk_col(h), K}, {x.gam, t0, c, h * int64_t{K}, K}},
                           {{x.qg, t0, c, h * int64_t{K}, K}}, false, [&](auto& in, auto& out) {
                             for (size_t i = 0; i < out[0]->v.size(); ++i)
                               out[0]->v[i] = in[0]->v[i] * std::exp(in[1]->v[i]);
                           });
        }
        const int64_t n = u / H, t0 = n * C;
        const int h = static_cast<int>(u % H), c = rows(n);
        Tile *Q1, *K1, *Qa, *KTb, *QK, *QKu;
        HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "q", &Q1));
        HANPU_RETURN_IF_ERROR(op.sim().load(Q1, {gm.q, t0, c, gm.qk_col(h), K}));
        HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL1, c, K, true, Layout::kNZ, "k", &K1));
        HANPU_RETURN_IF_ERROR(op.sim().load(K1, {gm.k, t0, c, gm.qk_col(h), K}));
        HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0A, Q1, false, "q", &Qa));
        HANPU_RETURN_IF_ERROR(op.to_l0(Buf::kL0B, K1, true, "kT", &KTb));
        HANPU_RETURN_IF_ERROR(op.alloc(Buf::kL0C, c, c, false, Layout::kNZ, "qkt", &QK));
        HANPU_RETURN_IF_ERROR(op.sim().mmad(QK, Qa, KTb, false));
        op.free({Qa, KTb, Q1, K1});
        HANPU_RETURN_IF_ERROR(op.from_l0c(QK, "qkt", &QKu));
        HANPU_RETURN_IF_ERROR(op.to_layout(QKu, Layout::kND));
        HANPU_RETURN_IF_ERROR(op.sim().store({x.qk, t0, c, h * int64_t{C}, c}, QKu));
        op.free({QKu});
        return Status::Ok();
      }));
  HANPU_RETURN_IF_ERROR(
      launch_op(sim, static_cast<int>(NT) * 2, units, [&](CoreOps& op, int64_t u) {
        const int64_t n = u / H, t0 = n * C;
        const int h = static_cast<int>(u % H), c = rows(n);
        if (kda) {
          return gm_vector(op, {{x.qk, t0, c, h * int64_t{C}, c}},
                           {{x.qm, t0, c, h * int64_t{C}, c}}, true, [&](auto& in, auto& out) {
                             for (int i = 0; i < c; ++i) {
                               for (int j = 0; j < c; ++j)
                                 out[0]->at(i, j) = j <= i ? scale * in[0]->at(i, j) : 0.0f;
                             }
                           });
        }
        return gm_vector(op, {{x.qk, t0, c, h * int64_t{C}, c}, {x.gam, t0, c, h, 1}},
                         {{x.qm, t0, c, h * int64_t{C}, c}}, true, [&](auto& in, auto& out) {
                           for (int i = 0; i < c; ++i) {
                             for (int j = 0; j < c; ++j) {
                               out[0]->at(i, j) = j <= i ? scale * in[0]->at(i, j) *
                                                               std::exp(in[1]->v[i] - in[1]->v[j])
                                                         : 0.0f;
                             }
                           }
                         });
      }));
  HANPU_RETURN_IF_ERROR(
      launch_op(sim, static_cast<int>(NT) * 4, units, [&](CoreOps& op, int64_t u) {
        const int64_t n = u / H, t0 = n * C;
        const int h = static_cast<int>(u % H), c = rows(n);
        HANPU_RETURN_IF_ERROR(
            gm_matmul(op, {kda ? x.qg : gm.q, t0, c, kda ? h * int64_t{K} : gm.qk_col(h), K}, false,
                      {x.h, (n * H + h) * K, K, 0, V}, {x.qh, t0, c, h * int64_t{V}, V}));
        return gm_matmul(op, {x.qm, t0, c, h * int64_t{C}, c}, false,
                         {x.vn, t0, c, h * int64_t{V}, V}, {x.ov, t0, c, h * int64_t{V}, V});
      }));
  return launch_op(
      sim, static_cast<int>(NT) * 2 + kEpilogueOps, units, [&](CoreOps& op, int64_t u) {
        const int64_t n = u / H, t0 = n * C;
        const int h = static_cast<int>(u % H), c = rows(n);
        if (kda) {  // exp(gam) is already in Q h
          return gm_vector(op, {{x.ov, t0, c, h * int64_t{V}, V}, {x.qh, t0, c, h * int64_t{V}, V}},
                           {{gm.o, t0, c, h * int64_t{V}, V}}, false, [&](auto& in, auto& out) {
                             for (size_t i = 0; i < out[0]->v.size(); ++i)
                               out[0]->v[i] = in[0]->v[i] + scale * in[1]->v[i];
                           });
        }
        return gm_vector(op,
                         {{x.ov, t0, c, h * int64_t{V}, V},
                          {x.qh, t0, c, h * int64_t{V}, V},
                          {x.gam, t0, c, h, 1}},
                         {{gm.o, t0, c, h * int64_t{V}, V}}, true, [&](auto& in, auto& out) {
                           for (int i = 0; i < c; ++i) {
                             const float e = scale * std::exp(in[2]->v[i]);
                             for (int j = 0; j < V; ++j)
                               out[0]->at(i, j) = in[0]->at(i, j) + e * in[1]->at(i, j);
                           }
                         });
      });
}

}  // namespace hanpu::npu
