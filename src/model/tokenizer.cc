// Byte-level BPE from tokenizer.json (see tokenizer.h). Written here rather than taken from
// a library because the only complete implementation (Rust `tokenizers`) is not a Debian
// C/C++ package; the Unicode work is delegated: PCRE2 for the split regex, utf8proc for NFC.
#include "model/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <queue>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"

namespace hanpu::model {

namespace {

using nlohmann::json;

// GPT-2's reversible byte -> character map: printable bytes stand for themselves, the other
// 68 are shifted to U+0100 and up, so every token is printable text.
struct ByteMap {
  std::array<std::string, 256> to_utf8;
  std::unordered_map<uint32_t, uint8_t> from_cp;
  ByteMap() {
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const uint32_t cp =
          printable ? static_cast<uint32_t>(b) : 256u + static_cast<uint32_t>(shifted++);
      uint8_t buf[4];
      const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
      to_utf8[b] = std::string(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
      from_cp[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

// Qwen2/3's and Qwen3.5's split patterns (tokenization_qwen2.py / tokenization_qwen3_5.py),
// for GGUFs, which name the pre-tokenizer instead of storing its regex.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen35Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Kimi's split pattern (tokenization_kimi.py's tiktoken pat_str; llama.cpp's "kimi-k2"): Han
// runs first and kept out of the letter classes. tiktoken writes the exclusion as a class
// intersection ([...&&[^\p{Han}]]), which PCRE2 has not; a negative look-ahead before the
// class says the same. Han is the Script property (sc=): PCRE2's bare \p{Han} takes Script
// Extensions, which also hold CJK punctuation such as U+3002, which Kimi's tokenizer and
// llama.cpp split off.
constexpr const char* kKimiK2Pattern =
    R"([\p{sc=Han}]+)"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?!\p{sc=Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])*)"
    R"((?:(?!\p{sc=Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?!\p{sc=Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])+)"
    R"((?:(?!\p{sc=Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-2's pattern, used by a ByteLevel pre-tokenizer with use_regex = true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// `s` as a JSON string for an error message. A GGUF's token text may be any bytes, and
// nlohmann's dump() throws on invalid UTF-8; those bytes become U+FFFD here.
std::string quoted(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

struct Tokenizer::Regex {
  pcre2_code* code = nullptr;
  // The work one match may do: a pre-tokenizer regex from a hostile tokenizer.json can
  // backtrack exponentially, and a match past these limits fails (PCRE2_ERROR_MATCHLIMIT /
  // DEPTHLIMIT / HEAPLIMIT) with a clear error instead of hanging. Qwen's and GPT-2's
  // patterns need a few steps per character (tokenizer_test measures the largest real need).
  pcre2_match_context* limits = nullptr;
  ~Regex() {
    pcre2_code_free(code);
    pcre2_match_context_free(limits);
  }
};

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Status Tokenizer::load(const std::string& path, Tokenizer* out) {
  std::string text;
  HANPU_RETURN_IF_ERROR(read_regular_file(path, kMaxTokenizerFileBytes, "tokenizer.json", &text));
  return parse(text, path, out);
}

namespace {

Status parse_pre_tokenizer(const json& pt, const std::string& source, std::string* pattern) {
  const auto unsupported = [&](const json& j) {
    return Status::Error(
        fmt::format("{}: pre_tokenizer {} is not supported (Qwen/GPT-2 byte-level: a regex Split "
                    "then ByteLevel, or ByteLevel alone)",
                    source, json_excerpt(j, 200)));
  };
  const auto byte_level_ok = [](const json& j) { return !j.value("add_prefix_space", false); };
  if (!pt.is_object()) return unsupported(pt);
  const std::string type = pt.value("type", "");
  if (type == "ByteLevel") {
    if (!byte_level_ok(pt) || !pt.value("use_regex", true)) return unsupported(pt);
    *pattern = kGpt2Pattern;
    return Status::Ok();
  }
  if (type != "Sequence" || !pt.contains("pretokenizers") || !pt["pretokenizers"].is_array() ||
      pt["pretokenizers"].size() != 2) {
    return unsupported(pt);
  }
  const json& split = pt["pretokenizers"][0];
  const json& bl = pt["pretokenizers"][1];
  if (split.value("type", "") != "Split" || split.value("behavior", "") != "Isolated" ||
      split.value("invert", false) || !split.contains("pattern") ||
      !split["pattern"].contains("Regex") || !split["pattern"]["Regex"].is_string() ||
      bl.value("type", "") != "ByteLevel" || !byte_level_ok(bl) || bl.value("use_regex", true)) {
    return unsupported(pt);
  }
  *pattern = split["pattern"]["Regex"].get<std::string>();
  return Status::Ok();
}

}  // namespace

Status Tokenizer::parse(const std::string& json_text, const std::string& source, Tokenizer* out) {
  json j;
  HANPU_RETURN_IF_ERROR(hanpu::parse_json(json_text, source, &j));
  Parts parts;
  HANPU_RETURN_IF_ERROR(parts_from_json(j, source, &parts));
  return build(std::move(parts), source, out);
}

Status Tokenizer::parts_from_json(const json& j, const std::string& source, Parts* out) {
  try {  // a field of the wrong JSON type throws from deep inside nlohmann's accessors
    return read_parts(j, source, out);
  } catch (const json::exception& e) {
    return Status::Error(fmt::format("{}: a field has the wrong type: {}", source, e.what()));
  }
}

Status Tokenizer::read_parts(const json& j, const std::string& source, Parts* out) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
    return Status::Error(fmt::format("{}: no \"model\" object", source));
  }
  const json& m = j["model"];
  if (m.value("type", "") != "BPE") {
    return Status::Error(
        fmt::format("{}: model type {} is not supported (BPE only)", source, m.value("type", "?")));
  }
  if (m.value("byte_fallback", false) || m.value("ignore_merges", false) ||
      !(m.value("continuing_subword_prefix", json()).is_null() ||
        m["continuing_subword_prefix"] == "") ||
      !(m.value("end_of_word_suffix", json()).is_null() || m["end_of_word_suffix"] == "")) {
    return Status::Error(
        fmt::format("{}: BPE options (byte_fallback, ignore_merges, subword prefix/suffix) are "
                    "not the byte-level ones hanpu supports",
                    source));
  }
  if (!m.contains("vocab") || !m["vocab"].is_object())
    return Status::Error(fmt::format("{}: model has no vocab", source));
  Parts parts;
  const auto put = [&](const std::string& tok, int64_t id, bool added) -> Status {
    if (id < 0 || id > (1 << 24))
      return Status::Error(
          fmt::format("{}: vocab id of {} is {}", source, json_excerpt(json(tok)), id));
    if (static_cast<size_t>(id) >= parts.tokens.size()) {
      parts.tokens.resize(static_cast<size_t>(id) + 1);
      parts.added.resize(static_cast<size_t>(id) + 1, false);
    }
    parts.tokens[id] = tok;
    parts.added[id] = parts.added[id] || added;
    return Status::Ok();
  };
  for (const auto& [tok, id] : m["vocab"].items()) {
    if (!id.is_number_integer())
      return Status::Error(fmt::format("{}: vocab id of {} is {}", source, json_excerpt(json(tok)),
                                       json_excerpt(id)));
    HANPU_RETURN_IF_ERROR(put(tok, id.get<int64_t>(), false));
  }
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const json& a : j["added_tokens"]) {
      if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string() || a["content"].get<std::string>().empty()) {
        return Status::Error(
            fmt::format("{}: added token {} is malformed", source, json_excerpt(a, 120)));
      }
      HANPU_RETURN_IF_ERROR(put(a["content"].get<std::string>(), a["id"].get<int64_t>(), true));
    }
  }
  // Merges: "a b" strings (older files) or ["a", "b"] pairs.
  if (!m.contains("merges") || !m["merges"].is_array())
    return Status::Error(fmt::format("{}: model has no merges", source));
  for (const json& mg : m["merges"]) {
    if (mg.is_string()) {
      const std::string s = mg.get<std::string>();
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos)
        return Status::Error(fmt::format("{}: merge {} has no space", source, json_excerpt(mg)));
      parts.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string()) {
      parts.merges.emplace_back(mg[0].get<std::string>(), mg[1].get<std::string>());
    } else {
      return Status::Error(fmt::format("{}: merge {} is malformed", source, json_excerpt(mg)));
    }
  }
  // Normaliser: none or NFC (Qwen3.5); anything else would silently change ids.
  const json norm = j.value("normalizer", json());
  if (!norm.is_null()) {
    if (norm.value("type", "") != "NFC") {
      return Status::Error(fmt::format("{}: normalizer {} is not supported (NFC or none)", source,
                                       json_excerpt(norm, 120)));
    }
    parts.nfc = true;
  }
  HANPU_RETURN_IF_ERROR(
      parse_pre_tokenizer(j.value("pre_tokenizer", json()), source, &parts.pattern));
  *out = std::move(parts);
  return Status::Ok();
}

