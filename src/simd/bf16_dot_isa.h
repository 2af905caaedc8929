// What the kernels on the bf16 dot-product instruction (gemm_bf16_dot.cc, attn_bf16_dot.cc)
// share: whether this compiler can build them, the function attribute that compiles one
// function for AVX512-BF16 while the file stays on the baseline ISA (so nothing AVX-512
// reaches code that runs before bf16_dot_usable() said yes), and the pair-vector cast.
#pragma once

#include <hwy/detect_targets.h>

// Not in a build that leaves Highway's AVX-512 target out (HWY_DISABLED_TARGETS, as for an
// AVX2-only binary): such a build runs no AVX-512 instruction anywhere.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && (HWY_TARGETS & HWY_AVX3)
#define HANPU_HAVE_BF16_DOT 1
#include <immintrin.h>

#define HANPU_DOT_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define HANPU_UNROLL_ALL _Pragma("GCC unroll 16")

namespace hanpu::simd {
// 32 bf16 pairs as the instruction's operand type (a cast, no conversion). Static: each
// including file keeps its own AVX-512 copy, called only from its AVX-512 functions.
HANPU_DOT_TARGET static inline __m512bh AsPairs(__m512i v) {
  return (__m512bh)v;
}  // NOLINT: a vector cast
}  // namespace hanpu::simd
#endif
