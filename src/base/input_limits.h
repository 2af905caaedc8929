// The bounds every untrusted input is read under: a file, a JSON document or a template past
// one is refused with an error that names the bound, never read until memory runs out.
// docs/limits.md lists them for users; each is sized well above what any released
// checkpoint needs (Qwen3.5's tokenizer.json is about 20 MB, its config.json a few KB).
#pragma once

#include <cstdint>

namespace hanpu {

inline constexpr int64_t kMiB = int64_t{1} << 20;

// config.json, generation_config.json, tokenizer_config.json, a sharded index, an NPU target.
inline constexpr int64_t kMaxJsonFileBytes = 64 * kMiB;
// tokenizer.json (a 256k vocabulary with its merges is ~20-30 MB).
inline constexpr int64_t kMaxTokenizerFileBytes = 512 * kMiB;
// chat_template.jinja or --chat-template (released templates are a few to tens of KB).
inline constexpr int64_t kMaxChatTemplateBytes = 4 * kMiB;
// A prompt file or a perplexity text (wikitext-103's training split is ~0.5 GB).
inline constexpr int64_t kMaxTextFileBytes = 2048 * kMiB;
// JSON nesting: real configs and tokenizers nest under 10 levels; nlohmann's dump and its
// error paths recurse once per level, so an unbounded depth is a stack overflow.
inline constexpr int kMaxJsonDepth = 128;

}  // namespace hanpu
