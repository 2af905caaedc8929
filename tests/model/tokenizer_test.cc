// The tokenizer gives the ids the `tokenizers` library gave for the fixture prompts, decodes
// them back to the text, merges as a plain rescan-every-pair BPE does on random merge tables
// and long words, and refuses malformed tokenizer files and invalid UTF-8 by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <functional>
#include <map>
#include <random>
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

INSTANTIATE_TEST_SUITE_P(Models, TokenizerFixture,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny"));

Tokenizer fixture_tokenizer() {
  Tokenizer tok;
  EXPECT_TRUE(
      Tokenizer::load(std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny/tokenizer.json", &tok)
          .ok());
  return tok;
}

nlohmann::json fixture_json() {
  return nlohmann::json::parse(
      testing::read_text(std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny/tokenizer.json"));
}

// The fixture's vocab by id as the parts of a GGUF-style tokenizer: no merges, nothing added,
// Qwen2's split regex.
Tokenizer::Parts fixture_vocab_parts() {
  Tokenizer::Parts parts;
  const nlohmann::json j =
      fixture_json();  // alive for the loop (a temporary's items() would not be)
  for (const auto& [text, id] : j["model"]["vocab"].items()) {
    if (parts.tokens.size() <= id.get<size_t>()) parts.tokens.resize(id.get<size_t>() + 1);
    parts.tokens[id.get<size_t>()] = text;
  }
  parts.added.assign(parts.tokens.size(), false);
  parts.pattern = Tokenizer::pattern_for_pre("qwen2");
  return parts;
}

// llama.cpp's "kimi-k2" pre-tokenizer: the pieces of each text as Kimi's tiktoken pattern
// splits it (scripts/make_kimi_k2_splits.py: Han runs apart from letters, cased words split at
// a lower-to-upper change, digits in threes), and the ids of the whole text round-trip.
TEST(Tokenizer, KimiK2SplitsAsKimisTokenizer) {
  const auto cases = nlohmann::json::parse(
      testing::read_text(std::string(HANPU_FIXTURES_DIR) + "/tokenizer/kimi_k2_splits.json"));
  ASSERT_GE(cases.size(), 10u);
  Tokenizer::Parts parts = fixture_vocab_parts();
  parts.pattern = Tokenizer::pattern_for_pre("kimi-k2");
  ASSERT_FALSE(parts.pattern.empty());
  EXPECT_EQ(Tokenizer::pre_for_pattern(parts.pattern), "kimi-k2");
  Tokenizer tok;
  const Status st = Tokenizer::build(std::move(parts), "parts", &tok);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const auto& c : cases) {
    const std::string text = c["text"];
    std::vector<std::string> pieces;
    ASSERT_TRUE(tok.split(text, &pieces).ok()) << text;
    EXPECT_EQ(pieces, c["pieces"].get<std::vector<std::string>>()) << nlohmann::json(pieces).dump();
    std::vector<int> ids;
    ASSERT_TRUE(tok.encode(text, &ids).ok()) << text;
    EXPECT_EQ(tok.decode(ids), text);
  }
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

// Every ASCII byte, NUL included (the NFC step once stopped at a NUL and dropped the rest).
TEST(Tokenizer, EveryByteRoundTrips) {
  const Tokenizer tok = fixture_tokenizer();
  std::string all;
  for (int b = 0; b < 128; ++b) all.push_back(static_cast<char>(b));
  all += all;
  std::vector<int> ids;
  ASSERT_TRUE(tok.encode(all, &ids).ok());
  EXPECT_EQ(tok.decode(ids), all);
}

// A GGUF's control tokens may hold any bytes; one that is part of a character (here the
// second byte of U+00E9) must not cut that character, and text around whole ones still
// splits at them.
TEST(Tokenizer, AddedTokensMatchWholeCharactersOnly) {
  Tokenizer::Parts parts = fixture_vocab_parts();
  parts.added[*fixture_tokenizer().token_id("<|im_start|>")] = true;
  const int tail_byte = static_cast<int>(parts.tokens.size());
  parts.tokens.push_back("\xA9");
  parts.added.push_back(true);
  Tokenizer tok;
  const Status st = Tokenizer::build(std::move(parts), "parts", &tok);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<int> ids;
  ASSERT_TRUE(tok.encode("caf\xC3\xA9<|im_start|>x", &ids).ok());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tail_byte), 0);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *tok.token_id("<|im_start|>")), 1);
  EXPECT_EQ(tok.decode(ids), "caf\xC3\xA9<|im_start|>x");
}

