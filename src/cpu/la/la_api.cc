// la_prefill: validate once, pick the strategy from the table, run it, report what it used.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cpu/la/la_problem.h"
#include "cpu/la/la_strategy.h"
#include "cpu/la/la_walk.h"
#include "parallel/speed_balance.h"
#include "parallel/thread_pool.h"

namespace hanpu {

Status la_prefill(const LaArgs& args, const LaOptions& options, LaStats* stats) {
  const cpu::LaStrategyEntry* strategy = cpu::find_la_strategy(options.strategy);
  if (!strategy) {
    std::string names;
    for (const auto& s : la_strategies())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", s.name);
    return Status::Error(
        fmt::format("la_prefill: unknown strategy '{}' (one of: {})", options.strategy, names));
  }
  cpu::LaProblem p;
  HANPU_RETURN_IF_ERROR(cpu::validate_la(args, options, &p));

  ScratchMeter meter;
  cpu::LaRunContext ctx;
  ctx.threads = options.threads > 0 ? options.threads : ThreadPool::default_threads();
  ctx.meter = &meter;
  try {
    if (p.T > 0) strategy->run(p, ctx);
  } catch (const std::bad_alloc&) {
    return Status::Error(
        fmt::format("la_prefill: out of memory in strategy '{}'", options.strategy));
  }
  // Empty sequences do no work: their final state is their initial state.
  for (int n = 0; n < p.N; ++n) {
    if (p.seq_len(n) > 0) continue;
    std::vector<float> s(static_cast<size_t>(p.K) * p.V);
    for (int hv = 0; hv < p.HV; ++hv) {
      cpu::read_initial_state(p, n, hv, 0, p.V, s.data());
      cpu::write_final_state(p, n, hv, 0, p.V, s.data());
    }
  }
  if (stats) {
    stats->extra_bytes = meter.peak();
    stats->worker_busy_ms = ctx.busy_ms;
  }
  return Status::Ok();
}

std::string describe_la_schedule(const std::vector<int64_t>& seq_lens, int H, int HV, int V,
                                 int threads) {
  if (threads <= 0) threads = ThreadPool::default_threads();
  cpu::LaProblem p;
  p.H = H;
  p.HV = HV;
  p.V = V;
  p.N = static_cast<int>(seq_lens.size());
  p.cu = {0};
  for (int64_t l : seq_lens) p.cu.push_back(p.cu.back() + l);
  std::string head =
      HV > H ? fmt::format("unit: q/k head h with its {} value heads (GVA)\n", HV / H) : "";
  int64_t longest = 0;
  for (int64_t l : seq_lens) longest = std::max(longest, l);
  const std::string phases =
      speed_balancing_enabled()
          ? fmt::format(
                "walked in phases of {} tokens at C = 64; between phases the units are re-dealt by "
                "the cores' measured speeds (this deal when they are equal; HANPU_BALANCE=0: "
                "always)\n",
                cpu::walk_phase_tokens(longest, 64))
          : "fixed deal (HANPU_BALANCE=0)\n";
  return head + cpu::schedule_groups_for(p, threads).describe() + phases;
}

double la_flops(int64_t T, int HV, int K, int V) {
  return 2.0 * static_cast<double>(T) * HV * (3.0 * K * V + 65.0 * K + 64.0 * V);
}

}  // namespace hanpu
