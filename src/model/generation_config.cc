// generation_config.json parsing (see generation_config.h).
#include "model/generation_config.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"
#include "model/json_fields.h"

namespace hanpu::model {

using nlohmann::json;

Status parse_generation_config(const std::string& json_text, const std::string& source, int vocab,
                               GenerationConfig* out) {
  json root;
  HANPU_RETURN_IF_ERROR(parse_json(json_text, source, &root));
  if (!root.is_object()) return Status::Error(fmt::format("{}: not a JSON object", source));
  GenerationConfig g;
  Reader r{root, source, Status::Ok()};
  g.do_sample = r.get<bool>("do_sample", g.do_sample, false);
  g.temperature = r.get<float>("temperature", g.temperature, false);
  g.top_k = r.get<int>("top_k", g.top_k, false);
  g.top_p = r.get<float>("top_p", g.top_p, false);
  g.min_p = r.get<float>("min_p", g.min_p, false);
  g.repetition_penalty = r.get<float>("repetition_penalty", g.repetition_penalty, false);
  HANPU_RETURN_IF_ERROR(r.st);
  if (root.contains("eos_token_id"))
    append_token_ids(root["eos_token_id"], vocab, &g.eos_token_ids);
  const auto bad = [&](const char* key, const char* range) {
    return Status::Error(
        fmt::format("{}: \"{}\" is {}, {}", source, key, json_excerpt(root[key]), range));
  };
  if (!(g.temperature >= 0.0f)) return bad("temperature", "not >= 0");
  if (g.top_k < 0) return bad("top_k", "not >= 0");
  if (!(g.top_p > 0.0f && g.top_p <= 1.0f)) return bad("top_p", "not in (0, 1]");
  if (!(g.min_p >= 0.0f && g.min_p <= 1.0f)) return bad("min_p", "not in [0, 1]");
  if (!(g.repetition_penalty > 0.0f)) return bad("repetition_penalty", "not > 0");
  *out = std::move(g);
  return Status::Ok();
}

Status load_generation_config(const std::string& dir, int vocab,
                              std::optional<GenerationConfig>* out) {
  out->reset();
  const std::filesystem::path path = std::filesystem::path(dir) / "generation_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return Status::Ok();
  std::string text;
  HANPU_RETURN_IF_ERROR(
      read_regular_file(path.string(), kMaxJsonFileBytes, "generation_config.json", &text));
  GenerationConfig g;
  HANPU_RETURN_IF_ERROR(parse_generation_config(text, path.string(), vocab, &g));
  *out = std::move(g);
  return Status::Ok();
}

}  // namespace hanpu::model
