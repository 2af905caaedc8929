// Quantizers into GGUF's block formats (base/quant_blocks.h), made to write the same bytes as
// the tools people compare against: the 32-value types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) bit for
// bit as the `gguf` Python package's quantize (itself ggml's reference quantizer), the K types
// (Q4_K, Q5_K, Q6_K) and the non-linear ones (IQ4_NL, IQ4_XS) bit for bit as llama-quantize
// writes them without an importance matrix (ggml's quantize_chunk). Vectors:
// tests/fixtures/quant/*.quant_in.f32 and *.quant_out.blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/quant_blocks.h"

namespace hanpu {

// Whether quantize_blocks makes type t: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K,
// IQ4_NL, IQ4_XS (not Q2_K and Q3_K).
bool quant_type_quantizable(QuantType t);
// The type a row of `in` values is quantized to when t is asked for, as llama-quantize
// chooses: t where the row is whole blocks of it, else its 32-value stand-in (Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL, Q2_K and Q3_K -> Q4_0); none where that does
// not fit either (the caller keeps the row unquantized).
std::optional<QuantType> quant_type_for_row(QuantType t, int64_t in);

// Round to nearest, ties to even, through the float mantissa as ggml and llama.cpp's tools do
// (their nearest_int; |x| < 2^22): the one rounding their quantizers and file formats use.
int ggml_nearest_int(float x);

// Their names in lower case, as flags take them: {"q4_0", "q4_1", ...}.
std::vector<std::string> quantizable_type_names();

// Quantizes `blocks` blocks of finite values (block_elems each) at `src` into type t
// (quant_type_quantizable), writing blocks * bytes bytes at `dst`. Scales are stored as f16 as
// ggml stores them: values so large that a scale passes f16's range make an infinite scale,
// which first_block_with_bad_scale finds (callers refuse such a tensor).
void quantize_blocks(QuantType t, const float* src, size_t blocks, uint8_t* dst);

}  // namespace hanpu
