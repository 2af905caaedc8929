// `hanpu la schedule`: the HA-NPU core schedule (heads, value-column splits) for a shape.
#pragma once

#include <vector>

#include <CLI/CLI.hpp>

namespace hanpu::cli {

struct LaScheduleOptions {
  int hv = 16, heads = 0, v = 128, threads = 0;
  std::vector<long> seq = {4096};
};

void add_la_schedule_options(CLI::App& app, LaScheduleOptions& o);
int run_la_schedule(const LaScheduleOptions& o);

}  // namespace hanpu::cli
