#include "serve/server.h"

#include <chrono>
#include <memory>
#include <thread>

// cpp-httplib (Debian's libcpp-httplib-dev; llama-server uses the same library).
#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "serve/openai_request.h"
#include "serve/client_watch.h"
#include "serve/reasoning_split.h"

namespace hanpu::serve {

namespace {

using nlohmann::json;

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.json(), "application/json");
}

ApiError error_of(int status, std::string type, std::string message, std::string code = "") {
  ApiError e;
  e.status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

std::string finish_reason(const GenerateStats& s) {
  return s.stop_reason == "max_tokens" ? "length" : "stop";
}

json token_bytes(const std::string& text) {
  json b = json::array();
  for (unsigned char c : text) b.push_back(c);
  return b;
}

// OpenAI's chat logprobs entries of `tokens`.
json chat_logprobs(const Engine& engine, const std::vector<GeneratedToken>& tokens) {
  json content = json::array();
  for (const GeneratedToken& t : tokens) {
    const std::string text = engine.token_text(t.id);
    json top = json::array();
    for (const auto& [id, lp] : t.top) {
      const std::string alt = engine.token_text(id);
      top.push_back({{"token", alt}, {"logprob", lp}, {"bytes", token_bytes(alt)}});
    }
    content.push_back({{"token", text},
                       {"logprob", t.logprob},
                       {"bytes", token_bytes(text)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// The legacy completions logprobs object of `tokens`, text offsets from `offset`.
json completion_logprobs(const Engine& engine, const std::vector<GeneratedToken>& tokens,
                         size_t offset) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  for (const GeneratedToken& t : tokens) {
    const std::string text = engine.token_text(t.id);
    toks.push_back(text);
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[engine.token_text(id)] = lp;
    tops.push_back(top);
    offs.push_back(offset);
    offset += text.size();
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

// The whole prompt counts, the part resumed from the prefix cache as cached_tokens.
// A whole reply's text as the client gets it: the reasoning apart where `split` (think: the
// prompt opened a thinking block), the rest the content.
void split_reply(const std::string& text, bool split, bool think, std::string* reasoning,
                 std::string* content) {
  if (!split) {
    *content = text;
    return;
  }
  ReasoningSplit rs(think);
  rs.feed(text, reasoning, content);
  rs.finish(reasoning, content);
}

json usage_of(const Job& job) {
  const auto prompt = static_cast<int64_t>(job.prompt.size());
  return {{"prompt_tokens", prompt},
          {"completion_tokens", job.stats.generated_tokens},
          {"total_tokens", prompt + job.stats.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", job.cached_tokens}}}};
}

class Api {
 public:
  Api(Engine* engine, const ServerOptions& o, Scheduler* scheduler)
      : engine_(engine), o_(o), scheduler_(scheduler) {
    ctx_ = o.ctx_size > 0 ? o.ctx_size : engine->info().max_positions;
    if (ctx_ <= 0) ctx_ = 4096;
    defaults_ = engine->default_generate_options();
    static_cast<ModelRunOptions&>(defaults_) = o.run;
  }

  bool authorized(const httplib::Request& req, httplib::Response& res) const {
    if (o_.api_key.empty()) return true;
    if (req.get_header_value("Authorization") == "Bearer " + o_.api_key) return true;
    send_error(res, error_of(401, "authentication_error",
                             "a valid API key is required "
                             "(Authorization: Bearer KEY)",
                             "invalid_api_key"));
    return false;
  }

  void models(httplib::Response& res) const {
    json m = {{"id", o_.model_name},
              {"object", "model"},
              {"created", started_},
              {"owned_by", "hanpu"},
              {"max_model_len", ctx_}};
    res.set_content(json{{"object", "list"}, {"data", json::array({m})}}.dump(
                        -1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  }

  void tokenize(const httplib::Request& req, httplib::Response& res) const {
    json j;
    const Status st = parse_json(req.body, "request body", &j);
    if (!st.ok() || !j.is_object() || !j.contains("content") || !j["content"].is_string())
      return send_error(res, error_of(400, "invalid_request_error",
                                      st.ok() ? "'content' must be a string" : st.message()));
    std::vector<int> ids;
    const Status t = engine_->tokenize(j["content"].get<std::string>(), &ids);
    if (!t.ok()) return send_error(res, error_of(400, "invalid_request_error", t.message()));
    res.set_content(json{{"tokens", ids}}.dump(), "application/json");
  }

  void detokenize(const httplib::Request& req, httplib::Response& res) const {
    json j;
    const Status st = parse_json(req.body, "request body", &j);
    const int vocab = engine_->info().vocab;
    std::string text;
    bool ok = st.ok() && j.is_object() && j.contains("tokens") && j["tokens"].is_array();
    if (ok) {
      for (const json& t : j["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab) {
          ok = false;
          break;
        }
        text += engine_->token_text(static_cast<int>(t.get<int64_t>()));
      }
    }
    if (!ok)
      return send_error(res, error_of(400, "invalid_request_error",
                                      st.ok() ? fmt::format("'tokens' must be an array of ids "
                                                            "in [0, {})",
                                                            vocab)
                                              : st.message()));
    res.set_content(json{{"content", text}}.dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  }

  void metrics(httplib::Response& res) const {
    const SchedulerMetrics m = scheduler_->metrics();
    std::string out;
    const auto add = [&](const char* name, const char* type, const char* help, double v) {
      out += fmt::format("# HELP hanpu_{0} {1}\n# TYPE hanpu_{0} {2}\nhanpu_{0} {3}\n", name, help,
                         type, v);
    };
    add("requests_total", "counter", "Requests finished (any outcome).", m.requests);
    add("requests_failed_total", "counter", "Requests the engine failed.", m.failed);
    add("requests_cancelled_total", "counter", "Requests whose client left.", m.cancelled);
    add("prompt_tokens_total", "counter", "Prompt tokens prefilled.", m.prompt_tokens);
    add("generation_tokens_total", "counter", "Tokens generated.", m.generated_tokens);
    add("queue_depth", "gauge", "Requests waiting for a slot.", m.queued);
    add("running_sequences", "gauge", "Sequences being run.", m.running);
    add("prefill_tokens_per_second", "gauge", "Prompt tokens per second of prefill time.",
        m.prefill_ms > 0 ? m.prompt_tokens / (m.prefill_ms / 1e3) : 0);
    add("decode_tokens_per_second", "gauge", "Generated tokens per second of decode time.",
        m.decode_ms > 0 ? m.generated_tokens / (m.decode_ms / 1e3) : 0);
    add("prefix_cache_hits_total", "counter", "Requests that resumed from a cached prefix.",
        m.prefix_hits);
    add("prefix_cache_bytes", "gauge", "Bytes the prefix cache holds.", m.prefix_bytes);
    add("prefix_cache_entries", "gauge", "Checkpoints the prefix cache holds.", m.prefix_entries);
    add("prefix_cache_warm_tokens_total", "counter",
        "Tokens of chats' next-turn prefixes prefilled after their replies.", m.warm_tokens);
    add("prompt_tokens_cached_total", "counter", "Prompt tokens resumed from the prefix cache.",
        m.cached_tokens);
    res.set_content(out, "text/plain; version=0.0.4");
  }

  void completion(const httplib::Request& req, httplib::Response& res, bool chat) {
    ApiRequest r;
    ApiError err;
    if (!parse_api_request(req.body, chat, defaults_, &r, &err)) return send_error(res, err);
    if (!r.model.empty() && r.model != o_.model_name)
      return send_error(res, error_of(404, "invalid_request_error",
                                      fmt::format("the model '{}' does not exist; this server "
                                                  "serves '{}'",
                                                  r.model, o_.model_name),
                                      "model_not_found"));
    auto job = std::make_shared<Job>();
    std::string prompt_text;
    Status st = Status::Ok();
    if (chat) {
      st = engine_->apply_chat_template(r.messages, r.chat_options, &prompt_text);
      if (st.ok()) st = engine_->tokenize(prompt_text, &job->prompt);
    } else if (!r.prompt_ids.empty()) {
      job->prompt = r.prompt_ids;
      for (int id : job->prompt) {
        if (id >= engine_->info().vocab) {
          st = Status::Error(fmt::format("'prompt' holds token id {}, outside the vocabulary of {}",
                                         id, engine_->info().vocab));
          break;
        }
      }
    } else {
      st = engine_->tokenize(r.prompt, &job->prompt);
    }
    if (!st.ok()) return send_error(res, error_of(400, "invalid_request_error", st.message()));
    if (job->prompt.empty())
      return send_error(res, error_of(400, "invalid_request_error", "the prompt has no tokens"));
    const int64_t n = static_cast<int64_t>(job->prompt.size());
    if (n >= ctx_ || (r.max_tokens && n + *r.max_tokens > ctx_)) {
      ApiError e = error_of(
          400, "invalid_request_error",
          fmt::format("this model's context is {} tokens; the request has {} "
                      "prompt tokens{}",
                      ctx_, n,
                      r.max_tokens ? fmt::format(" and max_tokens {}", *r.max_tokens) : ""),
          "context_length_exceeded");
      e.param = "messages";
      return send_error(res, e);
    }
    job->options = r.gen;
    job->options.max_tokens = static_cast<int>(r.max_tokens ? *r.max_tokens : ctx_ - n);
    const bool split = chat && o_.reasoning_split;
    const bool think = split && prompt_opens_thinking(prompt_text);
    if (chat) job->next_turn = next_turn_tokens(r, split, think);
    if (!scheduler_->submit(job))
      return send_error(res, error_of(503, "server_error",
                                      "the server is busy (its queue is full) or stopping; retry",
                                      "server_busy"));
    const std::string id = fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", next_id_++);
    if (r.stream) return stream(res, job, r, id, split, think);
    {
      // Waits for the whole reply, looking for a client that left meanwhile (client_watch.h):
      // its job is cancelled, and there is no one to answer.
      const ClientWatch watch(req.remote_addr, req.remote_port, req.local_addr, req.local_port);
      std::unique_lock<std::mutex> lock(job->mu);
      while (!job->changed.wait_for(lock, std::chrono::milliseconds(100),
                                    [&] { return job->finished; })) {
        if (watch.gone()) {
          job->cancelled = true;
          return;
        }
      }
    }
    std::unique_lock<std::mutex> lock(job->mu);
    if (!job->error.ok())
      return send_error(res, error_of(500, "server_error", job->error.message()));
    json body = {{"id", id},
                 {"created", now_seconds()},
                 {"model", o_.model_name},
                 {"usage", usage_of(*job)}};
    const std::string reason = finish_reason(job->stats);
    if (chat) {
      std::string reasoning, content;
      split_reply(job->text, split, think, &reasoning, &content);
      json message = {{"role", "assistant"}, {"content", content}};
      if (split && !reasoning.empty()) message["reasoning_content"] = reasoning;
      body["object"] = "chat.completion";
      body["choices"] = json::array(
          {{{"index", 0},
            {"message", message},
            {"logprobs", r.gen.logprobs ? chat_logprobs(*engine_, job->tokens) : json(nullptr)},
            {"finish_reason", reason}}});
    } else {
      body["object"] = "text_completion";
      body["choices"] =
          json::array({{{"index", 0},
                        {"text", job->text},
                        {"logprobs", r.gen.logprobs ? completion_logprobs(*engine_, job->tokens, 0)
                                                    : json(nullptr)},
                        {"finish_reason", reason}}});
    }
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
  }

 private:
  // Job::next_turn for a chat request: the tokens every next turn of this chat starts with,
  // given the reply. The template renders the messages, the reply's content as a past
  // assistant message, and a user message after it; the tokens two different user messages
  // have in common are the next turn's prefix, whatever the template does to a past reply and
  // however the tokenizer joins text across the cut. Empty (no warm-up) when that prefix
  // already fills the context (--ctx-size).
  std::function<std::vector<int>(const std::string&)> next_turn_tokens(const ApiRequest& r,
                                                                       bool split, bool think) {
    return [engine = engine_, messages = r.messages, options = r.chat_options, split, think,
            ctx = ctx_](const std::string& reply) {
      std::string reasoning, content;
      split_reply(reply, split, think, &reasoning, &content);
      ChatOptions o = options;
      o.add_generation_prompt = false;
      std::vector<int> with[2];
      for (int i = 0; i < 2; ++i) {
        std::vector<ChatMessage> m = messages;
        m.push_back({"assistant", content});
        m.push_back({"user", i == 0 ? "A" : "B"});
        std::string text;
        if (!engine->apply_chat_template(m, o, &text).ok() ||
            !engine->tokenize(text, &with[i]).ok())
          return std::vector<int>();
      }
      const auto diverge =
          std::mismatch(with[0].begin(), with[0].end(), with[1].begin(), with[1].end());
      // No warm-up past the context: a next turn that long would be refused anyway.
      if (diverge.first - with[0].begin() >= ctx) return std::vector<int>();
      return std::vector<int>(with[0].begin(), diverge.first);
    };
  }

  // Server-sent events: one chunk per batch of new text, then the finish reason, the usage
  // (stream_options.include_usage) and "data: [DONE]". A write that fails (the client left)
  // cancels the job.
  void stream(httplib::Response& res, std::shared_ptr<Job> job, const ApiRequest& r,
              const std::string& id, bool split, bool think) {
    const bool chat = r.chat;
    const json head = {{"id", id},
                       {"object", chat ? "chat.completion.chunk" : "text_completion"},
                       {"created", now_seconds()},
                       {"model", o_.model_name}};
    auto rs = std::make_shared<ReasoningSplit>(think);
    auto first = std::make_shared<bool>(true);
    auto offset = std::make_shared<size_t>(0);
    Engine* engine = engine_;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [=](size_t, httplib::DataSink& sink) {
          const auto send = [&](const json& j) {
            const std::string line =
                "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
            return sink.write(line.data(), line.size());
          };
          const auto chunk = [&](const json& delta_or_text, const json& logprobs,
                                 const json& reason) {
            json c = head;
            json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", reason}};
            if (chat)
              choice["delta"] = delta_or_text;
            else
              choice["text"] = delta_or_text;
            c["choices"] = json::array({choice});
            return send(c);
          };
          std::string text;
          std::vector<GeneratedToken> tokens;
          bool finished = false;
          Status error = Status::Ok();
          json usage;
          GenerateStats stats;
          {
            std::unique_lock<std::mutex> lock(job->mu);
            job->changed.wait_for(lock, std::chrono::milliseconds(100), [&] {
              return job->finished || !job->text.empty() || !job->tokens.empty();
            });
            text.swap(job->text);
            tokens.swap(job->tokens);
            finished = job->finished;
            error = job->error;
            stats = job->stats;
            if (finished) usage = usage_of(*job);
          }
          bool ok = true;
          if (chat && *first) {
            ok = chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
            *first = false;
          }
          if (finished && !error.ok()) {
            ok = ok && send(json::parse(error_of(500, "server_error", error.message()).json()));
          }
          std::string reasoning, content;
          if (split) {
            rs->feed(text, &reasoning, &content);
            if (finished) rs->finish(&reasoning, &content);
          } else {
            content = text;
          }
          const json lp = !r.gen.logprobs || tokens.empty() ? json(nullptr)
                          : chat                            ? chat_logprobs(*engine, tokens)
                                 : completion_logprobs(*engine, tokens, *offset);
          *offset += content.size();
          if (ok && (!reasoning.empty() || !content.empty() || !lp.is_null())) {
            json delta = json::object();
            if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
            if (!content.empty() || reasoning.empty()) delta["content"] = content;
            ok = chunk(chat ? delta : json(content), lp, nullptr);
          }
          if (ok && finished && error.ok()) {
            ok = chunk(chat ? json::object() : json(""), nullptr, finish_reason(stats));
            if (ok && r.include_usage) {
              json u = head;
              u["choices"] = json::array();
              u["usage"] = usage;
              ok = send(u);
            }
          }
          if (ok && finished) {
            const std::string done = "data: [DONE]\n\n";
            ok = sink.write(done.data(), done.size());
            if (ok) sink.done();
          }
          if (!ok || !sink.is_writable()) {
            job->cancelled = true;  // the client left; the scheduler drops the sequence
            return false;
          }
          return true;
        },
        [job](bool) { job->cancelled = true; });  // a no-op once the job has finished
  }

  Engine* engine_;
  const ServerOptions& o_;
  Scheduler* scheduler_;
  int64_t ctx_ = 0;
  GenerateOptions defaults_;
  int64_t started_ = now_seconds();
  std::atomic<int64_t> next_id_{1};
};

}  // namespace

Status serve(Engine* engine, const ServerOptions& o, const std::atomic<bool>* stop,
             const std::function<void(int)>& on_listening) {
  if (o.scheduler.parallel < 1 || o.scheduler.queue < 0)
    return Status::Error(fmt::format("--parallel {} must be >= 1 and the queue {} >= 0",
                                     o.scheduler.parallel, o.scheduler.queue));
  Scheduler scheduler(engine, o.scheduler);
  Api api(engine, o, &scheduler);
  httplib::Server svr;
  // A thread per connection in flight: every running and queued request holds one while it
  // waits for its text, and a few more answer /health and /metrics meanwhile.
  const size_t threads = static_cast<size_t>(o.scheduler.parallel + o.scheduler.queue + 4);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(static_cast<size_t>(o.max_body_bytes));
  // SO_REUSEADDR: a server started right after another one on the port binds over the
  // connections that one left in TIME_WAIT (httplib's default, SO_REUSEPORT alone, does not).
  svr.set_socket_options([](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int s = res.status;
    send_error(res, error_of(s,
                             s == 413   ? "invalid_request_error"
                             : s == 404 ? "invalid_request_error"
                                        : "server_error",
                             s == 413   ? "the request body is too large"
                             : s == 404 ? "no such route"
                                        : fmt::format("HTTP {}", s)));
  });
  // Browsers' chat UIs call from another origin: allow it, as llama-server does (an API key,
  // where set, still guards every route that runs the model).
  svr.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
  svr.Options(R"(/.*)", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    res.status = 204;
  });
  svr.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  svr.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) { api.metrics(res); });
  svr.Get("/v1/models", [&](const httplib::Request& req, httplib::Response& res) {
    if (api.authorized(req, res)) api.models(res);
  });
  svr.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    if (api.authorized(req, res)) api.completion(req, res, true);
  });
  svr.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
    if (api.authorized(req, res)) api.completion(req, res, false);
  });
  svr.Post("/tokenize", [&](const httplib::Request& req, httplib::Response& res) {
    if (api.authorized(req, res)) api.tokenize(req, res);
  });
  svr.Post("/detokenize", [&](const httplib::Request& req, httplib::Response& res) {
    if (api.authorized(req, res)) api.detokenize(req, res);
  });
  const int port =
      o.port == 0 ? svr.bind_to_any_port(o.host) : (svr.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0)
    return Status::Error(
        fmt::format("cannot listen on {}:{} (in use, or not an address here)", o.host, o.port));
  std::atomic<bool> ended{false};
  std::thread watcher([&] {
    while (!stop->load() && !ended.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    svr.stop();
  });
  if (on_listening) on_listening(port);
  const bool listened = svr.listen_after_bind();
  ended = true;
  watcher.join();
  scheduler.drain();  // what was admitted finishes; nothing new comes in
  if (!listened && !stop->load()) return Status::Error("the server stopped listening");
  return Status::Ok();
}

}  // namespace hanpu::serve
