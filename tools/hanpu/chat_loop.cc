// The interactive conversation of `hanpu run --interactive` (see chat_loop.h).
#include "chat_loop.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <string>

namespace hanpu::cli {

namespace {

// Ctrl-C while a reply is generated ends the reply; while a turn is read it ends the chat
// (the read fails: the handler is installed without SA_RESTART).
std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted.store(true); }

void catch_interrupts() {
  struct sigaction sa = {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
}

// One user turn: a line, or several joined where a line ends with a backslash (as llama-cli
// takes multi-line input). False at end of input or on "/exit".
bool read_turn(bool tty, std::string* turn) {
  turn->clear();
  if (tty) std::fprintf(stderr, "\n> ");
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\\') {
      *turn += line.substr(0, line.size() - 1) + "\n";
      continue;
    }
    *turn += line;
    if (*turn == "/exit") return false;
    if (!turn->empty()) return true;
    if (tty) std::fprintf(stderr, "> ");
  }
  return !turn->empty();
}

}  // namespace

int run_chat_loop(Engine& engine, const RunOptions& o, GenerateOptions g) {
  const bool tty = isatty(fileno(stdin)) != 0;
  const EngineInfo info = engine.info();
  const std::unique_ptr<Sequence> sequence = engine.new_sequence();
  g.sequence = sequence.get();
  catch_interrupts();
  g.stop_requested = [] { return interrupted.exchange(false); };
  ChatOptions co;
  if (o.no_think) co.enable_thinking = false;
  if (tty) {
    std::fprintf(
        stderr,
        "interactive chat: a line is a turn (end a line with \\ to go on); Ctrl-C ends a reply, "
        "/exit, end of input or Ctrl-C at the prompt the chat\n");
  }
  const auto on_text = [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  std::string turn = o.prompt;  // --prompt, when given, is the first turn
  bool have = o.prompt_given || read_turn(tty, &turn);
  for (int n = 0; have; ++n, have = read_turn(tty, &turn)) {
    if (!tty) std::printf("> %s\n", turn.c_str());  // piped input: the transcript shows each turn
    std::vector<ChatMessage> messages;
    if (n == 0 && !o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", turn});
    // The first turn may continue a saved conversation; later ones continue this one.
    GenerateOptions call = g;
    if (n > 0) call.resume_state.clear();
    call.save_state.clear();  // once, when the chat ends
    std::string text;
    std::vector<int> ids;
    // The line alone first, so invalid UTF-8 is named by its byte (not blamed on the template);
    // then the turn as the template renders it. Until generate runs the sequence is untouched,
    // so a line refused here is dropped and the conversation goes on.
    Status st = engine.tokenize(turn, &ids);
    if (st.ok()) {
      st = n == 0 && !g.resume_state.empty()
               ? engine.continue_chat(g.resume_state, messages, co, &text)
               : engine.continue_chat(*sequence, messages, co, &text);
    }
    if (st.ok()) st = engine.tokenize(text, &ids);
    if (!st.ok()) {
      std::fprintf(stderr, "error: this line was not used: %s\n", st.message().c_str());
      if (n == 0) n = -1;  // the next line is the first turn again (system message, resumed state)
      continue;
    }
    GenerateStats s;
    interrupted.store(false);  // a Ctrl-C before this reply began does not end it
    if (st.ok()) st = engine.generate(ids, call, on_text, nullptr, &s);
    std::printf("\n");
    std::fflush(stdout);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 1;
    }
    const auto steps = static_cast<int64_t>(s.decode_step_ms.size());
    std::fprintf(stderr,
                 "[%lld tokens read at %.1f tokens/s, %lld written at %.1f tokens/s (stop: %s); "
                 "context %zu tokens]\n",
                 static_cast<long long>(s.prompt_tokens), s.prompt_tokens / (s.prefill_ms / 1e3),
                 static_cast<long long>(s.generated_tokens),
                 steps > 0 ? steps / (s.decode_ms / 1e3) : 0.0, s.stop_reason.c_str(),
                 sequence->tokens().size());
    if (info.max_positions > 0 &&
        static_cast<int64_t>(sequence->tokens().size()) > info.max_positions) {
      std::fprintf(stderr,
                   "warning: the conversation is longer than the context the model was trained for "
                   "(max_position_embeddings %lld); the text may degrade\n",
                   static_cast<long long>(info.max_positions));
    }
  }
  if (!g.save_state.empty() && !sequence->tokens().empty()) {
    const Status st = engine.save_sequence(*sequence, g.save_state);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 1;
    }
    std::fprintf(stderr, "saved: %zu tokens to %s\n", sequence->tokens().size(),
                 g.save_state.c_str());
  }
  return 0;
}

}  // namespace hanpu::cli
