// Saving and resuming a sequence: its position, every GDN layer's conv and recurrent states
// and every attention layer's KV cache, in one binary file tied to the model's shape.
// Layout (little-endian): "HANPUSEQ", u32 version, u32 x 10 model fingerprint, i64 position,
// then per layer: GDN -> conv floats, recurrent floats; attention -> i64 length, keys, values.
#pragma once

#include <string>

#include "hanpu/status.h"
#include "model/model.h"

namespace hanpu::model {

// Writes to a temporary file next to `path` and renames it into place: a failed save never
// leaves a partial file under `path`.
Status save_state(const Model& model, const SequenceState& state, const std::string& path);
// Reads a state saved for a model of the same shape; an error names what does not match or
// the byte offset where the file ends early. `out` is untouched on error.
Status load_state(const Model& model, const std::string& path, SequenceState* out);

}  // namespace hanpu::model
