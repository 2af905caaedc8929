#include "run_flags.h"

#include "flag_checks.h"

namespace hanpu::cli {

void add_model_run_flags(CLI::App& app, ModelRunOptions& r) {
  app.add_option("--la", r.la_strategy, "LA strategy: recurrent, fla, hanpu")
      ->capture_default_str()
      ->check(la_strategy_names());
  app.add_option("--placement", r.attn_placement, "attention placement: balanced, uniform, layer")
      ->capture_default_str()
      ->check(placement_names());
  app.add_option(
         "--attn-products", r.attn_products,
         "attention prefill products: auto (bf16 on a bf16 KV cache where the CPU has the bf16 dot "
         "instruction), f32, bf16 (q, k, v and P rounded to bf16)")
      ->capture_default_str()
      ->check(attn_product_names());
  app.add_option("--projection", r.projection,
                 "projection kernel: auto (HANPU_PROJECTION, else the fastest here), amx, dot, "
                 "pairs, blas, fma "
                 "(`hanpu info` lists what this CPU has)")
      ->capture_default_str()
      ->check(projection_names());
  app.add_option("-t,--threads", r.threads, "cores (0: all)")
      ->capture_default_str()
      ->check(thread_range());
  app.add_option("--kv-cache", r.kv_cache,
                 "KV-cache dtype: auto (the projections' dtype), f32, bf16, f16")
      ->capture_default_str()
      ->check(storage_names());
  app.add_option("--prefill-chunk", r.prefill_chunk, "prompt tokens per forward call")
      ->capture_default_str()
      ->check(token_range(1));
}

}  // namespace hanpu::cli
