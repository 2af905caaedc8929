// Quantized projections (see quant_linear.h).
#include "cpu/nn/quant_linear.h"

#include <algorithm>
#include <cstring>

#include "base/quant_quantize.h"
#include "base/rng.h"
#include "hanpu/dtype.h"
#include "parallel/parallel_rows.h"
#include "simd/amx.h"
#include "simd/quant_dot.h"

namespace hanpu::cpu {

PackedLinear quant_linear_from_rows(QuantType t, const uint8_t* data, int in,
                                    const std::vector<int>& rows,
                                    std::shared_ptr<const void> owner) {
  const QuantTypeInfo& info = quant_type_info(t);
  PackedLinear w;
  w.in = in;
  w.out = static_cast<int>(rows.size());
  w.quant = t;
  w.qrow_bytes = static_cast<size_t>(in / info.block_elems) * info.bytes;
  w.qrows.resize(rows.size());
  if (!owner) {  // nothing keeps `data` alive: hold a copy of the rows
    auto copy = std::make_shared<std::vector<uint8_t>>(w.qrow_bytes * rows.size());
    for (size_t o = 0; o < rows.size(); ++o) {
      std::memcpy(copy->data() + o * w.qrow_bytes,
                  data + static_cast<size_t>(rows[o]) * w.qrow_bytes, w.qrow_bytes);
      w.qrows[o] = copy->data() + o * w.qrow_bytes;
    }
    w.qowner = std::move(copy);
    return w;
  }
  for (size_t o = 0; o < rows.size(); ++o)
    w.qrows[o] = data + static_cast<size_t>(rows[o]) * w.qrow_bytes;
  w.qowner = std::move(owner);
  return w;
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
  w.qrows.insert(w.qrows.end(), b.qrows.begin(), b.qrows.end());
  if (a.qowner != b.qowner) {  // keep both alive
    auto both =
        std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>>(
            a.qowner, b.qowner);
    w.qowner = std::shared_ptr<const void>(both, both.get());
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
  w.qrows.resize(out);
  for (int o = 0; o < out; ++o) w.qrows[o] = blocks->data() + static_cast<size_t>(o) * w.qrow_bytes;
  w.qowner = std::move(blocks);
  return w;
}

namespace {

// Rows [o0, o0 + n) of W decoded into a bf16 projection (the pairs layout of linear.h), its
// input back in x's order: for a prefill on the matrix unit or the bf16 dot instruction. The
// storage is kept from call to call (one buffer, as large as the largest panel).
const PackedLinear& widened(const PackedLinear& w, int o0, int n) {
  thread_local PackedLinear wide;
  wide.refill_from_row_source(
      w.in, n,
      [&](int o, float* buf) {
        const uint8_t* row = w.qrows[o0 + o];
        if (w.x_order.empty()) {
          simd::dequantize_row(*w.quant, row, w.in, buf);
          return static_cast<const float*>(buf);
        }
        thread_local std::vector<float> dec;
        dec.resize(static_cast<size_t>(w.in));
        simd::dequantize_row(*w.quant, row, w.in, dec.data());
        for (int i = 0; i < w.in; ++i) buf[w.x_order[i]] = dec[i];
        return static_cast<const float*>(buf);
      },
      DType::kBF16);
  return wide;
}

}  // namespace

int quant_widen_panel_rows(int in) {
  const int64_t rows =
      kQuantWidenPanelBytes / (int64_t{2} * in) / simd::kPairStripCols * simd::kPairStripCols;
  return static_cast<int>(std::clamp<int64_t>(rows, simd::kPairStripCols, int64_t{1} << 30));
}

bool quant_prefill_widens(const PackedLinear& w, int64_t T, ProjectionKernel ceiling) {
  return T >= kQuantWidenRows && projection_kernel_allowed(ceiling, ProjectionKernel::kPairs);
}

void quant_linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y,
                  int64_t ldy, int threads, ProjectionKernel ceiling) {
  if (T <= 0 || w.out <= 0) return;
  if (quant_prefill_widens(w, T, ceiling)) {
    const int panel = quant_widen_panel_rows(w.in);
    for (int o0 = 0; o0 < w.out; o0 += panel) {
      const int n = std::min(panel, w.out - o0);
      linear(x, ldx, T, widened(w, o0, n), y + o0, ldy, threads, ceiling);
    }
    return;
  }
  quant_linear_many(x, ldx, T, {{&w, y, ldy}}, threads);
}

void quant_linear_many(const float* x, int64_t ldx, int64_t T, const std::vector<LinearOut>& outs,
                       int threads) {
  if (T <= 0 || outs.empty()) return;
  const PackedLinear& w0 = *outs[0].w;
  const simd::QuantKernel kernel = simd::quant_kernel_default();
  // The activation forms the kernels will read (one, unless the projections' types differ).
  bool per32 = false, per_unit = false;
  for (const LinearOut& o : outs) {
    (simd::quant_gemm_uses_unit_acts(*o.w->quant, o.w->out, T, kernel) ? per_unit : per32) = true;
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
  std::vector<int64_t> first(outs.size() + 1, 0);
  for (size_t i = 0; i < outs.size(); ++i) first[i + 1] = first[i] + outs[i].w->out;
  parallel_rows(threads, first.back(), static_cast<int64_t>(w0.in) * T,
                [&](int64_t o0, int64_t o1) {
                  for (size_t i = 0; i < outs.size(); ++i) {
                    const int64_t lo = std::max(o0, first[i]), hi = std::min(o1, first[i + 1]);
                    if (lo >= hi) continue;
                    const PackedLinear& w = *outs[i].w;
                    const int64_t at = lo - first[i];
                    simd::quant_gemm(*w.quant, w.qrows.data() + at, static_cast<int>(hi - lo), a, 0,
                                     T, outs[i].y + at, outs[i].ldy, kernel);
                  }
                });
}

void quant_linear_row(const PackedLinear& w, int o, float* out) {
  dequantize_blocks(*w.quant, w.qrows[o],
                    static_cast<size_t>(w.in / quant_type_info(*w.quant).block_elems), out);
}

const char* quant_linear_kernel_name() {
  return simd::quant_kernel_name(simd::quant_kernel_default());
}

}  // namespace hanpu::cpu
