// `hanpu serve`: an OpenAI-compatible HTTP server over a checkpoint (src/serve).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli_output.h"
#include "serve/server.h"

namespace hanpu::cli {

struct ServeCmdOptions {
  std::string model;  // checkpoint folder or .gguf; empty: the shipped model
  std::string weights = "auto";
  std::string chat_template_file;
  std::string alias;  // the model's name in the API; empty: the checkpoint's
  int64_t cache_ram_mib = 1024;
  VerbosityFlags verbosity;
  serve::ServerOptions server;
};

void add_serve_options(CLI::App& app, ServeCmdOptions& o);
int run_serve(const ServeCmdOptions& o);

}  // namespace hanpu::cli
