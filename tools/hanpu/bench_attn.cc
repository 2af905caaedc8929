// `hanpu bench attn`: times each placement side by side in one process on the STEEL shape
// (32 heads, D = 64, causal, T 2K..16K) and the Qwen3.5 full-attention shape (8 query / 2 kv
// heads, D = 256, causal, T 512..8K), then decode against caches of 1K..32K keys. GFLOP/s
// count only unmasked work (attn_flops); % of the FMA peak measured at start.
#include "bench_attn.h"
#include "bench_report.h"
#include "flag_checks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "hanpu/attn.h"
#include "simd/gemm_bf16_dot.h"

namespace hanpu::cli {

namespace {

struct AttnShape {
  std::string name;
  int Hq, Hkv, D;
  std::vector<long> seq;
};

struct Buffers {
  std::vector<uint8_t> q, k, v, o;
  std::vector<float> lse;
};

void fill(std::vector<uint8_t>& buf, size_t n, DType dt, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.7f, 1.7f);  // unit variance
  buf.resize(n * dtype_size(dt));
  for (size_t i = 0; i < n; ++i) store_from_f32(buf.data(), dt, i, u(rng));
}

AttnArgs make_args(Buffers& b, DType dt, int64_t T, int64_t Tk, const AttnShape& s, AttnMask mask,
                   int64_t window) {
  AttnArgs a;
  a.q = {b.q.data(), dt, {T, s.Hq, s.D}};
  a.k = {b.k.data(), dt, {Tk, s.Hkv, s.D}};
  a.v = {b.v.data(), dt, {Tk, s.Hkv, s.D}};
  a.o = {b.o.data(), dt, {T, s.Hq, s.D}};
  a.lse = {b.lse.data(), DType::kF32, {s.Hq, T}};
  a.mask = mask;
  a.window = window;
  return a;
}

struct Row {
  std::string placement, mask, dtype, products, group;
  int64_t T, Tk;
  int Hq, Hkv, D;
  AttnTiles tiles;
  Timing tm;
  double gflops, pct_peak, gbps;
};

// time_runs over an attention call, keeping the tiles it used.
Status time_attn(int repeats, int threads, const std::function<Status(AttnStats*)>& call,
                 AttnTiles* used, Timing* tm) {
  return time_runs(
      repeats, threads,
      [&](std::vector<double>& busy, int64_t& extra) {
        AttnStats stats;
        const Status st = call(&stats);
        busy = stats.worker_busy_ms;
        extra = stats.extra_bytes;
        *used = stats.tiles;
        return st;
      },
      tm);
}

// The report's columns: llama-bench's markdown table by default (bench_report.h).
std::vector<ReportColumn> attn_columns() {
  return kernel_columns(
      {"placement", "mask", "dtype", "products", "T", "Tk", "Hq", "Hkv", "D", "threads", "tiles"},
      {{"imbalance_text", "imbalance"}, {"extra_mem", "extra mem"}, {"group_text", "group"}});
}

void report_row(BenchReport& report, const Row& r) {
  nlohmann::json j = {{"placement", r.placement},
                      {"T", r.T},
                      {"Tk", r.Tk},
                      {"Hq", r.Hq},
                      {"Hkv", r.Hkv},
                      {"D", r.D},
                      {"mask", r.mask},
                      {"dtype", r.dtype},
                      {"products", r.products},
                      {"imbalance", r.tm.imbalance},
                      {"extra_bytes", r.tm.extra_bytes},
                      {"q_tile", r.tiles.q_rows},
                      {"kv_tile", r.tiles.kv_rows},
                      {"kv_gbps", r.gbps},
                      {"group", r.group}};
  add_timing(j, r.tm.median_ms, stddev_of(r.tm.run_ms), r.gflops, r.pct_peak, r.tm.peak_gflops,
             report.tabular(), 3);
  if (report.tabular()) {
    j["tiles"] = fmt::format("{}x{}", r.tiles.q_rows, r.tiles.kv_rows);
    j["imbalance_text"] = fmt::format("{:.3f}", r.tm.imbalance);
    j["extra_mem"] = human_bytes(r.tm.extra_bytes);
    j["group_text"] =
        r.group == "decode" ? fmt::format("decode, K/V read at {:.1f} GB/s", r.gbps) : r.group;
  }
  report.add(std::move(j));
}

}  // namespace

