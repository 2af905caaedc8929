// Bounded JSON parsing (see json_limits.h).
#include "base/json_limits.h"

#include <fmt/format.h>

#include "base/input_limits.h"

namespace hanpu {

// A scan of the brackets outside strings, by hand: nlohmann's parser callback sees the depth
// only after it has allocated the level, and its SAX interface gives no byte offset to report.
Status check_json_depth(std::string_view text, const std::string& source, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\')
        ++i;  // the escaped character cannot end the string
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_depth) {
        return Status::Error(
            fmt::format("{}: JSON nests deeper than {} levels at byte {}", source, max_depth, i));
      }
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return Status::Ok();
}

Status parse_json(std::string_view text, const std::string& source, nlohmann::json* out) {
  HANPU_RETURN_IF_ERROR(check_json_depth(text, source, kMaxJsonDepth));
  try {
    *out = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return Status::Error(
        fmt::format("{}: malformed JSON at byte {}: {}", source, e.byte, e.what()));
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large for any type
    return Status::Error(fmt::format("{}: malformed JSON: {}", source, e.what()));
  }
  return Status::Ok();
}

std::string json_excerpt(const nlohmann::json& v, size_t max_chars) {
  // Replace invalid UTF-8 rather than throw from inside an error path.
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

}  // namespace hanpu
