// profile_la_chunk_stages: the operators of hanpu's chunk (la_hanpu.cc, HA-NPU order) timed
// one by one on the calling thread (see hanpu/la.h).
#include <algorithm>
#include <array>
#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cpu/la/la_chunk_math.h"
#include "cpu/la/la_problem.h"
#include "cpu/la/la_strategy.h"
#include "simd/fp_mode.h"

namespace hanpu {

namespace {

enum Stage { kLoad, kKkQk, kState, kMask, kRhs, kSolve, kOutputs, kUpdate, kStore, kStages };
constexpr std::array<std::string_view, kStages> kStageNames = {
    "load", "kk_qk", "state", "mask", "rhs", "solve", "outputs", "update", "store"};

// Nominal multiply-adds per full chunk (c = C rows, all V columns): see LaStageTime::fmas.
std::array<double, kStages> stage_fmas(const cpu::LaProblem& p) {
  const double c = p.chunk, K = p.K, V = p.V;
  std::array<double, kStages> f{};
  f[kKkQk] = c * (c + 1) * K;  // the lower triangles of K K^T and Q K^T
  f[kState] = 2 * c * K * V;   // K S0 and Q S0
  f[kSolve] = c * (c - 1) / 2 * V;
  f[kOutputs] = c * (c + 1) / 2 * V;
  f[kUpdate] = c * K * V;
  if (p.kda()) std::swap(f[kKkQk], f[kMask]);  // KDA's products run inside its decay mask
  return f;
}

class StageClock {
 public:
  using Clock = std::chrono::steady_clock;
  StageClock() : last_(Clock::now()) {}
  // Ends the running stage as `s` and starts the next.
  void lap(Stage s, std::array<std::vector<double>, kStages>& times) {
    const Clock::time_point now = Clock::now();
    times[s].push_back(std::chrono::duration<double, std::micro>(now - last_).count());
    last_ = now;
  }

 private:
  Clock::time_point last_;
};

}  // namespace

Status profile_la_chunk_stages(const LaArgs& args, int chunk_size, int heads, int rounds,
                               std::vector<LaStageTime>* out) {
  LaOptions options;
  options.chunk_size = chunk_size;
  cpu::LaProblem p;
  HANPU_RETURN_IF_ERROR(cpu::validate_la(args, options, &p));
  if (p.N != 1)
    return Status::Error("profile_la_chunk_stages: one sequence only (cu_seqlens must be empty)");
  if (heads < 1 || heads > p.HV) {
    return Status::Error(
        fmt::format("profile_la_chunk_stages: heads {} is not in [1, HV = {}]", heads, p.HV));
  }
  if (rounds < 1)
    return Status::Error(fmt::format("profile_la_chunk_stages: rounds {} < 1", rounds));
  out->clear();
  if (p.T == 0) return Status::Ok();

  simd::ensure_flush_denormals();
  cpu::ChunkWorkspace ws(p.chunk, p.K, p.V, nullptr);
  const cpu::GemmFn gemm = cpu::gemm_for(cpu::GemmMode::kPlanned);
  const int lds = p.V + cpu::kStateRowPad;
  std::vector<float> states(static_cast<size_t>(heads) * p.K * lds);
  std::array<std::vector<double>, kStages> times;
  for (int round = 0; round < rounds; ++round) {
    for (int hv = 0; hv < heads; ++hv) {
      cpu::read_initial_state(p, 0, hv, 0, p.V, states.data() + static_cast<size_t>(hv) * p.K * lds,
                              lds);
    }
    for (int64_t t0 = 0; t0 < p.T; t0 += p.chunk) {
      const int c = static_cast<int>(std::min<int64_t>(p.chunk, p.T - t0));
      for (int hv = 0; hv < heads; ++hv) {
        float* S = states.data() + static_cast<size_t>(hv) * p.K * lds;
        StageClock clock;
        cpu::load_chunk_rows(p, t0, c, hv, ws);
        cpu::load_chunk_gates(p, t0, hv, ws);
        cpu::bind_chunk_v_and_out(p, t0, hv, 0, p.V, ws);
        clock.lap(kLoad, times);
        // The same operators in the same order as la_hanpu.cc's chunk_reordered.
        if (!p.kda()) cpu::raw_kk_qk(p, ws, gemm);  // KDA's products are inside its decay mask
        clock.lap(kKkQk, times);
        cpu::state_products(p, ws, S, lds, 0, p.V, gemm, 0, 2 * c);
        clock.lap(kState, times);
        cpu::decayed_kk_qk(p, ws, gemm, /*raw_ready=*/!p.kda());
        clock.lap(kMask, times);
        cpu::gemm_first_rhs(p, ws, p.V);
        clock.lap(kRhs, times);
        cpu::solve_unit_lower(ws.kkqk.data(), ws.C, c, ws.vn.data(), ws.ldvn, p.V, gemm);
        clock.lap(kSolve, times);
        cpu::chunk_outputs(p, ws, p.V, gemm);
        clock.lap(kOutputs, times);
        cpu::update_state(p, ws, S, lds, 0, p.V, ws.vn.data(), ws.ldvn, gemm);
        clock.lap(kUpdate, times);
        cpu::store_chunk_out(p, t0, hv, 0, p.V, ws);
        clock.lap(kStore, times);
      }
    }
  }
  const std::array<double, kStages> fmas = stage_fmas(p);
  for (int s = 0; s < kStages; ++s) {
    if (p.kda() && s == kKkQk) continue;
    std::vector<double>& t = times[s];
    std::sort(t.begin(), t.end());
    out->push_back(LaStageTime{kStageNames[s], t.front(), t[t.size() / 2], fmas[s]});
  }
  return Status::Ok();
}

}  // namespace hanpu
