// Parsing and validating the NPU target files (see npu_machine.h).
#include "npu/machine/npu_machine.h"

#include <cmath>

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

constexpr const char* kBufNames[kNumBufs] = {"L1", "L0A", "L0B", "L0C", "UB"};
constexpr const char* kPathNames[kNumPaths] = {"GM->L1",  "GM->UB",  "UB->GM",  "UB->L1",
                                               "L1->L0A", "L1->L0B", "L0C->UB", "L1->UB"};

}  // namespace

const char* buf_name(Buf b) { return kBufNames[static_cast<int>(b)]; }
const char* path_name(Path p) { return kPathNames[static_cast<int>(p)]; }
bool path_touches_gm(Path p) {
  return p == Path::kGmToL1 || p == Path::kGmToUb || p == Path::kUbToGm;
}

std::vector<std::string> npu_machine_names() { return fields::builtin_names("ascend"); }

Status parse_npu_machine(const std::string& text, const std::string& src, NpuMachine* out) {
  nlohmann::json j;
  HANPU_RETURN_IF_ERROR(parse_json(text, src, &j));
  if (!j.is_object()) return Status::Error(fmt::format("{}: not a JSON object", src));
  if (j.contains("kind") && !j["kind"].is_string())
    return Status::Error(fmt::format("{}: kind must be a string", src));
  if (const std::string kind = fields::kind_of(j); kind != "ascend") {
    return Status::Error(
        fmt::format("{}: a target of kind '{}', not an Ascend-class one (the LA kernels run on "
                    "Ascend-class targets: {})",
                    src, kind, fmt::join(npu_machine_names(), ", ")));
  }
  NpuMachine m;
  HANPU_RETURN_IF_ERROR(fields::name_and_summary(j, src, &m.name, &m.summary));
  int64_t n = 0;
  HANPU_RETURN_IF_ERROR(integer(j, src, "cores", 1, 1024, &n));
  m.cores = static_cast<int>(n);
  HANPU_RETURN_IF_ERROR(positive(j, src, "clock_ghz", &m.clock_ghz));
  HANPU_RETURN_IF_ERROR(non_negative(j, src, "launch_overhead_us", &m.launch_overhead_us));
  HANPU_RETURN_IF_ERROR(non_negative(j, src, "framework_op_us", &m.framework_op_us));
  const nlohmann::json* bufs = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "buffers", &bufs));
  for (int b = 0; b < kNumBufs; ++b) {
    const nlohmann::json* spec = nullptr;
    HANPU_RETURN_IF_ERROR(object(*bufs, src + ": buffers", kBufNames[b], &spec));
    int64_t bytes = 0, align = 0;
    const std::string where = fmt::format("{}: buffers.{}", src, kBufNames[b]);
    HANPU_RETURN_IF_ERROR(integer(*spec, where, "bytes", 1, int64_t{1} << 40, &bytes));
    HANPU_RETURN_IF_ERROR(integer(*spec, where, "align", 1, 1 << 20, &align));
    if ((align & (align - 1)) != 0) return Status::Error(where + ": align must be a power of two");
    m.buffers[b] = {bytes, static_cast<int>(align)};
  }
  const nlohmann::json* cube = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "cube", &cube));
  int64_t cm = 0, ck = 0, cn = 0, cs = 0;
  HANPU_RETURN_IF_ERROR(integer(*cube, src + ": cube", "m", 1, 1024, &cm));
  HANPU_RETURN_IF_ERROR(integer(*cube, src + ": cube", "k", 1, 1024, &ck));
  HANPU_RETURN_IF_ERROR(integer(*cube, src + ": cube", "n", 1, 1024, &cn));
  HANPU_RETURN_IF_ERROR(integer(*cube, src + ": cube", "startup_cycles", 0, 1 << 30, &cs));
  m.cube_m = static_cast<int>(cm);
  m.cube_k = static_cast<int>(ck);
  m.cube_n = static_cast<int>(cn);
  m.cube_startup_cycles = static_cast<int>(cs);
  const nlohmann::json* vec = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "vector", &vec));
  HANPU_RETURN_IF_ERROR(
      positive(*vec, src + ": vector", "bytes_per_cycle", &m.vector_bytes_per_cycle));
  HANPU_RETURN_IF_ERROR(
      non_negative(*vec, src + ": vector", "startup_cycles", &m.vector_startup_cycles));
  HANPU_RETURN_IF_ERROR(
      positive(*vec, src + ": vector", "nz_row_op_factor", &m.vector_nz_row_op_factor));
  const nlohmann::json* paths = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "paths_gbps", &paths));
  for (int p = 0; p < kNumPaths; ++p) {
    HANPU_RETURN_IF_ERROR(positive(*paths, src + ": paths_gbps", kPathNames[p], &m.path_gbps[p]));
  }
  const nlohmann::json* lat = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "dma_latency_cycles", &lat));
  HANPU_RETURN_IF_ERROR(
      non_negative(*lat, src + ": dma_latency_cycles", "GM", &m.gm_latency_cycles));
  HANPU_RETURN_IF_ERROR(
      non_negative(*lat, src + ": dma_latency_cycles", "local", &m.local_latency_cycles));
  const nlohmann::json* burst = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "dma_burst", &burst));
  HANPU_RETURN_IF_ERROR(
      non_negative(*burst, src + ": dma_burst", "setup_cycles", &m.dma_burst_setup_cycles));
  HANPU_RETURN_IF_ERROR(
      integer(*burst, src + ": dma_burst", "min_bytes", 0, 1 << 20, &m.dma_min_burst_bytes));
  HANPU_RETURN_IF_ERROR(positive(j, src, "gm_gbps", &m.gm_gbps));
  const nlohmann::json* e = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "energy_pj", &e));
  const std::string ew = src + ": energy_pj";
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "gm_byte", &m.energy.gm_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "l1_byte", &m.energy.l1_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "l0_byte", &m.energy.l0_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "ub_byte", &m.energy.ub_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "cube_mac", &m.energy.cube_mac));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "vector_byte", &m.energy.vector_byte));
  HANPU_RETURN_IF_ERROR(non_negative(*e, ew, "static_w", &m.energy.static_w));
  HANPU_RETURN_IF_ERROR(
      fields::sources(j, src,
                      {"cores", "clock_ghz", "framework_op_us", "buffers", "cube", "vector",
                       "paths_gbps", "dma_burst", "gm_gbps", "energy_pj"},
                      &m.sources));
  *out = std::move(m);
  return Status::Ok();
}

Status load_npu_machine(const std::string& name_or_path, NpuMachine* out) {
  std::string text, source;
  HANPU_RETURN_IF_ERROR(
      fields::target_text(name_or_path, "NPU target", npu_machine_names(), &text, &source));
  return parse_npu_machine(text, source, out);
}

}  // namespace hanpu::npu
