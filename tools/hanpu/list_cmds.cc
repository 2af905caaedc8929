// `hanpu la strategies`, `hanpu attn placements` (see list_cmds.h).
#include "list_cmds.h"

#include <cstdio>
#include <string>

#include "hanpu/attn.h"
#include "hanpu/la.h"

namespace hanpu::cli {

int run_la_strategies(const NoOptions&) {
  for (const auto& s : la_strategies()) {
    std::printf("%-14s %s%s\n", std::string(s.name).c_str(), std::string(s.summary).c_str(),
                s.ablation_only ? "  [ablation step]" : "");
  }
  return 0;
}

int run_attn_placements(const NoOptions&) {
  for (const auto& p : attn_placements()) {
    std::printf("%-10s %s\n", std::string(p.name).c_str(), std::string(p.summary).c_str());
  }
  return 0;
}

}  // namespace hanpu::cli
