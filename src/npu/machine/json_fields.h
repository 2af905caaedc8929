// Reading a target file's fields: each helper checks type and range before converting and
// returns an error naming the file and the field (shared by the Ascend-class and the
// spatial target parsers).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"
#include "hanpu/status.h"
#include "npu/machine/builtin_targets.h"

namespace hanpu::npu::fields {

// A positive number at j[key], or an error naming the field.
inline Status positive(const nlohmann::json& j, const std::string& where, const char* key,
                       double* out) {
  if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() > 0)) {
    return Status::Error(fmt::format("{}: {}{} must be a positive number", where, key,
                                     j.contains(key) ? "" : " (missing)"));
  }
  *out = j[key].get<double>();
  return Status::Ok();
}

inline Status non_negative(const nlohmann::json& j, const std::string& where, const char* key,
                           double* out) {
  if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= 0)) {
    return Status::Error(fmt::format("{}: {} must be a number >= 0", where, key));
  }
  *out = j[key].get<double>();
  return Status::Ok();
}

// An integer in [lo, hi] at j[key], range-checked before any conversion (a double outside an
// integer type's range converts with undefined behaviour).
inline Status integer(const nlohmann::json& j, const std::string& where, const char* key,
                      int64_t lo, int64_t hi, int64_t* out) {
  double v = 0;
  HANPU_RETURN_IF_ERROR(non_negative(j, where, key, &v));
  if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi)) || v != std::floor(v)) {
    return Status::Error(fmt::format("{}: {} must be an integer in [{}, {}]", where, key, lo, hi));
  }
  *out = static_cast<int64_t>(v);
  return Status::Ok();
}

inline Status object(const nlohmann::json& j, const std::string& where, const char* key,
                     const nlohmann::json** out) {
  if (!j.contains(key) || !j[key].is_object())
    return Status::Error(fmt::format("{}: {} must be an object", where, key));
  *out = &j[key];
  return Status::Ok();
}

// name (a string) and the optional summary (a string when present).
inline Status name_and_summary(const nlohmann::json& j, const std::string& src, std::string* name,
                               std::string* summary) {
  if (!j.contains("name") || !j["name"].is_string())
    return Status::Error(fmt::format("{}: name must be a string", src));
  *name = j["name"].get<std::string>();
  // j.value() would throw on a non-string summary (found by the fuzzer): check the type first.
  if (j.contains("summary")) {
    if (!j["summary"].is_string())
      return Status::Error(fmt::format("{}: summary must be a string", src));
    *summary = j["summary"].get<std::string>();
  }
  return Status::Ok();
}

// Every figure needs its source: the "sources" object must name each of `required`; all its
// string entries are kept.
inline Status sources(const nlohmann::json& j, const std::string& src,
                      std::initializer_list<const char*> required,
                      std::map<std::string, std::string>* out) {
  const nlohmann::json* s = nullptr;
  HANPU_RETURN_IF_ERROR(object(j, src, "sources", &s));
  for (const char* key : required) {
    if (!s->contains(key) || !(*s)[key].is_string()) {
      return Status::Error(fmt::format(
          "{}: sources.{} is missing (every figure names where it came from)", src, key));
    }
  }
  for (const auto& [k, v] : s->items()) {
    if (v.is_string()) (*out)[k] = v.get<std::string>();
  }
  return Status::Ok();
}

// The text of a built-in target by name (source "built-in NAME"), or of a readable file.
inline Status target_text(const std::string& name_or_path, const char* what,
                          const std::vector<std::string>& builtins, std::string* text,
                          std::string* source) {
  for (const BuiltinTarget& t : builtin_targets()) {
    if (name_or_path == t.name) {
      *text = t.json;
      *source = std::string("built-in ") + t.name;
      return Status::Ok();
    }
  }
  const Status read = read_regular_file(name_or_path, kMaxJsonFileBytes, "the target file", text);
  if (!read.ok()) {
    return Status::Error(
        fmt::format("{} '{}' is neither a built-in one ({}) nor a readable JSON file ({})", what,
                    name_or_path, fmt::join(builtins, ", "), read.message()));
  }
  *source = name_or_path;
  return Status::Ok();
}

// The target's kind: "ascend" (the default when absent) or "spatial".
inline std::string kind_of(const nlohmann::json& j) {
  return j.is_object() && j.contains("kind") && j["kind"].is_string() ? j["kind"].get<std::string>()
                                                                      : "ascend";
}

// The built-in targets of one kind, by name.
inline std::vector<std::string> builtin_names(const std::string& kind) {
  std::vector<std::string> out;
  for (const BuiltinTarget& t : builtin_targets()) {
    if (kind_of(nlohmann::json::parse(t.json, nullptr, /*allow_exceptions=*/false)) == kind)
      out.emplace_back(t.name);
  }
  return out;
}

}  // namespace hanpu::npu::fields
