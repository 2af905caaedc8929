// The C API over hanpu::Engine: no exception and no C++ type crosses it; errors become codes
// with a per-thread message.
#include "hanpu/hanpu_c.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "hanpu/engine.h"
#include "hanpu/version.h"

struct hanpu_engine {
  std::unique_ptr<hanpu::Engine> engine;
};

namespace {

thread_local std::string last_error;

hanpu_status fail(hanpu_status code, std::string message) {
  last_error = std::move(message);
  return code;
}

hanpu_status from(const hanpu::Status& s) {
  return s.ok() ? HANPU_OK : fail(HANPU_ERROR_FAILED, s.message());
}

// Runs `body`, turning an escaping exception (std::bad_alloc above all) into an error code.
template <typename Body>
hanpu_status guarded(Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(HANPU_ERROR_FAILED, std::string("hanpu: ") + e.what());
  } catch (...) {
    return fail(HANPU_ERROR_FAILED, "hanpu: unknown error");
  }
}

hanpu_status null_argument(const char* function, const char* name) {
  return fail(HANPU_ERROR_ARGUMENT, std::string(function) + ": " + name + " is NULL");
}

}  // namespace

extern "C" {

const char* hanpu_version(void) { return HANPU_VERSION; }
const char* hanpu_commit(void) { return HANPU_COMMIT; }
const char* hanpu_last_error(void) { return last_error.c_str(); }

hanpu_status hanpu_engine_load(const char* path, const char* weights, hanpu_engine** out) {
  if (!out) return null_argument("hanpu_engine_load", "out");
  *out = nullptr;
  if (!path) return null_argument("hanpu_engine_load", "path");
  return guarded([&] {
    auto handle = std::make_unique<hanpu_engine>();
    const hanpu_status s =
        from(hanpu::Engine::load(path, &handle->engine, weights ? weights : "auto"));
    if (s == HANPU_OK) *out = handle.release();
    return s;
  });
}

hanpu_status hanpu_engine_synthetic(const char* name, uint64_t seed, hanpu_engine** out) {
  if (!out) return null_argument("hanpu_engine_synthetic", "out");
  *out = nullptr;
  if (!name) return null_argument("hanpu_engine_synthetic", "name");
  return guarded([&] {
    auto handle = std::make_unique<hanpu_engine>();
    const hanpu_status s = from(hanpu::Engine::synthetic(name, seed, &handle->engine));
    if (s == HANPU_OK) *out = handle.release();
    return s;
  });
}

void hanpu_engine_free(hanpu_engine* engine) { delete engine; }

int32_t hanpu_vocab_size(const hanpu_engine* engine) {
  return engine ? engine->engine->info().vocab : 0;
}
int hanpu_has_tokenizer(const hanpu_engine* engine) {
  return engine && engine->engine->has_tokenizer() ? 1 : 0;
}

hanpu_status hanpu_tokenize(const hanpu_engine* engine, const char* text, size_t len, int32_t* ids,
                            size_t capacity, size_t* count) {
  if (!engine) return null_argument("hanpu_tokenize", "engine");
  if (!count) return null_argument("hanpu_tokenize", "count");
  if (!text && len > 0) return null_argument("hanpu_tokenize", "text");
  if (!ids && capacity > 0) return null_argument("hanpu_tokenize", "ids");
  return guarded([&] {
    std::vector<int> tokens;
    const hanpu_status s =
        from(engine->engine->tokenize(std::string_view(text ? text : "", len), &tokens));
    if (s != HANPU_OK) return s;
    *count = tokens.size();
    if (tokens.size() > capacity)
      return fail(HANPU_ERROR_BUFFER_TOO_SMALL, "hanpu_tokenize: " + std::to_string(tokens.size()) +
                                                    " ids do not fit in a buffer of " +
                                                    std::to_string(capacity));
    std::copy(tokens.begin(), tokens.end(), ids);
    return HANPU_OK;
  });
}

hanpu_status hanpu_apply_chat_template(const hanpu_engine* engine,
                                       const hanpu_chat_message* messages, size_t count,
                                       char** text) {
  if (!text) return null_argument("hanpu_apply_chat_template", "text");
  *text = nullptr;
  if (!engine) return null_argument("hanpu_apply_chat_template", "engine");
  if (!messages && count > 0) return null_argument("hanpu_apply_chat_template", "messages");
  return guarded([&] {
    std::vector<hanpu::ChatMessage> chat;
    for (size_t i = 0; i < count; ++i) {
      if (!messages[i].role || !messages[i].content)
        return fail(HANPU_ERROR_ARGUMENT, "hanpu_apply_chat_template: message " +
                                              std::to_string(i) + " has a NULL role or content");
      chat.push_back({messages[i].role, messages[i].content});
    }
    std::string rendered;
    const hanpu_status s =
        from(engine->engine->apply_chat_template(chat, hanpu::ChatOptions{}, &rendered));
    if (s != HANPU_OK) return s;
    char* copy = static_cast<char*>(std::malloc(rendered.size() + 1));
    if (!copy) return fail(HANPU_ERROR_FAILED, "hanpu_apply_chat_template: out of memory");
    std::memcpy(copy, rendered.c_str(), rendered.size() + 1);
    *text = copy;
    return HANPU_OK;
  });
}

void hanpu_string_free(char* text) { std::free(text); }

hanpu_generate_params hanpu_default_generate_params(const hanpu_engine* engine) {
  hanpu::GenerateOptions o;
  if (engine) {
    try {
      o = engine->engine->default_generate_options();
    } catch (...) {
      // The greedy defaults stand.
    }
  }
  hanpu_generate_params p;
  p.max_tokens = o.max_tokens;
  p.temperature = o.temperature;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.min_p = o.min_p;
  p.repetition_penalty = o.repetition_penalty;
  p.seed = o.seed;
  p.threads = o.threads;
  p.stop_at_eos = o.stop_at_eos ? 1 : 0;
  return p;
}

hanpu_status hanpu_generate(hanpu_engine* engine, const int32_t* prompt, size_t count,
                            const hanpu_generate_params* params, hanpu_text_callback on_text,
                            void* user, hanpu_generate_result* result) {
  if (!engine) return null_argument("hanpu_generate", "engine");
  if (!params) return null_argument("hanpu_generate", "params");
  if (!prompt && count > 0) return null_argument("hanpu_generate", "prompt");
  if (params->max_tokens < 0)
    return fail(HANPU_ERROR_ARGUMENT, "hanpu_generate: max_tokens is negative");
  if (params->threads < 0) return fail(HANPU_ERROR_ARGUMENT, "hanpu_generate: threads is negative");
  return guarded([&] {
    hanpu::GenerateOptions o = engine->engine->default_generate_options();
    o.max_tokens = params->max_tokens;
    o.temperature = params->temperature;
    o.top_k = params->top_k;
    o.top_p = params->top_p;
    o.min_p = params->min_p;
    o.repetition_penalty = params->repetition_penalty;
    o.seed = params->seed;
    o.threads = params->threads;
    o.stop_at_eos = params->stop_at_eos != 0;
    bool stop = false;
    o.stop_requested = [&stop] { return stop; };
    std::function<void(std::string_view)> text;
    if (on_text)
      text = [&](std::string_view piece) {
        stop = stop || on_text(piece.data(), piece.size(), user) != 0;
      };
    const std::vector<int> ids(prompt, prompt + count);
    hanpu::GenerateStats stats;
    const hanpu_status s = from(engine->engine->generate(ids, o, text, nullptr, &stats));
    if (s == HANPU_OK && result) {
      result->prompt_tokens = stats.prompt_tokens;
      result->generated_tokens = stats.generated_tokens;
      result->prefill_ms = stats.prefill_ms;
      result->decode_ms = stats.decode_ms;
      result->stop_reason = stats.stop_reason == "eos"          ? "eos"
                            : stats.stop_reason == "max_tokens" ? "max_tokens"
                                                                : "stopped";
    }
    return s;
  });
}

}  // extern "C"
