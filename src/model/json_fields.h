// Typed, range-checked reads of a Hugging Face JSON file's fields (config.json,
// generation_config.json): the first bad field becomes an error naming the file, the key
// and the value, instead of an exception from nlohmann's accessors or a silent wrap.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "hanpu/status.h"

namespace hanpu::model {

struct Reader {
  const nlohmann::json& j;
  const std::string& source;
  Status st;

  template <class T>
  T get(const char* key, T fallback, bool required) {
    if (!st.ok()) return fallback;
    if (!j.contains(key) || j[key].is_null()) {
      if (required) st = Status::Error(fmt::format("{}: missing \"{}\"", source, key));
      return fallback;
    }
    try {
      if constexpr (std::is_same_v<T, int>) {
        return checked_int(j[key], key);
      } else if constexpr (std::is_same_v<T, float>) {
        // double -> float out of range is undefined behaviour as well.
        const double d = j[key].get<double>();
        if (!(std::fabs(d) <= std::numeric_limits<float>::max())) {
          st = Status::Error(fmt::format("{}: \"{}\" is {}, out of float range", source, key,
                                         json_excerpt(j[key])));
          return fallback;
        }
        return static_cast<float>(d);
      } else if constexpr (std::is_same_v<T, std::vector<int>>) {
        if (!j[key].is_array()) {
          st = Status::Error(fmt::format("{}: \"{}\" is {}, not a list of integers", source, key,
                                         json_excerpt(j[key])));
          return fallback;
        }
        std::vector<int> out;
        for (const nlohmann::json& e : j[key]) out.push_back(checked_int(e, key));
        return out;
      } else {
        return j[key].get<T>();
      }
    } catch (const nlohmann::json::exception&) {
      st = Status::Error(fmt::format("{}: \"{}\" is {}, not the expected type", source, key,
                                     json_excerpt(j[key])));
      return fallback;
    }
  }

  // nlohmann's get<int>() static_casts a float such as 1e30, which is undefined behaviour, and
  // wraps a 64-bit integer silently: integers are range-checked as doubles first.
  int checked_int(const nlohmann::json& v, const char* key) {
    const double d = v.is_number() ? v.get<double>() : 0.5;
    if (!v.is_number() || d != std::floor(d) || d < std::numeric_limits<int>::min() ||
        d > std::numeric_limits<int>::max()) {
      st = Status::Error(fmt::format("{}: \"{}\" is {}, not an integer in the range of int", source,
                                     key, json_excerpt(v)));
      return 0;
    }
    return static_cast<int>(d);
  }
};

// Token ids from an "eos_token_id" value, which may be one integer or a list of them; ids
// outside [0, vocab) are skipped rather than wrapped into a real token.
inline void append_token_ids(const nlohmann::json& v, int vocab, std::vector<int>* out) {
  const auto add = [&](const nlohmann::json& e) {
    if (e.is_number_integer() && e.get<int64_t>() >= 0 && e.get<int64_t>() < vocab)
      out->push_back(static_cast<int>(e.get<int64_t>()));
  };
  add(v);
  if (v.is_array()) {
    for (const nlohmann::json& e : v) add(e);
  }
}

}  // namespace hanpu::model
