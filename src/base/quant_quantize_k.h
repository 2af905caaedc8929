// One block of the K and non-linear quantizers (quant_quantize.h has the interface): each
// reads a block's values (256, or 32 for IQ4_NL) and writes its bytes.
#pragma once

#include <cstdint>

namespace hanpu {

void quantize_q4_k_block(const float* x, uint8_t* b);
void quantize_q5_k_block(const float* x, uint8_t* b);
void quantize_q6_k_block(const float* x, uint8_t* b);
void quantize_iq4_nl_block(const float* x, uint8_t* b);
void quantize_iq4_xs_block(const float* x, uint8_t* b);

}  // namespace hanpu
