// safetensors header validation and shard loading (see safetensors.h).
#include "model/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"

namespace hanpu::model {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Status dtype_from_name(const std::string& name, const std::string& file, const std::string& tensor,
                       DType* out) {
  if (name == "F32")
    *out = DType::kF32;
  else if (name == "F16")
    *out = DType::kF16;
  else if (name == "BF16")
    *out = DType::kBF16;
  else {
    return Status::Error(
        fmt::format("{}: tensor '{}' has dtype {}; hanpu loads F32, F16 and BF16 "
                    "(quantised or integer tensors are not supported)",
                    file, tensor, name));
  }
  return Status::Ok();
}

struct Range {
  uint64_t begin, end;
  std::string name;
};

Status parse_entry(const std::string& file, const std::string& name, const json& e,
                   uint64_t data_base, uint64_t data_size, const uint8_t* bytes, StoredTensor* t,
                   Range* r) {
  const auto bad = [&](const std::string& what) {
    return Status::Error(fmt::format("{}: tensor '{}': {}", file, name, what));
  };
  if (!e.is_object()) return bad("header entry is not an object");
  if (!e.contains("dtype") || !e["dtype"].is_string()) return bad("no dtype string");
  HANPU_RETURN_IF_ERROR(dtype_from_name(e["dtype"].get<std::string>(), file, name, &t->dtype));
  if (!e.contains("shape") || !e["shape"].is_array()) return bad("no shape array");
  if (e["shape"].size() > 8)
    return bad(fmt::format("{} dimensions (at most 8)", e["shape"].size()));
  std::vector<uint64_t> dims;
  for (const json& d : e["shape"]) {
    if (!d.is_number_unsigned())
      return bad(fmt::format("shape {} has a negative or non-integer dimension",
                             json_excerpt(e["shape"])));
    dims.push_back(d.get<uint64_t>());
  }
  const std::optional<uint64_t> counted = checked_numel(dims);
  if (!counted) return bad(fmt::format("shape {} is absurdly large", json_excerpt(e["shape"])));
  const uint64_t numel = *counted;
  for (uint64_t v : dims) t->shape.push_back(static_cast<int64_t>(v));
  if (!e.contains("data_offsets") || !e["data_offsets"].is_array() ||
      e["data_offsets"].size() != 2 || !e["data_offsets"][0].is_number_unsigned() ||
      !e["data_offsets"][1].is_number_unsigned()) {
    return bad("data_offsets is not a pair of non-negative integers");
  }
  const uint64_t b = e["data_offsets"][0].get<uint64_t>(),
                 en = e["data_offsets"][1].get<uint64_t>();
  if (b > en) return bad(fmt::format("data_offsets [{}, {}] end before they begin", b, en));
  if (en > data_size) {
    return bad(fmt::format(
        "data_offsets [{}, {}] run past the end of the data ({} bytes; file truncated?)", b, en,
        data_size));
  }
  const uint64_t want = numel * dtype_size(t->dtype);
  if (en - b != want) {
    return bad(fmt::format("data_offsets [{}, {}] hold {} bytes, shape {} of {} needs {}", b, en,
                           en - b, shape_str(t->shape), e["dtype"].get<std::string>(), want));
  }
  t->data = bytes + data_base + b;
  t->file_offset = data_base + b;
  t->file = file;
  *r = Range{b, en, name};
  return Status::Ok();
}

}  // namespace

Status parse_safetensors(const uint8_t* bytes, size_t size, const std::string& file,
                         WeightStore* store) {
  if (size < 8)
    return Status::Error(
        fmt::format("{}: {} bytes, too short for the 8-byte header length", file, size));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > kMaxSafetensorsHeader) {
    return Status::Error(fmt::format("{}: header length {} at offset 0 exceeds the {} byte limit",
                                     file, n, kMaxSafetensorsHeader));
  }
  if (n > size - 8) {
    return Status::Error(
        fmt::format("{}: header length {} at offset 0 runs past the end of the file ({} bytes)",
                    file, n, size));
  }
  json header;
  HANPU_RETURN_IF_ERROR(
      hanpu::parse_json(std::string_view(reinterpret_cast<const char*>(bytes) + 8, n),
                        file + " header (from byte 8)", &header));
  if (!header.is_object())
    return Status::Error(fmt::format("{}: header is not a JSON object", file));
  const uint64_t data_base = 8 + n, data_size = size - data_base;
  std::vector<Range> ranges;
  std::vector<std::pair<std::string, StoredTensor>> parsed;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") continue;
    StoredTensor t;
    Range r{};
    HANPU_RETURN_IF_ERROR(parse_entry(file, name, e, data_base, data_size, bytes, &t, &r));
    if (r.end > r.begin)
      ranges.push_back(r);  // a zero-size tensor holds no bytes: it overlaps nothing
    parsed.emplace_back(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  // Each range against the one reaching furthest before it (not merely the previous one).
  for (size_t i = 1, far = 0; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[far].end) {
      return Status::Error(fmt::format("{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", file,
                                       ranges[far].name, ranges[far].begin, ranges[far].end,
                                       ranges[i].name, ranges[i].begin, ranges[i].end));
    }
    if (ranges[i].end > ranges[far].end) far = i;
  }
  // All checks passed: only now does the store change (no partial load on error).
  for (auto& [name, t] : parsed) HANPU_RETURN_IF_ERROR(store->add(name, std::move(t)));
  return Status::Ok();
}

namespace {

Status load_one(const std::string& path, WeightStore* store) {
  MappedFile f;
  HANPU_RETURN_IF_ERROR(MappedFile::open(path, &f));
  const std::shared_ptr<const MappedFile> kept = store->keep(std::move(f));
  return parse_safetensors(kept->data(), kept->size(), path, store);
}

Status load_index(const fs::path& index_path, WeightStore* store) {
  std::string text;
  HANPU_RETURN_IF_ERROR(
      read_regular_file(index_path.string(), kMaxJsonFileBytes, "the shard index", &text));
  json index;
  HANPU_RETURN_IF_ERROR(hanpu::parse_json(text, index_path.string(), &index));
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    return Status::Error(fmt::format("{}: no \"weight_map\" object", index_path.string()));
  }
  std::set<std::string> shards;
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string() || shard.get<std::string>().find('/') != std::string::npos) {
      return Status::Error(
          fmt::format("{}: tensor '{}' maps to {}, not a shard file name in this folder",
                      index_path.string(), name, json_excerpt(shard)));
    }
    shards.insert(shard.get<std::string>());
  }
  for (const std::string& s : shards)
    HANPU_RETURN_IF_ERROR(load_one((index_path.parent_path() / s).string(), store));
  for (const auto& [name, shard] : index["weight_map"].items()) {
    const StoredTensor* t = store->find(name);
    const std::string want = (index_path.parent_path() / shard.get<std::string>()).string();
    if (t == nullptr || t->file != want) {
      return Status::Error(fmt::format("{}: tensor '{}' is listed in {} but not found there",
                                       index_path.string(), name, shard.get<std::string>()));
    }
  }
  return Status::Ok();
}

}  // namespace

Status load_safetensors(const std::string& path, WeightStore* store) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "model.safetensors.index.json"))
      return load_index(p / "model.safetensors.index.json", store);
    if (fs::exists(p / "model.safetensors"))
      return load_one((p / "model.safetensors").string(), store);
    return Status::Error(fmt::format(
        "{}: no model.safetensors or model.safetensors.index.json in this folder", path));
  }
  if (p.extension() == ".json") return load_index(p, store);
  return load_one(path, store);
}

}  // namespace hanpu::model
