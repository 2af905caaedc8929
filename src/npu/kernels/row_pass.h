// A per-token vector operator on the simulated Ascend cores (a norm, an activation, a causal
// convolution, the gates): blocks of rows dealt to the cores, each block's inputs loaded to UB,
// its arithmetic on the vector unit, its outputs stored. The whole prefill's glue between the
// cube projections and the attention kernels, each such operator a kernel of its own as an
// eager framework runs them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "npu/sim/npu_sim.h"

namespace hanpu::npu {

// Columns [col0, col0 + cols) of a GM tensor's rows.
struct GmCols {
  GmTensor* t = nullptr;
  int64_t col0 = 0;
  int cols = 0;
};

struct RowPass {
  std::vector<GmCols> in;         // per-token rows
  std::vector<GmTensor*> params;  // [1 x C] per-channel vectors (norm weights, biases)
  std::vector<GmCols> out;        // per-token rows
  int halo = 0;                   // rows before a block its inputs bring too (a causal conv)
  double passes = 1;              // vector passes over the block's input and output bytes
  // The block's arithmetic. in[i] holds `halo_rows` rows before the block's first (fewer at the
  // top of the sequence), then the block's; out[i] the block's rows, the first being token row0.
  std::function<void(const std::vector<Tile*>& in, const std::vector<Tile*>& params,
                     const std::vector<Tile*>& out, int halo_rows, int64_t row0)>
      fn;
};

// Inside the current launch (the caller calls launch()). Every tensor of `p` has T rows
// (params one); blocks are as tall as half the UB allows, at least one per core.
Status row_pass(NpuSim& sim, int64_t T, const RowPass& p);

}  // namespace hanpu::npu
