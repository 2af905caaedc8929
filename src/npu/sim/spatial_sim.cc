// SpatialSim (see spatial_sim.h).
#include "npu/sim/spatial_sim.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace hanpu::npu {

namespace {

const char* tile_kind(TileId t) {
  return t.row == 0 ? "shim tile" : t.row == 1 ? "mem tile" : "compute tile";
}

}  // namespace

SpatialSim::SpatialSim(const SpatialMachine& m) : m_(m), rows_(m.compute_rows + 2) {
  const size_t tiles = static_cast<size_t>(m_.columns) * rows_;
  held_.assign(tiles, 0);
  dma_in_.assign(tiles, 0);
  dma_out_.assign(tiles, 0);
  queues_ = m_.compute_tiles();
}

void SpatialSim::launch(const std::string& design) {
  if (!events_.empty() || epoch_ > 0) {
    ++epoch_;
    epoch_overhead_.push_back(m_.launch_overhead_us * 1e3 * m_.clock_ghz);
  }
  designs_.resize(static_cast<size_t>(epoch_) + 1);
  designs_.back() = design;
  std::fill(held_.begin(), held_.end(), 0);
  std::fill(dma_in_.begin(), dma_in_.end(), 0);
  std::fill(dma_out_.begin(), dma_out_.end(), 0);
}

int SpatialSim::tile_index(TileId t) const { return t.col * rows_ + t.row; }
int SpatialSim::core_queue(TileId t) const { return t.col * m_.compute_rows + (t.row - 2); }

Status SpatialSim::check_tile(TileId t) const {
  if (t.col < 0 || t.col >= m_.columns || t.row < 0 || t.row >= rows_) {
    return Status::Error(fmt::format("{}: no tile ({}, {}) in {} columns x {} rows", m_.name, t.col,
                                     t.row, m_.columns, rows_));
  }
  return Status::Ok();
}

Status SpatialSim::reserve(TileId t, int64_t bytes, const std::string& what) {
  HANPU_RETURN_IF_ERROR(check_tile(t));
  if (t.row == 0) return Status::Ok();  // a shim holds nothing: it streams DRAM
  const int64_t cap = t.row == 1 ? m_.memtile_bytes : m_.local_bytes;
  int64_t& held = held_[static_cast<size_t>(tile_index(t))];
  if (held + bytes > cap) {
    return Status::Error(fmt::format("{} ({}, {}) cannot hold {} ({} B): {} of {} B already held",
                                     tile_kind(t), t.col, t.row, what, bytes, held, cap));
  }
  held += bytes;
  return Status::Ok();
}

int SpatialSim::dma_channels(TileId t, bool out) const {
  if (t.row == 0) return out ? m_.shim_dma_out : m_.shim_dma_in;
  if (t.row == 1) return out ? m_.memtile_dma_out : m_.memtile_dma_in;
  return out ? m_.tile_dma_out : m_.tile_dma_in;
}

int SpatialSim::free_dma(TileId t, bool out) const {
  if (!check_tile(t).ok()) return 0;
  return dma_channels(t, out) - (out ? dma_out_ : dma_in_)[static_cast<size_t>(tile_index(t))];
}

Status SpatialSim::fifo(const std::string& name, TileId producer,
                        const std::vector<TileId>& consumers, int64_t bytes, int depth, int* id) {
  HANPU_RETURN_IF_ERROR(check_tile(producer));
  if (consumers.empty() || bytes <= 0 || depth < 1) {
    return Status::Error(
        fmt::format("fifo '{}': needs a consumer, bytes > 0 and depth >= 1", name));
  }
  const auto take = [&](TileId t, bool out) -> Status {
    int& used = (out ? dma_out_ : dma_in_)[static_cast<size_t>(tile_index(t))];
    if (used + 1 > dma_channels(t, out)) {
      return Status::Error(fmt::format("fifo '{}': {} ({}, {}) needs {} of its {} {} DMA channels",
                                       name, tile_kind(t), t.col, t.row, used + 1,
                                       dma_channels(t, out), out ? "output" : "input"));
    }
    ++used;
    return Status::Ok();
  };
  for (const TileId& c : consumers) HANPU_RETURN_IF_ERROR(check_tile(c));
  // Neighbouring compute tiles share memory: the objects live in one buffer pool, no DMA
  // channel and no stream (mlir-aie's shared-memory ObjectFIFO). An AIE-ML core reaches its
  // own memory and those north, south and west of it (mlir-aie AIE2TargetModel::getMem*),
  // so any two tiles side by side or one above the other have a memory both can use.
  const bool shared =
      consumers.size() == 1 && producer.row >= 2 && consumers[0].row >= 2 &&
      std::abs(producer.col - consumers[0].col) + std::abs(producer.row - consumers[0].row) == 1;
  HANPU_RETURN_IF_ERROR(reserve(producer, bytes * depth, "fifo '" + name + "' (producer)"));
  if (!shared) {
    HANPU_RETURN_IF_ERROR(take(producer, true));
    for (const TileId& c : consumers) {
      HANPU_RETURN_IF_ERROR(take(c, false));
      HANPU_RETURN_IF_ERROR(reserve(c, bytes * depth, "fifo '" + name + "' (consumer)"));
    }
  }
  Fifo f;
  f.shared = shared;
  f.name = name;
  f.producer = producer;
  f.consumers = consumers;
  f.bytes = bytes;
  f.depth = depth;
  f.queue = queues_++;
  f.arrival_queue = queues_++;
  f.request_queue = queues_++;
  // A mem or shim consumer's release is its DMA finishing with the buffer: on a queue of its
  // own, never behind the producer's next transfer (that would serialise a forward's two hops).
  for (const TileId& c : consumers) f.release_queue.push_back(c.row >= 2 ? -1 : queues_++);
  f.releases.resize(consumers.size());
  fifos_.push_back(std::move(f));
  *id = static_cast<int>(fifos_.size()) - 1;
  return Status::Ok();
}

