// Quantized projections (see quant_linear.h).
#include "cpu/nn/quant_linear.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "base/aligned_vector.h"
#include "base/env_settings.h"
#include "base/quant_quantize.h"
#include "base/rng.h"
#include "hanpu/dtype.h"
#include "parallel/parallel_rows.h"
#include "parallel/thread_pool.h"
#include "simd/amx.h"
#include "simd/pairs_pack.h"
#include "simd/quant_dot.h"
#include "simd/quant_panel.h"
#include "simd/quant_q4k_rows16.h"
#include "simd/quant_q5_0_rows16.h"
#include "simd/quant_q6k_rows16.h"
#include "simd/vec_ops.h"

namespace hanpu::cpu {

PackedLinear quant_linear_from_rows(QuantType t, const uint8_t* data, int in,
                                    const std::vector<int>& rows, std::shared_ptr<const void> owner,
                                    bool decode_copy) {
  const QuantTypeInfo& info = quant_type_info(t);
  PackedLinear w;
  w.in = in;
  w.out = static_cast<int>(rows.size());
  w.quant = t;
  w.qrow_bytes = static_cast<size_t>(in / info.block_elems) * info.bytes;
  if (!owner) {  // nothing keeps `data` alive: hold a copy of the rows
    auto copy = std::make_shared<std::vector<uint8_t>>(w.qrow_bytes * rows.size());
    for (size_t o = 0; o < rows.size(); ++o) {
      std::memcpy(copy->data() + o * w.qrow_bytes,
                  data + static_cast<size_t>(rows[o]) * w.qrow_bytes, w.qrow_bytes);
    }
    w.qbase = copy->data();
    w.qowner = std::move(copy);
    if (decode_copy) attach_decode_groups(&w);
    return w;
  }
  bool consecutive = true;
  for (size_t o = 1; o < rows.size() && consecutive; ++o)
    consecutive = rows[o] == rows[0] + static_cast<int>(o);
  if (consecutive) {
    w.qbase = data + (rows.empty() ? 0 : static_cast<size_t>(rows[0]) * w.qrow_bytes);
  } else {
    w.qrows.resize(rows.size());
    for (size_t o = 0; o < rows.size(); ++o)
      w.qrows[o] = data + static_cast<size_t>(rows[o]) * w.qrow_bytes;
  }
  w.qowner = std::move(owner);
  if (decode_copy) attach_decode_groups(&w);
  return w;
}

namespace {

// The decode copies there are: a type's rows a group, its repack, its product (`in` values
// times a single row of x) and whether that reads x quantized per 256 values (else per 32).
// Every copy keeps the blocks' bytes a row.
struct GroupKind {
  int rows = 0;
  void (*repack)(const uint8_t* const*, int, uint8_t*) = nullptr;
  void (*times_one)(const uint8_t*, int, const simd::QuantActs&, float*) = nullptr;
  bool unit_acts = true;
};

std::optional<GroupKind> group_kind(QuantType t) {
  if (t == QuantType::kQ4_K && simd::q4k_group_usable()) {
    return GroupKind{simd::kQ4kGroupRows, simd::q4k_group_rows,
                     [](const uint8_t* g, int in, const simd::QuantActs& a, float* y) {
                       simd::q4k_group_times_one(g, in / simd::kQuantUnit, a, y);
                     }};
  }
  if (t == QuantType::kQ6_K && simd::q6k_group_usable()) {
    return GroupKind{simd::kQ6kGroupRows, simd::q6k_group_rows,
                     [](const uint8_t* g, int in, const simd::QuantActs& a, float* y) {
                       simd::q6k_group_times_one(g, in / simd::kQuantUnit, a, y);
                     }};
  }
  if (t == QuantType::kQ5_0 && simd::q5_0_group_usable()) {
    return GroupKind{simd::kQ5_0GroupRows, simd::q5_0_group_rows,
                     [](const uint8_t* g, int in, const simd::QuantActs& a, float* y) {
                       simd::q5_0_group_times_one(g, in / 32, a, y);
                     },
                     false};
  }
  return std::nullopt;
}

}  // namespace

std::string decode_groups_summary() {
  std::vector<std::string> types;
  for (const QuantType t : {QuantType::kQ4_K, QuantType::kQ6_K, QuantType::kQ5_0}) {
    if (group_kind(t)) types.emplace_back(quant_type_info(t).name);
  }
  if (types.empty()) return "from the blocks (no AVX512-VNNI here)";
  if (env_switched_off(EnvVar::kRepack)) return "from the blocks (HANPU_REPACK=0)";
  return fmt::format(
      "{} from copies repacked 16 rows to a group (HANPU_REPACK=0: from the blocks), other "
      "types from the blocks",
      fmt::join(types, ", "));
}

void attach_decode_groups(PackedLinear* w) {
  const std::optional<GroupKind> kind = w->quant ? group_kind(*w->quant) : std::nullopt;
  if (!kind || w->out == 0 || env_switched_off(EnvVar::kRepack)) return;
  const int group_rows = kind->rows;
  const int groups = (w->out + group_rows - 1) / group_rows;
  const int in = w->in;
  const size_t group_bytes = static_cast<size_t>(group_rows) * w->qrow_bytes;
  auto copy = std::make_shared<std::vector<uint8_t, CacheAlignedAllocator<uint8_t>>>(
      static_cast<size_t>(groups) * group_bytes);
  parallel_rows(0, groups, int64_t{group_rows} * in, [&](int64_t g0, int64_t g1) {
    std::vector<const uint8_t*> rows(static_cast<size_t>(group_rows));
    for (int64_t g = g0; g < g1; ++g) {
      // The last group's missing rows repeat its last row (their products are not kept).
      for (int r = 0; r < group_rows; ++r)
        rows[r] = w->qrow(std::min(static_cast<int>(g) * group_rows + r, w->out - 1));
      kind->repack(rows.data(), in, copy->data() + g * group_bytes);
    }
  });
  w->qgroup_rows = group_rows;
  w->qgroups.resize(static_cast<size_t>(groups));
  for (int g = 0; g < groups; ++g) w->qgroups[g] = copy->data() + g * group_bytes;
  w->qgroups_owner = std::move(copy);
}

std::optional<PackedLinear> quantized_rows(QuantType t, const float* w, int in,
                                           const std::vector<int>& rows) {
  return quantized_row_source(t, in, static_cast<int>(rows.size()),
                              [&](int o, float*) { return w + static_cast<size_t>(rows[o]) * in; });
}

std::optional<PackedLinear> quantized_row_source(QuantType t, int in, int out,
                                                 const PackedLinear::RowSource& row) {
  const QuantTypeInfo& info = quant_type_info(t);
  if (in % info.block_elems != 0) return std::nullopt;
  const size_t row_bytes = static_cast<size_t>(in / info.block_elems) * info.bytes;
  auto blocks = std::make_shared<std::vector<uint8_t>>(row_bytes * out);
  parallel_rows(0, out, in, [&](int64_t o0, int64_t o1) {
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(in));
    for (int64_t o = o0; o < o1; ++o) {
      quantize_blocks(t, row(static_cast<int>(o), buf.data()),
                      static_cast<size_t>(in / info.block_elems), blocks->data() + o * row_bytes);
    }
  });
  std::vector<int> all(out);
  for (int o = 0; o < out; ++o) all[o] = o;
  const uint8_t* data = blocks->data();
  return quant_linear_from_rows(t, data, in, all, std::move(blocks));
}

