// `hanpu la schedule` (see la_schedule_cmd.h).
#include "la_schedule_cmd.h"

#include <cstdint>
#include <cstdio>

#include "flag_checks.h"
#include "hanpu/la.h"

namespace hanpu::cli {

void add_la_schedule_options(CLI::App& app, LaScheduleOptions& o) {
  app.add_option("--hv", o.hv, "value heads HV")->capture_default_str()->check(shape_range());
  app.add_option("--heads", o.heads, "q/k heads H (0: H = HV)")
      ->capture_default_str()
      ->check(shape_range(0));
  app.add_option("--v", o.v, "value dim V")->capture_default_str()->check(shape_range());
  app.add_option("--seq", o.seq, "sequence lengths (several: varlen)")
      ->capture_default_str()
      ->check(token_range(1));
  app.add_option("--threads", o.threads, "cores (0: this machine's)")
      ->capture_default_str()
      ->check(thread_range());
}

int run_la_schedule(const LaScheduleOptions& o) {
  const std::vector<int64_t> lens(o.seq.begin(), o.seq.end());
  const int heads = o.heads > 0 ? o.heads : o.hv;
  if (o.hv % heads != 0) {
    std::fprintf(stderr, "error: --hv %d must be a positive multiple of --heads %d\n", o.hv, heads);
    return 2;
  }
  std::printf("%s", describe_la_schedule(lens, heads, o.hv, o.v, o.threads).c_str());
  return 0;
}

}  // namespace hanpu::cli