int64_t SpatialSim::put(int id, const std::vector<int64_t>& after) {
  Fifo& f = fifos_[static_cast<size_t>(id)];
  const size_t k = f.puts.size();
  bool dram_write = false;
  for (const TileId& c : f.consumers) dram_write = dram_write || c.row == 0;
  // The send holds the producer's channel for the object's bytes at the stream rate; the
  // object is in every consumer the hop's latency after its last word left. The latency
  // does not hold the channel: a DMA's buffer descriptors chain, so the next send starts
  // while this one's words are still in flight. A read from DRAM is requested ahead of its
  // send (the shim prefetches): its latency runs before the send, without waiting for the
  // consumers' buffers, on a queue of its own.
  Event send;
  send.epoch = epoch_;
  send.queue = f.queue;
  send.deps = after;  // the wait for a free buffer at every consumer is added in finish(),
                      // once every release is recorded
  if (f.producer.row == 0 && !f.shared) {
    Event request;
    request.epoch = epoch_;
    request.queue = f.request_queue;
    request.deps = after;
    request.latency = m_.dram_latency_cycles;
    send.deps = {static_cast<int64_t>(events_.size())};
    events_.push_back(std::move(request));
  }
  send.cycles = f.shared ? 0.0 : static_cast<double>(f.bytes) / m_.stream_bytes_per_cycle;
  int64_t offchip = f.producer.row == 0 ? f.bytes : 0;
  for (const TileId& c : f.consumers) offchip += c.row == 0 ? f.bytes : 0;
  send.shared_bytes = offchip;
  offchip_ += offchip;
  if (!f.shared) {       // a shared-memory hand-over moves no bytes: the consumer reads in place
    stream_ += f.bytes;  // one stream feeds every consumer of a broadcast
    const auto count_level = [&](TileId t) {
      if (t.row == 1) memtile_bytes_ += f.bytes;
      if (t.row >= 2) local_bytes_ += f.bytes;
    };
    count_level(f.producer);
    for (const TileId& c : f.consumers) count_level(c);
  }
  const int64_t sent = static_cast<int64_t>(events_.size());
  puts_.push_back({sent, send.deps});  // what the send waits for before any buffer
  events_.push_back(std::move(send));
  Event arrive;
  arrive.epoch = epoch_;
  arrive.queue = f.arrival_queue;
  arrive.deps = {sent};
  arrive.latency = f.shared ? 0.0 : dram_write ? m_.dram_latency_cycles : m_.stream_latency_cycles;
  const int64_t ev = static_cast<int64_t>(events_.size());
  events_.push_back(std::move(arrive));
  f.sends.push_back(sent);
  f.puts.push_back(ev);
  put_of_.push_back({id, static_cast<int>(k)});
  return ev;
}

int64_t SpatialSim::forward(int in, int out, const std::vector<int64_t>& after) {
  const int64_t arrived = put(in, after);
  const int64_t passed_on = put(out, {arrived});  // in `out`'s consumers
  release(in, 0, {passed_on});
  return passed_on;
}

int64_t SpatialSim::release(int id, int c, const std::vector<int64_t>& after) {
  Fifo& f = fifos_[static_cast<size_t>(id)];
  const TileId t = f.consumers[static_cast<size_t>(c)];
  Event e;
  e.epoch = epoch_;
  // A compute tile releases in its program order; a mem or shim tile's DMA releases as its
  // own transfers finish (a zero-time event on that consumer's release queue).
  e.queue = t.row >= 2 ? core_queue(t) : f.release_queue[static_cast<size_t>(c)];
  e.deps = after;
  const size_t k = f.releases[static_cast<size_t>(c)].size();
  if (k < f.puts.size()) e.deps.push_back(f.puts[k]);
  const int64_t ev = static_cast<int64_t>(events_.size());
  events_.push_back(std::move(e));
  f.releases[static_cast<size_t>(c)].push_back(ev);
  return ev;
}