PackedLinear quant_linear_concat(const PackedLinear& a, const PackedLinear& b) {
  PackedLinear w = a;
  w.out = a.out + b.out;
  if (a.qrows.empty() && b.qrows.empty() &&
      b.qbase == a.qbase + static_cast<size_t>(a.out) * a.qrow_bytes) {
    w.qbase = a.qbase;  // b's rows follow a's
  } else {
    w.qbase = nullptr;
    w.qrows.resize(static_cast<size_t>(w.out));
    for (int o = 0; o < a.out; ++o) w.qrows[o] = a.qrow(o);
    for (int o = 0; o < b.out; ++o) w.qrows[a.out + o] = b.qrow(o);
  }
  if (a.qowner != b.qowner) {  // keep both alive
    auto both =
        std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>>(
            a.qowner, b.qowner);
    w.qowner = std::shared_ptr<const void>(both, both.get());
  }
  w.qgroups.clear();
  w.qgroup_rows = 0;
  w.qgroups_owner.reset();
  if (!a.qgroups.empty() && !b.qgroups.empty() && a.out % a.qgroup_rows == 0) {
    // a's last group is whole: b's groups follow a's where they lie.
    w.qgroup_rows = a.qgroup_rows;
    w.qgroups = a.qgroups;
    w.qgroups.insert(w.qgroups.end(), b.qgroups.begin(), b.qgroups.end());
    auto both =
        std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>>(
            a.qgroups_owner, b.qgroups_owner);
    w.qgroups_owner = std::shared_ptr<const void>(both, both.get());
  } else {
    attach_decode_groups(&w);
  }
  return w;
}

