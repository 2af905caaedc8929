// `hanpu info` (see info_cmd.h).
#include "info_cmd.h"

#include <cstdio>

#include "base/env_settings.h"
#include "cpu/nn/blas_sgemm.h"
#include "flag_checks.h"
#include "hanpu/attn.h"
#include "hanpu/machine.h"
#include "simd/gemm.h"
#include "simd/gemm_bf16_dot.h"
#include "simd/gemm_bf16_pairs.h"

namespace hanpu::cli {

void add_info_options(CLI::App& app, InfoOptions& o) {
  app.add_option("--threads", o.threads, "threads (0: all cores)")->check(thread_range());
}

int run_info(const InfoOptions& o) {
  const hanpu::FmaPeak p = hanpu::measure_fma_peak(o.threads);
  std::printf("threads %d, SIMD target %s\nFMA peak %.1f GFLOP/s (%.1f per core)\n", p.threads,
              p.simd_target.c_str(), p.gflops, p.per_core_gflops);
  std::printf("micro-kernel: %s, %.1f GFLOP/s on 128^3 GEMMs\n",
              hanpu::describe_micro_kernel().c_str(), hanpu::measure_gemm_gflops(o.threads));
  const hanpu::FmaPeak amx = hanpu::measure_amx_peak(o.threads);
  if (amx.gflops > 0) {
    std::printf("matrix unit: AMX bf16 tiles, %.1f GFLOP/s (%.1f per core)\n", amx.gflops,
                amx.per_core_gflops);
  } else {
    std::printf("matrix unit: none (%s)\n", amx.simd_target.c_str());
    const hanpu::FmaPeak dot = hanpu::measure_bf16_dot_peak(o.threads);
    if (dot.gflops > 0) {
      std::printf("bf16 dot instruction (AVX512-BF16): %.1f GFLOP/s (%.1f per core)\n", dot.gflops,
                  dot.per_core_gflops);
      std::printf(
          "projections of a prefill: bf16 on hanpu's dot kernel (%d x 32 register tile, x rounded "
          "to bf16; "
          "HANPU_BF16_DOT=0: the pairs kernel), f32 and f16 on %s\n",
          hanpu::simd::gemm_bf16_dot_tile_rows(), hanpu::cpu::blas_sgemm_describe().c_str());
    } else {
      std::printf(
          "projections of a prefill: bf16 on hanpu's pairs kernel (%d x %d register tile), f32 and "
          "f16 on %s\n",
          hanpu::simd::gemm_bf16_pairs_tile_rows(), hanpu::simd::gemm_bf16_pairs_tile_cols(),
          hanpu::cpu::blas_sgemm_describe().c_str());
    }
  }
  // The attention prefill's products on a bf16 KV cache (hanpu/attn.h), as AttnProducts::kAuto
  // picks them.
  std::printf("attention prefill on a bf16 KV cache: %s\n",
              hanpu::attn_auto_bf16_products(hanpu::DType::kBF16)
                  ? "bf16 products on the dot instruction (q and P rounded to bf16, fp32 sums; "
                    "HANPU_BF16_DOT=0: fp32)"
                  : "fp32 products (no bf16 dot instruction here, or HANPU_BF16_DOT=0)");
  // The environment as hanpu reads it (base/env_settings.h): every variable, set or not.
  std::printf("environment:\n");
  for (const EnvVarInfo& v : env_vars()) {
    const char* text = env_text(v.var);
    std::printf("  %-15s %-8s %s\n", v.name, text ? text : "(unset)", v.meaning);
  }
  return 0;
}

}  // namespace hanpu::cli
