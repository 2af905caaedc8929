// The insides of Engine and Sequence (include/hanpu/engine.h), shared by the files that
// implement them: engine.cc (loading, text, perplexity) and engine_generation.cc (generation).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hanpu/engine.h"
#include "model/chat_template.h"
#include "model/generation_config.h"
#include "model/model.h"
#include "model/tokenizer.h"

namespace hanpu {

struct Engine::Impl {
  std::string name;
  std::unique_ptr<model::Model> model;
  std::optional<model::Tokenizer> tokenizer;
  // The checkpoint's chat template; ChatML when it has none. A template that does not parse
  // does not stop the model from loading: the error is kept and given when a chat is asked for.
  model::ChatTemplate chat = model::ChatTemplate::chatml();
  Status chat_error = Status::Ok();
  std::vector<int> stop_tokens;  // EngineInfo::stop_tokens
  std::optional<model::GenerationConfig>
      generation;  // generation_config.json, if the checkpoint has one
  std::string generation_origin;
  // The scratch memory of every step this engine runs, one at a time (a generation's prefill
  // chunks and decode steps, a batch of them together).
  mutable model::Workspace workspace;  // scratch: a const Engine still runs steps
};

struct Sequence::Impl {
  const model::Model* model = nullptr;        // the engine's, which it belongs to
  std::optional<model::SequenceState> state;  // none until a generate call fills it
  bool broken = false;                        // a call failed while changing it
};

}  // namespace hanpu
