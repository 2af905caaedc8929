// Hugging Face tokenizer.json, byte-level BPE as Qwen uses it: added (special) tokens matched
// first in the raw text, an NFC normaliser, the pre-tokenizer's regex split (PCRE2 with
// Unicode properties, so \p{L}, \p{M}, \p{N} and look-ahead mean what they mean in the Rust
// `tokenizers` library), the GPT-2 byte-to-character map, then merges by rank.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "hanpu/status.h"
#include "model/token_table.h"

namespace hanpu::model {

// PCRE2 limits of one match of the pre-tokenizer regex (steps, and depth in backtracking
// frames; heap in KiB), and the time all matches of one text may take: a base plus a time
// per byte, far above what real patterns need (Qwen's splits megabytes a second; a run of
// n spaces costs it about n steps in one match). docs/limits.md lists them.
inline constexpr uint32_t kRegexMatchLimit = 1u << 20;
inline constexpr uint32_t kRegexHeapLimitKiB = 65536;
inline constexpr double kRegexBaseSeconds = 2.0;
inline constexpr double kRegexSecondsPerByte = 20e-6;

class Tokenizer {
 public:
  Tokenizer();
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  static Status load(const std::string& path, Tokenizer* out);
  // `source` names the file in errors.
  static Status parse(const std::string& json_text, const std::string& source, Tokenizer* out);

  // The parts a tokenizer is made of, however stored (tokenizer.json, or a GGUF's
  // tokenizer.ggml.* arrays): byte-level tokens by id, which of them are added/special tokens
  // (matched in raw text before anything else), merges by rank, the split regex, NFC or not.
  struct Parts {
    std::vector<std::string> tokens;  // by id
    std::vector<bool> added;          // by id
    std::vector<std::pair<std::string, std::string>> merges;
    std::string pattern;
    bool nfc = false;
  };
  static Status build(Parts parts, const std::string& source, Tokenizer* out);
  // The parts of a parsed tokenizer.json, checked as parse checks them (parse = parse_json +
  // parts_from_json + build).
  static Status parts_from_json(const nlohmann::json& j, const std::string& source, Parts* out);
  // The split regex llama.cpp's pre-tokenizer names stand for ("qwen2", "qwen35", "kimi-k2"),
  // or empty.
  static std::string pattern_for_pre(const std::string& pre);
  // The name of a split regex, the inverse of pattern_for_pre (empty for one it has none for).
  static std::string pre_for_pattern(const std::string& pattern);
  // Raw bytes as a byte-level token's text (GPT-2's byte -> character map).
  static std::string byte_level(std::string_view bytes);

  // Token ids of UTF-8 `text` (an error names the byte offset of invalid UTF-8). Added tokens
  // such as <|im_start|> written in the text become their ids.
  Status encode(std::string_view text, std::vector<int>* ids) const;
  // The pre-tokenizer's pieces of `text` (normalised, split by the regex; no added tokens
  // matched), as transformers' pre_tokenize_str gives them.
  Status split(std::string_view text, std::vector<std::string>* pieces) const;
  // The bytes a token stands for (a byte-level token may be part of a UTF-8 character).
  std::string token_bytes(int id) const;
  std::string decode(const std::vector<int>& ids) const;
  std::optional<int> token_id(std::string_view token) const;
  int vocab_size() const { return tokens_.size(); }

 private:
  struct Regex;
  struct Added {
    std::string content;
    int id;
  };
  static Status read_parts(const nlohmann::json& j, const std::string& source, Parts* out);
  Status encode_piece(const std::string& piece, std::vector<int>* ids) const;
  Status encode_segment(std::string_view text, std::vector<int>* ids) const;
  // Normalises `text` and calls `piece` on each piece of the split regex, in order.
  Status for_each_piece(std::string_view text,
                        const std::function<Status(const std::string&)>& piece) const;

  TokenTable tokens_;  // byte-level strings, or added tokens' content; added ones unindexed
  std::vector<bool> is_added_;
  std::vector<Added> added_;  // longest first
  MergeTable merges_;
  std::unique_ptr<Regex> split_;
  bool nfc_ = false;
};

}  // namespace hanpu::model
