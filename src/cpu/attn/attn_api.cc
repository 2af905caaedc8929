// attn_prefill / attn_decode: validate once, convert non-fp32 query/output storage to fp32 rows
// (and the output back), pick the placement from the table, run it, report what it used.
#include <algorithm>
#include <array>
#include <new>

#include <fmt/format.h>

#include "base/env_settings.h"
#include "cpu/attn/attn_kernels.h"
#include "parallel/thread_pool.h"
#include "simd/gemm_bf16_dot.h"
#include "simd/vec_ops.h"

namespace hanpu {

namespace {

using Runner = void (*)(const cpu::AttnProblem&, cpu::AttnRunContext&);

struct PlacementEntry {
  AttnPlacementInfo info;
  Runner run;
  bool widens_kv;  // reads 16-bit keys and values in place, widening them per tile
};

const std::array<PlacementEntry, 3> kPlacements = {{
    {{"balanced",
      "fused; heavy and light query tiles paired so every core gets equal unmasked work (STEEL)"},
     [](const cpu::AttnProblem& p, cpu::AttnRunContext& c) { cpu::attn_fused(p, c, true); },
     true},
    {{"uniform",
      "fused; each core a contiguous block of query tiles (causal: the last core works most)"},
     [](const cpu::AttnProblem& p, cpu::AttnRunContext& c) { cpu::attn_fused(p, c, false); },
     true},
    {{"layer",
      "baseline; scores, softmax, P V as separate passes through a T x Tk matrix per head"},
     &cpu::attn_layer,
     false},
}};

const PlacementEntry* find_placement(std::string_view name) {
  for (const auto& e : kPlacements) {
    if (e.info.name == name) return &e;
  }
  return nullptr;
}

// Runs `run` on fp32 query and output rows: the caller's when their storage is fp32, else
// converted copies (and the output converted back after). Keys and values stay in their
// storage dtype when the kernel widens them per tile (`widens_kv`); otherwise they are
// converted too. The copies are O(T D) and charged to the meter.
Status run_converted(const AttnArgs& a, cpu::AttnProblem p, cpu::AttnRunContext& ctx, Runner run,
                     bool widens_kv, const char* who) {
  try {
    ScratchBuffer<float> q, k, v, o;
    auto convert = [&](const TensorView& t, ScratchBuffer<float>& dst) {
      dst = ScratchBuffer<float>(static_cast<size_t>(t.numel()), ctx.meter);
      simd::load_f32(dst.data(), t.data, t.dtype, static_cast<size_t>(t.numel()));
      return dst.data();
    };
    if (p.dtype == DType::kF32) {
      p.q = static_cast<const float*>(a.q.data);
      p.o = static_cast<float*>(a.o.data);
    } else {
      p.q = convert(a.q, q);
      o = ScratchBuffer<float>(static_cast<size_t>(a.o.numel()), ctx.meter);
      p.o = o.data();
    }
    if (p.kv_dtype == DType::kF32 || widens_kv) {
      p.k = a.k.data;
      p.v = a.v.data;
    } else {  // widened into [Tk, Hkv, D] and [Tk, Hkv, Dv] rows, from whatever strides they had
      for (const bool values : {false, true}) {
        const int d = values ? p.Dv : p.D;
        ScratchBuffer<float>& dst = values ? v : k;
        dst = ScratchBuffer<float>(static_cast<size_t>(p.Tk) * p.Hkv * d, ctx.meter);
        for (int64_t t = 0; t < p.Tk; ++t) {
          for (int hk = 0; hk < p.Hkv; ++hk) {
            const size_t at = values ? p.v_row(t, hk) : p.kv_row(t, hk);
            const auto* row = static_cast<const char*>(values ? a.v.data : a.k.data) +
                              at * dtype_size(p.kv_dtype);
            simd::load_f32(dst.data() + (t * p.Hkv + hk) * d, row, p.kv_dtype,
                           static_cast<size_t>(d));
          }
        }
      }
      p.k = k.data();
      p.v = v.data();
      p.kv_dtype = DType::kF32;
      p.kv_ld = static_cast<int64_t>(p.Hkv) * p.D;
      p.kv_head_ld = p.D;
      p.v_ld = static_cast<int64_t>(p.Hkv) * p.Dv;
      p.v_head_ld = p.Dv;
    }
    p.lse = static_cast<float*>(a.lse.data);
    run(p, ctx);
    if (p.dtype != DType::kF32)
      simd::store_f32(a.o.data, p.dtype, p.o, static_cast<size_t>(a.o.numel()));
  } catch (const std::bad_alloc&) {
    return Status::Error(fmt::format("{}: out of memory", who));
  }
  return Status::Ok();
}

Status resolve_tiles(const cpu::AttnProblem& p, AttnTiles asked, const char* who, AttnTiles* out) {
  AttnTiles t = attn_tile_plan(p.D, p.group(), machine_l1d_bytes(), machine_l2_bytes());
  if (asked.q_rows != 0) t.q_rows = asked.q_rows;
  if (asked.kv_rows != 0) t.kv_rows = asked.kv_rows;
  if (t.q_rows < 1 || t.q_rows > kAttnMaxTileRows || t.kv_rows < 1 ||
      t.kv_rows > kAttnMaxTileRows) {
    return Status::Error(fmt::format("{}: tiles of {} query x {} key rows: each must be in [1, {}]",
                                     who, t.q_rows, t.kv_rows, kAttnMaxTileRows));
  }
  *out = t;
  return Status::Ok();
}

// Whether a fused prefill takes bf16 products (AttnProducts); an error where they were asked
// for and cannot run.
Status resolve_products(const cpu::AttnProblem& p, AttnProducts asked,
                        const PlacementEntry& placement, const AttnTiles& tiles, bool* bf16) {
  const char* why = nullptr;
  if (!simd::bf16_dot_usable()) {
    why = "this CPU has no bf16 dot instruction (AVX512-BF16)";
  } else if (!placement.widens_kv) {
    why = "the layer placement is fp32 only";
  } else if (tiles.kv_rows % 2 != 0) {
    why = "key tiles must hold an even number of rows (bf16 pairs of keys)";
  } else if (p.Dv != p.D) {
    why = "the values' head dim differs from the keys' (the dot path takes one)";
  }
  switch (asked) {
    case AttnProducts::kF32:
      *bf16 = false;
      return Status::Ok();
    case AttnProducts::kAuto:
      *bf16 = why == nullptr && attn_auto_bf16_products(p.kv_dtype);
      return Status::Ok();
    case AttnProducts::kBf16:
      break;
  }
  if (why != nullptr)
    return Status::Error(fmt::format("attn_prefill: bf16 products cannot run: {}", why));
  *bf16 = true;
  return Status::Ok();
}

}  // namespace

bool attn_bf16_products_usable() { return simd::bf16_dot_usable(); }

bool attn_auto_bf16_products(DType kv_dtype) {
  // HANPU_ATTN_PRODUCTS=f32 makes auto mean fp32 (read once: every attention call asks).
  static const bool env_f32 = [] {
    const char* text = env_text(EnvVar::kAttnProducts);
    return text != nullptr && std::string_view(text) == "f32";
  }();
  return kv_dtype == DType::kBF16 && attn_bf16_products_usable() && !env_f32;
}

std::span<const AttnPlacementInfo> attn_placements() {
  static const auto infos = [] {
    std::array<AttnPlacementInfo, kPlacements.size()> out;
    for (size_t i = 0; i < kPlacements.size(); ++i) out[i] = kPlacements[i].info;
    return out;
  }();
  return infos;
}

Status attn_prefill(const AttnArgs& args, const AttnOptions& options, AttnStats* stats) {
  const PlacementEntry* placement = find_placement(options.placement);
  if (!placement) {
    std::string names;
    for (const auto& e : kPlacements)
      names += fmt::format("{}{}", names.empty() ? "" : ", ", e.info.name);
    return Status::Error(
        fmt::format("attn_prefill: unknown placement '{}' (one of: {})", options.placement, names));
  }
  cpu::AttnProblem p;
  HANPU_RETURN_IF_ERROR(cpu::validate_attn(args, "attn_prefill", &p));
  ScratchMeter meter;
  cpu::AttnRunContext ctx;
  ctx.threads = options.threads > 0 ? options.threads : ThreadPool::default_threads();
  ctx.meter = &meter;
  HANPU_RETURN_IF_ERROR(resolve_tiles(p, options.tiles, "attn_prefill", &ctx.tiles));
  HANPU_RETURN_IF_ERROR(
      resolve_products(p, options.products, *placement, ctx.tiles, &ctx.bf16_products));
  if (p.T > 0)
    HANPU_RETURN_IF_ERROR(
        run_converted(args, p, ctx, placement->run, placement->widens_kv, "attn_prefill"));
  if (stats) {
    stats->extra_bytes = meter.peak();
    stats->worker_busy_ms = ctx.busy_ms;
    stats->tiles = ctx.tiles;
    stats->bf16_products = ctx.bf16_products;
  }
  return Status::Ok();
}

Status attn_decode(const AttnArgs& args, int threads, AttnStats* stats) {
  cpu::AttnProblem p;
  HANPU_RETURN_IF_ERROR(cpu::validate_attn(args, "attn_decode", &p));
  ScratchMeter meter;
  cpu::AttnRunContext ctx;
  ctx.threads = threads > 0 ? threads : ThreadPool::default_threads();
  ctx.meter = &meter;
  HANPU_RETURN_IF_ERROR(resolve_tiles(p, {}, "attn_decode", &ctx.tiles));
  if (p.T > 0)
    HANPU_RETURN_IF_ERROR(run_converted(args, p, ctx, &cpu::attn_split_keys, true, "attn_decode"));
  if (stats) {
    stats->extra_bytes = meter.peak();
    stats->worker_busy_ms = ctx.busy_ms;
    stats->tiles = ctx.tiles;
  }
  return Status::Ok();
}

}  // namespace hanpu
