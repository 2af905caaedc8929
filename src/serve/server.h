// hanpu serve: an OpenAI-compatible HTTP server (cpp-httplib) over one Engine and its
// Scheduler. Routes: POST /v1/chat/completions and /v1/completions (streaming over SSE or
// not), GET /v1/models, GET /health, GET /metrics (Prometheus text), POST /tokenize and
// /detokenize (llama-server's bodies). Errors are OpenAI error objects.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "hanpu/engine.h"
#include "serve/scheduler.h"

namespace hanpu::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port (see on_listening)
  std::string api_key;               // empty: no key asked
  int64_t ctx_size = 0;              // tokens a sequence may hold; 0: the model's trained context
  int64_t max_body_bytes = 8 << 20;  // larger request bodies get 413
  std::string model_name;            // what /v1/models lists and requests must name
  SchedulerOptions scheduler;
  ModelRunOptions run;          // how each request's model runs (prefill chunk, KV cache...)
  bool reasoning_split = true;  // reasoning_content apart from content (qwen3's parser)
};

// Serves until `stop` turns true (checked a few times a second), then finishes the requests
// in flight and returns. on_listening(port) once the socket is bound. An error if it cannot
// bind or the options are wrong.
Status serve(Engine* engine, const ServerOptions& options, const std::atomic<bool>* stop,
             const std::function<void(int)>& on_listening);

}  // namespace hanpu::serve
