// Perplexity chunk by chunk (see perplexity.h).
#include "model/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace hanpu {

double PerplexityStats::ppl() const {
  return scored_tokens > 0 ? std::exp(nll_sum / scored_tokens) : 0.0;
}

// llama.cpp's: the standard error of the mean -log p, carried through exp (d ppl = ppl d nll).
double PerplexityStats::ppl_error() const {
  if (scored_tokens < 2) return 0.0;
  const double n = static_cast<double>(scored_tokens);
  const double mean = nll_sum / n;
  const double var = nll2_sum / n - mean * mean;
  return var > 0 ? ppl() * std::sqrt(var / (n - 1)) : 0.0;
}

double PerplexityStats::tokens_per_s() const {
  return ms > 0 ? static_cast<double>(run_tokens) / (ms / 1e3) : 0.0;
}

namespace model {

TimeSplit time_split_of(const ForwardProfile& p) {
  return {p.la_ms, p.attn_ms, p.mlp_ms, p.other_ms, p.la_kernel_ms, p.attn_kernel_ms};
}

Status perplexity(const Model& m, const std::vector<int>& tokens, const PerplexityRun& run,
                  const std::function<void(const PerplexityStats&)>& on_chunk,
                  PerplexityStats* out) {
  const int ctx = run.context;
  // llama.cpp scores positions ctx/2 .. ctx-2 of each chunk: at least one needs ctx >= 3.
  if (ctx < 3) {
    return Status::Error(
        fmt::format("perplexity: a context of {} tokens scores none (at least 3)", ctx));
  }
  if (run.max_chunks < 0 || run.prefill_chunk < 1) {
    return Status::Error(
        fmt::format("perplexity: max_chunks {} must be >= 0 and prefill_chunk {} >= 1",
                    run.max_chunks, run.prefill_chunk));
  }
  const int64_t whole = static_cast<int64_t>(tokens.size()) / ctx;
  if (whole == 0) {
    return Status::Error(
        fmt::format("perplexity: the text has {} tokens, fewer than one chunk of {} (give a longer "
                    "text or a smaller context)",
                    tokens.size(), ctx));
  }
  PerplexityStats s;
  s.text_tokens = static_cast<int64_t>(tokens.size());
  s.chunks_total =
      static_cast<int>(run.max_chunks > 0 ? std::min<int64_t>(whole, run.max_chunks) : whole);
  const int first = ctx / 2;  // the first scored position of a chunk
  std::vector<double> logprobs(static_cast<size_t>(ctx));
  ForwardProfile prof;
  for (int c = 0; c < s.chunks_total; ++c) {
    const auto t0 = std::chrono::steady_clock::now();
    const int* chunk = tokens.data() + static_cast<int64_t>(c) * ctx;
    SequenceState state = m.new_state(run.kv_dtype);
    for (auto& cache : state.kv) {
      if (cache) HANPU_RETURN_IF_ERROR(cache->reserve(ctx));
    }
    // Tokens 0 .. ctx-2 run through the model (the last token's prediction is never scored),
    // in forward calls of prefill_chunk; the rows from `first` on are scored against the
    // token after each.
    const int inputs = ctx - 1;
    for (int a = 0; a < inputs; a += run.prefill_chunk) {
      const int n = std::min(run.prefill_chunk, inputs - a);
      const int from = std::max(a, first);
      if (from >= a + n) {
        HANPU_RETURN_IF_ERROR(m.forward(chunk + a, n, &state, run.forward, nullptr, &prof));
      } else {
        HANPU_RETURN_IF_ERROR(m.score(chunk + a, n, from - a, chunk + from + 1, &state, run.forward,
                                      logprobs.data() + from, &prof));
      }
    }
    for (int t = first; t < inputs; ++t) {
      if (!std::isfinite(logprobs[t])) {
        return Status::Error(fmt::format(
            "perplexity: chunk {}, position {}: log p is {} (the logits are not finite)", c + 1, t,
            logprobs[t]));
      }
      s.nll_sum -= logprobs[t];
      s.nll2_sum += logprobs[t] * logprobs[t];
    }
    s.scored_tokens += inputs - first;
    s.run_tokens += inputs;
    s.chunks = c + 1;
    s.ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.split = time_split_of(prof);
    if (on_chunk) on_chunk(s);
  }
  *out = s;
  return Status::Ok();
}

}  // namespace model
}  // namespace hanpu
