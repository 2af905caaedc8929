// Saving and resuming a sequence: its position and token ids, every GDN layer's conv and
// recurrent states and every attention layer's KV cache, in one binary file tied to the
// model's shape (the layout and its reader: state_file_format.h).
#pragma once

#include <string>

#include "hanpu/status.h"
#include "model/model.h"
#include "model/state_file_format.h"

namespace hanpu::model {

// Writes to a temporary file next to `path` and renames it into place: a failed save never
// leaves a partial file under `path`.
Status save_state(const Model& model, const SequenceState& state, const std::string& path);
// Reads a state saved for a model of the same shape; an error names what does not match or
// the byte offset where the file ends early. `out` is untouched on error.
// The resumed sequence's KV caches hold kv_dtype.
Status load_state(const Model& model, const std::string& path, SequenceState* out,
                  DType kv_dtype = DType::kF32);

}  // namespace hanpu::model