std::string Tokenizer::pattern_for_pre(const std::string& pre) {
  if (pre == "qwen35") return kQwen35Pattern;
  if (pre == "qwen2") return kQwen2Pattern;
  if (pre == "kimi-k2") return kKimiK2Pattern;
  return std::string();
}

std::string Tokenizer::pre_for_pattern(const std::string& pattern) {
  if (pattern == kQwen35Pattern) return "qwen35";
  if (pattern == kQwen2Pattern) return "qwen2";
  if (pattern == kKimiK2Pattern) return "kimi-k2";
  return std::string();
}

Status Tokenizer::build(Parts parts, const std::string& source, Tokenizer* out) {
  Tokenizer t;
  // The compact tables index bytes and merges with 32 bits (token_table.h).
  size_t token_bytes = 0;
  for (const std::string& tok : parts.tokens) token_bytes += tok.size();
  if (token_bytes > UINT32_MAX || parts.tokens.size() > static_cast<size_t>(INT32_MAX) ||
      parts.merges.size() > static_cast<size_t>(INT32_MAX)) {
    return Status::Error(fmt::format(
        "{}: vocabulary too large ({} tokens of {} bytes, {} merges; at most 4 GiB of tokens and "
        "2^31 tokens or merges)",
        source, parts.tokens.size(), token_bytes, parts.merges.size()));
  }
  t.is_added_ = std::move(parts.added);
  t.is_added_.resize(parts.tokens.size(), false);
  for (size_t id = 0; id < parts.tokens.size(); ++id) {
    if (t.is_added_[id] && !parts.tokens[id].empty())
      t.added_.push_back({parts.tokens[id], static_cast<int>(id)});
  }
  t.tokens_ = TokenTable(parts.tokens, t.is_added_);
  parts.tokens = {};  // the table holds them now
  std::sort(t.added_.begin(), t.added_.end(),
            [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });
  int rank = 0;
  for (const auto& [a, b] : parts.merges) {
    const auto ia = t.tokens_.find(a), ib = t.tokens_.find(b), iab = t.tokens_.find(a + b);
    if (!ia || !ib || !iab) {
      return Status::Error(
          fmt::format("{}: merge #{} ({} + {}) uses a token missing from the vocab", source, rank,
                      quoted(a), quoted(b)));
    }
    t.merges_.insert(*ia, *ib, {rank++, *iab});
  }
  t.nfc_ = parts.nfc;
  int err = 0;
  PCRE2_SIZE err_off = 0;
  t.split_ = std::make_unique<Regex>();
  t.split_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(parts.pattern.data()), parts.pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &err, &err_off, nullptr);
  if (t.split_->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return Status::Error(fmt::format("{}: pre-tokenizer regex does not compile at offset {}: {}",
                                     source, err_off, reinterpret_cast<char*>(msg)));
  }
  t.split_->limits = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(t.split_->limits, kRegexMatchLimit);
  pcre2_set_depth_limit(t.split_->limits, kRegexMatchLimit);
  pcre2_set_heap_limit(t.split_->limits, kRegexHeapLimitKiB);
  // Every byte must have a token, or some input could not be encoded.
  for (int b = 0; b < 256; ++b) {
    if (!t.tokens_.find(byte_map().to_utf8[b])) {
      return Status::Error(
          fmt::format("{}: vocab lacks the byte-level token for byte 0x{:02x}", source, b));
    }
  }
  *out = std::move(t);
  return Status::Ok();
}