void add_bench_attn_options(CLI::App& cmd, BenchAttnOptions& o) {
  cmd.add_option("--placement", o.placement, "placements to time (see `hanpu attn placements`)")
      ->capture_default_str();
  cmd.add_option("--dtype", o.dtype, "storage dtypes of q/k/v/o: f32, f16, bf16")
      ->capture_default_str();
  cmd.add_option("--products", o.products,
                 "prefill products: auto (bf16 for bf16 keys and values where the CPU has the bf16 "
                 "dot instruction), "
                 "f32, bf16; several: side by side (the prod column: what ran)")
      ->capture_default_str();
  cmd.add_option("--mask", o.mask, "none, causal or sliding")->capture_default_str();
  cmd.add_option("--window", o.window, "keys per row for --mask sliding")
      ->capture_default_str()
      ->check(token_range(0));
  cmd.add_option("--seq", o.seq, "query rows T = keys Tk (default: each shape's lengths)")
      ->check(token_range(1));
  cmd.add_option("--heads", o.heads, "query heads Hq (with --kv-heads and --dim: one custom shape)")
      ->check(shape_range());
  cmd.add_option("--kv-heads", o.kv_heads, "key/value heads Hkv (0: Hkv = Hq)")
      ->check(shape_range(0));
  cmd.add_option("--dim", o.dim, "head dim D (a multiple of 16, <= 256)")->check(shape_range());
  cmd.add_option("--decode-len", o.decode_len, "cache lengths L of the decode rows")
      ->capture_default_str()
      ->check(token_range(1));
  cmd.add_flag("!--no-decode", o.decode, "skip the decode rows");
  cmd.add_option("--layer-max-seq", o.layer_max_seq,
                 "longest T the layer baseline runs at (it holds T x T floats per head)")
      ->capture_default_str()
      ->check(token_range(1));
  cmd.add_option("--q-tile", o.q_tile,
                 "query rows per tile (0: heuristic); several: each, side by side")
      ->check(shape_range(0))
      ->capture_default_str();
  cmd.add_option("--kv-tile", o.kv_tile,
                 "key rows per tile (0: heuristic); several: each, side by side")
      ->check(shape_range(0))
      ->capture_default_str();
  add_kernel_bench_flags(cmd, o.threads, o.repeats, o.report);
}

