// `hanpu run`: the main job — load a model (or the one shipped with the repo), prefill a
// prompt, stream generated text, print throughput and where prefill time went.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace hanpu::cli {

struct RunOptions {
  std::string model;      // checkpoint folder; empty: --synthetic or the shipped model
  std::string synthetic;  // a synthetic model name
  std::string prompt = "Hybrid models interleave linear attention";
  int prompt_tokens = 0;  // synthetic: random prompt of this many tokens (default 512)
  bool chat = false;
  int max_tokens = 32;
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
  std::string la = "hanpu";
  std::string placement = "balanced";
  int threads = 0;
  int prefill_chunk = 1024;
  std::string resume_state, save_state;
  std::string weights = "auto";
  bool json = false;
};

void add_run_options(CLI::App& app, RunOptions& o);
int run_model(const RunOptions& o);

}  // namespace hanpu::cli