std::string Tokenizer::byte_level(std::string_view bytes) {
  std::string out;
  for (char c : bytes) out += byte_map().to_utf8[static_cast<unsigned char>(c)];
  return out;
}

std::optional<int> Tokenizer::token_id(std::string_view token) const {
  for (const Added& a : added_) {
    if (a.content == token) return a.id;
  }
  return tokens_.find(token);
}

Status Tokenizer::encode_piece(const std::string& piece, std::vector<int>* ids) const {
  // Symbols start as single bytes (their byte-level tokens) and merge lowest rank first,
  // leftmost among equal ranks, as the `tokenizers` library's BPE does. Candidate pairs wait
  // in a min-heap over a linked list of symbols, so a piece costs O(n log n): rescanning
  // every pair after each merge was O(n^2), minutes for one long unbroken word (a run of
  // letters such as a DNA sequence, or of spaces), which the split regex leaves whole.
  const int n = static_cast<int>(piece.size());
  std::vector<int> sym(n), next(n), prev(n);
  for (int i = 0; i < n; ++i) {
    sym[i] = *tokens_.find(byte_map().to_utf8[static_cast<unsigned char>(piece[i])]);
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  // (rank, left position): the heap's order. The pair's ids, to tell a stale entry (one of
  // its symbols merged since; a position's token only grows, so an id never comes back).
  struct Candidate {
    int rank, left, right, left_id, right_id, merged_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto push = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    const int right = next[left];
    if (const MergeTable::Merge* m = merges_.find(sym[left], sym[right]))
      heap.push({m->rank, left, right, sym[left], sym[right], m->merged});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (sym[c.left] != c.left_id || next[c.left] != c.right || sym[c.right] != c.right_id)
      continue;  // stale
    sym[c.left] = c.merged_id;
    sym[c.right] = -1;
    next[c.left] = next[c.right];
    if (next[c.left] >= 0) prev[next[c.left]] = c.left;
    push(prev[c.left]);
    push(c.left);
  }
  for (int i = n > 0 ? 0 : -1; i >= 0; i = next[i]) ids->push_back(sym[i]);
  return Status::Ok();
}

Status Tokenizer::for_each_piece(std::string_view text,
                                 const std::function<Status(const std::string&)>& piece) const {
  if (text.empty()) return Status::Ok();
  std::string norm(text);
  if (nfc_) {
    // utf8proc_NFC would stop at the first NUL byte; the length keeps every character.
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(norm.data()),
                     static_cast<utf8proc_ssize_t>(norm.size()), &out,
                     static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (n < 0)
      return Status::Error(fmt::format("text could not be NFC-normalised: {}", utf8proc_errmsg(n)));
    norm.assign(reinterpret_cast<char*>(out), static_cast<size_t>(n));
    free(out);
  }
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(split_->code, nullptr);
  size_t pos = 0;
  Status st;
  // PCRE2 checks the whole subject's UTF-8 on every call unless told not to: once per match
  // made tokenizing quadratic (100 s for 1 MB of prose). The first call checks it; the later
  // ones start where a match ended, a character boundary (the pattern may not use \C).
  uint32_t check = 0;
  // Each match is bounded in steps; the time budget bounds their sum, which a pathological
  // pattern could otherwise make grow with the text's length times the per-match limit.
  const auto start = std::chrono::steady_clock::now();
  const double budget = kRegexBaseSeconds + kRegexSecondsPerByte * static_cast<double>(norm.size());
  while (pos < norm.size() && st.ok()) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > budget) {
      st = Status::Error(fmt::format(
          "the pre-tokenizer regex took more than {:.1f} s for {} bytes (stopped at byte "
          "{}): the tokenizer's pattern backtracks without bound",
          budget, norm.size(), pos));
      break;
    }
    const int rc = pcre2_match(split_->code, reinterpret_cast<PCRE2_SPTR>(norm.data()), norm.size(),
                               pos, check, md, split_->limits);
    check = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH) {  // no further match: the rest is one piece
      st = piece(norm.substr(pos));
      break;
    }
    if (rc < 0) {  // a resource limit (backtracking) or another failure of the split regex
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof(msg));
      const bool limit = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
                         rc == PCRE2_ERROR_HEAPLIMIT;
      st = Status::Error(
          fmt::format("the pre-tokenizer regex failed at byte {} of the normalised text: {}{}", pos,
                      reinterpret_cast<char*>(msg),
                      limit ? fmt::format(" (a match may take {} steps and {} KiB; the tokenizer's "
                                          "regex backtracks past them)",
                                          kRegexMatchLimit, kRegexHeapLimitKiB)
                            : ""));
      break;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[0] < pos || ov[1] < ov[0]) {  // \K could report such a match; the scan must only move on
      st = Status::Error(fmt::format("the pre-tokenizer regex matched backwards at byte {}", pos));
      break;
    }
    if (ov[0] > pos) st = piece(norm.substr(pos, ov[0] - pos));  // the gap before a match
    if (!st.ok()) break;
    if (ov[1] == ov[0]) {  // an empty match: step one character so the scan moves on
      size_t next = ov[0] + 1;
      while (next < norm.size() && (static_cast<unsigned char>(norm[next]) & 0xC0) == 0x80) ++next;
      st = piece(norm.substr(ov[0], next - ov[0]));
      pos = next;
      continue;
    }
    st = piece(norm.substr(ov[0], ov[1] - ov[0]));
    pos = ov[1];
  }
  pcre2_match_data_free(md);
  return st;
}

