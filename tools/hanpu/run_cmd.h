// `hanpu run`: the main job — load a model (or the one shipped with the repo), prefill a
// prompt, stream generated text, print throughput and where prefill time went.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "cli_output.h"
#include "hanpu/engine.h"

namespace hanpu::cli {

struct RunOptions {
  std::string model;      // checkpoint folder or .gguf; empty: --synthetic or the shipped model
  std::string synthetic;  // a synthetic model name
  std::string prompt = "Hybrid models interleave linear attention";
  std::string prompt_file;  // the prompt's text from this file instead (a long document)
  int prompt_tokens = 0;    // synthetic: random prompt of this many tokens (default 512)
  std::string weights = "auto";
  bool json = false;
  // --chat: the prompt becomes a user turn (after --system, if given) in the checkpoint's
  // chat template; --chat-template replaces that template; --no-think sets enable_thinking
  // false; -v shows the rendered text.
  bool chat = false;
  std::string system;
  std::string chat_template_file;
  bool no_think = false;
  // --interactive: a conversation, a line of stdin per turn (chat_loop.h); --prompt, if
  // given, is the first turn, and --max-tokens bounds each reply (1024 unless given).
  bool interactive = false;
  bool prompt_given = false, max_tokens_given = false;
  std::vector<std::string>
      stop_strings;  // --stop, as written (escapes turned into GenerateOptions::stop_strings)
  bool ignore_eos = false;
  int ctx_size = 0;  // -c: tokens of context (0: the model's trained context)
  VerbosityFlags verbosity;
  GenerateOptions gen = [] {  // the flags bind straight to the engine's options
    GenerateOptions g;
    g.max_tokens = 32;
    return g;
  }();
  // Sampling flags given on the command line; the others take the checkpoint's defaults
  // (Engine::default_generate_options), as transformers' generate(**kwargs) does.
  struct SamplingGiven {
    bool temperature = false, top_k = false, top_p = false, min_p = false,
         repetition_penalty = false;
  } sampling_given;
};

void add_run_options(CLI::App& app, RunOptions& o);
int run_model(const RunOptions& o);

}  // namespace hanpu::cli
