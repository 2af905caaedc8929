#include "serve/openai_request.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/json_limits.h"

namespace hanpu::serve {

using nlohmann::json;

std::string ApiError::json() const {
  nlohmann::json e = {{"message", message},
                      {"type", type},
                      {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                      {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  // Invalid UTF-8 (a client's bytes quoted in the message) becomes U+FFFD, never an exception.
  return nlohmann::json{{"error", e}}.dump(-1, ' ', false,
                                           nlohmann::json::error_handler_t::replace);
}

namespace {

// Reads optional typed fields of one object, the first mistake kept by name.
class Fields {
 public:
  Fields(const json& j, ApiError* err) : j_(j), err_(err) {}
  bool failed() const { return failed_; }

  // A number in [lo, hi] (JSON integers and floats alike).
  void number(const char* name, double lo, double hi, float* out) {
    double v = 0;
    if (get_number(name, lo, hi, &v)) *out = static_cast<float>(v);
  }
  void integer(const char* name, int64_t lo, int64_t hi, std::optional<int>* out) {
    double v = 0;
    if (!get_number(name, static_cast<double>(lo), static_cast<double>(hi), &v)) return;
    if (v != std::floor(v)) return fail(name, "must be an integer");
    *out = static_cast<int>(v);
  }
  void boolean(const char* name, bool* out) {
    const json* v = find(name);
    if (v == nullptr) return;
    if (!v->is_boolean()) return fail(name, "must be a boolean");
    *out = v->get<bool>();
  }
  void string(const char* name, std::string* out) {
    const json* v = find(name);
    if (v == nullptr) return;
    if (!v->is_string()) return fail(name, "must be a string");
    *out = v->get<std::string>();
  }
  const json* find(const char* name) const {
    auto it = j_.find(name);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  void fail(const std::string& name, const std::string& what) {
    if (failed_) return;
    failed_ = true;
    err_->param = name;
    err_->message = fmt::format("'{}' {}", name, what);
  }

 private:
  bool get_number(const char* name, double lo, double hi, double* out) {
    const json* v = find(name);
    if (v == nullptr) return false;
    if (!v->is_number()) {
      fail(name, "must be a number");
      return false;
    }
    const double d = v->get<double>();
    if (!(d >= lo && d <= hi)) {
      fail(name, fmt::format("is {}, must be in [{}, {}]", json_excerpt(*v), lo, hi));
      return false;
    }
    *out = d;
    return true;
  }
  const json& j_;
  ApiError* err_;
  bool failed_ = false;
};

// OpenAI message content: a string, or an array of {"type": "text", "text": ...} parts.
bool message_content(const json& c, size_t i, std::string* out, ApiError* err) {
  const std::string where = fmt::format("messages[{}].content", i);
  if (c.is_string()) {
    *out = c.get<std::string>();
    return true;
  }
  if (c.is_array()) {
    for (const json& part : c) {
      if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
          !part["text"].is_string()) {
        err->param = where;
        err->message = fmt::format(
            "'{}' parts must be {{\"type\": \"text\", \"text\": string}}; "
            "this server takes text only",
            where);
        return false;
      }
      *out += part["text"].get<std::string>();
    }
    return true;
  }
  err->param = where;
  err->message = fmt::format("'{}' must be a string or an array of text parts", where);
  return false;
}

bool parse_messages(const json& j, ApiRequest* r, ApiError* err) {
  auto it = j.find("messages");
  if (it == j.end() || !it->is_array() || it->empty()) {
    err->param = "messages";
    err->message = "'messages' must be a non-empty array";
    return false;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      err->param = fmt::format("messages[{}].role", i);
      err->message = fmt::format("'messages[{}]' must be an object with a string 'role'", i);
      return false;
    }
    ChatMessage msg;
    msg.role = m["role"].get<std::string>();
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" &&
        msg.role != "developer" && msg.role != "tool") {
      err->param = fmt::format("messages[{}].role", i);
      err->message = fmt::format(
          "'messages[{}].role' is {}, not one of system, developer, user, "
          "assistant, tool",
          i, json_excerpt(m["role"]));
      return false;
    }
    if (msg.role == "developer") msg.role = "system";  // OpenAI's newer name for it
    if (m.contains("content") && !m["content"].is_null() &&
        !message_content(m["content"], i, &msg.content, err))
      return false;
    r->messages.push_back(std::move(msg));
  }
  return true;
}

bool parse_prompt(const json& j, ApiRequest* r, ApiError* err) {
  auto it = j.find("prompt");
  err->param = "prompt";
  if (it == j.end() || it->is_null()) {
    err->message = "'prompt' is required";
    return false;
  }
  if (it->is_string()) {
    r->prompt = it->get<std::string>();
    return true;
  }
  if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    r->prompt = (*it)[0].get<std::string>();
    return true;
  }
  if (it->is_array() && !it->empty()) {
    for (const json& t : *it) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() > std::numeric_limits<int>::max()) {
        err->message =
            "'prompt' must be a string, one string in an array, or an array of token ids";
        return false;
      }
      r->prompt_ids.push_back(static_cast<int>(t.get<int64_t>()));
    }
    return true;
  }
  err->message = "'prompt' must be a string, one string in an array, or an array of token ids";
  return false;
}

