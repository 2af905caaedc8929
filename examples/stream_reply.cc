// Load a checkpoint, apply its chat template to one question and stream the reply to stdout.
//   stream_reply MODEL_DIR_OR_GGUF "question" [max_tokens]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "hanpu/engine.h"
#include "hanpu/version.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL \"question\" [max_tokens]   (hanpu %s)\n", argv[0],
                 HANPU_VERSION);
    return 2;
  }
  std::unique_ptr<hanpu::Engine> engine;
  hanpu::Status s = hanpu::Engine::load(argv[1], &engine);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  std::vector<int> prompt;
  s = engine->tokenize_chat({{"user", argv[2]}}, hanpu::ChatOptions{}, &prompt);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  // The checkpoint's own sampling defaults (generation_config.json), a bounded reply.
  hanpu::GenerateOptions options = engine->default_generate_options();
  options.max_tokens = argc > 3 ? std::atoi(argv[3]) : 128;
  hanpu::GenerateStats stats;
  s = engine->generate(
      prompt, options,
      [](std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      },
      nullptr, &stats);
  if (!s.ok()) {
    std::fprintf(stderr, "\nerror: %s\n", s.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "\n[%lld tokens, %.1f tokens/s, stopped: %s]\n",
               static_cast<long long>(stats.generated_tokens),
               stats.decode_ms > 0 ? 1000.0 * stats.generated_tokens / stats.decode_ms : 0.0,
               stats.stop_reason.c_str());
  return 0;
}
