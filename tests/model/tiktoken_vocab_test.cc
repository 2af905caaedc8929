// Kimi's tiktoken.model folders (model/tiktoken_vocab.h): the fixture folder
// (scripts/make_kimi_tiktoken.py: ranks trained by tiktoken's own trainer) encodes every
// reference text to the ids the `tiktoken` package gives it with Kimi's split pattern and
// every special token allowed, and decodes them back; broken files are refused naming the
// line and what is wrong; an engine reads a folder's tiktoken.model where it has no
// tokenizer.json, and hanpu quantize writes it as llama.cpp's kimi-k2 vocabulary.
#include "model/tiktoken_vocab.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fixtures.h"
#include "hanpu/engine.h"
#include "hanpu/quantize.h"
#include "model/gguf_tokenizer.h"
#include "model/hf_gguf_metadata.h"
#include "model/model_config.h"

namespace hanpu::model {
namespace {

std::string tiktoken_dir() { return std::string(HANPU_FIXTURES_DIR) + "/tokenizer/kimi-tiktoken"; }

// tiktoken.model lines of the 256 single bytes at ranks 0-255 (each byte's base64).
std::string single_byte_lines() {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string lines;
  for (int b = 0; b < 256; ++b) {
    lines += std::string(1, kAlphabet[b >> 2]) + kAlphabet[(b & 3) << 4] +
             "== " + std::to_string(b) + "\n";
  }
  return lines;
}

TEST(TiktokenVocab, EncodesAsTiktokenDoes) {
  const auto ref = nlohmann::json::parse(testing::read_text(tiktoken_dir() + "/reference.json"));
  const int n = ref["tokens"];
  Tokenizer::Parts parts;
  Status st = tiktoken_parts(tiktoken_dir(), &parts);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(parts.pattern, Tokenizer::pattern_for_pre("kimi-k2"));
  Tokenizer tok;
  st = Tokenizer::build(std::move(parts), "fixture", &tok);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(tok.vocab_size(), n + kTiktokenReservedSpecials);
  EXPECT_EQ(tok.token_id("<|im_end|>"), n + 2);  // named by tokenizer_config.json
  EXPECT_EQ(tok.token_id("<|reserved_token_" + std::to_string(n + 5) + "|>"), n + 5);
  ASSERT_GE(ref["cases"].size(), 10u);
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    std::vector<int> ids;
    ASSERT_TRUE(tok.encode(text, &ids).ok()) << text;
    EXPECT_EQ(ids, c["ids"].get<std::vector<int>>()) << text;
    EXPECT_EQ(tok.decode(ids), text);
  }
}

TEST(TiktokenVocab, BrokenFilesAreRefusedByLine) {
  // The 256 single bytes at ranks 0-255 (base64 of each), then what a case adds.
  const std::string bytes = single_byte_lines();
  struct Case {
    std::string model, config, error;
  };
  const std::vector<Case> cases = {
      {bytes + "QUI= 256\n", "", ""},  // "AB": fine
      {bytes + "QU@= 256\n", "", "line 257: the token is not base64"},
      {bytes + "QUI 256\n", "", "line 257: the token is not base64"},
      {bytes + "QUI=\n", "", "line 257: the rank is not a whole number"},
      {bytes + "QUI= -1\n", "", "line 257: the rank is not a whole number"},
      {bytes + "QUI= 99999999999\n", "", "line 257: the rank is not a whole number"},
      {bytes + "QUI= 300\n", "", "line 257: rank 300 is past the file's 257 tokens"},
      {bytes + "QUI= 7\n", "", "line 257: rank 7 is also on line 8"},
      {bytes + "QQ== 256\n", "", "line 257: the token of rank 256 repeats rank 65's bytes"},
      {bytes + std::string(400, 'Q') + " 256\n", "",
       "line 257: a token of 300 bytes (at most 256)"},
      {"", "", "no tokens"},
      {bytes, R"({"added_tokens_decoder": {"12": {"content": "x"}}})",
       "id \"12\" is not one of the special ids 256-511"},
      {bytes, R"({"added_tokens_decoder": {"256": {"content": ""}}})", "token 256 has no content"},
      {bytes, R"({"added_tokens_decoder": [1]})", "added_tokens_decoder is not an object"},
      {bytes, "{", "tokenizer_config.json"},
  };
  for (const Case& c : cases) {
    Tokenizer::Parts parts;
    const Status st = tiktoken_parts_from_text(c.model, c.config, "dir", &parts);
    if (c.error.empty()) {
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_EQ(parts.merges.size(), 1u);
      EXPECT_EQ(parts.merges[0], (std::pair<std::string, std::string>{"A", "B"}));
      continue;
    }
    ASSERT_FALSE(st.ok()) << c.error;
    EXPECT_NE(st.message().find(c.error), std::string::npos) << st.message();
  }
}

// Every split of a token into two tokens is a merge at its rank, in rank order; among one
// token's splits, by the parts' ranks; a token no split makes has no merge.
TEST(TiktokenVocab, EverySplitIntoTwoTokensIsAMerge) {
  const std::string bytes = single_byte_lines();
  // AB 256, BC 257, ABC 258, XYZ 259 (X, Y, Z alone only).
  Tokenizer::Parts parts;
  const Status st = tiktoken_parts_from_text(bytes + "QUI= 256\nQkM= 257\nQUJD 258\nWFla 259\n", "",
                                             "dir", &parts);
  ASSERT_TRUE(st.ok()) << st.message();
  using Merge = std::pair<std::string, std::string>;
  EXPECT_EQ(parts.merges, (std::vector<Merge>{{"A", "B"}, {"B", "C"}, {"A", "BC"}, {"AB", "C"}}));
  EXPECT_EQ(parts.tokens.size(), 260u + kTiktokenReservedSpecials);
}

// The Kimi fixture's weights with the tiktoken folder in place of its tokenizer.json.
std::string kimi_tiktoken_folder(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path d = fs::path(testing::temp_file("tiktoken_engine", "model")).parent_path() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json"})
    fs::copy_file(testing::fixture_dir("kimi-linear-tiny") + "/" + f, d / f);
  for (const char* f : {"tiktoken.model", "tokenizer_config.json"})
    fs::copy_file(tiktoken_dir() + "/" + f, d / f);
  return d.string();
}

TEST(TiktokenVocab, AnEngineReadsAFoldersTiktokenModel) {
  // The engine reads tiktoken.model, whose 856 ids the tiny model's vocabulary cannot hold.
  const std::string d = kimi_tiktoken_folder("kimi");
  std::unique_ptr<Engine> engine;
  const Status st = Engine::load(d, &engine);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("tiktoken.model: the tokenizer has 856 tokens"), std::string::npos)
      << st.message();
}