int run_bench_attn(const BenchAttnOptions& o) {
  std::vector<DType> dtypes;
  if (!parse_all(o.dtype, parse_dtype, "--dtype", "f32, f16 or bf16", dtypes)) return 2;
  const auto mask = parse_attn_mask(o.mask);
  if (!mask) {
    std::fprintf(stderr, "error: --mask '%s' is not none, causal or sliding\n", o.mask.c_str());
    return 2;
  }
  for (const auto& p : o.placement) {
    bool known = false;
    for (const auto& info : attn_placements()) known = known || info.name == p;
    if (!known) {
      std::fprintf(stderr, "error: --placement '%s' is not one of `hanpu attn placements`\n",
                   p.c_str());
      return 2;
    }
  }
  std::vector<AttnProducts> products;
  if (!parse_all(o.products, parse_attn_products, "--products", "auto, f32 or bf16", products))
    return 2;
  if (std::count(products.begin(), products.end(), AttnProducts::kBf16) > 0 &&
      !simd::bf16_dot_usable()) {
    std::fprintf(stderr,
                 "error: --products bf16: this CPU has no bf16 dot instruction (AVX512-BF16)\n");
    return 2;
  }
  if (o.repeats < 1) {
    std::fprintf(stderr, "error: --repeats must be >= 1\n");
    return 2;
  }
  for (const auto* list : {&o.q_tile, &o.kv_tile}) {
    for (int rows : *list) {
      if (rows < 0 || rows > kAttnMaxTileRows) {
        std::fprintf(stderr, "error: --%s %d: tile rows must be 0 (the heuristic) or in [1, %d]\n",
                     list == &o.q_tile ? "q-tile" : "kv-tile", rows, kAttnMaxTileRows);
        return 2;
      }
    }
  }
  std::vector<AttnShape> shapes;
  if (o.heads > 0 || o.dim > 0 || o.kv_heads > 0) {
    const int hq = o.heads > 0 ? o.heads : 8;
    const int hkv = o.kv_heads > 0 ? o.kv_heads : hq;
    const int d = o.dim > 0 ? o.dim : 128;
    shapes.push_back({"custom", hq, hkv, d, o.seq.empty() ? std::vector<long>{4096} : o.seq});
  } else {
    shapes.push_back(
        {"steel", 32, 32, 64, o.seq.empty() ? std::vector<long>{2048, 4096, 8192, 16384} : o.seq});
    shapes.push_back({"qwen3.5", 8, 2, 256,
                      o.seq.empty() ? std::vector<long>{512, 1024, 2048, 4096, 8192} : o.seq});
  }
  FILE* info = stderr;  // stdout holds the table (or the JSON)
  const FmaPeak peak = print_machine_header(info, o.threads);
  BenchReport report(o.report.format(), attn_columns(), peak.threads);
  for (const auto& s : shapes) {
    std::fprintf(
        info,
        "# shape %s: Hq %d, Hkv %d, D %d; tiles (query x key rows) by the heuristic: %d x %d "
        "(L1d %lld KiB, L2 %lld KiB)\n",
        s.name.c_str(), s.Hq, s.Hkv, s.D,
        attn_tile_plan(s.D, s.Hq / std::max(s.Hkv, 1), machine_l1d_bytes(), machine_l2_bytes())
            .q_rows,
        attn_tile_plan(s.D, s.Hq / std::max(s.Hkv, 1), machine_l1d_bytes(), machine_l2_bytes())
            .kv_rows,
        static_cast<long long>(machine_l1d_bytes() / 1024),
        static_cast<long long>(machine_l2_bytes() / 1024));
  }
  std::fprintf(
      info,
      "# GFLOP/s count unmasked work only: 4 D Hq per visible (query, key) pair; median of %d "
      "runs after one warm-up, the placements of a T interleaved (forward, then reverse order, per "
      "round); "
      "%%peak against the FMA peak re-measured after each run (median; rows with bf16 products can "
      "pass 100%%: "
      "the dot instruction does twice an FMA's multiply-adds); layer runs up to T = %ld\n",
      o.repeats, o.layer_max_seq);
  std::mt19937 rng(7);
  for (const AttnShape& s : shapes) {
    for (DType dt : dtypes) {
      for (long T : s.seq) {
        Buffers b;
        fill(b.q, static_cast<size_t>(T) * s.Hq * s.D, dt, rng);
        fill(b.k, static_cast<size_t>(T) * s.Hkv * s.D, dt, rng);
        fill(b.v, static_cast<size_t>(T) * s.Hkv * s.D, dt, rng);
        b.o.resize(b.q.size());
        b.lse.resize(static_cast<size_t>(s.Hq) * T);
        const AttnArgs args = make_args(b, dt, T, T, s, *mask, o.window);
        // The placements (and tile sizes) of this T are timed in interleaved rounds
        // (bench_util.h), so the ratios between them are not biased by the order they run in.
        struct Variant {
          std::string placement;
          AttnTiles tiles;
          AttnProducts products;
        };
        std::vector<Variant> variants;
        for (const auto& placement : o.placement) {
          if (placement == "layer" && T > o.layer_max_seq) continue;
          for (AttnProducts pr : products) {
            if (placement == "layer" && pr == AttnProducts::kBf16) continue;  // fp32 only
            for (int qt : o.q_tile)
              for (int kt : o.kv_tile) variants.push_back({placement, AttnTiles{qt, kt}, pr});
          }
        }
        std::fprintf(stderr, "[%s] T=%ld\n", s.name.c_str(), T);
        std::vector<AttnTiles> used(variants.size());
        std::vector<char> bf16_ran(variants.size(), 0);
        std::vector<TimedRun> runs;
        for (size_t i = 0; i < variants.size(); ++i) {
          AttnOptions opt;
          opt.placement = variants[i].placement;
          opt.threads = o.threads;
          opt.tiles = variants[i].tiles;
          opt.products = variants[i].products;
          runs.push_back([&, opt, i](std::vector<double>& busy, int64_t& extra) {
            AttnStats stats;
            const Status st = attn_prefill(args, opt, &stats);
            busy = stats.worker_busy_ms;
            extra = stats.extra_bytes;
            used[i] = stats.tiles;
            bf16_ran[i] = stats.bf16_products;
            return st;
          });
        }
        std::vector<Timing> tms;
        if (!time_side_by_side(o.repeats, o.threads, runs, &tms)) return 1;
        for (size_t i = 0; i < variants.size(); ++i) {
          const Timing& tm = tms[i];
          const double gflops =
              attn_flops(T, T, s.Hq, s.D, *mask, 0, o.window) / tm.median_ms / 1e6;
          report_row(report, {variants[i].placement, o.mask, std::string(dtype_name(dt)),
                              bf16_ran[i] ? "bf16" : "f32", "prefill", T, T, s.Hq, s.Hkv, s.D,
                              used[i], tm, gflops, 100 * gflops / tm.peak_gflops, 0.0});
        }
      }
      if (!o.decode) continue;
      for (long L : o.decode_len) {  // one new token against a cache of L keys
        Buffers b;
        fill(b.q, static_cast<size_t>(s.Hq) * s.D, dt, rng);
        fill(b.k, static_cast<size_t>(L) * s.Hkv * s.D, dt, rng);
        fill(b.v, static_cast<size_t>(L) * s.Hkv * s.D, dt, rng);
        b.o.resize(b.q.size());
        b.lse.resize(s.Hq);
        AttnArgs args = make_args(b, dt, 1, L, s, *mask, o.window);
        args.kv_row_stride =
            s.D;  // the keys and values laid out as a KvCache holds them: head-major
        args.kv_head_stride = L * s.D;
        std::fprintf(stderr, "[%s] decode L=%ld\n", s.name.c_str(), L);
        // A decode call takes well under a millisecond at short caches: each timed run is a
        // batch of calls filling ~20 ms (one call timed alone, between FMA-peak probes, moved
        // too much from run to run on a shared machine), and its time is per call.
        const auto t0 = std::chrono::steady_clock::now();
        if (const Status st = attn_decode(args, o.threads, nullptr); !st.ok()) {
          std::fprintf(stderr, "error: %s\n", st.message().c_str());
          return 1;
        }
        const double one_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        const int calls = static_cast<int>(std::clamp(20.0 / std::max(one_ms, 1e-3), 1.0, 1000.0));
        AttnTiles used;
        Timing tm;
        const Status st = time_attn(
            std::max(o.repeats, 5), o.threads,
            [&](AttnStats* stats) {
              for (int c = 0; c < calls; ++c)
                HANPU_RETURN_IF_ERROR(attn_decode(args, o.threads, stats));
              return Status::Ok();
            },
            &used, &tm);
        if (!st.ok()) {
          std::fprintf(stderr, "error: %s\n", st.message().c_str());
          return 1;
        }
        tm.median_ms /= calls;
        for (double& ms : tm.run_ms) ms /= calls;
        const double flops = attn_flops(1, L, s.Hq, s.D, *mask, L - 1, o.window);
        const double kv_bytes =
            2.0 * static_cast<double>(L) * s.Hkv * s.D * static_cast<double>(dtype_size(dt));
        const double gflops = flops / tm.median_ms / 1e6;
        report_row(report, {"split-keys", o.mask, std::string(dtype_name(dt)), "f32", "decode", 1,
                            L, s.Hq, s.Hkv, s.D, used, tm, gflops, 100 * gflops / tm.peak_gflops,
                            kv_bytes / tm.median_ms / 1e6});
      }
    }
  }
  return 0;
}

}  // namespace hanpu::cli