bool parse_stop(const json& j, ApiRequest* r, ApiError* err) {
  auto it = j.find("stop");
  if (it == j.end() || it->is_null()) return true;
  err->param = "stop";
  if (it->is_string()) {
    r->gen.stop_strings = {it->get<std::string>()};
  } else if (it->is_array() && it->size() <= 16) {
    for (const json& s : *it) {
      if (!s.is_string()) {
        err->message = "'stop' must be a string or an array of at most 16 strings";
        return false;
      }
      r->gen.stop_strings.push_back(s.get<std::string>());
    }
  } else {
    err->message = "'stop' must be a string or an array of at most 16 strings";
    return false;
  }
  for (const std::string& s : r->gen.stop_strings) {
    if (s.empty()) {
      err->message = "'stop' holds an empty string";
      return false;
    }
  }
  err->param.clear();
  return true;
}

}  // namespace

bool parse_api_request(const std::string& body, bool chat, const GenerateOptions& defaults,
                       ApiRequest* out, ApiError* err) {
  *err = ApiError{};
  json j;
  const Status st = parse_json(body, "request body", &j);
  if (!st.ok()) {
    err->message = st.message();
    return false;
  }
  if (!j.is_object()) {
    err->message = "the request body must be a JSON object";
    return false;
  }
  ApiRequest r;
  r.chat = chat;
  r.gen = defaults;
  if (chat ? !parse_messages(j, &r, err) : !parse_prompt(j, &r, err)) return false;
  if (!parse_stop(j, &r, err)) return false;
  Fields f(j, err);
  f.string("model", &r.model);
  f.boolean("stream", &r.stream);
  if (const json* so = f.find("stream_options")) {
    if (!so->is_object()) {
      f.fail("stream_options", "must be an object");
    } else {
      Fields(*so, err).boolean("include_usage", &r.include_usage);
      if (!err->message.empty()) return false;
    }
  }
  std::optional<int> max_tokens, max_completion, top_k, seed, top_logprobs, n;
  f.integer("max_tokens", 0, std::numeric_limits<int>::max(), &max_tokens);
  f.integer("max_completion_tokens", 0, std::numeric_limits<int>::max(), &max_completion);
  r.max_tokens = max_completion ? max_completion : max_tokens;
  f.number("temperature", 0, 2, &r.gen.temperature);
  f.number("top_p", 0, 1, &r.gen.top_p);
  if (f.find("top_p") != nullptr && !(r.gen.top_p > 0)) f.fail("top_p", "must be > 0");
  f.integer("top_k", -1, std::numeric_limits<int>::max(), &top_k);
  if (top_k) r.gen.top_k = *top_k < 0 ? 0 : *top_k;  // vLLM: -1 is off
  f.number("min_p", 0, 1, &r.gen.min_p);
  f.number("presence_penalty", -2, 2, &r.gen.presence_penalty);
  f.number("frequency_penalty", -2, 2, &r.gen.frequency_penalty);
  f.number("repetition_penalty", 0.01, 10, &r.gen.repetition_penalty);
  f.integer("seed", std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), &seed);
  if (seed) r.gen.seed = static_cast<uint64_t>(static_cast<uint32_t>(*seed));
  f.integer("n", 1, 1, &n);
  bool ignore_eos = false;  // vLLM's extension: generate past the stop tokens
  f.boolean("ignore_eos", &ignore_eos);
  r.gen.stop_at_eos = !ignore_eos;
  if (chat) {
    f.boolean("logprobs", &r.gen.logprobs);
    f.integer("top_logprobs", 0, 20, &top_logprobs);
    if (top_logprobs && !r.gen.logprobs) f.fail("top_logprobs", "needs 'logprobs': true");
  } else if (const json* lp = f.find("logprobs")) {  // completions: an integer 0-5
    if (!lp->is_number_integer() || lp->get<int64_t>() < 0 || lp->get<int64_t>() > 5) {
      f.fail("logprobs", "must be an integer in [0, 5]");
    } else {
      r.gen.logprobs = true;
      top_logprobs = static_cast<int>(lp->get<int64_t>());
    }
  }
  if (top_logprobs) r.gen.top_logprobs = *top_logprobs;
  if (const json* kw = f.find("chat_template_kwargs")) {
    if (!kw->is_object()) {
      f.fail("chat_template_kwargs", "must be an object");
    } else if (kw->contains("enable_thinking")) {
      if (!(*kw)["enable_thinking"].is_boolean())
        f.fail("chat_template_kwargs.enable_thinking", "must be a boolean");
      else
        r.chat_options.enable_thinking = (*kw)["enable_thinking"].get<bool>();
    }
  }
  if (f.failed()) return false;
  *out = std::move(r);
  return true;
}

}  // namespace hanpu::serve
