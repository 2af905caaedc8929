// `hanpu quantize IN OUT TYPE`: an F32/F16/BF16 GGUF quantized to one of llama.cpp's mixes
// (Q4_K_M, ...), written as a GGUF llama.cpp loads, as llama-quantize does.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli_output.h"

namespace hanpu::cli {

struct QuantizeOptions {
  std::string in, out, type;
  bool json = false;
  VerbosityFlags verbosity;
};

void add_quantize_options(CLI::App& app, QuantizeOptions& o);
int run_quantize(const QuantizeOptions& o);

}  // namespace hanpu::cli
