// Quantized projections (see quant_linear.h).
#include "cpu/nn/quant_linear.h"

#include <cstring>

#include "parallel/parallel_rows.h"
#include "simd/quant_dot.h"

namespace hanpu::cpu {

PackedLinear quant_linear_from_rows(QuantType t, const uint8_t* data, int in,
                                    const std::vector<int>& rows) {
  const QuantTypeInfo& info = quant_type_info(t);
  PackedLinear w;
  w.in = in;
  w.out = static_cast<int>(rows.size());
  w.quant = t;
  w.qrow_bytes = static_cast<size_t>(in / info.block_elems) * info.bytes;
  w.qblocks.resize(w.qrow_bytes * rows.size());
  for (size_t o = 0; o < rows.size(); ++o) {
    std::memcpy(w.qblocks.data() + o * w.qrow_bytes,
                data + static_cast<size_t>(rows[o]) * w.qrow_bytes, w.qrow_bytes);
  }
  return w;
}

void quant_linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y,
                  int64_t ldy, int threads) {
  if (T <= 0 || w.out <= 0) return;
  // Kept between calls (one per thread that calls): a decode step quantizes a few KB per
  // projection and would otherwise allocate each time.
  thread_local simd::QuantActs acts;
  simd::quantize_acts(x, ldx, T, w.in, w.x_order.empty() ? nullptr : w.x_order.data(), &acts);
  const simd::QuantKernel kernel = simd::quant_kernel_default();
  const QuantType t = *w.quant;
  const simd::QuantActs& a = acts;
  parallel_rows(threads, w.out, static_cast<int64_t>(w.in) * T, [&](int64_t o0, int64_t o1) {
    simd::quant_gemm(t, w.qblocks.data() + static_cast<size_t>(o0) * w.qrow_bytes, w.qrow_bytes,
                     static_cast<int>(o1 - o0), a, 0, T, y + o0, ldy, kernel);
  });
}

void quant_linear_row(const PackedLinear& w, int o, float* out) {
  dequantize_blocks(*w.quant, w.qblocks.data() + static_cast<size_t>(o) * w.qrow_bytes,
                    static_cast<size_t>(w.in / quant_type_info(*w.quant).block_elems), out);
}

const char* quant_linear_kernel_name() {
  return simd::quant_kernel_name(simd::quant_kernel_default());
}

}  // namespace hanpu::cpu
