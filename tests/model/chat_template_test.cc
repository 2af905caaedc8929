// Chat templates: the fixtures carry Qwen3.5's and Qwen3's real Jinja templates, and hanpu's
// rendering (llama.cpp's Jinja engine) must equal transformers' apply_chat_template byte for
// byte, from the safetensors folder and from the GGUF alike; template errors are named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "hanpu/engine.h"
#include "model/chat_template.h"

namespace hanpu::model {
namespace {

std::vector<ChatMessage> messages_of(const nlohmann::json& j) {
  std::vector<ChatMessage> out;
  for (const auto& m : j)
    out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  return out;
}

ChatOptions options_of(const nlohmann::json& c) {
  ChatOptions o;
  o.add_generation_prompt = c["add_generation_prompt"].get<bool>();
  if (c.contains("enable_thinking")) o.enable_thinking = c["enable_thinking"].get<bool>();
  return o;
}

struct Source {
  const char* fixture;
  const char* path;  // inside the fixture folder; "" = the safetensors folder itself
};

class ChatFixture : public ::testing::TestWithParam<Source> {};

TEST_P(ChatFixture, RendersAsTransformersDoes) {
  const Source s = GetParam();
  std::unique_ptr<Engine> e;
  const Status st = Engine::load(testing::fixture_dir(s.fixture) + s.path, &e);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_NE(e->chat_template_origin().find("chat_template"), std::string::npos)
      << e->chat_template_origin();
  const auto ref = testing::reference(s.fixture);
  ASSERT_GE(ref["chat"].size(), 4u);
  for (const auto& c : ref["chat"]) {
    std::string text = "poison";
    const Status r = e->apply_chat_template(messages_of(c["messages"]), options_of(c), &text);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(text, c["text"].get<std::string>());
    std::vector<int> ids{-1};
    ASSERT_TRUE(e->tokenize_chat(messages_of(c["messages"]), options_of(c), &ids).ok());
    EXPECT_EQ(ids, c["ids"].get<std::vector<int>>());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, ChatFixture,
    ::testing::Values(Source{"qwen35-tiny", ""}, Source{"qwen35-tiny", "/model.gguf"},
                      Source{"qwen3next-tiny", ""}, Source{"qwen3next-tiny", "/model.gguf"}),
    [](const auto& info) {
      return std::string(std::string(info.param.fixture) == "qwen35-tiny" ? "qwen35"
                                                                          : "qwen3next") +
             (info.param.path[0] ? "_gguf" : "_safetensors");
    });

// A scratch folder with a copy of the qwen35 fixture's weights and tokenizer, and the given
// tokenizer_config.json (none if empty) and chat_template.jinja (none if empty).
std::string folder_with(const std::string& name, const std::string& tokenizer_config,
                        const std::string& jinja) {
  return testing::scratch_checkpoint(
      "hanpu_chat_" + name,
      {{"tokenizer_config.json", tokenizer_config}, {"chat_template.jinja", jinja}});
}

TEST(ChatTemplate, WithoutATemplateChatMlIsUsed) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(folder_with("none", "", ""), &e).ok());
  EXPECT_EQ(e->chat_template_origin(), "built-in ChatML");
  std::string text;
  ASSERT_TRUE(e->apply_chat_template({{"system", "S"}, {"user", "U"}}, {}, &text).ok());
  EXPECT_EQ(
      text,
      "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, JinjaFileWinsAndNamedTemplatesPickDefault) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(folder_with("file", R"({"chat_template": "config"})",
                                       "file {{ messages[0].content }}"),
                           &e)
                  .ok());
  std::string text;
  ASSERT_TRUE(e->apply_chat_template({{"user", "x"}}, {}, &text).ok());
  EXPECT_EQ(text, "file x");
  ASSERT_TRUE(
      Engine::load(folder_with("named", R"({"chat_template": [{"name": "tool_use", "template": "T"},
      {"name": "default", "template": "D{{ eos_token }}"}], "eos_token": {"content": "<|im_end|>"}})",
                               ""),
                   &e)
          .ok());
  ASSERT_TRUE(e->apply_chat_template({{"user", "x"}}, {}, &text).ok());
  EXPECT_EQ(text, "D<|im_end|>");
}

TEST(ChatTemplate, ErrorsAreNamed) {
  std::unique_ptr<Engine> e;
  // A template that does not parse: the model still loads, a chat names the file and the fault.
  ASSERT_TRUE(
      Engine::load(folder_with("bad", R"({"chat_template": "{% for m in messages %}x"})", ""), &e)
          .ok());
  std::string text;
  Status st = e->apply_chat_template({{"user", "x"}}, {}, &text);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("tokenizer_config.json (chat_template)"), std::string::npos)
      << st.message();
  // The template's own raise_exception (Qwen3.5's, for an unknown role) becomes an error.
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  st = e->apply_chat_template({{"user", "x"}, {"robot", "y"}}, {}, &text);
  EXPECT_NE(st.message().find("Unexpected message role."), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("rendering chat template"), std::string::npos) << st.message();
  EXPECT_NE(e->apply_chat_template({}, {}, &text).message().find("no messages"), std::string::npos);
  // Malformed template entries: the model loads, a chat names the problem.
  const auto chat_error = [&](const std::string& name, const std::string& config) {
    const Status load = Engine::load(folder_with(name, config, ""), &e);
    EXPECT_TRUE(load.ok()) << load.message();
    return load.ok() ? e->apply_chat_template({{"user", "x"}}, {}, &text).message() : std::string();
  };
  EXPECT_NE(chat_error("list", R"({"chat_template": [{"name": "x", "template": "T"}]})")
                .find("no template named \"default\""),
            std::string::npos);
  EXPECT_NE(chat_error("num", R"({"chat_template": 7})").find("neither a string"),
            std::string::npos);
  EXPECT_NE(
      chat_error("json", R"({"chat_template": )").find("tokenizer_config.json: malformed JSON"),
      std::string::npos);
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  EXPECT_NE(e->set_chat_template_file("/nonexistent.jinja").message().find("cannot open"),
            std::string::npos);
}

TEST(ChatTemplate, OverrideFileReplacesTheCheckpointsTemplate) {
  std::unique_ptr<Engine> e;
  ASSERT_TRUE(Engine::load(testing::fixture_dir("qwen35-tiny"), &e).ok());
  const std::string path =
      (std::filesystem::temp_directory_path() / "hanpu_override.jinja").string();
  std::ofstream(path)
      << "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}{{ eos_token }}";
  ASSERT_TRUE(e->set_chat_template_file(path).ok());
  EXPECT_EQ(e->chat_template_origin(), path);
  std::string text;
  ASSERT_TRUE(e->apply_chat_template({{"user", "a"}, {"assistant", "b"}}, {}, &text).ok());
  EXPECT_EQ(text, "[user:a][assistant:b]<|im_end|>");
}

}  // namespace
}  // namespace hanpu::model
