// OpenAI request bodies: the fields a client sets reach the engine's options, and every
// malformed body or field is refused with a 400 naming the field.
#include <gtest/gtest.h>

#include "serve/openai_request.h"
#include "serve/reasoning_split.h"

namespace hanpu::serve {
namespace {

ApiRequest parsed(const std::string& body, bool chat = true) {
  ApiRequest r;
  ApiError e;
  EXPECT_TRUE(parse_api_request(body, chat, GenerateOptions{}, &r, &e)) << e.message;
  return r;
}

ApiError refused(const std::string& body, bool chat = true) {
  ApiRequest r;
  r.model = "untouched";
  ApiError e;
  EXPECT_FALSE(parse_api_request(body, chat, GenerateOptions{}, &r, &e)) << body;
  EXPECT_EQ(r.model, "untouched");
  EXPECT_EQ(e.status, 400);
  return e;
}

TEST(OpenAiRequest, ChatFieldsReachTheOptions) {
  const ApiRequest r = parsed(R"({"model": "m", "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "temperature": 0.5, "top_p": 0.9, "top_k": 20, "min_p": 0.05, "presence_penalty": 1.5,
      "repetition_penalty": 1.1, "frequency_penalty": -0.5, "seed": 7, "max_completion_tokens": 12, "max_tokens": 99,
      "stop": ["\n\n", "END"], "stream": true, "stream_options": {"include_usage": true},
      "logprobs": true, "top_logprobs": 3, "chat_template_kwargs": {"enable_thinking": false}})");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.model, "m");
  EXPECT_FLOAT_EQ(r.gen.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.gen.top_p, 0.9f);
  EXPECT_EQ(r.gen.top_k, 20);
  EXPECT_FLOAT_EQ(r.gen.min_p, 0.05f);
  EXPECT_FLOAT_EQ(r.gen.presence_penalty, 1.5f);
  EXPECT_FLOAT_EQ(r.gen.repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(r.gen.frequency_penalty, -0.5f);
  EXPECT_EQ(r.gen.seed, 7u);
  EXPECT_EQ(r.max_tokens, 12);  // max_completion_tokens wins
  EXPECT_EQ(r.gen.stop_strings, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(r.stream && r.include_usage && r.gen.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 3);
  EXPECT_EQ(r.chat_options.enable_thinking, false);
  EXPECT_TRUE(r.gen.stop_at_eos);
  EXPECT_FALSE(parsed(R"({"messages": [{"role": "user", "content": "x"}], "ignore_eos": true})")
                   .gen.stop_at_eos);
}

TEST(OpenAiRequest, CompletionPromptsAsTextOrIds) {
  EXPECT_EQ(parsed(R"({"prompt": "hi", "logprobs": 2})", false).prompt, "hi");
  EXPECT_EQ(parsed(R"({"prompt": ["hi"]})", false).prompt, "hi");
  EXPECT_EQ(parsed(R"({"prompt": [1, 2, 3]})", false).prompt_ids, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(parsed(R"({"prompt": "x", "logprobs": 2})", false).gen.top_logprobs, 2);
}

TEST(OpenAiRequest, MalformedBodiesAndFieldsAreRefusedByName) {
  EXPECT_NE(refused("{\"messages\": [").message.find("request body"), std::string::npos);
  EXPECT_NE(refused("[1, 2]").message.find("JSON object"), std::string::npos);
  EXPECT_EQ(refused(std::string(1000, '[') + std::string(1000, ']')).param, "");
  EXPECT_EQ(refused(R"({"messages": []})").param, "messages");
  EXPECT_EQ(refused(R"({"messages": [{"content": "x"}]})").param, "messages[0].role");
  EXPECT_EQ(refused(R"({"messages": [{"role": "wizard", "content": "x"}]})").param,
            "messages[0].role");
  EXPECT_EQ(refused(R"({"messages": [{"role": "user", "content": 5}]})").param,
            "messages[0].content");
  EXPECT_EQ(
      refused(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})").param,
      "messages[0].content");
  const std::string m = R"("messages": [{"role": "user", "content": "x"}])";
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, std::string>>{{"temperature", "-1"},
                                                        {"temperature", "\"hot\""},
                                                        {"top_p", "0"},
                                                        {"top_p", "1.5"},
                                                        {"max_tokens", "-3"},
                                                        {"max_tokens", "2.5"},
                                                        {"max_tokens", "1e300"},
                                                        {"top_k", "-2"},
                                                        {"n", "2"},
                                                        {"stream", "1"},
                                                        {"stop", "[\"\"]"},
                                                        {"stop", "[1]"},
                                                        {"top_logprobs", "3"},
                                                        {"frequency_penalty", "2.5"},
                                                        {"seed", "\"s\""},
                                                        {"model", "3"},
                                                        {"stream_options", "1"},
                                                        {"chat_template_kwargs", "[]"}}) {
    const ApiError e = refused("{" + m + ", \"" + field + "\": " + value + "}");
    EXPECT_EQ(e.param.substr(0, field.size()), field) << field << " " << value << ": " << e.message;
    EXPECT_NE(e.json().find("invalid_request_error"), std::string::npos);
  }
  // Invalid UTF-8 quoted in a message still makes a valid error object (found by the fuzzer).
  const ApiError bad_bytes = refused("{\"max_tokens\"\x88: 5}");
  EXPECT_NE(bad_bytes.json().find("\"error\""), std::string::npos);
  EXPECT_EQ(refused(R"({"prompt": [1, -2]})", false).param, "prompt");
  EXPECT_EQ(refused(R"({"prompt": {}})", false).param, "prompt");
  EXPECT_EQ(refused(R"({"nothing": 1})", false).param, "prompt");
}

TEST(ReasoningSplit, ThinkingBeforeTheCloseTagIsReasoningWhateverThePieces) {
  const std::string reply = "<think>plan it</think>\n\nthe answer";
  for (size_t piece = 1; piece <= reply.size(); ++piece) {
    ReasoningSplit s(false);
    std::string reasoning, content;
    for (size_t i = 0; i < reply.size(); i += piece)
      s.feed(reply.substr(i, piece), &reasoning, &content);
    s.finish(&reasoning, &content);
    EXPECT_EQ(reasoning, "plan it") << piece;
    EXPECT_EQ(content, "\n\nthe answer") << piece;
  }
  // A prompt that opened the block: the reply starts as reasoning; one cut off stays reasoning.
  ReasoningSplit open(true);
  std::string reasoning, content;
  open.feed("still </thi", &reasoning, &content);
  EXPECT_EQ(reasoning, "still ");
  open.finish(&reasoning, &content);
  EXPECT_EQ(reasoning, "still </thi");
  EXPECT_TRUE(content.empty());
  // No thinking at all: all content, a lone "<" included.
  ReasoningSplit none(false);
  reasoning.clear();
  content.clear();
  none.feed("<", &reasoning, &content);
  none.feed("b> hi", &reasoning, &content);
  none.finish(&reasoning, &content);
  EXPECT_EQ(content, "<b> hi");
  EXPECT_TRUE(reasoning.empty());
  EXPECT_TRUE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}

}  // namespace
}  // namespace hanpu::serve
