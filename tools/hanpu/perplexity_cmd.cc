// `hanpu perplexity` (see perplexity_cmd.h).
#include "perplexity_cmd.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_engine.h"
#include "cli_output.h"
#include "flag_checks.h"
#include "run_flags.h"
#include "kl_report.h"

namespace hanpu::cli {

void add_perplexity_options(CLI::App& app, PerplexityCmdOptions& o) {
  app.add_option("-m,--model", o.model,
                 "checkpoint folder or .gguf (default: the tiny model shipped with hanpu)");
  app.add_option("-f,--file", o.file,
                 "the text (UTF-8), e.g. wikitext-2-raw's wiki.test.raw (-: standard input); "
                 "not with --kl-divergence, which runs the base file's tokens")
      ->check(file_or_stdin());
  app.add_option("--kl-divergence-base", o.kl_base,
                 "save every scored position's log-probabilities to FILE (llama.cpp's format), "
                 "or with --kl-divergence read them from it");
  app.add_flag("--kl-divergence", o.kl_divergence,
               "compare this model with the --kl-divergence-base file (a quant against its base "
               "model): KL divergence, PPL ratio, top-token agreement, as llama-perplexity");
  PerplexityOptions& r = o.run;
  app.add_option("-c,--context,--ctx-size", r.context,
                 "tokens per chunk; each chunk's second half is scored (llama.cpp's -c)")
      ->capture_default_str()
      ->check(token_range(1));
  app.add_option("--chunks", r.max_chunks, "score at most this many chunks (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  add_model_run_flags(app, r);
  app.add_option(
         "--weights", o.weights,
         "hold projections as auto (the checkpoint's dtype, a quantized GGUF's own "
         "blocks), f32, bf16, f16, or a block type to quantize to at load (q4_k, q8_0, ...)")
      ->capture_default_str()
      ->check(weight_names());
  app.add_flag("--json", o.json, "stdout: the result as one JSON object (no running figures)");
  add_verbosity_flags(app, o.verbosity);
}

int run_perplexity(const PerplexityCmdOptions& o) {
  apply_verbosity(o.verbosity);
  if (o.kl_divergence ? o.kl_base.empty() || !o.file.empty() : o.file.empty()) {
    std::fprintf(stderr, "error: %s\n",
                 o.kl_divergence ? "--kl-divergence needs --kl-divergence-base FILE and no --file "
                                   "(it runs the tokens saved in FILE)"
                                 : "--file is required (the text to score)");
    return 2;
  }
  std::unique_ptr<Engine> engine;
  if (const int rc = load_cli_engine(o.model, "", 0, o.weights, &engine); rc != 0) return rc;
  if (o.kl_divergence) return run_kl_divergence(*engine, o);
  if (!engine->has_tokenizer()) {
    std::fprintf(
        stderr,
        "error: perplexity needs the checkpoint's tokenizer (tokenizer.json or a GGUF's)\n");
    return 2;
  }
  std::string text;
  Status st = read_text_file("--file", o.file, &text);
  std::vector<int> tokens;
  const auto t0 = std::chrono::steady_clock::now();
  if (st.ok()) st = engine->tokenize(text, &tokens);
  const double tokenize_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  const PerplexityOptions& r = o.run;
  const int64_t whole = static_cast<int64_t>(tokens.size()) / r.context;
  const int64_t chunks = r.max_chunks > 0 ? std::min<int64_t>(whole, r.max_chunks) : whole;
  if (chunks > 0) {
    note(
        "text: {} bytes, {} tokens (tokenized in {:.1f} ms); {} chunks of {} tokens, positions "
        "{}-{} of each scored "
        "(llama.cpp's method)\n",
        text.size(), tokens.size(), tokenize_ms, chunks, r.context, r.context / 2, r.context - 2);
  }
  const EngineInfo info = engine->info();
  if (info.max_positions > 0 && r.context > info.max_positions) {  // as `hanpu run` warns
    std::fprintf(stderr,
                 "warning: a context of %d tokens is longer than the model was trained for "
                 "(max_position_embeddings %lld)\n",
                 r.context, static_cast<long long>(info.max_positions));
  }
  bool printed = false;  // a line of running figures, to end
  const auto on_chunk = [&](const PerplexityStats& s) {
    if (o.json) return;
    if (s.chunks == 1 && s.chunks_total > 1) {  // llama.cpp's "seconds per pass - ETA"
      const double per_chunk_s = s.ms / 1e3;
      note("{:.2f} s per chunk, about {:.0f} s for all {}\n", per_chunk_s,
           per_chunk_s * s.chunks_total, s.chunks_total);
    }
    note("[{}]{:.4f},", s.chunks, s.ppl());  // running figures are progress: stderr
    printed = verbosity() != Verbosity::kQuiet;
  };
  PerplexityStats s;
  PerplexityOptions run = r;
  run.save_logprobs = o.kl_base;
  if (!o.kl_base.empty())
    note("saving every scored position's log-probabilities to {}\n", o.kl_base);
  st = engine->perplexity(tokens, run, on_chunk, &s);
  if (printed) note("\n");
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  const TimeSplit& t = s.split;
  if (o.json) {
    const nlohmann::json j{{"model", info.name},
                           {"file", o.file},
                           {"text_tokens", s.text_tokens},
                           {"context", r.context},
                           {"chunks", s.chunks},
                           {"scored_tokens", s.scored_tokens},
                           {"ppl", s.ppl()},
                           {"ppl_error", s.ppl_error()},
                           {"nll_mean", s.nll_sum / static_cast<double>(s.scored_tokens)},
                           {"ms", s.ms},
                           {"tokens_per_s", s.tokens_per_s()},
                           {"la", r.la_strategy}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", s.ppl(), s.ppl_error());
  const double f = s.ms > 0 ? 100 / s.ms : 0;
  std::fflush(stdout);
  note(
      "--\n{} chunks, {} tokens scored, in {:.1f} s = {:.1f} tokens/s through the model (LA layers "
      "{:.0f}%, "
      "attention {:.0f}%, MLP {:.0f}%, head and rest {:.0f}%)\n",
      s.chunks, s.scored_tokens, s.ms / 1e3, s.tokens_per_s(), f * t.la_ms, f * t.attn_ms,
      f * t.mlp_ms, f * (s.ms - t.la_ms - t.attn_ms - t.mlp_ms));
  return 0;
}

}  // namespace hanpu::cli
