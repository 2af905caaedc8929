// `hanpu perplexity`: a checkpoint's perplexity on a text file, chunked and scored as
// llama.cpp's llama-perplexity does, so the two programs (and transformers) compare on one
// model and one text.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli_output.h"
#include "hanpu/engine.h"

namespace hanpu::cli {

struct PerplexityCmdOptions {
  std::string model;  // checkpoint folder or .gguf; empty: the shipped model
  std::string file;   // the text
  std::string weights = "auto";
  std::string kl_base;         // --kl-divergence-base
  bool kl_divergence = false;  // --kl-divergence: compare against kl_base instead of -f
  bool json = false;
  VerbosityFlags verbosity;
  PerplexityOptions run;
};

void add_perplexity_options(CLI::App& app, PerplexityCmdOptions& o);
int run_perplexity(const PerplexityCmdOptions& o);

}  // namespace hanpu::cli
