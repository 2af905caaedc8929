// A modelled spatial dataflow NPU (AMD XDNA-class) as data: columns of a shim tile (DRAM
// DMA), a mem tile (shared SRAM with a limited number of DMA channels) and compute tiles
// (local memory, bf16 MACs, vector and exp rates); ObjectFIFO streams of bounded depth
// between them; DRAM bandwidth; an energy table. The targets ship as JSON files of kind
// "spatial" in data/npu/ (compiled in), every number with its source and a confidence tag.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hanpu/status.h"

namespace hanpu::npu {

struct SpatialEnergy {  // picojoules
  double dram_byte = 0, memtile_byte = 0, local_byte = 0, stream_byte = 0, bf16_mac = 0,
         vector_byte = 0;
  double static_w = 0;  // watts while the kernel runs
};

struct SpatialMachine {
  std::string name, summary;
  int columns = 1, compute_rows = 1;
  double clock_ghz = 1.0;
  double launch_overhead_us = 0;
  // Loading another design onto the array (a kernel compiled for other tiles' programs,
  // switches and DMAs): paid at a launch whose design differs from the one before it.
  double design_switch_us = 0;
  // Compute tile.
  int64_t local_bytes = 0;
  double bf16_macs_per_cycle = 0, vector_bytes_per_cycle = 0, exp_per_cycle = 0;
  bool exp_lookup_table = false;  // no exp unit: a lookup table (XDNA1)
  int tile_dma_in = 0, tile_dma_out = 0;
  // Mem tile (one per column) and shim tile (one per column).
  int64_t memtile_bytes = 0;
  int memtile_dma_in = 0, memtile_dma_out = 0;
  int shim_dma_in = 0, shim_dma_out = 0;
  double stream_bytes_per_cycle = 0;  // per DMA channel
  int fifo_depth = 2;                 // buffers per ObjectFIFO endpoint
  double dram_gbps = 0;               // shared by every shim
  double dram_latency_cycles = 0, stream_latency_cycles = 0;
  SpatialEnergy energy;
  std::map<std::string, std::string> sources;

  int compute_tiles() const { return columns * compute_rows; }
  int memtile_ports() const { return columns * (memtile_dma_in + memtile_dma_out); }
};

// The built-in spatial targets ("xdna1", "xdna2").
std::vector<std::string> spatial_machine_names();
// A built-in spatial target by name, or a JSON file path; errors name the file and the field.
Status load_spatial_machine(const std::string& name_or_path, SpatialMachine* out);
Status parse_spatial_machine(const std::string& json_text, const std::string& source,
                             SpatialMachine* out);

}  // namespace hanpu::npu