PackedLinear random_quant_linear(QuantType t, int in, int out, uint64_t seed, float scale) {
  const QuantTypeInfo& info = quant_type_info(t);
  PackedLinear w;
  w.in = in;
  w.out = out;
  w.quant = t;
  w.qrow_bytes = static_cast<size_t>(in / info.block_elems) * info.bytes;
  auto blocks = std::make_shared<std::vector<uint8_t>>(w.qrow_bytes * out);
  Rng rng(seed);
  for (uint8_t& b : *blocks) b = static_cast<uint8_t>(rng.next());
  for (size_t at = 0; at < blocks->size(); at += info.bytes) {
    for (int off : {quant_scale_offset(t), quant_min_offset(t)}) {
      if (off < 0) continue;
      const uint16_t h = f32_to_f16_bits(static_cast<float>(rng.uniform(-1, 1)) * scale / 8);
      std::memcpy(blocks->data() + at + off, &h, sizeof(h));
    }
  }
  w.qbase = blocks->data();
  w.qowner = std::move(blocks);
  attach_decode_groups(&w);
  return w;
}

namespace {

// Bytes of decoded strips a core multiplies at once: with a block of x's rows they stay in L2
// while x's blocks stream by (the loop order of the bf16 kernels).
constexpr int64_t kDecodedStripBytes = int64_t{1} << 20;

// A prefill on the bf16 kernels from blocks decoded by the core that multiplies them: x packed
// for the kernel once, then units of a few strips (32 output rows each), every unit's weights
// decoded into the core's own buffer (bf16, the pairs layout) and multiplied against all of x
// before the next. No decoded copy of W exists beyond one unit per core. (Decoding a 4 MiB
// panel on the pool and then multiplying it cost two waits per panel, x packed again for
// each, and the panel's memory; docs/journal, 2026-12-04, "Prefill: decoded by the core that
// multiplies".)
void quant_prefill_decoded(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y,
                           int64_t ldy, int threads, ProjectionKernel ceiling) {
  const int in = w.in, kt = in / simd::kPairBlockDepth;
  const StripProduct product(x, ldx, T, in, threads, ceiling);
  const int strips = (w.out + simd::kPairStripCols - 1) / simd::kPairStripCols;
  const int64_t strip_elems = static_cast<int64_t>(kt) * simd::kPairBlockElems;
  const int cores = ThreadPool::shared(threads).size();
  // At least 4 units a core, so the last ones even the cores out.
  const int per_unit = static_cast<int>(std::clamp<int64_t>(
      std::min<int64_t>(kDecodedStripBytes / (2 * strip_elems), strips / (4 * cores)), 1, 8));
  const int units = (strips + per_unit - 1) / per_unit;
  parallel_rows(
      threads, units, int64_t{per_unit} * simd::kPairStripCols * in * T,
      [&](int64_t u0, int64_t u1) {
        // 64-byte aligned: the kernels' and the packer's loads read whole lines (from
        // a 16-byte-aligned block every tile row spanned two, measured 1.25x slower).
        thread_local AlignedFloats row32, ordered;
        thread_local std::vector<uint16_t, CacheAlignedAllocator<uint16_t>> rows16, decoded;
        rows16.resize(static_cast<size_t>(simd::kPairStripCols) * in);
        decoded.resize(static_cast<size_t>(per_unit * strip_elems));
        for (int64_t u = u0; u < u1; ++u) {
          const int s0 = static_cast<int>(u) * per_unit;
          const int n = std::min(per_unit, strips - s0);
          for (int s = 0; s < n; ++s) {
            for (int c = 0; c < simd::kPairStripCols; ++c) {
              const int o = (s0 + s) * simd::kPairStripCols + c;
              uint16_t* dst = rows16.data() + static_cast<size_t>(c) * in;
              if (o >= w.out) {
                std::fill(dst, dst + in, uint16_t{0});
              } else if (w.x_order.empty()) {
                simd::dequantize_row_bf16(*w.quant, w.qrow(o), in, dst);
              } else {  // W's input back in x's order
                row32.resize(static_cast<size_t>(in));
                ordered.resize(static_cast<size_t>(in));
                simd::dequantize_row(*w.quant, w.qrow(o), in, row32.data());
                for (int i = 0; i < in; ++i) ordered[w.x_order[i]] = row32[i];
                simd::store_f32(dst, DType::kBF16, ordered.data(), static_cast<size_t>(in));
              }
            }
            simd::pack_strip_bf16(rows16.data(), in, kt, decoded.data() + s * strip_elems);
          }
          const int col0 = s0 * simd::kPairStripCols;
          product.multiply(decoded.data(), n, std::min(n * simd::kPairStripCols, w.out - col0),
                           y + col0, ldy);
        }
      });
}

// A prefill on the int8 panel kernel (simd/quant_panel.h): x quantized per unit once, then
// each core packs the panel (32 output rows) it multiplies next into a buffer of its own and
// multiplies it by all of x's rows before the next, as quant_prefill_decoded does with strips.
void quant_prefill_panels(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y,
                          int64_t ldy, int threads) {
  // The caller's, by reference: inside the pool's threads a thread_local names their own.
  thread_local simd::QuantActs acts;
  thread_local simd::PanelActs panel_acts;
  simd::QuantActs& a = acts;
  simd::PanelActs& pa = panel_acts;
  const QuantType t = *w.quant;
  const simd::ActsKinds kinds = simd::quant_panel_acts(t);
  simd::size_acts(T, w.in, kinds, &a);
  simd::size_panel_acts(t, a, &pa);
  const int32_t* order = w.x_order.empty() ? nullptr : w.x_order.data();
  parallel_rows(threads, T, int64_t{8} * w.in, [&](int64_t r0, int64_t r1) {
    simd::quantize_acts_rows(x, ldx, r0, r1, order, kinds, &a);
    simd::panel_acts_rows(t, a, r0, r1, &pa);
  });
  const int panels = (w.out + simd::kPanelCols - 1) / simd::kPanelCols;
  parallel_rows(threads, panels, int64_t{simd::kPanelCols} * w.in * T, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<uint8_t, CacheAlignedAllocator<uint8_t>> panel;
    panel.resize(simd::quant_panel_bytes(t, w.in));
    const uint8_t* rows[simd::kPanelCols];
    for (int64_t p = p0; p < p1; ++p) {
      const int c0 = static_cast<int>(p) * simd::kPanelCols;
      const int n = std::min(simd::kPanelCols, w.out - c0);
      for (int c = 0; c < n; ++c) rows[c] = w.qrow(c0 + c);
      simd::pack_quant_panel(t, rows, n, w.in, panel.data());
      simd::quant_panel_gemm(t, panel.data(), n, a, pa, 0, T, y + c0, ldy);
    }
  });
}

}  // namespace

