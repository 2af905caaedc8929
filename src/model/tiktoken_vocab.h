// Kimi's tokenizer as its Hugging Face folder ships it, without a tokenizer.json:
// tiktoken.model (one token a line: its bytes in base64, a space, its rank) and
// tokenizer_config.json (added_tokens_decoder: the special tokens' ids and text), read by
// Kimi's tokenization_kimi.py through the tiktoken library.
//
// tiktoken merges any adjacent pair whose bytes are a token, the lowest-ranked token first;
// hanpu's BPE takes merges by rank. So every split of a token into two tokens becomes a merge
// at the token's rank (what transformers' tiktoken conversion does). The split regex is
// Kimi's ("kimi-k2", Tokenizer::pattern_for_pre), the only tiktoken family hanpu reads. The 256
// ids after the ranks are special (tokenization_kimi.py's num_reserved_special_tokens): the
// config's names where it gives them, else <|reserved_token_N|>.
#pragma once

#include <string>

#include "hanpu/status.h"
#include "model/tokenizer.h"

namespace hanpu::model {

inline constexpr int kTiktokenReservedSpecials = 256;

// Whether `dir` holds a tiktoken.model (and so may be read by tiktoken_parts).
bool has_tiktoken_model(const std::string& dir);

// The tokenizer parts of `dir`/tiktoken.model and, where present, `dir`/tokenizer_config.json.
// Errors name the file, the line and what is wrong (base64, rank, a repeated token, a bound).
Status tiktoken_parts(const std::string& dir, Tokenizer::Parts* out);

// The same from the files' texts (`source` names the folder in errors); config_json may be
// empty (no config).
Status tiktoken_parts_from_text(const std::string& model_text, const std::string& config_json,
                                const std::string& source, Tokenizer::Parts* out);

}  // namespace hanpu::model
