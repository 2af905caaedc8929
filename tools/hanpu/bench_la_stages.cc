// `hanpu bench la --stages`: where one core's time goes inside hanpu's fused chunk, operator
// by operator (profile_la_chunk_stages), for each (mech, dtype, HV, T) of the sweep.
#include "bench_la_stages.h"
#include "bench_report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "hanpu/machine.h"
#include "la_bench_inputs.h"

namespace hanpu::cli {

int run_bench_la_stages(const BenchLaOptions& o, const std::vector<LaMech>& mechs,
                        const std::vector<DType>& dtypes) {
  FILE* info = stderr;  // stdout holds the table (or the JSON)
  print_machine_header(info, 1);
  BenchReport report(o.report.format(),
                     {{"mech", "mech"},
                      {"dtype", "dtype"},
                      {"T", "T"},
                      {"HV", "HV"},
                      {"stage", "stage"},
                      {"min_us_text", "min us"},
                      {"median_us_text", "median us"},
                      {"share_text", "share"},
                      {"gflops_text", "GFLOP/s"},
                      {"pct_peak_text", "% peak"}},
                     1);
  // The stages' minima come from the machine's quietest moments, so their yardstick is the
  // FMA loop's best of many short runs on this thread (the header's probe is 5 x 100 ms).
  const FmaPeak peak = measure_fma_peak(1, 10, 60);
  std::fprintf(info, "# one-thread FMA peak for %%peak below: %.1f GFLOP/s (best of 60 x 10 ms)\n",
               peak.per_core_gflops);
  std::fprintf(
      info,
      "# each operator of hanpu's chunk timed on its own on one thread, over %d passes through the "
      "chunks of value heads 0..%d in lockstep; per call: minimum and median microseconds, the "
      "median's share of the chunk, GFLOP/s and %% of the one-core FMA peak from the minimum and "
      "the operator's nominal multiply-adds\n",
      o.repeats, o.stage_heads - 1);
  for (LaMech m : mechs) {
    for (DType dt : dtypes) {
      for (int hv : o.hv) {
        for (long T : o.seq) {
          LaBenchInputs in = make_la_bench_inputs(m, dt, T, o.heads, hv, o.dim, 42);
          const LaArgs args = la_bench_args(m, dt, T, o.heads, hv, o.dim, in);
          std::vector<LaStageTime> stages;
          const Status st = profile_la_chunk_stages(args, o.chunk, std::min(o.stage_heads, hv),
                                                    o.repeats, &stages);
          if (!st.ok()) {
            std::fprintf(stderr, "error: %s\n", st.message().c_str());
            return 1;
          }
          double total = 0;
          for (const LaStageTime& s : stages) total += s.median_us;
          for (const LaStageTime& s : stages) {
            const double gflops = s.fmas > 0 ? 2 * s.fmas / s.min_us / 1e3 : 0;
            const double pct = 100 * gflops / peak.per_core_gflops;
            const double share = 100 * s.median_us / total;
            nlohmann::json j = {{"mech", la_mech_name(m)},
                                {"dtype", dtype_name(dt)},
                                {"T", T},
                                {"H", o.heads},
                                {"HV", hv},
                                {"K", o.dim},
                                {"V", o.dim},
                                {"stage", s.stage},
                                {"min_us", s.min_us},
                                {"median_us", s.median_us},
                                {"share", share},
                                {"gflops", gflops},
                                {"pct_peak", pct}};
            if (report.tabular()) {
              j["min_us_text"] = fmt::format("{:.2f}", s.min_us);
              j["median_us_text"] = fmt::format("{:.2f}", s.median_us);
              j["share_text"] = fmt::format("{:.1f}%", share);
              j["gflops_text"] = fmt::format("{:.1f}", gflops);
              j["pct_peak_text"] = fmt::format("{:.1f}%", pct);
            }
            report.add(std::move(j));
          }
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

}  // namespace hanpu::cli