bool quant_prefill_panels(const PackedLinear& w, int64_t T, ProjectionKernel ceiling) {
  return T >= kQuantPanelRows && ceiling == ProjectionKernel::kAuto &&
         simd::quant_panel_usable(*w.quant);
}

bool quant_prefill_widens(const PackedLinear& w, int64_t T, ProjectionKernel ceiling) {
  return T >= kQuantWidenRows && projection_kernel_allowed(ceiling, ProjectionKernel::kPairs) &&
         !quant_prefill_panels(w, T, ceiling);
}

void quant_linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y,
                  int64_t ldy, int threads, ProjectionKernel ceiling) {
  if (T <= 0 || w.out <= 0) return;
  if (quant_prefill_panels(w, T, ceiling))
    return quant_prefill_panels(x, ldx, T, w, y, ldy, threads);
  if (quant_prefill_widens(w, T, ceiling))
    return quant_prefill_decoded(x, ldx, T, w, y, ldy, threads, ceiling);
  quant_linear_many(x, ldx, T, {{&w, y, ldy}}, threads);
}

namespace {

// Rows [lo, hi) of w times rows [0, T) of a into y (the projection's output column 0, leading
// dim ldy): a decode's rows on the repacked groups where w has them, else from the blocks.
void multiply_rows(const PackedLinear& w, int64_t lo, int64_t hi, const simd::QuantActs& a,
                   int64_t T, float* y, int64_t ldy, simd::QuantKernel kernel) {
  if (T == 1 && !w.qgroups.empty()) {
    // Every row of w on the group kernel (a lane or stream a row: a row's product does not
    // depend on the rows beside it); a group the range holds in part goes through a buffer.
    const int64_t rows = w.qgroup_rows;
    const auto times_one = group_kind(*w.quant)->times_one;
    for (int64_t g = lo / rows; g * rows < hi; ++g) {
      const int64_t r0 = std::max(lo, g * rows), r1 = std::min(hi, (g + 1) * rows);
      if (r1 - r0 == rows) {
        times_one(w.qgroups[g], w.in, a, y + r0);
      } else {
        static_assert(simd::kQ6kGroupRows <= simd::kQ4kGroupRows &&
                      simd::kQ5_0GroupRows <= simd::kQ4kGroupRows);
        float part[simd::kQ4kGroupRows];
        times_one(w.qgroups[g], w.in, a, part);
        std::copy(part + (r0 - g * rows), part + (r1 - g * rows), y + r0);
      }
    }
    return;
  }
  const int n = static_cast<int>(hi - lo);
  if (!w.qrows.empty()) {
    simd::quant_gemm(*w.quant, w.qrows.data() + lo, n, a, 0, T, y + lo, ldy, kernel);
    return;
  }
  // Evenly spaced rows: their pointers made for the range (in the worker's own buffer), one
  // kernel call as for picked rows; calls of 256 rows each cost decode 2% (the kernel's
  // prefetch restarts at each call).
  thread_local std::vector<const uint8_t*> ptrs;
  ptrs.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) ptrs[r] = w.qrow(static_cast<int>(lo) + r);
  simd::quant_gemm(*w.quant, ptrs.data(), n, a, 0, T, y + lo, ldy, kernel);
}