int64_t SpatialSim::compute(TileId t, double macs, int64_t vector_bytes, int64_t exps,
                            const std::vector<int64_t>& after) {
  Event e;
  e.epoch = epoch_;
  e.queue = core_queue(t);
  e.deps = after;
  e.cycles = macs / m_.bf16_macs_per_cycle +
             static_cast<double>(vector_bytes) / m_.vector_bytes_per_cycle +
             static_cast<double>(exps) / m_.exp_per_cycle;
  macs_ += macs;
  vector_bytes_ += vector_bytes;
  events_.push_back(std::move(e));
  return static_cast<int64_t>(events_.size()) - 1;
}

Status SpatialSim::finish(SpatialStats* out) {
  SpatialStats s;
  // Object k of a FIFO waits for every consumer's release of object k - depth.
  for (size_t i = 0; i < puts_.size(); ++i) {
    const Fifo& f = fifos_[static_cast<size_t>(put_of_[i].first)];
    const int k = put_of_[i].second;
    if (k < f.depth) continue;
    for (size_t c = 0; c < f.releases.size(); ++c) {
      if (f.releases[c].size() <= static_cast<size_t>(k - f.depth)) {
        return Status::Error(
            fmt::format("fifo '{}': object {} is put, but consumer {} never released object {} "
                        "(depth {}): the program would deadlock",
                        f.name, k, c, k - f.depth, f.depth));
      }
      events_[puts_[i].first].deps.push_back(f.releases[c][k - f.depth]);
    }
  }
  // Design switches: at each launch whose design differs from the one before it (the last
  // launch precedes the first). The first launch's switch delays everything alike.
  const double switch_cycles = m_.design_switch_us * 1e3 * m_.clock_ghz;
  std::vector<double> overhead = epoch_overhead_;
  double first_switch = 0;
  for (size_t e = 0; designs_.size() > 1 && e < designs_.size(); ++e) {
    const std::string& before = designs_[e == 0 ? designs_.size() - 1 : e - 1];
    if (designs_[e] == before) continue;
    ++s.design_switches;
    if (e == 0) {
      first_switch = switch_cycles;
    } else {
      overhead[e - 1] += switch_cycles;
    }
  }
  const Replay r = replay(events_, queues_, overhead, m_.dram_gbps / m_.clock_ghz);
  for (size_t i = 0; i < r.finish.size(); ++i) {
    if (r.finish[i] < 0) {
      return Status::Error(
          fmt::format("{}: the program deadlocks (event {} of {} never runs: a FIFO's consumers "
                      "and producer wait on each other)",
                      m_.name, i, r.finish.size()));
    }
  }
  s.events = static_cast<int64_t>(events_.size());
  s.latency_cycles =
      first_switch + std::max(r.latency_cycles, m_.launch_overhead_us * 1e3 * m_.clock_ghz);
  s.latency_ms = s.latency_cycles / (m_.clock_ghz * 1e6);
  s.offchip_bytes = offchip_;
  s.stream_bytes = stream_;
  s.macs = macs_;
  // Stall: a put ready by its own inputs and its channel (the FIFO's previous object sent)
  // but held until every consumer released a buffer.
  for (size_t i = 0; i < puts_.size(); ++i) {
    const auto& [ev, after] = puts_[i];
    const Fifo& f = fifos_[static_cast<size_t>(put_of_[i].first)];
    const int k = put_of_[i].second;
    double ready = k > 0 ? r.finish[f.sends[k - 1]] : 0.0;
    for (int64_t d : after) ready = std::max(ready, r.finish[d]);
    double released = 0;  // the release deps follow the `after` ones
    for (size_t j = after.size(); j < events_[ev].deps.size(); ++j) {
      released = std::max(released, r.finish[events_[ev].deps[j]]);
    }
    if (released > ready) s.stall_cycles += std::min(r.start[ev], released) - ready;
  }
  s.stall_ms = s.stall_cycles / (m_.clock_ghz * 1e6);
  double busy = 0;
  s.tile_util.assign(static_cast<size_t>(m_.compute_tiles()), 0.0);
  for (int q = 0; q < m_.compute_tiles(); ++q) {
    busy += r.busy[q];
    s.tile_util[q] = s.latency_cycles > 0 ? r.busy[q] / s.latency_cycles : 0;
  }
  s.compute_util = s.latency_cycles > 0 ? busy / (m_.compute_tiles() * s.latency_cycles) : 0;
  const SpatialEnergy& e = m_.energy;
  const double pj = static_cast<double>(offchip_) * e.dram_byte +
                    static_cast<double>(stream_) * e.stream_byte +
                    static_cast<double>(memtile_bytes_) * e.memtile_byte +
                    static_cast<double>(local_bytes_) * e.local_byte + macs_ * e.bf16_mac +
                    static_cast<double>(vector_bytes_) * e.vector_byte;
  s.energy_mj = pj * 1e-9 + e.static_w * s.latency_ms;
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace hanpu::npu
