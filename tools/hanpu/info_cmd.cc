// `hanpu info` (see info_cmd.h).
#include "info_cmd.h"

#include <cstdio>

#include "base/env_settings.h"
#include "cpu/nn/blas_sgemm.h"
#include "cpu/nn/linear.h"
#include "cpu/nn/projection_kernels.h"
#include "cpu/nn/quant_linear.h"
#include "flag_checks.h"
#include "hanpu/attn.h"
#include "hanpu/machine.h"
#include "simd/gemm.h"
#include "simd/quant_panel.h"

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
  }
  const hanpu::FmaPeak dot = hanpu::measure_bf16_dot_peak(o.threads);
  if (dot.gflops > 0) {
    std::printf("bf16 dot instruction (AVX512-BF16): %.1f GFLOP/s (%.1f per core)\n", dot.gflops,
                dot.per_core_gflops);
  }
  std::printf("OpenBLAS: %s\n", cpu::blas_sgemm_describe().c_str());
  // The projection kernels' table (--projection, HANPU_PROJECTION): what this CPU has, and
  // what auto picks for bf16 weights in a prefill.
  const cpu::ProjectionKernel ceiling = cpu::projection_kernel_from_env();
  std::printf("projection kernels (--projection; auto here: bf16 prefill on %s):\n",
              cpu::linear_uses_amx(ceiling)                                            ? "amx"
              : cpu::linear_uses_dot(ceiling)                                          ? "dot"
              : cpu::projection_kernel_allowed(ceiling, cpu::ProjectionKernel::kPairs) ? "pairs"
              : cpu::projection_kernel_allowed(ceiling, cpu::ProjectionKernel::kBlas)  ? "blas"
                                                                                       : "fma");
  for (const cpu::ProjectionKernelInfo& k : cpu::projection_kernels()) {
    std::printf("  %-6s %-8s %s\n", std::string(k.name).c_str(), k.usable() ? "usable" : "-",
                std::string(k.summary).c_str());
  }
  // The attention prefill's products on a bf16 KV cache (hanpu/attn.h), as AttnProducts::kAuto
  // picks them.
  std::printf("attention prefill on a bf16 KV cache: %s\n",
              attn_auto_bf16_products(DType::kBF16)
                  ? "bf16 products on the dot instruction (q and P rounded to bf16, fp32 sums)"
              : attn_bf16_products_usable() ? "fp32 products (HANPU_ATTN_PRODUCTS=f32)"
                                            : "fp32 products (no bf16 dot instruction here)");
  // Quantized (GGUF block) projections: int8 activations times the blocks on this kernel.
  if (simd::quant_panel_usable(QuantType::kQ4_K)) {
    std::printf(
        "quantized projections: int8 dot kernel %s; a prefill of %lld rows or more on the int8 "
        "panels (Q2_K, Q3_K: widened to bf16 from %lld rows)\n",
        cpu::quant_linear_kernel_name(), static_cast<long long>(cpu::kQuantPanelRows),
        static_cast<long long>(cpu::kQuantWidenRows));
  } else {
    std::printf(
        "quantized projections: int8 dot kernel %s; a prefill of %lld rows or more widened to "
        "bf16\n",
        cpu::quant_linear_kernel_name(), static_cast<long long>(cpu::kQuantWidenRows));
  }
  std::printf("quantized decode: %s\n", cpu::decode_groups_summary().c_str());
  // The environment as hanpu reads it (base/env_settings.h): every variable, set or not.
  std::printf("environment:\n");
  for (const EnvVarInfo& v : env_vars()) {
    const char* text = env_text(v.var);
    std::printf("  %-19s %-8s %s\n", v.name, text ? text : "(unset)", v.meaning);
  }
  return 0;
}

}  // namespace hanpu::cli