// hanpu quantize from such a folder writes tiktoken.model's vocabulary as llama.cpp's
// kimi-linear GGUF has it (conversion/kimi_linear.py): the byte-level tokens by id, the
// specials control, ids past them up to vocab_size unused "[PADn]", pre "kimi-k2",
// tokenizer_config.json's BOS and EOS. The tokenizer read back from those keys gives the
// tiktoken package's ids for every reference text.
TEST(TiktokenVocab, QuantizeWritesItsVocabularyAsTheConverterDoes) {
  const std::string d = kimi_tiktoken_folder("kimi-quantize");
  // The tiny model's 384 ids cannot hold the fixture's 856: refused naming both, via the
  // tiktoken reader (so quantize reads it), and nothing is written.
  const std::string out = testing::temp_file("tiktoken_quantize", "kimi.gguf");
  std::filesystem::remove(out);
  const Status refused = quantize_model(d, out, "Q8_0");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("tiktoken.model: 856 token ids, more than config.json's "
                                   "vocab_size 384"),
            std::string::npos)
      << refused.message();
  EXPECT_FALSE(std::filesystem::exists(out));

  // The metadata of the same folder for a model with room for them.
  ModelConfig c;
  ASSERT_TRUE(load_model_config(d + "/config.json", &c).ok());
  c.vocab = 1000;
  GgufMetadata meta;
  const Status st = hf_gguf_metadata(d, c, &meta);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(*gguf_string(meta, "tokenizer.ggml.pre"), "kimi-k2");
  const auto ref = nlohmann::json::parse(testing::read_text(tiktoken_dir() + "/reference.json"));
  const int n = ref["tokens"];
  const auto& types = std::get<std::vector<GgufValue>>(meta.at("tokenizer.ggml.token_type").v);
  const auto& tokens = std::get<std::vector<GgufValue>>(meta.at("tokenizer.ggml.tokens").v);
  ASSERT_EQ(types.size(), 1000u);
  ASSERT_EQ(tokens.size(), 1000u);
  const auto type_of = [&](int id) { return std::get<int64_t>(types[id].v); };
  EXPECT_EQ(type_of(0), 1);  // normal
  EXPECT_EQ(type_of(n - 1), 1);
  EXPECT_EQ(type_of(n), 3);  // [BOS], control
  EXPECT_EQ(type_of(n + kTiktokenReservedSpecials - 1), 3);
  EXPECT_EQ(type_of(n + kTiktokenReservedSpecials), 5);  // unused
  EXPECT_EQ(std::get<std::string>(tokens[n].v), "[BOS]");
  EXPECT_EQ(std::get<std::string>(tokens[999].v), "[PAD999]");
  EXPECT_EQ(std::get<uint64_t>(meta.at("tokenizer.ggml.bos_token_id").v), static_cast<uint64_t>(n));
  EXPECT_EQ(std::get<uint64_t>(meta.at("tokenizer.ggml.eos_token_id").v),
            static_cast<uint64_t>(n + 1));
  Tokenizer tok;
  const Status read = gguf_tokenizer(meta, "metadata", &tok);
  ASSERT_TRUE(read.ok()) << read.message();
  for (const auto& t : ref["cases"]) {
    const std::string text = t["text"];
    std::vector<int> ids;
    ASSERT_TRUE(tok.encode(text, &ids).ok()) << text;
    EXPECT_EQ(ids, t["ids"].get<std::vector<int>>()) << text;
  }
  // Neither file: refused naming the folder.
  std::filesystem::remove(d + "/tiktoken.model");
  const Status none = hf_gguf_metadata(d, c, &meta);
  EXPECT_NE(none.message().find("no tokenizer.json or tiktoken.model"), std::string::npos)
      << none.message();
}

}  // namespace
}  // namespace hanpu::model
