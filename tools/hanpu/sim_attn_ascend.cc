// `hanpu sim --op attn` on an Ascend-class target (see sim_cmd.h): the fused FlashAttention
// kernel for every (heads, T, variant) on seeded fp16 inputs, checked against the float64
// reference (nmse_o), one row per run in the LA rows' measures.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "hanpu/npu.h"
#include "npu/kernels/attn_ascend.h"
#include "ref/attn_ref.h"
#include "sim_cmd.h"

namespace hanpu::cli {

int run_sim_attn_ascend(const SimOptions& o) {
  std::vector<std::string> variants;
  for (const std::string& v : o.variant) {
    if (v == "all") {
      variants.emplace_back("flash");
    } else if (v == "flash" || v == "flash-full") {
      variants.push_back(v);
    } else {
      std::fprintf(stderr,
                   "error: --variant %s: on an Ascend-class target --op attn runs flash (masked "
                   "key blocks skipped) or flash-full (computed and masked)\n",
                   v.c_str());
      return 2;
    }
  }
  for (int H : o.heads) {
    const int kv = o.kv_heads > 0 ? o.kv_heads : H;
    if (H % kv != 0) {
      std::fprintf(stderr, "error: --kv-heads %d must divide --heads %d\n", kv, H);
      return 2;
    }
    for (long T : o.seq) {  // a run too large for the model is refused before its inputs exist
      npu::AscendAttnGm shape;
      shape.T = T;
      shape.Hq = H;
      shape.Hkv = kv;
      shape.D = o.dim;
      if (o.dim >= 16 && npu::ascend_attention_events(shape) > npu::kMaxAttentionEvents) {
        std::fprintf(stderr,
                     "error: --seq %ld with %d kv heads would record more than %.0f M events on "
                     "the model: a shorter T or fewer heads\n",
                     T, kv, npu::kMaxAttentionEvents / 1e6);
        return 2;
      }
    }
  }
  if (!o.json) {
    std::printf("%-12s %-4s %-10s %6s %5s %4s %4s %11s %9s %7s %7s %9s %9s\n", "target", "op",
                "variant", "T", "heads", "kv", "D", "latency_ms", "gm_MiB", "cube%", "vec%",
                "energy_mJ", "nmse_o");
  }
  const bool tty = isatty(fileno(stderr)) != 0;
  NmseGate gate(o.max_nmse);
  const size_t total = o.heads.size() * o.seq.size() * variants.size();
  size_t done = 0;
  for (int H : o.heads) {
    const int KV = o.kv_heads > 0 ? o.kv_heads : H;
    for (long T : o.seq) {
      std::mt19937_64 rng(3000 + T * 7 + H);
      std::normal_distribution<float> nd;
      std::vector<uint16_t> q(static_cast<size_t>(T) * H * o.dim),
          k(static_cast<size_t>(T) * KV * o.dim), v(k.size());
      for (auto* t : {&q, &k, &v}) {
        for (uint16_t& x : *t) x = f32_to_f16_bits(nd(rng));
      }
      std::vector<float> out(q.size());
      AttnArgs a;
      a.q = {q.data(), DType::kF16, {T, H, o.dim}};
      a.k = {k.data(), DType::kF16, {T, KV, o.dim}};
      a.v = {v.data(), DType::kF16, {T, KV, o.dim}};
      a.o = {out.data(), DType::kF32, {T, H, o.dim}};
      a.mask = AttnMask::kCausal;
      std::vector<double> want;
      for (const std::string& variant : variants) {
        if (tty) {
          std::fprintf(stderr, "\r[%zu/%zu] %s, %d heads, T = %ld ...", ++done, total,
                       variant.c_str(), H, T);
        }
        NpuLaStats s;
        const Status st =
            npu_attn_prefill_ascend(a, {.target = o.target, .skip_masked = variant == "flash"}, &s);
        if (!st.ok()) {
          std::fprintf(stderr, "%serror: %s\n", tty ? "\n" : "", st.message().c_str());
          return 2;
        }
        double err = -1;
        if (o.check) {
          if (want.empty()) want = ref::attention(a).o;
          err = nmse(out, want);
          gate.check(fmt::format("{} attn {}, {}/{} heads, T {}", s.target, variant, H, KV, T),
                     "output", err);
        }
        if (tty) std::fprintf(stderr, "\r\033[K");
        const double mib = 1.0 / (1 << 20);
        if (o.json) {
          nlohmann::json j = {{"target", s.target},
                              {"op", "attn"},
                              {"variant", variant},
                              {"T", T},
                              {"heads", H},
                              {"kv_heads", KV},
                              {"D", o.dim},
                              {"latency_ms", s.latency_ms},
                              {"gm_bytes", s.gm_bytes()},
                              {"gm_mib", s.gm_bytes() * mib},
                              {"l1_l0_bytes", s.l1_l0_bytes},
                              {"cube_macs", s.cube_macs},
                              {"cube_util", s.cube_util},
                              {"vector_util", s.vector_util},
                              {"energy_mj", s.energy_mj},
                              {"launches", s.launches},
                              {"instructions", s.instructions},
                              {"nmse_o", err}};
          for (const auto& [b, bytes] : s.peak_bytes) j["peak_" + b + "_bytes"] = bytes;
          for (const auto& [e, busy] : s.engine_busy) j["busy_" + e] = busy;
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf(
              "%-12s %-4s %-10s %6ld %5d %4d %4d %11.3f %9.2f %6.2f%% %6.2f%% %9.3f %9.2e\n",
              s.target.c_str(), "attn", variant.c_str(), T, H, KV, o.dim, s.latency_ms,
              s.gm_bytes() * mib, 100 * s.cube_util, 100 * s.vector_util, s.energy_mj, err);
        }
        std::fflush(stdout);
      }
    }
  }
  return gate.finish();
}

}  // namespace hanpu::cli
