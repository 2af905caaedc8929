// The flags of how a checkpoint runs (ModelRunOptions), shared by run, perplexity and serve.
#pragma once

#include <CLI/CLI.hpp>

#include "hanpu/engine.h"

namespace hanpu::cli {

// --la, --placement, --attn-products, --projection, -t/--threads, --kv-cache, --prefill-chunk.
void add_model_run_flags(CLI::App& app, ModelRunOptions& r);

}  // namespace hanpu::cli