Status Tokenizer::encode_segment(std::string_view text, std::vector<int>* ids) const {
  return for_each_piece(text, [&](const std::string& p) { return encode_piece(p, ids); });
}

Status Tokenizer::split(std::string_view text, std::vector<std::string>* pieces) const {
  pieces->clear();
  return for_each_piece(text, [&](const std::string& p) {
    pieces->push_back(p);
    return Status::Ok();
  });
}

Status Tokenizer::encode(std::string_view text, std::vector<int>* ids) const {
  // Reject invalid UTF-8 up front, naming the offset (the regex engine would refuse it anyway).
  {
    size_t i = 0;
    while (i < text.size()) {
      utf8proc_int32_t cp = 0;
      const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                      static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
      if (n <= 0) return Status::Error(fmt::format("text is not valid UTF-8 at byte {}", i));
      i += static_cast<size_t>(n);
    }
  }
  std::vector<int> out;
  size_t seg = 0, i = 0;
  // Added tokens match whole characters only (a GGUF's token text may be any bytes), so every
  // segment between them stays valid UTF-8.
  const auto boundary = [&](size_t at) {
    return at >= text.size() || (static_cast<unsigned char>(text[at]) & 0xC0) != 0x80;
  };
  while (i < text.size()) {
    const Added* hit = nullptr;
    for (const Added& a : added_) {  // longest first
      if (boundary(i) && text.compare(i, a.content.size(), a.content) == 0 &&
          boundary(i + a.content.size())) {
        hit = &a;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    HANPU_RETURN_IF_ERROR(encode_segment(text.substr(seg, i - seg), &out));
    out.push_back(hit->id);
    i += hit->content.size();
    seg = i;
  }
  HANPU_RETURN_IF_ERROR(encode_segment(text.substr(seg), &out));
  ids->insert(ids->end(), out.begin(), out.end());
  return Status::Ok();
}

std::string Tokenizer::token_bytes(int id) const {
  if (id < 0 || id >= vocab_size()) return std::string();
  const std::string_view tok = tokens_.at(id);
  if (is_added_[id]) return std::string(tok);
  std::string bytes;
  size_t i = 0;
  while (i < tok.size()) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(tok.data() + i),
                                    static_cast<utf8proc_ssize_t>(tok.size() - i), &cp);
    if (n <= 0) break;
    const auto it = byte_map().from_cp.find(static_cast<uint32_t>(cp));
    if (it != byte_map().from_cp.end()) bytes.push_back(static_cast<char>(it->second));
    i += static_cast<size_t>(n);
  }
  return bytes;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string s;
  for (int id : ids) s += token_bytes(id);
  return s;
}

}  // namespace hanpu::model
