// hanpu quantize from a Hugging Face checkpoint folder (model/hf_gguf_tensors.h,
// model/hf_gguf_metadata.h): each fixture's folder quantized gives the file its GGUF
// (tests/fixtures/models/*/model.gguf, written from the same weights by llama.cpp's
// conventions in scripts/make_fixtures.py) quantized gives, tensor for tensor; the metadata
// carries the shape and tokenizer keys the converter writes; the file runs as the folder
// does; a folder llama.cpp's converter would refuse is refused naming the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "hanpu/quantize.h"
#include "model/gguf.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"

namespace hanpu::model {
namespace {

std::string tmp(const std::string& name) { return testing::temp_file("hanpu_hf_quantize", name); }

uint32_t float_bits(const uint8_t* p) {
  uint32_t u;
  std::memcpy(&u, p, 4);
  return u;
}

class FromFolder : public ::testing::TestWithParam<const char*> {};

// Every mix: the same tensors, types and bytes from the folder as from the converter's GGUF
// of the same weights, except ssm_a (-exp(A_log)): hanpu rounds exp in double once, the
// fixture's numpy float32 exp is up to 2 units in the last place off; within 4. Every key of that
// GGUF is there with its type and value.
TEST_P(FromFolder, WritesWhatTheConvertersGgufQuantizesTo) {
  const std::string dir = testing::fixture_dir(GetParam());
  for (const std::string& type : quantize_file_type_names()) {
    SCOPED_TRACE(type);
    const std::string from_folder = tmp("folder-" + type + ".gguf"),
                      from_gguf = tmp("gguf-" + type + ".gguf");
    Status s = quantize_model(dir, from_folder, type);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(quantize_model(dir + "/model.gguf", from_gguf, type).ok());
    GgufMetadata fm, gm;
    WeightStore fs, gs;
    ASSERT_TRUE(load_gguf(from_folder, &fm, &fs).ok());
    ASSERT_TRUE(load_gguf(from_gguf, &gm, &gs).ok());
    ASSERT_EQ(fs.size(), gs.size());
    for (const auto& [name, g] : gs.tensors()) {
      const StoredTensor* f = fs.find(name);
      ASSERT_NE(f, nullptr) << name;
      ASSERT_EQ(f->shape, g.shape) << name;
      ASSERT_EQ(f->quant, g.quant) << name;
      ASSERT_EQ(f->dtype, g.dtype) << name;
      const uint64_t bytes = stored_bytes(g, static_cast<uint64_t>(shape_numel(g.shape)));
      if (name.ends_with("ssm_a")) {
        for (uint64_t i = 0; i < bytes; i += 4) {
          const int64_t ulps = int64_t{float_bits(f->data + i)} - int64_t{float_bits(g.data + i)};
          EXPECT_LE(std::abs(ulps), 4) << name << " element " << i / 4;
        }
        continue;
      }
      EXPECT_EQ(std::memcmp(f->data, g.data, bytes), 0) << name;
    }
    for (const auto& [key, value] : gm) {
      // The qwen3next and kimi-linear fixtures' GGUFs name their tokenizer "qwen2", but its
      // tokenizer.json splits with Qwen3.5's regex: the folder's file says what it is.
      if (key == "tokenizer.ggml.pre" && std::string(GetParam()) != "qwen35-tiny") continue;
      ASSERT_TRUE(fm.count(key)) << key;
      EXPECT_EQ(fm.at(key).type, value.type) << key;
      EXPECT_EQ(fm.at(key).v, value.v) << key;
    }
    EXPECT_EQ(*gguf_string(fm, "tokenizer.ggml.pre"), "qwen35");
  }
}

class FromQwenFolder : public ::testing::TestWithParam<const char*> {};

// What the converter adds beyond the fixture's GGUF: Qwen3.5's RoPE sections (the default
// where config.json has none), which layers are recurrent, the padding token, the name.
TEST_P(FromQwenFolder, WritesTheConvertersExtraKeys) {
  const bool qwen35 = std::string(GetParam()) == "qwen35-tiny";
  const std::string arch = qwen35 ? "qwen35" : "qwen3next";
  const std::string out = tmp("extra.gguf");
  ASSERT_TRUE(quantize_model(testing::fixture_dir(GetParam()), out, "Q8_0").ok());
  GgufMetadata m;
  WeightStore s;
  ASSERT_TRUE(load_gguf(out, &m, &s).ok());
  const nlohmann::json config =
      nlohmann::json::parse(testing::read_text(testing::fixture_dir(GetParam()) + "/config.json"));
  const nlohmann::json& text = config.contains("text_config") ? config["text_config"] : config;
  if (qwen35) {  // config.json's mrope_section, padded to four
    const auto& key = m.at(arch + ".rope.dimension_sections");
    const auto& sections = std::get<std::vector<GgufValue>>(key.v);
    EXPECT_EQ(key.elem_type, kGgufI32);
    const auto want = text["rope_parameters"]["mrope_section"].get<std::vector<int64_t>>();
    ASSERT_EQ(sections.size(), 4u);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_EQ(sections[i].as_int(), i < want.size() ? want[i] : 0) << i;
  } else {
    EXPECT_EQ(m.count(arch + ".rope.dimension_sections"), 0u);
  }
  const auto& recurrent =
      std::get<std::vector<GgufValue>>(m.at(arch + ".attention.recurrent_layers").v);
  ASSERT_EQ(recurrent.size(), text["layer_types"].size());
  for (size_t l = 0; l < recurrent.size(); ++l)
    EXPECT_EQ(std::get<bool>(recurrent[l].v), text["layer_types"][l] == "linear_attention") << l;
  // tokenizer_config.json's pad_token, by its id among the added tokens.
  Tokenizer tok;
  ASSERT_TRUE(Tokenizer::load(testing::fixture_dir(GetParam()) + "/tokenizer.json", &tok).ok());
  const nlohmann::json tc = nlohmann::json::parse(
      testing::read_text(testing::fixture_dir(GetParam()) + "/tokenizer_config.json"));
  EXPECT_EQ(m.at("tokenizer.ggml.padding_token_id").as_int(),
            *tok.token_id(tc["pad_token"].get<std::string>()));
  // Neither a byte-level post-processor nor tokenizer_config.json says whether to add BOS.
  EXPECT_EQ(m.count("tokenizer.ggml.add_bos_token"), 0u);
  EXPECT_EQ(*gguf_string(m, "general.name"), std::string(GetParam()));
}

// The folder's file runs: its tokenizer gives the folder tokenizer's ids, and its logits are as
// close to the fp32 folder model's as the fixture's own Q8_0 GGUF's (gguf_quant_test.cc).
TEST_P(FromFolder, TheQ8_0FileRunsAsTheFolderDoes) {
  const bool moe = std::string(GetParam()) != "qwen35-tiny";
  const std::string dir = testing::fixture_dir(GetParam()), out = tmp("run.gguf");
  ASSERT_TRUE(quantize_model(dir, out, "Q8_0").ok());
  std::unique_ptr<Model> q, ref;
  GgufExtras extras;
  Status s = load_model(out, {}, &q, &extras);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(load_model(dir, {.weights = DType::kF32}, &ref).ok());
  for (const auto& [text, e] : testing::prompt_logit_nmse(*q, *ref, GetParam()))
    EXPECT_LE(e, moe ? 0.2 : 3e-2) << text;
  Tokenizer folder_tok;
  ASSERT_TRUE(Tokenizer::load(dir + "/tokenizer.json", &folder_tok).ok());
  ASSERT_TRUE(extras.tokenizer.has_value());
  const nlohmann::json fixture = testing::reference(GetParam());
  for (const auto& p : fixture["prompts"]) {
    std::vector<int> a, b;
    ASSERT_TRUE(folder_tok.encode(p["text"].get<std::string>(), &a).ok());
    ASSERT_TRUE(extras.tokenizer->encode(p["text"].get<std::string>(), &b).ok());
    EXPECT_EQ(a, b) << p["text"];
  }
}

INSTANTIATE_TEST_SUITE_P(Models, FromFolder,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny", "kimi-linear-tiny"));
INSTANTIATE_TEST_SUITE_P(Models, FromQwenFolder,
                         ::testing::Values("qwen35-tiny", "qwen3next-tiny"));

// The pre-tokenizer is named by its split regex: Qwen2/3's gives "qwen2" (with or without
// the NFC normaliser transformers gives both).
TEST(FromFolder, NamesThePreTokenizerByItsRegex) {
  nlohmann::json tok = nlohmann::json::parse(
      testing::read_text(testing::fixture_dir("qwen35-tiny") + "/tokenizer.json"));
  tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
      Tokenizer::pattern_for_pre("qwen2");
  const std::string dir =
      testing::scratch_checkpoint("hanpu_hf_qwen2_regex", {{"tokenizer.json", tok.dump()}});
  const std::string out = tmp("qwen2-regex.gguf");
  const Status s = quantize_model(dir, out, "Q8_0");
  ASSERT_TRUE(s.ok()) << s.message();
  GgufMetadata m;
  WeightStore store;
  ASSERT_TRUE(load_gguf(out, &m, &store).ok());
  EXPECT_EQ(*gguf_string(m, "tokenizer.ggml.pre"), "qwen2");
  // Normalised to NFC as transformers' Qwen2 tokenizer does: a decomposed e + U+0301 reads as
  // the composed U+00E9.
  std::unique_ptr<Model> model;
  GgufExtras extras;
  ASSERT_TRUE(load_model(out, {}, &model, &extras).ok());
  std::vector<int> composed, decomposed;
  ASSERT_TRUE(extras.tokenizer->encode("caf\xc3\xa9", &composed).ok());
  ASSERT_TRUE(extras.tokenizer->encode("cafe\xcc\x81", &decomposed).ok());
  EXPECT_EQ(composed, decomposed);
}

// Folders the converter could not turn into a file llama.cpp reads as the checkpoint means it
// are refused, naming the file and the problem, and nothing is written.
TEST(FromFolderRefused, NamesTheProblemAndWritesNothing) {
  const std::string tok =
      testing::read_text(testing::fixture_dir("qwen35-tiny") + "/tokenizer.json");
  const std::string config =
      testing::read_text(testing::fixture_dir("qwen35-tiny") + "/config.json");
  nlohmann::json odd_regex = nlohmann::json::parse(tok);
  odd_regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+|\\S+";
  nlohmann::json small_vocab = nlohmann::json::parse(config);
  small_vocab["vocab_size"] = 100;
  nlohmann::json bad_eos = nlohmann::json::parse(config);
  bad_eos["bos_token_id"] = 1 << 20;
  const struct {
    const char* file;
    std::string text, message;
  } cases[] = {
      {"tokenizer.json", odd_regex.dump(), "none of those llama.cpp names here"},
      {"config.json", small_vocab.dump(), "more than config.json's vocab_size 100"},
      {"config.json", bad_eos.dump(), "bos_token_id is 1048576, outside the vocabulary"},
      {"tokenizer.json", "{\"model\": 3}", "tokenizer.json"},
  };
  const std::string out = tmp("refused.gguf");
  for (const auto& c : cases) {
    const std::string dir = testing::scratch_checkpoint("hanpu_hf_refused", {{c.file, c.text}});
    const Status s = quantize_model(dir, out, "Q8_0");
    ASSERT_FALSE(s.ok()) << c.message;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
  }
}

// A missing tensor is named; a NaN in the weights is named by the GGUF tensor and element.
TEST(FromFolderRefused, MissingAndNonFiniteWeights) {
  const std::string out = tmp("refused-weights.gguf");
  {
    const std::string dir = testing::scratch_checkpoint("hanpu_hf_no_config", {});
    std::filesystem::remove(dir + "/config.json");
    const Status s = quantize_model(dir, out, "Q8_0");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("config.json"), std::string::npos) << s.message();
  }
  const std::string dir = testing::scratch_checkpoint("hanpu_hf_nan", {});
  WeightStore store;
  ASSERT_TRUE(load_safetensors(dir, &store).ok());
  const std::string name = "model.layers.0.mlp.down_proj.weight";
  const StoredTensor* t = store.find(name);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->dtype, DType::kF32);
  const uint64_t at = t->file_offset + 4 * 5;
  store = WeightStore();
  {
    std::fstream f(dir + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    const float nan = std::nanf("");
    f.seekp(static_cast<std::streamoff>(at));
    f.write(reinterpret_cast<const char*>(&nan), 4);
  }
  const Status s = quantize_model(dir, out, "Q8_0");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'blk.0.ffn_down.weight'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("non-finite value at element 5"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace hanpu::model
