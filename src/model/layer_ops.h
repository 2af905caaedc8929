// The element-wise pieces of a Qwen3.5 / Qwen3-Next layer, in fp32 as transformers computes
// them (each names its source). Rows run in parallel on `threads` cores (parallel_rows: a
// prefill's norms over [T, hidden] are a visible share of its time when left on one core
// while the others wait); within a row, plain loops or the SIMD activation ops.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hanpu::model {

// y = x / sqrt(mean(x^2) + eps) * (1 + w) per row of n (Qwen3_5RMSNorm, zero-centred weight).
// x and y may alias; rows are `ld` floats apart.
void rms_norm_zero_centred(const float* x, int64_t ld_x, int64_t rows, int n, const float* w,
                           float eps, float* y, int64_t ld_y, int threads = 1);

// h += block, then xn = rms_norm_zero_centred(h) per row of n (the residual add before each
// block's norm), all three [rows, n] contiguous.
void add_rms_norm_zero_centred(float* h, const float* block, int64_t rows, int n, const float* w,
                               float eps, float* xn, int threads);

// o = w * o / sqrt(mean(o^2) + eps) * silu(z) per row of n (Qwen3_5RMSNormGated, plain weight).
void gated_rms_norm(float* o, const float* z, int64_t rows, int n, const float* w, float eps,
                    int threads = 1);

// o = w * o / sqrt(mean(o^2) + eps) * sigmoid(gate) per row of n (the KDA hybrids' o_norm,
// KimiLinearRMSNormGated / BailingHybridRMSNormGated, plain weight).
void sigmoid_gated_rms_norm(float* o, const float* gate, int64_t rows, int n, const float* w,
                            float eps, int threads = 1);

// beta = sigmoid(b), g = neg_A * softplus(a + dt_bias) for rows of HV (GatedDeltaNet gates).
void gdn_gates(const float* b, const float* a, int64_t T, int HV, const float* neg_A,
               const float* dt_bias, float* beta, float* g);

// Rotary embedding of the first `rot` dims of every head row (rotate_half convention),
// positions pos0 + t: x [T, heads, D].
void apply_rope(float* x, int64_t T, int heads, int D, int rot, double theta, int64_t pos0);

// DeepSeek's interleaved RoPE (BailingHybrid's apply_rotary_pos_emb_interleave) on the first
// `rot` dims of each head row of x [T, heads, ld]: pairs (x[2i], x[2i+1]) rotate by frequency
// i, and the result is written de-interleaved, [x'[0], x'[2], ..] then [x'[1], x'[3], ..], as
// transformers leaves it (queries and keys alike, so their dot products are the pairs').
void apply_rope_interleaved(float* x, int64_t T, int heads, int ld, int rot, double theta,
                            int64_t pos0);

// log softmax(logits)[id] over a row of n logits, in double: a perplexity's terms. The row is
// overwritten (exp(l - max) in place, on the vector unit).
double log_softmax_at(float* logits, int n, int id);

inline float sigmoid(float x) { return 1.0f / (1.0f + __builtin_expf(-x)); }
inline float silu(float x) { return x * sigmoid(x); }

}  // namespace hanpu::model
