// TextStream against a brute-force reference: after every token, what has been given out is
// the longest prefix that ends on a character boundary and where no stop string could still
// start; at the first stop string exactly the text before it. Random texts over a small
// alphabet (so stop strings occur and straddle tokens) with 2- and 3-byte characters split
// across tokens.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "model/text_stream.h"

namespace hanpu::model {
namespace {

// Where a stop string first matches in `text` (npos: none).
size_t first_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t at = std::string::npos;
  for (const auto& s : stops) at = std::min(at, text.find(s));
  return at;
}

// What may have been given out of `text` (no stop string in it yet).
size_t safe_prefix(const std::string& text, const std::vector<std::string>& stops) {
  size_t len = complete_utf8_prefix(text);
  for (size_t i = 0; i < len; ++i) {
    for (const auto& s : stops) {
      if (text.size() - i < s.size() && s.compare(0, text.size() - i, text, i) == 0)
        len = std::min(len, i);
    }
  }
  return len;
}

TEST(TextStream, GivesOutWhatCannotBecomeAStopStringAndEndsAtTheFirst) {
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {"a", "b", "\n", "\xC3\xA9",
                                             "\xE4\xB8\xAD"};  // a b \n é 中
  int stopped_runs = 0;
  for (int run = 0; run < 2000; ++run) {
    std::string all;
    for (int i = 0; i < 40; ++i) all += alphabet[rng() % alphabet.size()];
    std::vector<std::string> stops;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) {
      std::string s;
      for (int len = 1 + static_cast<int>(rng() % 3); len > 0; --len)
        s += alphabet[rng() % 3 + (rng() % 4 == 0 ? 2 : 0)];
      stops.push_back(s);
    }
    std::string given;
    TextStream stream(stops, [&](std::string_view t) { given += t; });
    std::string fed;
    bool stopped = false;
    for (size_t at = 0;
         at < all.size() && !stopped;) {  // tokens of 1-4 bytes, splitting characters
      const size_t n = std::min<size_t>(1 + rng() % 4, all.size() - at);
      fed += all.substr(at, n);
      at += n;
      stopped = stream.append(all.substr(at - n, n));
      const size_t match = first_stop(fed, stops);
      ASSERT_EQ(stopped, match != std::string::npos) << fed;
      ASSERT_EQ(given, fed.substr(0, stopped ? match : safe_prefix(fed, stops))) << "run " << run;
    }
    stream.finish();
    if (stopped) {
      ++stopped_runs;
      EXPECT_EQ(given, fed.substr(0, first_stop(fed, stops)));
    } else {
      EXPECT_EQ(given, all);
    }
  }
  EXPECT_GT(stopped_runs, 500);  // the case is exercised
  EXPECT_LT(stopped_runs, 1900);
}

TEST(TextStream, WithoutStopStringsOnlyCharactersAreHeld) {
  std::string given;
  TextStream stream({}, [&](std::string_view t) { given += t; });
  EXPECT_FALSE(stream.append("ab\xE4"));
  EXPECT_EQ(given, "ab");
  EXPECT_FALSE(stream.append("\xB8\xAD!"));
  EXPECT_EQ(given, "ab\xE4\xB8\xAD!");
  EXPECT_FALSE(stream.append("\xC3"));
  stream.finish();  // a cut character still goes out at the end
  EXPECT_EQ(given, "ab\xE4\xB8\xAD!\xC3");
}

TEST(TextStream, StopStringsFromACommandLineUnescape) {
  EXPECT_EQ(unescape_stop_string(R"(\n\n)"), "\n\n");
  EXPECT_EQ(unescape_stop_string(R"(a\tb\\n\x\)"), "a\tb\\n\\x\\");
  EXPECT_EQ(unescape_stop_string("plain"), "plain");
}

}  // namespace
}  // namespace hanpu::model
