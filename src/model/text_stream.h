// Generated text on its way to the caller: given out as soon as it is complete UTF-8 and can
// no longer turn into a stop string, and ended at the first stop string (which is not given
// out: vLLM's `stop` with include_stop_str_in_output false, llama.cpp's reverse prompts).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hanpu::model {

class TextStream {
 public:
  // `out` may be null (the text is only watched for stop strings).
  TextStream(std::vector<std::string> stops, std::function<void(std::string_view)> out);
  // Adds a token's bytes. True when the text now holds a stop string: what precedes it has
  // been given out, and the rest is dropped.
  bool append(std::string_view bytes);
  // Gives out what is still held (a partial character or a stop string's possible start).
  void finish();

 private:
  std::vector<std::string> stops_;
  std::function<void(std::string_view)> out_;
  std::string held_;
  bool stopped_ = false;
};

// A stop string as typed on a command line: \n, \t and \\ become a newline, a tab and a
// backslash (other backslashes stay), so a shell can pass "\n\n".
std::string unescape_stop_string(std::string_view s);

// Length of the longest prefix of `s` that ends on a UTF-8 character boundary.
size_t complete_utf8_prefix(std::string_view s);

}  // namespace hanpu::model
