// Perplexity chunk by chunk (see perplexity.h).
#include "model/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/kl_divergence.h"
#include "model/logprob_file.h"

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
  // --kl-divergence-base: each chunk's scored rows encoded, then written in order.
  ChunkHooks hooks = run.hooks;
  LogprobWriter writer;
  std::vector<uint16_t> records;
  if (!run.save_logprobs.empty()) {
    const int vocab = m.config().vocab;
    const int64_t words = logprob_record_words(vocab);
    HANPU_RETURN_IF_ERROR(
        writer.open(run.save_logprobs, ctx, vocab, s.chunks_total, tokens.data()));
    records.resize(static_cast<size_t>(words * (ctx - 1 - first)));
    hooks.row = [&, words, vocab](int, int64_t scored, const float* logits) {
      encode_logprobs(logits, vocab, records.data() + scored * words);
    };
    hooks.end = [&](int) { return writer.write(records.data(), records.size()); };
  }
  Workspace ws;  // every chunk's steps, one after another
  for (int c = 0; c < s.chunks_total; ++c) {
    const auto t0 = std::chrono::steady_clock::now();
    if (hooks.begin) HANPU_RETURN_IF_ERROR(hooks.begin(c));
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
        HANPU_RETURN_IF_ERROR(m.forward(chunk + a, n, &state, run.forward, nullptr, &prof, &ws));
      } else {
        Model::RowLogits on_logits;
        if (hooks.row) {
          on_logits = [&hooks, c, skip = from - first](int64_t r, const float* logits) {
            hooks.row(c, skip + r, logits);
          };
        }
        HANPU_RETURN_IF_ERROR(m.score(chunk + a, n, from - a, chunk + from + 1, &state, run.forward,
                                      logprobs.data() + from, &prof, on_logits, &ws));
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
    if (hooks.end) HANPU_RETURN_IF_ERROR(hooks.end(c));
    s.scored_tokens += inputs - first;
    s.run_tokens += inputs;
    s.chunks = c + 1;
    s.ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.split = time_split_of(prof);
    if (on_chunk) on_chunk(s);
  }
  if (!run.save_logprobs.empty()) HANPU_RETURN_IF_ERROR(writer.finish());
  *out = s;
  return Status::Ok();
}

Status kl_divergence(const Model& m, const std::string& base_file, const PerplexityRun& run,
                     const std::function<void(const KlDivergenceStats&)>& on_chunk,
                     KlDivergenceStats* out) {
  const int vocab = m.config().vocab;
  LogprobReader base;
  HANPU_RETURN_IF_ERROR(base.open(base_file, vocab));
  PerplexityRun r = run;
  r.context = base.context();
  r.max_chunks = run.max_chunks > 0 ? std::min(run.max_chunks, base.chunks()) : base.chunks();
  r.save_logprobs.clear();
  const int64_t words = logprob_record_words(vocab), rows = r.context - 1 - r.context / 2;
  const std::vector<int>& tokens = base.tokens();
  std::vector<uint16_t> records;
  std::vector<KlTerms> terms(static_cast<size_t>(rows));
  KlDivergenceStats s;
  r.hooks.begin = [&](int c) { return base.read_chunk(c, &records); };
  r.hooks.row = [&](int c, int64_t scored, const float* logits) {
    const int64_t position = static_cast<int64_t>(c) * r.context + r.context / 2 + scored;
    terms[static_cast<size_t>(scored)] = compare_logprobs(
        logits, vocab, records.data() + scored * words, tokens[static_cast<size_t>(position) + 1]);
  };
  r.hooks.end = [&](int) {
    for (const KlTerms& t : terms)
      accumulate(t, &s);  // in order: the sums do not depend on threads
    return Status::Ok();
  };
  const auto on_ppl_chunk = [&](const PerplexityStats& p) {
    s.q = p;
    if (on_chunk) on_chunk(s);
  };
  HANPU_RETURN_IF_ERROR(perplexity(m, tokens, r, on_ppl_chunk, &s.q));
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace model
}  // namespace hanpu
