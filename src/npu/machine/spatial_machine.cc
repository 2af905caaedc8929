// Parsing and validating the spatial (XDNA-class) target files (see spatial_machine.h).
#include "npu/machine/spatial_machine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "npu/machine/builtin_targets.h"
#include "npu/machine/json_fields.h"

namespace hanpu::npu {

using fields::integer;
using fields::non_negative;
using fields::object;
using fields::positive;

namespace {

Status count(const nlohmann::json& j, const std::string& where, const char* key, int lo, int hi,
             int* out) {
  int64_t v = 0;
  HANPU_RETURN_IF_ERROR(integer(j, where, key, lo, hi, &v));
  *out = static_cast<int>(v);
  return Status::Ok();
}

}  // namespace

std::vector<std::string> spatial_machine_names() { return fields::builtin_names("spatial"); }

Status parse_spatial_machine(const std::string& text, const std::string& src, SpatialMachine* out) {
  nlohmann::json j;
  HANPU_RETURN_IF_ERROR(parse_json(text, src, &j));
  if (!j.is_object()) return Status::Error(fmt::format("{}: not a JSON object", src));
  if (!j.contains("kind") || !j["kind"].is_string() || j["kind"].get<std::string>() != "spatial") {
    return Status::Error(
        fmt::format("{}: kind must be \"spatial\" for a spatial (XDNA-class) target (built-in: {})",
                    src, fmt::join(spatial_machine_names(), ", ")));
  }
  SpatialMachine m;
  HANPU_RETURN_IF_ERROR(fields::name_and_summary(j, src, &m.name, &m.summary));
  HANPU_RETURN_IF_ERROR(count(j, src, "columns", 1, 64, &m.columns));
  HANPU_RETURN_IF_ERROR(count(j, src, "compute_rows", 1, 16, &m.compute_rows));
  HANPU_RETURN_IF_ERROR(positive(j, src, "clock_ghz", &m.clock_ghz));
  HANPU_RETURN_IF_ERROR(non_negative(j, src, "launch_overhead_us", &m.launch_overhead_us));
  HANPU_RETURN_IF_ERROR(non_negative(j, src, "design_switch_us", &m.design_switch_us));
  const nlohmann::json *ct = nullptr, *mt = nullptr, *st = nullptr, *lat = nullptr, *e = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "compute_tile", &ct));
  const std::string cw = src + ": compute_tile";
  HANPU_RETURN_IF_ERROR(integer(*ct, cw, "local_bytes", 1024, int64_t{1} << 30, &m.local_bytes));
  HANPU_RETURN_IF_ERROR(positive(*ct, cw, "bf16_macs_per_cycle", &m.bf16_macs_per_cycle));
  HANPU_RETURN_IF_ERROR(positive(*ct, cw, "vector_bytes_per_cycle", &m.vector_bytes_per_cycle));
  HANPU_RETURN_IF_ERROR(positive(*ct, cw, "exp_per_cycle", &m.exp_per_cycle));
  if (!ct->contains("exp_lookup_table") || !(*ct)["exp_lookup_table"].is_boolean()) {
    return Status::Error(cw + ": exp_lookup_table must be true or false");
  }
  m.exp_lookup_table = (*ct)["exp_lookup_table"].get<bool>();
  HANPU_RETURN_IF_ERROR(count(*ct, cw, "dma_in", 1, 64, &m.tile_dma_in));
  HANPU_RETURN_IF_ERROR(count(*ct, cw, "dma_out", 1, 64, &m.tile_dma_out));
  HANPU_RETURN_IF_ERROR(object(j, src, "mem_tile", &mt));
  const std::string mw = src + ": mem_tile";
  HANPU_RETURN_IF_ERROR(integer(*mt, mw, "bytes", 1024, int64_t{1} << 34, &m.memtile_bytes));
  HANPU_RETURN_IF_ERROR(count(*mt, mw, "dma_in", 1, 64, &m.memtile_dma_in));
  HANPU_RETURN_IF_ERROR(count(*mt, mw, "dma_out", 1, 64, &m.memtile_dma_out));
  HANPU_RETURN_IF_ERROR(object(j, src, "shim_tile", &st));
  HANPU_RETURN_IF_ERROR(count(*st, src + ": shim_tile", "dma_in", 1, 64, &m.shim_dma_in));
  HANPU_RETURN_IF_ERROR(count(*st, src + ": shim_tile", "dma_out", 1, 64, &m.shim_dma_out));
  HANPU_RETURN_IF_ERROR(positive(j, src, "stream_bytes_per_cycle", &m.stream_bytes_per_cycle));
  HANPU_RETURN_IF_ERROR(count(j, src, "fifo_depth", 1, 16, &m.fifo_depth));
  HANPU_RETURN_IF_ERROR(positive(j, src, "dram_gbps", &m.dram_gbps));
  HANPU_RETURN_IF_ERROR(object(j, src, "dma_latency_cycles", &lat));
  HANPU_RETURN_IF_ERROR(
      non_negative(*lat, src + ": dma_latency_cycles", "dram", &m.dram_latency_cycles));
  HANPU_RETURN_IF_ERROR(
      non_negative(*lat, src + ": dma_latency_cycles", "stream", &m.stream_latency_cycles));
  HANPU_RETURN_IF_ERROR(object(j, src, "energy_pj", &e));
  const std::string ew = src + ": energy_pj";
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "dram_byte", &m.energy.dram_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "memtile_byte", &m.energy.memtile_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "local_byte", &m.energy.local_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "stream_byte", &m.energy.stream_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "bf16_mac", &m.energy.bf16_mac));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "vector_byte", &m.energy.vector_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "static_w", &m.energy.static_w));
  HANPU_RETURN_IF_ERROR(fields::sources(
      j, src,
      {"columns", "compute_rows", "clock_ghz", "design_switch_us", "compute_tile", "mem_tile",
       "shim_tile", "stream_bytes_per_cycle", "fifo_depth", "dram_gbps", "energy_pj"},
      &m.sources));
  *out = std::move(m);
  return Status::Ok();
}

Status load_spatial_machine(const std::string& name_or_path, SpatialMachine* out) {
  std::string text, source;
  HANPU_RETURN_IF_ERROR(
      fields::target_text(name_or_path, "spatial target", spatial_machine_names(), &text, &source));
  return parse_spatial_machine(text, source, out);
}

}  // namespace hanpu::npu
