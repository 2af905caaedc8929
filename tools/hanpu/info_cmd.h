// `hanpu info`: this machine as hanpu sees it — the measured FMA peak, the SIMD target, the
// kernels the projections and attention run on here.
#pragma once

#include <CLI/CLI.hpp>

namespace hanpu::cli {

struct InfoOptions {
  int threads = 0;  // 0: every core
};

void add_info_options(CLI::App& app, InfoOptions& o);
int run_info(const InfoOptions& o);

}  // namespace hanpu::cli
