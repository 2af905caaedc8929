// Generated text on its way out (see text_stream.h).
#include "model/text_stream.h"

#include <algorithm>

namespace hanpu::model {

size_t complete_utf8_prefix(std::string_view s) {
  size_t i = s.size();
  for (size_t back = 0; back < 4 && i > 0; ++back) {
    const unsigned char ch = static_cast<unsigned char>(s[i - 1]);
    if ((ch & 0xC0) == 0x80) {  // continuation byte: keep looking for the lead byte
      --i;
      continue;
    }
    const size_t need = ch < 0x80           ? 1
                        : (ch >> 5) == 0x6  ? 2
                        : (ch >> 4) == 0xE  ? 3
                        : (ch >> 3) == 0x1E ? 4
                                            : 1;
    return (s.size() - (i - 1) >= need) ? s.size() : i - 1;
  }
  return s.size();
}

std::string unescape_stop_string(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    if (s[i] == '\\' && (next == 'n' || next == 't' || next == '\\')) {
      out += next == 'n' ? '\n' : next == 't' ? '\t' : '\\';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

TextStream::TextStream(std::vector<std::string> stops, std::function<void(std::string_view)> out)
    : stops_(std::move(stops)), out_(std::move(out)) {}

bool TextStream::append(std::string_view bytes) {
  if (stopped_) return true;
  held_ += bytes;
  // Text given out never holds the start of a stop string that could still complete, so a
  // match starts inside what is held: the earliest one ends the text.
  size_t match = std::string::npos;
  for (const std::string& s : stops_) match = std::min(match, held_.find(s));
  if (match != std::string::npos) {
    if (out_ && match > 0) out_(std::string_view(held_).substr(0, match));
    held_.clear();
    stopped_ = true;
    return true;
  }
  // Hold back the longest end of the text that begins a stop string, and a partial character.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  const size_t give = std::min(complete_utf8_prefix(held_), held_.size() - keep);
  if (give > 0) {
    if (out_) out_(std::string_view(held_).substr(0, give));
    held_.erase(0, give);
  }
  return false;
}

void TextStream::finish() {
  if (out_ && !held_.empty()) out_(held_);
  held_.clear();
}

}  // namespace hanpu::model