// Where the projections' rows start in a call's one range: a decode's projections with
// repacked groups each start on a multiple of the largest group (16 rows, a multiple of every
// other) and the range is dealt in runs of it, so no group is split between cores (or run
// twice).
struct RowRange {
  std::vector<int64_t> first;  // projection i's rows: [first[i], first[i] + out_i)
  int64_t align = 1;
};
RowRange row_range(int64_t T, const std::vector<const PackedLinear*>& ws) {
  RowRange r;
  for (const PackedLinear* w : ws) {
    if (T == 1 && !w->qgroups.empty()) r.align = std::max<int64_t>(r.align, w->qgroup_rows);
  }
  r.first.assign(ws.size() + 1, 0);
  for (size_t i = 0; i < ws.size(); ++i)
    r.first[i + 1] = (r.first[i] + ws[i]->out + r.align - 1) / r.align * r.align;
  return r;
}

// The activation form a kernel reads for w (a decode from repacked groups: its kind's).
bool uses_unit_acts(const PackedLinear& w, int64_t T, simd::QuantKernel kernel) {
  if (T == 1 && !w.qgroups.empty()) return group_kind(*w.quant)->unit_acts;
  return simd::quant_gemm_uses_unit_acts(*w.quant, w.out, T, kernel);
}

}  // namespace

