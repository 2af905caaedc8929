// The three layer kinds of a hybrid model, each mapping normed hidden states x [T, hidden]
// to the block's output [T, hidden] (the residual add is the caller's). kernel_ms gets the
// time spent inside the LA / attention kernel call added to it.
//
// The token mixers take out_rows <= T: they update the sequence's state (LA and conv state,
// KV cache) from all T rows but compute the output of the last out_rows rows only, into
// out [out_rows, hidden]. A forward pass needs only the last position of its last layer (its
// logits are the last position's), so there it skips the output path of the other rows.
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_vector.h"

#include "hanpu/kv_cache.h"
#include "hanpu/la.h"
#include "hanpu/status.h"
#include "model/model.h"
#include "model/workspace.h"

namespace hanpu::model {

// Each draws its temporaries from `ws` (workspace.h).

// Gated DeltaNet token mixer; conv [kernel - 1, channels] and recurrent [HV, K, V] are the
// sequence's states, updated in place.
Status gdn_layer(const ModelConfig& c, const GdnWeights& w, const float* x, int64_t T,
                 std::vector<float>* conv, AlignedFloats* recurrent, const ForwardOptions& opt,
                 int64_t out_rows, float* out, double* kernel_ms, Workspace& ws);

// An LA layer's kernel call: q, k [T, H, K], v [T, HV, V], beta [T, HV], g [T, HV] (GDN) or
// [T, HV, K] (KDA) through the chunk kernel (the recurrent step for one token) with
// `recurrent` updated in place; o [T, HV, V]. Heads and dims from c's la_* fields.
Status la_call(LaMech mech, const ModelConfig& c, const float* q, const float* k, const float* v,
               const float* g, const float* beta, int64_t T, AlignedFloats* recurrent,
               const ForwardOptions& opt, float* o, double* kernel_ms);

// Gated full attention; appends this call's keys and values (positions pos0 ...) to kv.
Status attention_layer(const ModelConfig& c, const AttnWeights& w, const float* x, int64_t T,
                       int64_t pos0, LayerKv* kv, const ForwardOptions& opt, int64_t out_rows,
                       float* out, double* kernel_ms, Workspace& ws);

// How the attention calls of a layer run (threads, placement, products).
AttendRun attend_run(const ForwardOptions& opt);

// o [R, Hq, D] *= sigmoid(the output-gate half of qg [R, Hq, 2D]).
void attn_output_gate(float* o, const float* qg, int64_t R, int Hq, int D, int threads);

// One decode step of n sequences (Model::decode_batch): the projections run over the n rows
// together, the state work (conv and LA step; RoPE at each one's position, KV append and
// attention over its own cache) per sequence. x, out [n, hidden].
Status gdn_layer_batch(const ModelConfig& c, const GdnWeights& w, const float* x, int n,
                       SequenceState* const* states, int layer, const ForwardOptions& opt,
                       float* out, double* kernel_ms, Workspace& ws);
Status attention_layer_batch(const ModelConfig& c, const AttnWeights& w, const float* x, int n,
                             SequenceState* const* states, int layer, const ForwardOptions& opt,
                             float* out, double* kernel_ms, Workspace& ws);

// SwiGLU MLP of intermediate size `inter` (limit > 0: clipped as cpu::swiglu says).
void mlp_layer(const MlpWeights& w, int inter, const float* x, int64_t T, const ForwardOptions& opt,
               float* out, Workspace& ws, float limit = 0.0f);

// Sparse MoE, experts run on the tokens routed to them. Qwen3-Next: softmax router, top-k
// (renormalised if the config says so), plus the sigmoid-gated shared expert. The KDA hybrids
// (w.router_bias set): route_grouped (grouped_router.h), the shared MLP ungated, Ling's
// SwiGLU clipping.
void moe_layer(const ModelConfig& c, const MoeWeights& w, const float* x, int64_t T,
               const ForwardOptions& opt, float* out, Workspace& ws);

}  // namespace hanpu::model
