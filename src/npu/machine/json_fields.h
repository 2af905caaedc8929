// Reading a target file's fields: each helper checks type and range before converting and
// returns an error naming the file and the field (shared by the Ascend-class and the
// spatial target parsers).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hanpu/status.h"

namespace hanpu::npu::fields {

// A positive number at j[key], or an error naming the field.
inline Status positive(const nlohmann::json& j, const std::string& where, const char* key, double* out) {
  if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() > 0)) {
    return Status::Error(fmt::format("{}: {}{} must be a positive number", where, key, j.contains(key) ? "" : " (missing)"));
  }
  *out = j[key].get<double>();
  return Status::Ok();
}

inline Status non_negative(const nlohmann::json& j, const std::string& where, const char* key, double* out) {
  if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= 0)) {
    return Status::Error(fmt::format("{}: {} must be a number >= 0", where, key));
  }
  *out = j[key].get<double>();
  return Status::Ok();
}

// An integer in [lo, hi] at j[key], range-checked before any conversion (a double outside an
// integer type's range converts with undefined behaviour).
inline Status integer(const nlohmann::json& j, const std::string& where, const char* key, int64_t lo, int64_t hi,
               int64_t* out) {
  double v = 0;
  HANPU_RETURN_IF_ERROR(non_negative(j, where, key, &v));
  if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi)) || v != std::floor(v)) {
    return Status::Error(fmt::format("{}: {} must be an integer in [{}, {}]", where, key, lo, hi));
  }
  *out = static_cast<int64_t>(v);
  return Status::Ok();
}

inline Status object(const nlohmann::json& j, const std::string& where, const char* key, const nlohmann::json** out) {
  if (!j.contains(key) || !j[key].is_object()) return Status::Error(fmt::format("{}: {} must be an object", where, key));
  *out = &j[key];
  return Status::Ok();
}


// The target's kind: "ascend" (the default when absent) or "spatial".
inline std::string kind_of(const nlohmann::json& j) {
  return j.is_object() && j.contains("kind") && j["kind"].is_string() ? j["kind"].get<std::string>() : "ascend";
}

}  // namespace hanpu::npu::fields