// The fixture's tokenizer.json with its merges replaced by `merges` (in rank order) and the
// tokens they make added to the vocab.
nlohmann::json with_merges(const std::vector<std::pair<std::string, std::string>>& merges) {
  auto j = fixture_json();
  int next_id = 0;
  for (const auto& [tok, id] : j["model"]["vocab"].items())
    next_id = std::max(next_id, id.get<int>() + 1);
  for (const auto& a : j["added_tokens"]) next_id = std::max(next_id, a["id"].get<int>() + 1);
  j["model"]["merges"] = nlohmann::json::array();
  for (const auto& [a, b] : merges) {
    j["model"]["merges"].push_back({a, b});
    if (!j["model"]["vocab"].contains(a + b)) j["model"]["vocab"][a + b] = next_id++;
  }
  return j;
}

// BPE as written down: find the lowest-ranked adjacent pair (leftmost among equals), merge
// it, rescan. The tokenizer's heap must give the same tokens.
std::vector<int> rescanning_bpe(const std::string& word,
                                const std::vector<std::pair<std::string, std::string>>& merges,
                                const nlohmann::json& vocab) {
  std::map<std::pair<std::string, std::string>, int> rank;
  for (size_t r = 0; r < merges.size(); ++r)
    rank.emplace(merges[r], static_cast<int>(r));  // first rank wins
  std::vector<std::string> sym;
  for (char c : word) sym.emplace_back(1, c);
  for (;;) {
    int best = -1, best_rank = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      const auto it = rank.find({sym[i], sym[i + 1]});
      if (it != rank.end() && (best < 0 || it->second < best_rank)) {
        best = static_cast<int>(i);
        best_rank = it->second;
      }
    }
    if (best < 0) break;
    sym[best] += sym[best + 1];
    sym.erase(sym.begin() + best + 1);
  }
  std::vector<int> ids;
  for (const auto& s : sym) ids.push_back(vocab.at(s).get<int>());
  return ids;
}

TEST(Tokenizer, MergesAsARescanningBpeOnRandomTables) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 40; ++trial) {
    // Merges over the letters a, b, c (one piece under Qwen's split regex), random pairs of
    // the tokens made so far; some pairs repeat a token another merge already made.
    std::vector<std::string> made = {"a", "b", "c"};
    std::vector<std::pair<std::string, std::string>> merges;
    const int n_merges = 1 + static_cast<int>(rng() % 60);
    for (int m = 0; m < n_merges; ++m) {
      const std::string x = made[rng() % made.size()], y = made[rng() % made.size()];
      if (x.size() + y.size() > 12) continue;
      merges.emplace_back(x, y);
      made.push_back(x + y);
    }
    const nlohmann::json j = with_merges(merges);
    Tokenizer tok;
    const Status st = Tokenizer::parse(j.dump(), "random.json", &tok);
    ASSERT_TRUE(st.ok()) << st.message();
    for (int w = 0; w < 20; ++w) {
      std::string word(1 + rng() % 300, 'a');
      for (char& c : word) c = static_cast<char>('a' + rng() % 3);
      std::vector<int> ids = {-7};  // encode appends
      ASSERT_TRUE(tok.encode(word, &ids).ok());
      ids.erase(ids.begin());
      ASSERT_EQ(ids, rescanning_bpe(word, merges, j["model"]["vocab"]))
          << "word " << word << " trial " << trial;
      EXPECT_EQ(tok.decode(ids), word);
    }
  }
}

// One word of 100001 letters (no split point in it) with merges doubling a run of a's up to
// 1024: 97 tokens of 1024 a's, then 512 + 128 + 32 + 1 (100001 = 97 * 1024 + 673).
TEST(Tokenizer, ALongUnbrokenWordMergesWhole) {
  std::vector<std::pair<std::string, std::string>> merges;
  for (int len = 1; len < 1024; len *= 2)
    merges.emplace_back(std::string(len, 'a'), std::string(len, 'a'));
  const nlohmann::json j = with_merges(merges);
  Tokenizer tok;
  ASSERT_TRUE(Tokenizer::parse(j.dump(), "doubling.json", &tok).ok());
  const std::string word(100001, 'a');
  std::vector<int> ids;
  ASSERT_TRUE(tok.encode(word, &ids).ok());
  std::vector<int> expect(97, *tok.token_id(std::string(1024, 'a')));
  for (int len : {512, 128, 32, 1}) expect.push_back(*tok.token_id(std::string(len, 'a')));
  EXPECT_EQ(ids, expect);
  EXPECT_EQ(tok.decode(ids), word);
}

