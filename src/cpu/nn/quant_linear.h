// Projections whose weights are GGUF blocks (base/quant_blocks.h), kept as the checkpoint
// stores them: output column o of y = x W^T is row o of W, a run of whole blocks. x is
// quantized to int8 blocks once per call and every row multiplied on simd/quant_dot.h's
// fastest kernel, decode and prefill alike; output rows are claimed by the pool's cores.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/nn/linear.h"

namespace hanpu::cpu {

// A projection onto rows `rows` of a [*, in] matrix of type t whose row r starts at
// data + r * row_bytes (row_bytes: in / block_elems blocks). The bytes are copied.
PackedLinear quant_linear_from_rows(QuantType t, const uint8_t* data, int in,
                                    const std::vector<int>& rows);

// y[T, out] (leading dim ldy) = x[T, in] (leading dim ldx) W^T for a quantized w.
void quant_linear(const float* x, int64_t ldx, int64_t T, const PackedLinear& w, float* y,
                  int64_t ldy, int threads);

// Row `o` of W (`w.in` values) decoded to f32, as the embedding reads a token's row.
void quant_linear_row(const PackedLinear& w, int o, float* out);

// The kernel quant_linear() runs on this CPU: "vnni" or "scalar" (simd/quant_dot.h).
const char* quant_linear_kernel_name();

}  // namespace hanpu::cpu
