// An OpenAI API request body (POST /v1/chat/completions, /v1/completions) checked field by
// field into what the engine runs, or an OpenAI error object naming the field at fault.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hanpu/engine.h"

namespace hanpu::serve {

// An OpenAI error: {"error": {"message", "type", "param", "code"}} with its HTTP status.
struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the field at fault; empty: none
  std::string code;   // e.g. "context_length_exceeded"; empty: none
  std::string json() const;
};

struct ApiRequest {
  bool chat = true;  // /v1/chat/completions; false: /v1/completions
  std::string model;
  std::vector<ChatMessage> messages;  // chat
  ChatOptions chat_options;           // chat_template_kwargs.enable_thinking
  std::string prompt;                 // completions, as text
  std::vector<int> prompt_ids;        // completions, as token ids
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::optional<int> max_tokens;
  GenerateOptions gen;  // sampling, stop strings, seed, logprobs
};

// Parses `body`. `defaults` gives the sampling a request does not set (the checkpoint's).
// False with `err` set when the body is not a request this server runs.
bool parse_api_request(const std::string& body, bool chat, const GenerateOptions& defaults,
                       ApiRequest* out, ApiError* err);

}  // namespace hanpu::serve
