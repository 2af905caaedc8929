// A checkpoint's generation_config.json: the stop tokens and the sampling its authors ship
// as the default, read with transformers' meaning (GenerationConfig), which is what
// transformers' generate() and vLLM use unless told otherwise. Qwen's chat checkpoints put
// <|im_end|> here rather than in config.json, and recommend sampling over greedy decoding
// (greedy "can lead to endless repetitions" in thinking mode, their model cards say).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hanpu/status.h"

namespace hanpu::model {

struct GenerationConfig {
  std::vector<int> eos_token_ids;  // ids in [0, vocab); an int or a list in the file
  // do_sample false (transformers' default): greedy, whatever temperature says. True: the
  // fields below, with transformers' defaults where the file leaves them out.
  bool do_sample = false;
  float temperature = 1.0f;
  int top_k = 50;
  float top_p = 1.0f;
  float min_p = 0.0f;               // 0: off (transformers' MinPLogitsWarper)
  float repetition_penalty = 1.0f;  // 1: off (transformers' RepetitionPenaltyLogitsProcessor)
};

// Parses generation_config.json text; `source` names the file in errors. A field of the wrong
// type or out of range (temperature < 0, top_p outside (0, 1], min_p outside [0, 1], top_k < 0,
// repetition_penalty <= 0) is an error naming it; fields hanpu has no use for are ignored.
Status parse_generation_config(const std::string& json_text, const std::string& source, int vocab,
                               GenerationConfig* out);
// dir/generation_config.json if there is one (nullopt if not), parsed.
Status load_generation_config(const std::string& dir, int vocab,
                              std::optional<GenerationConfig>* out);

}  // namespace hanpu::model