// A GGUF's merges may hold any bytes; one missing from the vocab is an error naming it (its
// invalid UTF-8 shown as U+FFFD), not an exception from formatting the message.
TEST(Tokenizer, AMergeOfStrayBytesIsAnErrorNamingIt) {
  Tokenizer::Parts parts = fixture_vocab_parts();
  parts.merges = {{"a", "t"}, {"\xFF\xFE", "t"}};
  Tokenizer tok;
  Status st;
  EXPECT_NO_THROW(st = Tokenizer::build(std::move(parts), "model.gguf", &tok));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(
      st.message().find(
          "merge #1 (\"\xEF\xBF\xBD\xEF\xBF\xBD\" + \"t\") uses a token missing from the vocab"),
      std::string::npos)
      << st.message();
}

TEST(Tokenizer, InvalidUtf8IsRefusedWithItsOffset) {
  const Tokenizer tok = fixture_tokenizer();
  std::vector<int> ids;
  const Status st = tok.encode(std::string("ab\xFF"
                                           "cd"),
                               &ids);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("byte 2"), std::string::npos) << st.message();
  EXPECT_TRUE(ids.empty());
}

// A hostile tokenizer.json whose split regex backtracks exponentially: the match stops at
// PCRE2's step limit with an error naming it, instead of running for hours. Qwen's own pattern
// still splits long runs of whitespace, digits and letters (the largest real needs, about one
// step per character of a whitespace run).
TEST(Tokenizer, ABacktrackingRegexFailsAtItsLimit) {
  auto j = fixture_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a|aa)+$|\\s+";
  Tokenizer tok;
  ASSERT_TRUE(Tokenizer::parse(j.dump(), "evil.json", &tok).ok());
  std::vector<int> ids;
  const Status st = tok.encode(std::string(60, 'a') + "!", &ids);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(
      st.message().find(
          "regex failed at byte 0 of the normalised text: match limit exceeded (a match may take "
          "1048576 steps"),
      std::string::npos)
      << st.message();
  const Tokenizer qwen = fixture_tokenizer();
  for (const std::string& text :
       {std::string(300000, ' ') + "x", std::string(300000, '\n'), std::string(300000, '7'),
        std::string(300000, 'a'), std::string(100000, ' ') + std::string(100000, '\n') + "y"}) {
    EXPECT_TRUE(qwen.encode(text, &ids).ok()) << text.size();
  }
}

TEST(Tokenizer, MalformedFilesAreRefusedByName) {
  const std::string good =
      testing::read_text(std::string(HANPU_FIXTURES_DIR) + "/models/qwen35-tiny/tokenizer.json");
  auto j = nlohmann::json::parse(good);
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"not BPE", [](auto& t) { t["model"]["type"] = "WordPiece"; }, "BPE only"},
      {"merge of unknown token",
       [](auto& t) {
         t["model"]["merges"].push_back({"zzz", "qqq"});
       },
       "missing from the vocab"},
      {"bad regex",
       [](auto& t) { t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(["; },
       "does not compile"},
      {"other normaliser",
       [](auto& t) {
         t["normalizer"] = {{"type", "Lowercase"}};
       },
       "normalizer"},
      {"missing byte token", [](auto& t) { t["model"]["vocab"].erase("!"); },
       "missing from the vocab|lacks the byte-level"},
      {"negative id", [](auto& t) { t["model"]["vocab"]["!"] = -3; }, "vocab id"},
      {"no model", [](auto& t) { t.erase("model"); }, "no \"model\""},
  };
  for (const Case& c : cases) {
    auto edited = j;
    c.edit(edited);
    Tokenizer tok;
    const Status st = Tokenizer::parse(edited.dump(), "tok.json", &tok);
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_TRUE(std::regex_search(st.message(), std::regex(c.expect)))
        << c.what << ": " << st.message();
  }
  Tokenizer tok;
  const Status st = Tokenizer::parse(good.substr(0, good.size() / 2), "tok.json", &tok);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("malformed JSON at byte"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace hanpu::model
