// The spatial (XDNA-class) NPU simulator: a program of compute and stream events on the
// array's tiles, replayed by the shared event core (event_core.h). Tiles are (column, row):
// row 0 the shim (DRAM DMA), row 1 the mem tile, rows 2.. the compute tiles. Data moves
// through ObjectFIFOs (mlir-aie semantics): one producer, one or more consumers, `depth`
// objects per endpoint; the producer's next object waits until every consumer released the
// object `depth` before it — so a broadcast moves only when all consumers have room, and
// one slow consumer stalls the producer and every other consumer (STEEL §IV-C). Every FIFO
// endpoint on a different tile takes a DMA channel of that tile; a design that needs more
// channels than a tile has is refused with an error naming the tile. Neighbouring compute
// tiles hand objects over in shared memory instead (no DMA, no stream). Kernels run their
// math on the host (their outputs are checked) and record here what the array would do.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hanpu/status.h"
#include "npu/machine/spatial_machine.h"
#include "npu/sim/event_core.h"

namespace hanpu::npu {

struct TileId {
  int col = 0, row = 0;  // row 0 shim, 1 mem tile, 2.. compute
  bool operator==(const TileId&) const = default;
};

struct SpatialStats {
  double latency_cycles = 0, latency_ms = 0;
  int64_t offchip_bytes = 0;  // DRAM read + written through the shims
  int64_t stream_bytes = 0;   // bytes moved through FIFO hops
  double stall_cycles = 0;    // producers waiting on consumers to release (summed)
  double stall_ms = 0;
  double compute_util = 0;        // busy compute-core time / (compute tiles x latency)
  int design_switches = 0;        // launches that load another design (see launch())
  std::vector<double> tile_util;  // per compute tile, column-major (col * rows + row - 2)
  double macs = 0;
  double energy_mj = 0;
  int64_t events = 0;
};

class SpatialSim {
 public:
  explicit SpatialSim(const SpatialMachine& m);
  const SpatialMachine& machine() const { return m_; }

  // Starts a new kernel launch: it begins when everything before it is done plus the
  // target's launch overhead, with the array's memory and DMA channels free again (its
  // FIFOs are configured anew; FIFOs of earlier launches are not used after it). `design`
  // names the compiled design the launch runs: a launch whose design differs from the one
  // before it also pays the target's design switch. The program is timed as one iteration
  // of a loop, as a benchmark repeats it after warm-up runs, so the first launch's
  // predecessor is the last launch; a program of one design never switches.
  void launch(const std::string& design = "");

  // Reserves `bytes` of a compute tile's local memory or a mem tile's SRAM for `what`;
  // an error names the tile and what is already held when it does not fit.
  Status reserve(TileId t, int64_t bytes, const std::string& what);

  // DMA channels of a tile still free in this launch (0 for a tile that does not exist).
  int free_dma(TileId t, bool out) const;

  // An ObjectFIFO of `depth` objects of `bytes` each from `producer` to `consumers`.
  Status fifo(const std::string& name, TileId producer, const std::vector<TileId>& consumers,
              int64_t bytes, int depth, int* id);
  // The producer's next object, once `after` are done and every consumer released the object
  // `depth` before it: streamed to all consumers at once (from DRAM when the producer is a
  // shim, to DRAM when a consumer is). Returns the event at which it is in every consumer.
  int64_t put(int fifo, const std::vector<int64_t>& after);
  // mlir-aie's forward through a mem tile: the next object of `in` (once `after` are done)
  // is sent on through `out` as soon as it has arrived, and the mem tile's buffer of `in` is
  // released once the object is in `out`'s consumers (the send plus the hop's latency, a few
  // cycles later than the mem tile's DMA is done with it). Returns that event.
  int64_t forward(int in, int out, const std::vector<int64_t>& after = {});
  // Consumer `c` (its index in the FIFO's consumers) is done with its oldest object once
  // `after` are done. Returns the release event.
  int64_t release(int fifo, int c, const std::vector<int64_t>& after);

  // Work on a compute tile's core, once `after` are done: bf16 MACs, vector bytes, exps.
  int64_t compute(TileId t, double macs, int64_t vector_bytes, int64_t exps,
                  const std::vector<int64_t>& after);

  // Replays the program; an error when it cannot complete (a release never recorded, or
  // producers and consumers waiting on each other).
  Status finish(SpatialStats* out);

 private:
  struct Fifo {
    std::string name;
    TileId producer;
    std::vector<TileId> consumers;
    int64_t bytes = 0;
    int depth = 2;
    bool shared = false;               // neighbouring compute tiles: one buffer pool, no DMA
    int queue = 0;                     // the producer's DMA channel (its in-order queue)
    std::vector<int> release_queue;    // per consumer on a mem or shim tile (else -1)
    int arrival_queue = 0;             // objects arriving, a latency after their send
    int request_queue = 0;             // DRAM reads requested ahead of their sends
    std::vector<int64_t> sends, puts;  // per object: its send, its arrival
    std::vector<std::vector<int64_t>> releases;  // per consumer, event per object
  };
  int tile_index(TileId t) const;  // all tiles, column-major
  Status check_tile(TileId t) const;
  int core_queue(TileId t) const;
  int dma_channels(TileId t, bool out) const;

  const SpatialMachine& m_;
  int rows_ = 0;
  std::vector<int64_t> held_;          // bytes reserved per tile
  std::vector<int> dma_in_, dma_out_;  // channels taken per tile
  int queues_ = 0;                     // core queues first, then one per FIFO producer channel
  std::vector<Fifo> fifos_;
  std::vector<Event> events_;
  int epoch_ = 0;
  std::vector<double> epoch_overhead_;
  std::vector<std::string> designs_;  // per epoch
  std::vector<std::pair<int64_t, std::vector<int64_t>>>
      puts_;                                 // send event, its `after` (stall time)
  std::vector<std::pair<int, int>> put_of_;  // per put: (fifo, object index)
  double macs_ = 0;
  int64_t vector_bytes_ = 0, offchip_ = 0, stream_ = 0, local_bytes_ = 0, memtile_bytes_ = 0;
};

}  // namespace hanpu::npu
