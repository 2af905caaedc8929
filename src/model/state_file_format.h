// The sequence state file's bytes, apart from any model: its layout, and a reader that checks
// every field against a model's config. It needs no kernels (hanpu_model_io), so its fuzzer
// builds without them; state_file.h turns what it reads into a SequenceState.
// Layout (little-endian): "HANPUSEQ", u32 version (3), u32 x 13 model fingerprint, i64
// position, i32 x position token ids (the sequence so far: repetition penalties see them on
// resume), then per layer: GDN -> conv floats, recurrent floats; attention -> i64 length,
// keys, values as fp32 token-major [length, Hkv, D] (whatever the cache's dtype: a 16-bit
// cache widens exactly and is rounded back exactly, so one file resumes into any dtype).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hanpu/status.h"
#include "model/model_config.h"

namespace hanpu::model {

inline constexpr char kStateMagic[8] = {'H', 'A', 'N', 'P', 'U', 'S', 'E', 'Q'};
// 2 added the token ids after the position; a version 1 file cannot give them back.
// 3 added the architecture, the layer pattern and the attention head count to the
// fingerprint: a Qwen3-Next state has the shapes of a Qwen3.5 one of the same sizes.
inline constexpr uint32_t kStateVersion = 3;
inline constexpr size_t kStateFingerprintSize = 13;

// The model a state file is tied to (its architecture, layer pattern and every shape of its
// state), and what each entry is called in an error.
std::array<uint32_t, kStateFingerprintSize> state_fingerprint(const ModelConfig& c);
extern const char* const kStateFingerprintNames[kStateFingerprintSize];

// The file's size for a sequence at `position` of a model with config `c`; reads of a state
// file are bounded by it (position <= kMaxStatePositions), so /dev/zero-sized input is refused
// before it is read.
int64_t state_file_bytes(const ModelConfig& c, int64_t position);
inline constexpr int64_t kMaxStatePositions = int64_t{1} << 22;

// A state file's contents, per layer of the model (the other kind's entries stay empty).
struct SavedSequence {
  int64_t position = 0;
  std::vector<int> tokens;                          // position of them
  std::vector<std::vector<float>> conv, recurrent;  // GDN layers
  std::vector<std::vector<float>> keys, values;     // attention layers: [position, Hkv, D]
};

// Reads `bytes` as a state file saved for a model with config `c`; errors call it `path`.
// Refused, each naming what and where: a short file (the byte offset), another version or
// model shape, a position or KV length that does not fit, a token id outside the vocabulary,
// a NaN or infinite state value, bytes after the end. `out` is untouched on error.
Status parse_state_file(const ModelConfig& c, std::vector<char> bytes, const std::string& path,
                        SavedSequence* out);
// The bytes of the state file at `path` (a regular file within state_file_bytes(c,
// kMaxStatePositions)), for parse_state_file.
Status read_state_file(const ModelConfig& c, const std::string& path, std::vector<char>* bytes);
// Only the token ids of the state file at `path`, read and checked as above without reading
// the states after them (a chat continuation needs the saved text's end).
Status read_state_tokens(const ModelConfig& c, const std::string& path, std::vector<int>* ids);

}  // namespace hanpu::model
