// `hanpu plan` (see plan_cmd.h).
#include "plan_cmd.h"

#include <cstdio>

#include "flag_checks.h"
#include "hanpu/npu.h"

namespace hanpu::cli {

void add_plan_options(CLI::App& app, PlanOptions& o) {
  app.add_option("--target", o.target, "NPU target (built-in name or JSON file)")
      ->capture_default_str();
  app.add_option("--mech", o.mech, "gdn or kda")
      ->capture_default_str()
      ->check(CLI::IsMember({"gdn", "kda"}));
  app.add_option("--heads", o.heads, "heads H")->capture_default_str()->check(shape_range());
  app.add_option("--seq", o.seq, "sequence length T")->capture_default_str()->check(token_range(1));
  app.add_option("--dim", o.dim, "head dim K = V")->capture_default_str()->check(shape_range());
  app.add_option("--chunk", o.chunk, "chunk size C")->capture_default_str()->check(shape_range());
}

int run_plan(const PlanOptions& o) {
  std::string text;
  const LaMech mech = o.mech == "kda" ? LaMech::kKda : LaMech::kGdn;
  const Status st = describe_npu_plan(o.target, mech, o.heads, o.seq, o.dim, o.chunk, &text);
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  std::printf("%s", text.c_str());
  return 0;
}

}  // namespace hanpu::cli
