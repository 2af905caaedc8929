// Multi-head latent attention, the full-attention layers of the KDA hybrids (transformers'
// KimiLinearAttention and BailingHybridAttention forward) on hanpu's kernels: queries (full
// rank, or q_a -> RMSNorm -> q_b), each token's latent (kv_a -> RMSNorm) and shared rope key,
// DeepSeek's interleaved RoPE on the rope dims where the model has it (Ling; Kimi Linear uses
// none), attention at scale (nope + rope)^-1/2, Ling's per-head sigmoid output gate, the
// output projection.
//
// The cache is MLA's compressed one: per token one row [latent C | rope key R | 0 pad] of
// Lp = mla_cache_dim (a multiple of 16, the fused kernel's), its values being its keys
// (KvValues::kAreKeys): C + R values a token where per-head keys and values take H (N + R + Dv).
// Attention runs in one of two forms (MlaForm, mla_runs_absorbed):
//   decompressed  the cached latents up-projected by kv_b to per-head keys [nope | rope] and
//                 values, each zero-padded to a multiple of 16 (Kimi Linear's 192 and 128
//                 are), through the fused kernel with its values' own head dim; the cached
//                 rows go in blocks so no [L, H, D] copy of a long cache is ever made.
//   absorbed      each query's nope dims taken into the latent space (q W_uk, per head), all
//                 H heads against the latent rows at once (one kv head, D = Lp, values = keys),
//                 the latent output brought to each head's values (W_uv): no up-projection of
//                 the cache at all, the form for decode.
// Both give the same attention up to rounding (tests/model/mla_layer_test.cc).
#pragma once

#include <cstdint>

#include "hanpu/status.h"
#include "model/layer_kv.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/workspace.h"

namespace hanpu::model {

// Lp: the cached row, C + R rounded up to 16. Kimi Linear: 512 + 64 = 576.
int mla_cache_dim(const MlaShape& m);
// The decompressed form's head dims: keys N + R and values Dv, each rounded up to 16.
int mla_key_dim(const MlaShape& m);
int mla_value_dim(const MlaShape& m);

// Whether R query rows over L cached rows (the R among them) take the absorbed form: fewer
// multiply-adds a head, counting
//   decompressed  L C (N + Dv)    every cached latent up-projected
//                 + R L (N + R' + Dv)  attention at the model's head dims (R' the rope dims)
//   absorbed      R C (N + Dv)    queries in, outputs out of the latent space
//                 + 2 R L Lp      attention over the latent rows
// Kimi Linear (C 512, N 128, R' 64, Dv 128, Lp 576): a decode step (R = 1) over 4096 rows is
// 538M decompressed against 4.8M absorbed; a 256-token prefill from an empty cache 54M
// against 109M, so it decompresses. Absorbed wins while R stays below about 150.
bool mla_runs_absorbed(const MlaShape& m, int64_t R, int64_t L);

// x [T, hidden] -> out [out_rows, hidden] (layers.h's convention); this call's latent rows
// (positions pos0 ...) are appended to kv [*, 1, mla_cache_dim], a kAreKeys cache.
Status mla_layer(const ModelConfig& c, const MlaWeights& w, const float* x, int64_t T, int64_t pos0,
                 LayerKv* kv, const ForwardOptions& opt, int64_t out_rows, float* out,
                 double* kernel_ms, Workspace& ws);

}  // namespace hanpu::model
