// The tokenizer gives the ids the `tokenizers` library gave for the fixture prompts, decodes
// them back to the text, and refuses malformed tokenizer files and invalid UTF-8 by name.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <functional>
#include <regex>
#include <sstream>

#include "fixtures.h"
#include "model/tokenizer.h"

namespace hanpu::model {
namespace {

class TokenizerFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(TokenizerFixture, IdsMatchTheTokenizersLibrary) {
  const std::string dir = std::string(HANPU_FIXTURES_DIR) + "/models/" + GetParam();
  Tokenizer tok;
  const Status st = Tokenizer::load(dir + "/tokenizer.json", &tok);
  ASSERT_TRUE(st.ok()) << st.message();
  const auto ref = nlohmann::json::parse(testing::read_text(dir + "/reference.json"));
  ASSERT_GE(ref["prompts"].size(), 3u);
  for (const auto& p : ref["prompts"]) {
    std::vector<int> ids;
    ASSERT_TRUE(tok.encode(p["text"].get<std::string>(), &ids).ok());
    EXPECT_EQ(ids, p["ids"].get<std::vector<int>>()) << p["text"];
    EXPECT_EQ(tok.decode(ids), p["text"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TokenizerFixture, ::testing::Values("qwen35-tiny", "qwen3next-tiny"));

Tokenizer fixture_tokenizer() {
  Tokenizer tok;
  EXPECT_TRUE(Tokenizer::load(std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny/tokenizer.json", &tok).ok());
  return tok;
}

TEST(Tokenizer, SpecialTokensInTextBecomeTheirIds) {
  const Tokenizer tok = fixture_tokenizer();
  std::vector<int> ids;
  ASSERT_TRUE(tok.encode("<|im_start|>user\nhi<|im_end|>", &ids).ok());
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), *tok.token_id("<|im_start|>"));
  EXPECT_EQ(ids.back(), *tok.token_id("<|im_end|>"));
  EXPECT_EQ(tok.decode(ids), "<|im_start|>user\nhi<|im_end|>");
}

TEST(Tokenizer, NfcNormalisesDecomposedText) {
  const Tokenizer tok = fixture_tokenizer();
  std::vector<int> composed, decomposed;
  ASSERT_TRUE(tok.encode("caf\xC3\xA9", &composed).ok());     // U+00E9
  ASSERT_TRUE(tok.encode("cafe\xCC\x81", &decomposed).ok());  // e + U+0301
  EXPECT_EQ(composed, decomposed);
}

TEST(Tokenizer, EveryByteRoundTrips) {
  const Tokenizer tok = fixture_tokenizer();
  std::string all;
  for (int b = 1; b < 128; ++b) all.push_back(static_cast<char>(b));
  std::vector<int> ids;
  ASSERT_TRUE(tok.encode(all, &ids).ok());
  EXPECT_EQ(tok.decode(ids), all);
}

TEST(Tokenizer, InvalidUtf8IsRefusedWithItsOffset) {
  const Tokenizer tok = fixture_tokenizer();
  std::vector<int> ids;
  const Status st = tok.encode(std::string("ab\xFF" "cd"), &ids);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("byte 2"), std::string::npos) << st.message();
  EXPECT_TRUE(ids.empty());
}

TEST(Tokenizer, MalformedFilesAreRefusedByName) {
  const std::string good = testing::read_text(std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny/tokenizer.json");
  auto j = nlohmann::json::parse(good);
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"not BPE", [](auto& t) { t["model"]["type"] = "WordPiece"; }, "BPE only"},
      {"merge of unknown token", [](auto& t) { t["model"]["merges"].push_back({"zzz", "qqq"}); }, "missing from the vocab"},
      {"bad regex", [](auto& t) { t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(["; }, "does not compile"},
      {"other normaliser", [](auto& t) { t["normalizer"] = {{"type", "Lowercase"}}; }, "normalizer"},
      {"missing byte token", [](auto& t) { t["model"]["vocab"].erase("!"); }, "missing from the vocab|lacks the byte-level"},
      {"negative id", [](auto& t) { t["model"]["vocab"]["!"] = -3; }, "vocab id"},
      {"no model", [](auto& t) { t.erase("model"); }, "no \"model\""},
  };
  for (const Case& c : cases) {
    auto edited = j;
    c.edit(edited);
    Tokenizer tok;
    const Status st = Tokenizer::parse(edited.dump(), "tok.json", &tok);
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_TRUE(std::regex_search(st.message(), std::regex(c.expect))) << c.what << ": " << st.message();
  }
  Tokenizer tok;
  const Status st = Tokenizer::parse(good.substr(0, good.size() / 2), "tok.json", &tok);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("malformed JSON at byte"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace hanpu::model
