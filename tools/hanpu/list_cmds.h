// The listing commands: `hanpu la strategies` and `hanpu attn placements`.
#pragma once

#include <CLI/CLI.hpp>

namespace hanpu::cli {

struct NoOptions {};
inline void add_no_options(CLI::App&, NoOptions&) {}

int run_la_strategies(const NoOptions&);
int run_attn_placements(const NoOptions&);

}  // namespace hanpu::cli
