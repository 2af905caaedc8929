// `hanpu serve` (see serve_cmd.h).
#include "serve_cmd.h"

#include <atomic>
#include <csignal>
#include <cstdio>

#include <fmt/format.h>

#include "cli_engine.h"
#include "flag_checks.h"
#include "run_flags.h"

namespace hanpu::cli {

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop = true; }
}  // namespace

void add_serve_options(CLI::App& app, ServeCmdOptions& o) {
  serve::ServerOptions& s = o.server;
  app.add_option("-m,--model", o.model,
                 "checkpoint folder or .gguf (default: the tiny model shipped with hanpu)");
  app.add_option("--host", s.host, "address to listen on (0.0.0.0: every interface)")
      ->capture_default_str();
  app.add_option("--port", s.port, "TCP port (0: any free one, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--api-key", s.api_key, "ask clients for this key (Authorization: Bearer KEY)");
  app.add_option("--parallel", s.scheduler.parallel, "sequences run at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--queue", s.scheduler.queue, "requests waiting beyond --parallel; more get 503")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--cache-ram", o.cache_ram_mib,
                 "MiB the prefix cache may hold (checkpointed sequences; 0: no cache)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app.add_option("--cache-every", s.scheduler.cache_every,
                 "a prefix-cache checkpoint every N prompt tokens, besides each message's end and "
                 "each prompt's and reply's (0: only those)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("-c,--ctx-size", s.ctx_size,
                 "tokens a sequence may hold, prompt and reply (0: the model's trained context)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-body", s.max_body_bytes, "largest request body in bytes (larger: 413)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 30));
  app.add_option("--alias", o.alias, "the model's name in the API (default: the checkpoint's)");
  app.add_option("--chat-template", o.chat_template_file,
                 "a Jinja chat template file in place of the checkpoint's");
  app.add_flag("!--no-reasoning-split", s.reasoning_split,
               "leave <think>...</think> in the content (default: reasoning_content apart, as "
               "vLLM's qwen3 reasoning parser)");
  s.run.prefill_chunk =
      256;  // kept small whatever run's default: running replies wait for each chunk
  add_model_run_flags(app, s.run);
  app.add_option("--weights", o.weights,
                 "hold projections as auto, f32, bf16, f16, or a block type to quantize to at "
                 "load (q4_k, q8_0, ...)")
      ->capture_default_str()
      ->check(weight_names());
  add_verbosity_flags(app, o.verbosity);
}

int run_serve(const ServeCmdOptions& o) {
  apply_verbosity(o.verbosity);
  std::unique_ptr<Engine> engine;
  if (const int rc = load_cli_engine(o.model, "", 0, o.weights, &engine); rc != 0) return rc;
  if (!o.chat_template_file.empty()) {
    const Status st = engine->set_chat_template_file(o.chat_template_file);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 2;
    }
  }
  serve::ServerOptions s = o.server;
  s.model_name = o.alias.empty() ? engine->info().name : o.alias;
  s.scheduler.cache_bytes = o.cache_ram_mib << 20;
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a client that leaves is a failed write, not the end
  const Status st = serve::serve(engine.get(), s, &g_stop, [&](int port) {
    std::fprintf(stderr, "serving %s on http://%s:%d/v1 (%d in parallel)\n", s.model_name.c_str(),
                 s.host.c_str(), port, s.scheduler.parallel);
    std::fflush(stderr);
  });
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "stopped: every request in flight was answered\n");
  return 0;
}

}  // namespace hanpu::cli
