// `hanpu plan`: HA-NPU's offline plan for a modelled NPU (operator order, layouts, schedule).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace hanpu::cli {

struct PlanOptions {
  std::string target = "ascend-310p";  // built-in name or JSON file
  std::string mech = "gdn";
  int heads = 16, dim = 128, chunk = 64;
  long seq = 4096;
};

void add_plan_options(CLI::App& app, PlanOptions& o);
int run_plan(const PlanOptions& o);

}  // namespace hanpu::cli
