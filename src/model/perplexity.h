// Perplexity over a token stream the way llama.cpp's llama-perplexity computes it (see
// PerplexityOptions in hanpu/engine.h), on a Model; Engine::perplexity resolves the options.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hanpu/dtype.h"
#include "hanpu/engine.h"
#include "hanpu/status.h"
#include "model/model.h"

namespace hanpu::model {

// What else a perplexity run does with each chunk: begin(chunk) before it runs, row(chunk,
// scored position, logits [vocab]) for each scored position (from the pool's threads, each
// position once), end(chunk) after; an error from begin or end stops the run.
struct ChunkHooks {
  std::function<Status(int chunk)> begin;
  std::function<void(int chunk, int64_t scored, const float* logits)> row;
  std::function<Status(int chunk)> end;
};

struct PerplexityRun {
  ForwardOptions forward;
  DType kv_dtype = DType::kF32;
  int context = 512, max_chunks = 0, prefill_chunk = 1024;
  std::string save_logprobs;  // PerplexityOptions::save_logprobs
  ChunkHooks hooks;
};

// Checks the run against the text (a context that scores nothing, a text shorter than one
// chunk: errors naming the numbers), then scores chunk after chunk.
Status perplexity(const Model& model, const std::vector<int>& tokens, const PerplexityRun& run,
                  const std::function<void(const PerplexityStats&)>& on_chunk,
                  PerplexityStats* stats);

// Engine::kl_divergence on a Model: the chunks of `base_file`, compared position by position.
Status kl_divergence(const Model& model, const std::string& base_file, const PerplexityRun& run,
                     const std::function<void(const KlDivergenceStats&)>& on_chunk,
                     KlDivergenceStats* stats);

// The public TimeSplit of a forward profile.
TimeSplit time_split_of(const ForwardProfile& p);

}  // namespace hanpu::model