void quant_linear_many(const float* x, int64_t ldx, int64_t T, const std::vector<LinearOut>& outs,
                       int threads) {
  if (T <= 0 || outs.empty()) return;
  const PackedLinear& w0 = *outs[0].w;
  const simd::QuantKernel kernel = simd::quant_kernel_default();
  // The activation forms the kernels will read (one, unless the projections' types differ).
  bool per32 = false, per_unit = false;
  std::vector<const PackedLinear*> ws;
  for (const LinearOut& o : outs) {
    (uses_unit_acts(*o.w, T, kernel) ? per_unit : per32) = true;
    ws.push_back(o.w);
  }
  const simd::ActsKinds kinds = per32 && per_unit ? simd::ActsKinds::kBoth
                                : per_unit        ? simd::ActsKinds::kPerUnit
                                                  : simd::ActsKinds::kPer32;
  // Kept between calls (one per thread that calls): a decode step quantizes a few KB per
  // projection and would otherwise allocate each time.
  thread_local simd::QuantActs acts;
  simd::quantize_acts(x, ldx, T, w0.in, w0.x_order.empty() ? nullptr : w0.x_order.data(), &acts,
                      kinds);
  const simd::QuantActs& a = acts;
  // The projections' rows as one range on the pool: a decode step's small projections (a GDN
  // layer's b and a have 16 rows each) then cost no wait of their own.
  const RowRange range = row_range(T, ws);
  const std::vector<int64_t>& first = range.first;
  parallel_rows_aligned(threads, first.back(), range.align, static_cast<int64_t>(w0.in) * T,
                        [&](int64_t o0, int64_t o1) {
                          for (size_t i = 0; i < outs.size(); ++i) {
                            const PackedLinear& w = *outs[i].w;
                            const int64_t lo = std::max(o0, first[i]);
                            const int64_t hi = std::min(o1, first[i] + w.out);
                            if (lo >= hi) continue;
                            multiply_rows(w, lo - first[i], hi - first[i], a, T, outs[i].y,
                                          outs[i].ldy, kernel);
                          }
                        });
}

void quant_linear_each(const std::vector<LinearRow>& rows, int threads) {
  if (rows.empty()) return;
  const simd::QuantKernel kernel = simd::quant_kernel_default();
  // One activation set per row, kept between calls as quant_linear_many's.
  thread_local std::vector<simd::QuantActs> acts;
  if (acts.size() < rows.size()) acts.resize(rows.size());
  std::vector<const PackedLinear*> ws;
  for (size_t i = 0; i < rows.size(); ++i) {
    const PackedLinear& w = *rows[i].w;
    const simd::ActsKinds kinds =
        uses_unit_acts(w, 1, kernel) ? simd::ActsKinds::kPerUnit : simd::ActsKinds::kPer32;
    simd::quantize_acts(rows[i].x, w.in, 1, w.in, w.x_order.empty() ? nullptr : w.x_order.data(),
                        &acts[i], kinds);
    ws.push_back(&w);
  }
  // The caller's sets, by pointer: inside the pool's threads `acts` names their own.
  const simd::QuantActs* row_acts = acts.data();
  const RowRange range = row_range(1, ws);
  const std::vector<int64_t>& first = range.first;
  parallel_rows_aligned(
      threads, first.back(), range.align, rows[0].w->in, [&](int64_t o0, int64_t o1) {
        for (size_t i = 0; i < rows.size(); ++i) {
          const PackedLinear& w = *rows[i].w;
          const int64_t lo = std::max(o0, first[i]);
          const int64_t hi = std::min(o1, first[i] + w.out);
          if (lo >= hi) continue;
          multiply_rows(w, lo - first[i], hi - first[i], row_acts[i], 1, rows[i].y, w.out, kernel);
        }
      });
}

void quant_linear_row(const PackedLinear& w, int o, float* out) {
  dequantize_blocks(*w.quant, w.qrow(o),
                    static_cast<size_t>(w.in / quant_type_info(*w.quant).block_elems), out);
}

const char* quant_linear_kernel_name() {
  return simd::quant_kernel_name(simd::quant_kernel_default());
}

}  // namespace hanpu::cpu
