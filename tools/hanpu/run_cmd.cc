// `hanpu run` (see run_cmd.h).
#include "run_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "hanpu/attn.h"
#include "hanpu/engine.h"
#include "hanpu/la.h"
#include "cpu/nn/linear.h"
#include "hanpu/machine.h"
#include "chat_loop.h"
#include "cli_output.h"
#include "cli_engine.h"
#include "flag_checks.h"
#include "run_flags.h"
#include "model/text_stream.h"

namespace hanpu::cli {

namespace {

// "LA layers 42%, attention 10%, MLP 46%, rest 1%; the LA kernel alone 6%, attention kernel 1%":
// shares of total_ms; `other` names the split's other_ms.
std::string describe_split(const TimeSplit& t, double total_ms, const char* other) {
  const double f = total_ms > 0 ? 100 / total_ms : 0;
  return fmt::format(
      "LA layers {:.0f}%, attention {:.0f}%, MLP {:.0f}%, {} {:.0f}%; the LA kernel alone {:.0f}%, "
      "attention kernel {:.0f}%",
      f * t.la_ms, f * t.attn_ms, f * t.mlp_ms, other, f * t.other_ms, f * t.la_kernel_ms,
      f * t.attn_kernel_ms);
}

// "sampling: temperature 0.7, top-k 20, top-p 0.8 (generation_config.json ...; --temperature 0
// for greedy)" or "sampling: greedy": what the run will do and where it came from.
std::string describe_sampling(const GenerateOptions& g, const RunOptions::SamplingGiven& given,
                              const std::string& origin) {
  std::string what = g.temperature > 0
                         ? fmt::format("temperature {:g}, top-k {}, top-p {:g}, seed {}",
                                       g.temperature, g.top_k, g.top_p, g.seed)
                         : std::string("greedy");
  if (g.temperature > 0 && g.min_p > 0) what += fmt::format(", min-p {:g}", g.min_p);
  if (g.repetition_penalty != 1.0f)
    what += fmt::format(", repetition penalty {:g}", g.repetition_penalty);
  if (g.presence_penalty != 0.0f)
    what += fmt::format(", presence penalty {:g}", g.presence_penalty);
  if (g.frequency_penalty != 0.0f)
    what += fmt::format(", frequency penalty {:g}", g.frequency_penalty);
  const bool all_given =
      given.temperature && given.top_k && given.top_p && given.min_p && given.repetition_penalty;
  std::string from;
  if (!origin.empty() && !all_given) {
    from = fmt::format(
        " ({} {}{})",
        given.temperature || given.top_k || given.top_p || given.min_p || given.repetition_penalty
            ? "flags not given here from"
            : "from",
        origin, g.temperature > 0 ? "; --temperature 0 for greedy" : "");
  }
  return "sampling: " + what + from;
}

// Whether two descriptors write to one file (stdout and stderr both redirected to it).
bool same_file(int a, int b) {
  struct stat sa, sb;
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// A float flag as the decimal it was written as (0.8, not 0.800000011920929) for JSON.
double decimal(float v) { return std::stod(fmt::format("{}", v)); }

// "stop tokens: 0 <|endoftext|>, 2 <|im_end|>"; control bytes in a token's text as \xNN, so
// a newline token does not break the line.
std::string describe_stop_tokens(const Engine& engine, const std::vector<int>& ids) {
  std::string out = "stop tokens:";
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string text;
    for (const char ch : engine.token_text(ids[i])) {
      const auto byte = static_cast<unsigned char>(ch);
      text += byte < 0x20 || byte == 0x7f ? fmt::format("\\x{:02x}", byte) : std::string(1, ch);
    }
    out += fmt::format("{} {}{}", i ? "," : "", ids[i], text.empty() ? "" : " " + text);
  }
  return out;
}

}  // namespace

void add_run_options(CLI::App& app, RunOptions& o) {
  app.add_option("-m,--model", o.model,
                 "checkpoint folder (config.json, *.safetensors, tokenizer.json)");
  app.add_option("--synthetic", o.synthetic,
                 fmt::format("random-weight model of a real shape: {}",
                             fmt::join(Engine::synthetic_models(), ", ")))
      ->excludes(app.get_option("--model"));
  app.add_option("-p,--prompt", o.prompt, "prompt text")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.prompt_given = true; });
  app.add_option(
         "-f,--prompt-file,--file", o.prompt_file,
         "read the prompt text (UTF-8) from this file instead of --prompt (-: standard input)")
      ->check(file_or_stdin());
  app.add_option("--prompt-tokens", o.prompt_tokens,
                 "synthetic models: random prompt of N tokens (default 512)")
      ->check(token_range(1));
  GenerateOptions& g = o.gen;
  app.add_flag(
      "--chat", o.chat,
      "the prompt as a user turn in the checkpoint's chat template (Jinja; ChatML if it has none)");
  app.add_option("--system", o.system, "--chat: a system message before the prompt");
  app.add_option("--chat-template", o.chat_template_file,
                 "--chat: use this Jinja template file instead of the checkpoint's")
      ->check(CLI::ExistingFile);
  app.add_flag("--no-think", o.no_think,
               "--chat: enable_thinking = false (Qwen3/3.5: answer without reasoning)");
  app.add_option("-n,--max-tokens,--n-predict", g.max_tokens,
                 "tokens to generate (--interactive: per reply, default 1024)")
      ->capture_default_str()
      ->check(token_range(0))
      ->each([&o](const std::string&) { o.max_tokens_given = true; });
  app.add_flag(
      "-i,--interactive", o.interactive,
      "a conversation: each line of input is a user turn in the chat template, each reply "
      "streamed; "
      "the sequence stays in memory between turns (end a line with \\ to go on, /exit to stop)");
  // Sampling: unless given here, what the checkpoint's generation_config.json says (greedy
  // where it has none or says do_sample false).
  auto& given = o.sampling_given;
  app.add_option("--temperature,--temp", g.temperature,
                 "0: greedy (default: the checkpoint's generation_config.json, else 0)")
      ->check(CLI::Range(0.0f, 1e6f))
      ->each([&given](const std::string&) { given.temperature = true; });
  app.add_option("--top-k", g.top_k, "0: off (default: the checkpoint's, else 0)")
      ->check(CLI::Range(0, kMaxVocabFlag))
      ->each([&given](const std::string&) { given.top_k = true; });
  app.add_option("--top-p", g.top_p, "1: off (default: the checkpoint's, else 1)")
      ->check(CLI::Range(0.0f, 1.0f))
      ->each([&given](const std::string&) { given.top_p = true; });
  app.add_option("--min-p", g.min_p,
                 "0: off; drops tokens below min-p x the top token's probability (default: the "
                 "checkpoint's, else 0)")
      ->check(CLI::Range(0.0f, 1.0f))
      ->each([&given](const std::string&) { given.min_p = true; });
  app.add_option(
         "--repetition-penalty,--repeat-penalty", g.repetition_penalty,
         "> 1 discourages tokens of the prompt and output, as transformers' repetition_penalty "
         "(default: the checkpoint's, else 1: off)")
      ->check(CLI::Range(1e-3f, 1e3f))
      ->each([&given](const std::string&) { given.repetition_penalty = true; });
  app.add_option("--presence-penalty", g.presence_penalty,
                 "subtracted from the logit of each token the output already holds, as vLLM's "
                 "presence_penalty "
                 "(0: off; Qwen suggests 0-2 against endless repetitions)")
      ->capture_default_str()
      ->check(CLI::Range(-2.0f, 2.0f));  // vLLM's range
  app.add_option("--frequency-penalty", g.frequency_penalty,
                 "times the output holds a token, times this, subtracted from its logit, as "
                 "vLLM's and llama.cpp's frequency_penalty (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(-2.0f, 2.0f));
  app.add_option("-s,--seed", g.seed, "sampling seed (0 or more)")
      ->capture_default_str()
      ->check(non_negative());
  app.add_option("--stop", o.stop_strings,
                 "end the reply where its text holds this string, which is not printed "
                 "(repeatable; \\n, \\t "
                 "and \\\\ are a newline, a tab and a backslash), as vLLM's stop and llama.cpp's "
                 "--reverse-prompt")
      ->allow_extra_args(false);
  app.add_flag("--ignore-eos", o.ignore_eos,
               "go on past the stop tokens (benchmarks: exactly --max-tokens)");
  add_model_run_flags(app, g);
  app.add_option(
         "--weights", o.weights,
         "hold projections as auto (the checkpoint's dtype, a quantized GGUF's own blocks; bf16 "
         "for --synthetic), f32, bf16, f16 (a quantized GGUF decoded into it), or a block type "
         "to quantize to at load (q4_k, q6_k, q8_0, iq4_xs, ...)")
      ->capture_default_str()
      ->check(weight_names());
  app.add_option("--save-state", g.save_state,
                 "save the sequence (prompt + generated) to this file when done");
  app.add_option("--resume-state", g.resume_state,
                 "continue a saved sequence: the prompt is appended after it (with --chat, as the "
                 "conversation's next turn)");
  app.add_option("-c,--ctx-size", o.ctx_size,
                 "context in tokens: the prompt must fit and the reply ends where it is full (0: "
                 "unbounded; past "
                 "the model's trained context with a warning)")
      ->capture_default_str()
      ->check(token_range(0));
  app.add_flag("--json", o.json,
               "stdout: one JSON object with the reply's text, timings and settings");
  add_verbosity_flags(app, o.verbosity);
}

