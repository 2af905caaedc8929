// `hanpu perplexity --kl-divergence`: runs Engine::kl_divergence and prints what
// llama-perplexity prints for it (a line a chunk, then the perplexity, KL divergence and token
// probability statistics), or one JSON object.
#pragma once

#include "hanpu/engine.h"
#include "perplexity_cmd.h"

namespace hanpu::cli {

int run_kl_divergence(const Engine& engine, const PerplexityCmdOptions& o);

}  // namespace hanpu::cli
