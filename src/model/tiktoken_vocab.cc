// Kimi's tiktoken.model folder as tokenizer parts (see tiktoken_vocab.h).
#include "model/tiktoken_vocab.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"

namespace hanpu::model {

namespace {

// Bounds of a tiktoken.model well above Kimi's (163,584 ranks, tokens of a few dozen bytes,
// 2.7 MB), which also bound the merges' recovery (a token's splits cost its length squared in
// hashing: a few seconds for a file of the longest tokens).
constexpr int64_t kMaxTiktokenFileBytes = int64_t{32} << 20;
constexpr size_t kMaxTokens = size_t{1} << 22;
constexpr size_t kMaxTokenBytes = 256;

// Standard base64 with padding, strictly (what Python's base64.b64encode writes, which is
// how tiktoken files are made): a few lines, so no library is pulled in for it.
bool decode_base64(std::string_view s, std::string* out) {
  static const std::array<int8_t, 256> value = [] {
    std::array<int8_t, 256> v{};
    v.fill(-1);
    const std::string_view alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < alphabet.size(); ++i)
      v[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
    return v;
  }();
  if (s.empty() || s.size() % 4 != 0) return false;
  size_t pad = 0;
  if (s.back() == '=') pad = s[s.size() - 2] == '=' ? 2 : 1;
  out->clear();
  for (size_t i = 0; i < s.size(); i += 4) {
    uint32_t word = 0;
    for (size_t j = 0; j < 4; ++j) {
      const bool padded = i + 4 == s.size() && j >= 4 - pad;
      const int v = padded ? 0 : value[static_cast<unsigned char>(s[i + j])];
      if (v < 0 || (!padded && s[i + j] == '=')) return false;
      word = word << 6 | static_cast<uint32_t>(v);
    }
    const size_t keep = i + 4 == s.size() ? 3 - pad : 3;
    for (size_t j = 0; j < keep; ++j)
      out->push_back(static_cast<char>(word >> (16 - 8 * j) & 0xff));
  }
  return true;
}

// `text` as a whole number of 1 to `max_digits` decimal digits (no sign, no spaces).
bool parse_decimal(std::string_view text, size_t max_digits, size_t* out) {
  if (text.empty() || text.size() > max_digits) return false;
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return err == std::errc() && end == text.data() + text.size();
}

// The special ids [n, n + 256): the config's added_tokens_decoder where it names them.
Status special_tokens(const std::string& config_json, const std::string& source, size_t n,
                      std::vector<std::string>* names) {
  names->clear();
  for (int i = 0; i < kTiktokenReservedSpecials; ++i)
    names->push_back(fmt::format("<|reserved_token_{}|>", n + i));
  if (config_json.empty()) return Status::Ok();
  nlohmann::json j;
  HANPU_RETURN_IF_ERROR(parse_json(config_json, source + "/tokenizer_config.json", &j));
  if (!j.is_object() || !j.contains("added_tokens_decoder")) return Status::Ok();
  const nlohmann::json& added = j["added_tokens_decoder"];
  const std::string where = source + "/tokenizer_config.json: added_tokens_decoder";
  if (!added.is_object()) return Status::Error(fmt::format("{} is not an object", where));
  for (const auto& [key, entry] : added.items()) {
    size_t id = 0;
    if (!parse_decimal(key, 10, &id) || id < n || id >= n + kTiktokenReservedSpecials) {
      return Status::Error(fmt::format(
          "{}: id {} is not one of the special ids {}-{} after tiktoken.model's {} ranks", where,
          json_excerpt(key), n, n + kTiktokenReservedSpecials - 1, n));
    }
    if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string() ||
        entry["content"].get<std::string>().empty() ||
        entry["content"].get<std::string>().size() > kMaxTokenBytes) {
      return Status::Error(
          fmt::format("{}: token {} has no content of 1-{} bytes", where, id, kMaxTokenBytes));
    }
    (*names)[id - n] = entry["content"].get<std::string>();
  }
  return Status::Ok();
}

}  // namespace

bool has_tiktoken_model(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(dir) / "tiktoken.model", ec);
}

