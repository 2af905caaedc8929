// Parsing an untrusted JSON document: nesting bounded before the parser sees it, every
// parser exception turned into an error naming the file and byte, and values shown in
// messages only as a short excerpt.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "hanpu/status.h"

namespace hanpu {

// Refuses `text` if arrays and objects nest deeper than `max_depth` (strings skipped), naming
// the byte where the limit is passed.
Status check_json_depth(std::string_view text, const std::string& source, int max_depth);

// check_json_depth with kMaxJsonDepth, then nlohmann's parse; `out` is untouched on error.
Status parse_json(std::string_view text, const std::string& source, nlohmann::json* out);

// `v` as JSON text cut to `max_chars` (with "..." when cut), for error messages.
std::string json_excerpt(const nlohmann::json& v, size_t max_chars = 80);

}  // namespace hanpu
