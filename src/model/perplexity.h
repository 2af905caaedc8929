// Perplexity over a token stream the way llama.cpp's llama-perplexity computes it (see
// PerplexityOptions in hanpu/engine.h), on a Model; Engine::perplexity resolves the options.
#pragma once

#include <functional>
#include <vector>

#include "hanpu/dtype.h"
#include "hanpu/engine.h"
#include "hanpu/status.h"
#include "model/model.h"

namespace hanpu::model {

struct PerplexityRun {
  ForwardOptions forward;
  DType kv_dtype = DType::kF32;
  int context = 512, max_chunks = 0, prefill_chunk = 1024;
};

// Checks the run against the text (a context that scores nothing, a text shorter than one
// chunk: errors naming the numbers), then scores chunk after chunk.
Status perplexity(const Model& model, const std::vector<int>& tokens, const PerplexityRun& run,
                  const std::function<void(const PerplexityStats&)>& on_chunk,
                  PerplexityStats* stats);

// The public TimeSplit of a forward profile.
TimeSplit time_split_of(const ForwardProfile& p);

}  // namespace hanpu::model