namespace {

// The flags that conflict with each other, before a model is loaded. 0 or the exit code.
int check_run_flags(const RunOptions& o) {
  if (!o.prompt_file.empty() && (!o.synthetic.empty() || o.prompt_tokens > 0)) {
    std::fprintf(stderr,
                 "error: --prompt-file is text for a checkpoint's tokenizer; --synthetic and "
                 "--prompt-tokens "
                 "take random token ids\n");
    return 2;
  }
  if (o.interactive && !o.synthetic.empty()) {
    std::fprintf(
        stderr,
        "error: --interactive needs a model with a tokenizer; --synthetic models have none\n");
    return 2;
  }
  if (o.interactive && (!o.prompt_file.empty() || o.prompt_tokens > 0 || o.json)) {
    std::fprintf(stderr,
                 "error: --interactive takes its turns from the input: not with --prompt-file, "
                 "--prompt-tokens or --json\n");
    return 2;
  }
  if (o.ctx_size > 0 &&
      !o.gen.resume_state.empty()) {  // the saved sequence's length is known only to the run
    std::fprintf(
        stderr,
        "error: -c/--ctx-size bounds a new sequence; with --resume-state the saved one's length "
        "is not known before the run\n");
    return 2;
  }
  return 0;
}

// The prompt's token ids: the text (with --chat, rendered by the template) tokenized, or
// random ids for a model without a tokenizer. 0 or the exit code.
int build_prompt(Engine& engine, const RunOptions& o, std::vector<int>* prompt,
                 double* tokenize_ms) {
  Status st;
  if (!engine.has_tokenizer() || o.prompt_tokens > 0) {
    if (!o.prompt_file.empty()) {
      std::fprintf(stderr,
                   "error: --prompt-file needs a model with a tokenizer and no --prompt-tokens\n");
      return 2;
    }
    if (o.prompt_given) {  // text cannot become ids without one: never random ids in its place
      std::fprintf(stderr,
                   "error: --prompt is text, and %s has no tokenizer (tokenizer.json or a GGUF's "
                   "tokenizer); --prompt-tokens N runs N random ids\n",
                   engine.info().name.c_str());
      return 2;
    }
    const int n = o.prompt_tokens > 0 ? o.prompt_tokens : 512;
    *prompt = engine.random_prompt(n, o.gen.seed + 7);
    note("prompt: {} random token ids{}\n", n, engine.has_tokenizer() ? "" : " (no tokenizer)");
    return 0;
  }
  std::string prompt_text = o.prompt;
  if (!o.prompt_file.empty()) st = read_text_file("--prompt-file", o.prompt_file, &prompt_text);
  std::string text = prompt_text;
  if (st.ok() && o.chat) {
    if (!o.chat_template_file.empty()) st = engine.set_chat_template_file(o.chat_template_file);
    std::vector<ChatMessage> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", prompt_text});
    ChatOptions co;
    if (o.no_think) co.enable_thinking = false;
    // Resumed, the earlier turns are in the saved sequence: only the new ones are rendered.
    const bool resumed = !o.gen.resume_state.empty();
    if (st.ok()) {
      st = resumed ? engine.continue_chat(o.gen.resume_state, messages, co, &text)
                   : engine.apply_chat_template(messages, co, &text);
    }
    if (st.ok()) {
      note("chat template: {}{}\n", engine.chat_template_origin(),
           resumed ? " (continuing the saved conversation)" : "");
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (st.ok()) st = engine.tokenize(text, prompt);
  *tokenize_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::fprintf(stderr, "error: prompt: %s\n", st.message().c_str());
    return 2;
  }
  if (prompt->empty()) {
    std::fprintf(stderr, "error: prompt: the text has no tokens\n");
    return 2;
  }
  note("prompt: {} bytes, {} tokens (tokenized in {:.1f} ms)\n", text.size(), prompt->size(),
       *tokenize_ms);
  detail("{}\n--\n", text);  // what the model reads, before the reply
  return 0;
}

// -c/--ctx-size: the prompt must fit, and the reply ends where the context is full (as
// llama.cpp's -c bounds its KV cache). Not given, a run may pass the trained context with a
// warning (below). 0 or the exit code.
int fit_context(const RunOptions& o, int64_t prompt_tokens, GenerateOptions* g) {
  if (o.ctx_size <= 0) return 0;
  if (prompt_tokens >= o.ctx_size) {
    std::fprintf(stderr,
                 "error: the prompt of %lld tokens leaves no room in a context of %d tokens "
                 "(-c/--ctx-size)\n",
                 static_cast<long long>(prompt_tokens), o.ctx_size);
    return 2;
  }
  if (prompt_tokens + g->max_tokens > o.ctx_size) {
    g->max_tokens = static_cast<int>(o.ctx_size - prompt_tokens);
    note("context: {} tokens (-c), so at most {} generated\n", o.ctx_size, g->max_tokens);
  }
  return 0;
}

}  // namespace

int run_model(const RunOptions& o) {
  apply_verbosity(o.verbosity);
  if (const int rc = check_run_flags(o); rc != 0) return rc;  // before a model is built
  std::unique_ptr<Engine> engine;
  if (const int rc = load_cli_engine(o.model, o.synthetic, o.gen.seed + 1, o.weights, &engine);
      rc != 0)
    return rc;
  const bool tty = isatty(fileno(stderr)) != 0 && verbosity() != Verbosity::kQuiet;
  Status st;
  const EngineInfo info = engine->info();
  // The sampling flags not given take the checkpoint's defaults.
  GenerateOptions g = o.gen;
  const GenerateOptions defaults = engine->default_generate_options();
  if (!o.sampling_given.temperature) g.temperature = defaults.temperature;
  if (!o.sampling_given.top_k) g.top_k = defaults.top_k;
  if (!o.sampling_given.top_p) g.top_p = defaults.top_p;
  if (!o.sampling_given.min_p) g.min_p = defaults.min_p;
  if (!o.sampling_given.repetition_penalty) g.repetition_penalty = defaults.repetition_penalty;
  note("{}\n", describe_sampling(g, o.sampling_given, info.sampling_origin));
  g.stop_at_eos = !o.ignore_eos;
  for (const std::string& stop : o.stop_strings)
    g.stop_strings.push_back(model::unescape_stop_string(stop));
  if (!info.stop_tokens.empty()) detail("{}\n", describe_stop_tokens(*engine, info.stop_tokens));
  std::string kv_cache;
  st = engine->kv_cache_dtype(o.gen.kv_cache, &kv_cache);
  if (!st.ok()) {
    std::fprintf(stderr, "error: --kv-cache: %s\n", st.message().c_str());
    return 2;
  }
  if (o.interactive) {
    if (!engine->has_tokenizer()) {
      std::fprintf(stderr, "error: --interactive needs a model with a tokenizer\n");
      return 2;
    }
    if (!o.chat_template_file.empty()) {
      st = engine->set_chat_template_file(o.chat_template_file);
      if (!st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.message().c_str());
        return 2;
      }
    }
    note("chat template: {}\n", engine->chat_template_origin());
    if (!o.max_tokens_given) g.max_tokens = 1024;
    return run_chat_loop(*engine, o, g);
  }
  std::vector<int> prompt;
  double tokenize_ms = 0;
  if (const int rc = build_prompt(*engine, o, &prompt, &tokenize_ms); rc != 0) return rc;
  if (const int rc = fit_context(o, static_cast<int64_t>(prompt.size()), &g); rc != 0) return rc;
  GenerateStats s;
  // stdout gets the reply and nothing else; with --json it is gathered into the one object.
  std::string reply;
  const auto on_text = [&](std::string_view text) {
    if (o.json) {
      reply += text;
      return;
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  const auto on_progress = [&](int64_t done, int64_t total) {
    if (tty && total > o.gen.prefill_chunk)
      std::fprintf(stderr, "\rprefill %lld / %lld tokens", static_cast<long long>(done),
                   static_cast<long long>(total));
    if (tty && total > o.gen.prefill_chunk && done == total) std::fprintf(stderr, "\n");
  };
  // Past the trained context RoPE positions are ones the model never saw: it runs, but the
  // text may degrade (llama.cpp warns likewise). Before the run for what is known, after it
  // for a resumed sequence, whose length only the state file tells.
  const auto warn_context = [&](int64_t tokens, const char* what) {
    if (info.max_positions > 0 && tokens > info.max_positions) {
      std::fprintf(
          stderr,
          "warning: %s of %lld tokens is longer than the context the model was trained for "
          "(max_position_embeddings %lld); the text may degrade\n",
          what, static_cast<long long>(tokens), static_cast<long long>(info.max_positions));
    }
  };
  const int64_t planned = static_cast<int64_t>(prompt.size()) + g.max_tokens;
  warn_context(planned, "the prompt and --max-tokens");
  st = engine->generate(prompt, g, on_text, on_progress, &s);
  // A newline after the reply where a person reads it; piped, stdout is the reply exactly,
  // and when stderr goes to the same file (2>&1) the newline goes there, before the summary.
  if (!o.json && isatty(fileno(stdout))) std::printf("\n");
  std::fflush(stdout);
  if (!o.json && !isatty(fileno(stdout)) && same_file(fileno(stdout), fileno(stderr)) &&
      s.generated_tokens > 0)
    note("\n");
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  if (s.resumed_tokens > 0 && planned <= info.max_positions) {
    warn_context(s.resumed_tokens + s.prompt_tokens + s.generated_tokens, "the resumed sequence");
  }
  const double prefill_tps = s.prompt_tokens / (s.prefill_ms / 1e3);
  const auto decode_steps =
      static_cast<int64_t>(s.decode_step_ms.size());  // forward calls of the decode
  const double decode_tps = decode_steps > 0 ? decode_steps / (s.decode_ms / 1e3) : 0.0;
  const bool attn_bf16 = s.attn_bf16_products;  // the attention prefill's products (hanpu/attn.h)
  // The decode steps' forward calls, nearest-rank quantiles (0 with no step).
  std::vector<double> steps_ms = s.decode_step_ms;
  std::sort(steps_ms.begin(), steps_ms.end());
  const auto step_quantile = [&](double q) {
    if (steps_ms.empty()) return 0.0;
    const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(steps_ms.size())));
    return steps_ms[std::clamp<size_t>(rank, 1, steps_ms.size()) - 1];
  };
  if (o.json) {
    const cpu::ProjectionKernel ceiling =
        cpu::parse_projection_kernel(g.projection).value_or(cpu::ProjectionKernel::kAuto);
    auto split_json = [](const TimeSplit& t) {
      return nlohmann::json{{"la_ms", t.la_ms},
                            {"attn_ms", t.attn_ms},
                            {"mlp_ms", t.mlp_ms},
                            {"other_ms", t.other_ms},
                            {"la_kernel_ms", t.la_kernel_ms},
                            {"attn_kernel_ms", t.attn_kernel_ms}};
    };
    nlohmann::json j{{"model", info.name},
                     {"la", g.la_strategy},
                     {"text", reply},
                     {"prompt_tokens", s.prompt_tokens},
                     {"generated_tokens", s.generated_tokens},
                     {"tokenize_ms", tokenize_ms},
                     {"prefill_ms", s.prefill_ms},
                     {"prefill_tokens_per_s", prefill_tps},
                     {"decode_ms", s.decode_ms},
                     {"decode_tokens_per_s", decode_tps},
                     {"prefill_split", split_json(s.prefill_split)},
                     {"decode_split", split_json(s.decode_split)},
                     {"stop", s.stop_reason},
                     {"weights", info.weight_dtype},
                     {"projection", g.projection},
                     {"amx", info.weight_dtype == "bf16" && cpu::linear_uses_amx(ceiling)},
                     {"bf16_dot", info.weight_dtype == "bf16" && cpu::linear_uses_dot(ceiling)},
                     {"kv_cache", s.kv_cache},
                     {"attn_bf16_products", attn_bf16},
                     {"sampling",
                      {{"temperature", decimal(g.temperature)},
                       {"top_k", g.top_k},
                       {"top_p", decimal(g.top_p)},
                       {"min_p", decimal(g.min_p)},
                       {"repetition_penalty", decimal(g.repetition_penalty)},
                       {"presence_penalty", decimal(g.presence_penalty)},
                       {"seed", g.seed},
                       {"defaults_from", info.sampling_origin}}},
                     {"stop_tokens", info.stop_tokens},
                     {"resumed_tokens", s.resumed_tokens},
                     {"saved_tokens", s.saved_tokens},
                     {"decode_step_ms",
                      {{"median", step_quantile(0.5)},
                       {"p90", step_quantile(0.9)},
                       {"max", step_quantile(1.0)}}}};
    // Invalid UTF-8 in a reply cut mid-character is replaced, never a thrown dump.
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  note("--\nprefill: {} tokens in {:.1f} ms = {:.1f} tokens/s  ({})\n", s.prompt_tokens,
       s.prefill_ms, prefill_tps,
       describe_split(s.prefill_split, s.prefill_split.total_ms(), "rest"));
  note(
      "decode:  {} tokens in {:.1f} ms = {:.1f} tokens/s  (stop: {}; LA strategy {}; KV cache "
      "{}{})\n",
      s.generated_tokens, s.decode_ms, decode_tps, s.stop_reason, g.la_strategy, s.kv_cache,
      attn_bf16 ? ", prefill attention on bf16 products" : "");
  if (decode_steps > 0 &&
      s.decode_ms > 0) {  // shares of decode_ms: what the forward calls leave is sampling
    detail("         ({}; sampling and the rest {:.0f}%)\n",
           describe_split(s.decode_split, s.decode_ms, "norms and head"),
           100 * (s.decode_ms - s.decode_split.total_ms()) / s.decode_ms);
    detail("         (a step's forward call: median {:.2f} ms, p90 {:.2f} ms, max {:.2f} ms)\n",
           step_quantile(0.5), step_quantile(0.9), step_quantile(1.0));
  }
  if (s.resumed_tokens > 0) note("resumed: {} tokens from {}\n", s.resumed_tokens, g.resume_state);
  if (!g.save_state.empty()) note("saved:   {} tokens to {}\n", s.saved_tokens, g.save_state);
  return 0;
}

}  // namespace hanpu::cli