Status tiktoken_parts_from_text(const std::string& model_text, const std::string& config_json,
                                const std::string& source, Tokenizer::Parts* out) {
  const std::string file = source + "/tiktoken.model";
  struct Entry {
    std::string bytes;
    size_t rank, line;
  };
  std::vector<Entry> read;  // in file order
  size_t line = 0;
  for (size_t at = 0; at < model_text.size();) {
    size_t end = model_text.find('\n', at);
    if (end == std::string::npos) end = model_text.size();
    std::string_view text(model_text.data() + at, end - at);
    at = end + 1;
    ++line;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.empty()) continue;
    if (read.size() >= kMaxTokens)
      return Status::Error(fmt::format("{}: more than {} tokens", file, kMaxTokens));
    const size_t space = text.find(' ');
    const std::string_view b64 = text.substr(0, space), rank_text = space == std::string_view::npos
                                                                        ? std::string_view()
                                                                        : text.substr(space + 1);
    std::string bytes;
    if (!decode_base64(b64, &bytes)) {
      return Status::Error(fmt::format("{}: line {}: the token is not base64 ({})", file, line,
                                       json_excerpt(std::string(b64.substr(0, 40)))));
    }
    if (bytes.size() > kMaxTokenBytes) {
      return Status::Error(fmt::format("{}: line {}: a token of {} bytes (at most {})", file, line,
                                       bytes.size(), kMaxTokenBytes));
    }
    size_t rank = 0;
    if (!parse_decimal(rank_text, 9, &rank)) {
      return Status::Error(fmt::format("{}: line {}: the rank is not a whole number ({})", file,
                                       line, json_excerpt(std::string(rank_text.substr(0, 40)))));
    }
    read.push_back({std::move(bytes), rank, line});
  }
  const size_t n = read.size();
  if (n == 0) return Status::Error(fmt::format("{}: no tokens", file));
  // Tokens by rank, each with its line (for errors).
  std::vector<std::string> by_rank(n);
  std::vector<size_t> rank_line(n, 0);
  for (Entry& e : read) {
    if (e.rank >= n) {
      return Status::Error(
          fmt::format("{}: line {}: rank {} is past the file's {} tokens (ranks run 0 to {})", file,
                      e.line, e.rank, n, n - 1));
    }
    if (rank_line[e.rank] != 0) {
      return Status::Error(fmt::format("{}: line {}: rank {} is also on line {}", file, e.line,
                                       e.rank, rank_line[e.rank]));
    }
    rank_line[e.rank] = e.line;
    by_rank[e.rank] = std::move(e.bytes);
  }
  std::unordered_map<std::string_view, int> rank_of;  // into by_rank, which no longer grows
  rank_of.reserve(n);
  for (size_t r = 0; r < n; ++r) {
    const auto [it, fresh] = rank_of.emplace(by_rank[r], static_cast<int>(r));
    if (!fresh) {
      return Status::Error(fmt::format("{}: line {}: the token of rank {} repeats rank {}'s bytes",
                                       file, rank_line[r], r, it->second));
    }
  }
  // Every split of a token into two tokens is a merge at the token's rank, as tiktoken merges
  // any adjacent pair whose bytes are a token, the lowest-ranked first (transformers'
  // tiktoken conversion does the same); among one token's splits, by the parts' ranks.
  Tokenizer::Parts parts;
  std::vector<std::pair<int, int>> splits;
  for (size_t r = 0; r < n; ++r) {
    const std::string_view t = by_rank[r];
    splits.clear();
    for (size_t i = 1; i < t.size(); ++i) {
      const auto left = rank_of.find(t.substr(0, i)), right = rank_of.find(t.substr(i));
      if (left != rank_of.end() && right != rank_of.end())
        splits.emplace_back(left->second, right->second);
    }
    std::sort(splits.begin(), splits.end());
    for (const auto& [a, b] : splits)
      parts.merges.emplace_back(Tokenizer::byte_level(by_rank[a]),
                                Tokenizer::byte_level(by_rank[b]));
  }
  std::vector<std::string> specials;
  HANPU_RETURN_IF_ERROR(special_tokens(config_json, source, n, &specials));
  parts.tokens.reserve(n + specials.size());
  for (const std::string& bytes : by_rank) parts.tokens.push_back(Tokenizer::byte_level(bytes));
  for (std::string& s : specials) parts.tokens.push_back(std::move(s));
  parts.added.assign(n, false);
  parts.added.resize(parts.tokens.size(), true);
  parts.pattern = Tokenizer::pattern_for_pre("kimi-k2");
  parts.nfc = false;
  *out = std::move(parts);
  return Status::Ok();
}

Status tiktoken_parts(const std::string& dir, Tokenizer::Parts* out) {
  const std::filesystem::path d(dir);
  std::string model_text, config_json;
  HANPU_RETURN_IF_ERROR(read_regular_file((d / "tiktoken.model").string(), kMaxTiktokenFileBytes,
                                          "tiktoken.model", &model_text));
  std::error_code ec;
  if (std::filesystem::exists(d / "tokenizer_config.json", ec)) {
    HANPU_RETURN_IF_ERROR(read_regular_file((d / "tokenizer_config.json").string(),
                                            kMaxJsonFileBytes, "tokenizer_config.json",
                                            &config_json));
  }
  return tiktoken_parts_from_text(model_text, config_json, dir, out);
}

}  // namespace hanpu::model
