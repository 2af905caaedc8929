// libFuzzer target for the server's request bodies (POST /v1/chat/completions and
// /v1/completions), which come from any client: any bytes must parse into a request within
// the documented ranges or be refused with an OpenAI error object that is itself valid JSON,
// never crash, recurse without bound or read out of bounds (run under ASan + UBSan). The first
// byte picks the route; seeded with requests the openai client sends (scripts/fuzz_loaders).
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/openai_request.h"
#include "serve/reasoning_split.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  hanpu::serve::ApiRequest r;
  hanpu::serve::ApiError e;
  if (!hanpu::serve::parse_api_request(body, chat, hanpu::GenerateOptions{}, &r, &e)) {
    if (e.status != 400 || e.message.empty()) __builtin_trap();
    if (nlohmann::json::parse(e.json(), nullptr, false).is_discarded()) __builtin_trap();
    return 0;
  }
  if (chat && r.messages.empty()) __builtin_trap();
  if (r.gen.top_logprobs < 0 || r.gen.top_logprobs > 20 || r.gen.stop_strings.size() > 16)
    __builtin_trap();
  for (const std::string& s : r.gen.stop_strings) {
    if (s.empty()) __builtin_trap();
  }
  if (!(r.gen.temperature >= 0 && r.gen.temperature <= 2) || !(r.gen.top_p > 0 && r.gen.top_p <= 1))
    __builtin_trap();
  if (r.max_tokens && *r.max_tokens < 0) __builtin_trap();
  // The body as a reply, through the reasoning split in pieces of 3: nothing is lost but the
  // tags themselves.
  hanpu::serve::ReasoningSplit split(data[0] & 2);
  std::string reasoning, content;
  for (size_t i = 0; i < body.size(); i += 3) split.feed(body.substr(i, 3), &reasoning, &content);
  split.finish(&reasoning, &content);
  if (reasoning.size() + content.size() > body.size()) __builtin_trap();
  return 0;
}
