// `hanpu sim --op attn` (see sim_cmd.h): STEEL's fused attention on a spatial target for
// every (heads, T, placement), on seeded bf16 inputs, checked against the float64
// reference (nmse_o), one row per run.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "hanpu/npu.h"
#include "ref/attn_ref.h"
#include "sim_cmd.h"

namespace hanpu::cli {

int run_sim_attn(const SimOptions& o) {
  std::vector<std::string> variants;
  for (const std::string& v : o.variant) {
    if (v == "all") {
      for (const auto& name : npu_attn_variants()) variants.push_back(name);
    } else {
      variants.push_back(v);
    }
  }
  if (!o.json) {
    std::printf("%-7s %-5s %-8s %-15s %6s %5s %4s %11s %12s %9s %7s %9s %9s\n", "target", "op",
                "variant", "placement", "T", "heads", "D", "latency_ms", "offchip_MiB", "stall_ms",
                "util%", "energy_mJ", "nmse_o");
  }
  const bool tty = isatty(fileno(stderr)) != 0;
  NmseGate gate(o.max_nmse);
  // Placement applies to steel only: dato and layer compute every block on a fixed dealing.
  const auto placements_of = [&](const std::string& v) {
    return v == "steel" ? o.placement : std::vector<std::string>{"none"};
  };
  size_t total = 0;
  for (const std::string& v : variants)
    total += o.heads.size() * o.seq.size() * placements_of(v).size();
  size_t done = 0;
  for (int H : o.heads) {
    for (long T : o.seq) {
      std::mt19937_64 rng(2000 + T * 7 + H);
      std::normal_distribution<float> nd;
      const size_t n = static_cast<size_t>(T) * H * o.dim;
      std::vector<uint16_t> q(n), k(n), v(n);
      for (auto* t : {&q, &k, &v}) {
        for (uint16_t& x : *t) x = f32_to_bf16_bits(nd(rng));
      }
      std::vector<float> out(n);
      AttnArgs a;
      const Shape s{T, H, o.dim};
      a.q = {q.data(), DType::kBF16, s};
      a.k = {k.data(), DType::kBF16, s};
      a.v = {v.data(), DType::kBF16, s};
      a.o = {out.data(), DType::kF32, s};
      a.mask = AttnMask::kCausal;
      std::vector<double> want;
      for (const std::string& variant : variants) {
        for (const std::string& placement : placements_of(variant)) {
          if (tty) {
            std::fprintf(stderr, "\r[%zu/%zu] %s %s, %d heads, T = %ld ...", ++done, total,
                         variant.c_str(), placement.c_str(), H, T);
          }
          NpuAttnStats st;
          const Status status =
              npu_attn_prefill(a,
                               {.target = o.target,
                                .variant = variant,
                                .placement = placement == "none" ? "sparsity-aware" : placement},
                               &st);
          if (!status.ok()) {
            std::fprintf(stderr, "%serror: %s\n", tty ? "\n" : "", status.message().c_str());
            return 2;
          }
          double err = -1;
          if (o.check) {
            if (want.empty()) want = ref::attention(a).o;
            err = nmse(out, want);
            gate.check(
                fmt::format("{} attn {} {}, {} heads, T {}", st.target, variant, placement, H, T),
                "output", err);
          }
          if (tty) std::fprintf(stderr, "\r\033[K");
          if (o.json) {
            const nlohmann::json j = {{"target", st.target},
                                      {"op", "attn"},
                                      {"variant", variant},
                                      {"placement", placement},
                                      {"T", T},
                                      {"heads", H},
                                      {"D", o.dim},
                                      {"latency_ms", st.latency_ms},
                                      {"offchip_bytes", st.offchip_bytes},
                                      {"stall_ms", st.stall_ms},
                                      {"compute_util", st.compute_util},
                                      {"design_switches", st.design_switches},
                                      {"energy_mj", st.energy_mj},
                                      {"macs", st.macs},
                                      {"nmse_o", err},
                                      {"busy_tiles", st.busy_tiles},
                                      {"tile_util", st.tile_util},
                                      {"events", st.events}};
            std::printf("%s\n", j.dump().c_str());
          } else {
            std::printf(
                "%-7s %-5s %-8s %-15s %6ld %5d %4d %11.3f %12.2f %9.3f %6.1f%% %9.3f %9.2e\n",
                st.target.c_str(), "attn", variant.c_str(), placement.c_str(), T, H, o.dim,
                st.latency_ms, st.offchip_bytes / 1048576.0, st.stall_ms, 100 * st.compute_util,
                st.energy_mj, err);
          }
          std::fflush(stdout);
        }
      }
    }
  }
  return gate.finish();
}

}  // namespace hanpu::cli
