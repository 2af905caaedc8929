// Byte-level BPE from tokenizer.json (see tokenizer.h). Written here rather than taken from
// a library because the only complete implementation (Rust `tokenizers`) is not a Debian
// C/C++ package; the Unicode work is delegated: PCRE2 for the split regex, utf8proc for NFC.
#include "model/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : 256u + static_cast<uint32_t>(shifted++);
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

// GPT-2's pattern, used by a ByteLevel pre-tokenizer with use_regex = true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

uint64_t pair_key(int a, int b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }

}  // namespace

struct Tokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Status Tokenizer::load(const std::string& path, Tokenizer* out) {
  std::ifstream in(path);
  if (!in) return Status::Error(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path, out);
}

namespace {

Status parse_pre_tokenizer(const json& pt, const std::string& source, std::string* pattern) {
  const auto unsupported = [&](const json& j) {
    return Status::Error(fmt::format("{}: pre_tokenizer {} is not supported (Qwen/GPT-2 byte-level: a regex Split "
                                     "then ByteLevel, or ByteLevel alone)", source, j.dump().substr(0, 200)));
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
  if (split.value("type", "") != "Split" || split.value("behavior", "") != "Isolated" || split.value("invert", false) ||
      !split.contains("pattern") || !split["pattern"].contains("Regex") || !split["pattern"]["Regex"].is_string() ||
      bl.value("type", "") != "ByteLevel" || !byte_level_ok(bl) || bl.value("use_regex", true)) {
    return unsupported(pt);
  }
  *pattern = split["pattern"]["Regex"].get<std::string>();
  return Status::Ok();
}

}  // namespace

Status Tokenizer::parse(const std::string& json_text, const std::string& source, Tokenizer* out) {
  try {  // a field of the wrong JSON type throws from deep inside nlohmann's accessors
    return parse_json(json_text, source, out);
  } catch (const json::exception& e) {
    return Status::Error(fmt::format("{}: a field has the wrong type: {}", source, e.what()));
  }
}

Status Tokenizer::parse_json(const std::string& json_text, const std::string& source, Tokenizer* out) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return Status::Error(fmt::format("{}: malformed JSON at byte {}: {}", source, e.byte, e.what()));
  } catch (const json::exception& e) {  // e.g. a number too large for any type
    return Status::Error(fmt::format("{}: malformed JSON: {}", source, e.what()));
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
    return Status::Error(fmt::format("{}: no \"model\" object", source));
  }
  const json& m = j["model"];
  if (m.value("type", "") != "BPE") {
    return Status::Error(fmt::format("{}: model type {} is not supported (BPE only)", source, m.value("type", "?")));
  }
  if (m.value("byte_fallback", false) || m.value("ignore_merges", false) ||
      !(m.value("continuing_subword_prefix", json()).is_null() || m["continuing_subword_prefix"] == "") ||
      !(m.value("end_of_word_suffix", json()).is_null() || m["end_of_word_suffix"] == "")) {
    return Status::Error(fmt::format("{}: BPE options (byte_fallback, ignore_merges, subword prefix/suffix) are "
                                     "not the byte-level ones hanpu supports", source));
  }
  if (!m.contains("vocab") || !m["vocab"].is_object()) return Status::Error(fmt::format("{}: model has no vocab", source));
  Parts parts;
  const auto put = [&](const std::string& tok, int64_t id, bool added) -> Status {
    if (id < 0 || id > (1 << 24)) return Status::Error(fmt::format("{}: vocab id of {} is {}", source, json(tok).dump(), id));
    if (static_cast<size_t>(id) >= parts.tokens.size()) {
      parts.tokens.resize(static_cast<size_t>(id) + 1);
      parts.added.resize(static_cast<size_t>(id) + 1, false);
    }
    parts.tokens[id] = tok;
    parts.added[id] = parts.added[id] || added;
    return Status::Ok();
  };
  for (const auto& [tok, id] : m["vocab"].items()) {
    if (!id.is_number_integer()) return Status::Error(fmt::format("{}: vocab id of {} is {}", source, json(tok).dump(), id.dump()));
    HANPU_RETURN_IF_ERROR(put(tok, id.get<int64_t>(), false));
  }
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const json& a : j["added_tokens"]) {
      if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") || !a["content"].is_string() ||
          a["content"].get<std::string>().empty()) {
        return Status::Error(fmt::format("{}: added token {} is malformed", source, a.dump().substr(0, 120)));
      }
      HANPU_RETURN_IF_ERROR(put(a["content"].get<std::string>(), a["id"].get<int64_t>(), true));
    }
  }
  // Merges: "a b" strings (older files) or ["a", "b"] pairs.
  if (!m.contains("merges") || !m["merges"].is_array()) return Status::Error(fmt::format("{}: model has no merges", source));
  for (const json& mg : m["merges"]) {
    if (mg.is_string()) {
      const std::string s = mg.get<std::string>();
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) return Status::Error(fmt::format("{}: merge {} has no space", source, mg.dump()));
      parts.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string()) {
      parts.merges.emplace_back(mg[0].get<std::string>(), mg[1].get<std::string>());
    } else {
      return Status::Error(fmt::format("{}: merge {} is malformed", source, mg.dump().substr(0, 80)));
    }
  }
  // Normaliser: none or NFC (Qwen3.5); anything else would silently change ids.
  const json norm = j.value("normalizer", json());
  if (!norm.is_null()) {
    if (norm.value("type", "") != "NFC") {
      return Status::Error(fmt::format("{}: normalizer {} is not supported (NFC or none)", source, norm.dump().substr(0, 120)));
    }
    parts.nfc = true;
  }
  HANPU_RETURN_IF_ERROR(parse_pre_tokenizer(j.value("pre_tokenizer", json()), source, &parts.pattern));
  return build(std::move(parts), source, out);
}

std::string Tokenizer::pattern_for_pre(const std::string& pre) {
  if (pre == "qwen35") return kQwen35Pattern;
  if (pre == "qwen2") return kQwen2Pattern;
  return std::string();
}

Status Tokenizer::build(Parts parts, const std::string& source, Tokenizer* out) {
  Tokenizer t;
  t.id_to_token_ = std::move(parts.tokens);
  t.is_added_ = std::move(parts.added);
  t.is_added_.resize(t.id_to_token_.size(), false);
  for (size_t id = 0; id < t.id_to_token_.size(); ++id) {
    const std::string& tok = t.id_to_token_[id];
    if (tok.empty()) continue;  // an unused id
    if (t.is_added_[id]) {
      t.added_.push_back({tok, static_cast<int>(id)});
    } else {
      t.vocab_[tok] = static_cast<int>(id);
    }
  }
  std::sort(t.added_.begin(), t.added_.end(), [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });
  int rank = 0;
  for (const auto& [a, b] : parts.merges) {
    const auto ia = t.vocab_.find(a), ib = t.vocab_.find(b), iab = t.vocab_.find(a + b);
    if (ia == t.vocab_.end() || ib == t.vocab_.end() || iab == t.vocab_.end()) {
      return Status::Error(fmt::format("{}: merge #{} ({} + {}) uses a token missing from the vocab", source, rank,
                                       json(a).dump(), json(b).dump()));
    }
    t.merges_.emplace(pair_key(ia->second, ib->second), std::pair{rank++, iab->second});
  }
  t.nfc_ = parts.nfc;
  int err = 0;
  PCRE2_SIZE err_off = 0;
  t.split_ = std::make_unique<Regex>();
  t.split_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(parts.pattern.data()), parts.pattern.size(),
                                 PCRE2_UTF | PCRE2_UCP, &err, &err_off, nullptr);
  if (t.split_->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return Status::Error(fmt::format("{}: pre-tokenizer regex does not compile at offset {}: {}", source, err_off,
                                     reinterpret_cast<char*>(msg)));
  }
  // Every byte must have a token, or some input could not be encoded.
  for (int b = 0; b < 256; ++b) {
    if (t.vocab_.count(byte_map().to_utf8[b]) == 0) {
      return Status::Error(fmt::format("{}: vocab lacks the byte-level token for byte 0x{:02x}", source, b));
    }
  }
  *out = std::move(t);
  return Status::Ok();
}

std::optional<int> Tokenizer::token_id(std::string_view token) const {
  for (const Added& a : added_) {
    if (a.content == token) return a.id;
  }
  const auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

Status Tokenizer::encode_piece(const std::string& piece, std::vector<int>* ids) const {
  // Symbols start as single bytes (their byte-level tokens) and merge lowest rank first —
  // quadratic in the piece length, and pieces are words.
  std::vector<int> sym;
  sym.reserve(piece.size());
  for (unsigned char b : piece) sym.push_back(vocab_.at(byte_map().to_utf8[b]));
  for (;;) {
    int best_rank = std::numeric_limits<int>::max(), best_at = -1, best_id = -1;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      const auto it = merges_.find(pair_key(sym[i], sym[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_at = static_cast<int>(i);
        best_id = it->second.second;
      }
    }
    if (best_at < 0) break;
    sym[best_at] = best_id;
    sym.erase(sym.begin() + best_at + 1);
  }
  ids->insert(ids->end(), sym.begin(), sym.end());
  return Status::Ok();
}

Status Tokenizer::encode_segment(std::string_view text, std::vector<int>* ids) const {
  if (text.empty()) return Status::Ok();
  std::string norm(text);
  if (nfc_) {
    utf8proc_uint8_t* out = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(norm.c_str()));
    if (out == nullptr) return Status::Error("text could not be NFC-normalised");
    norm = reinterpret_cast<char*>(out);
    free(out);
  }
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(split_->code, nullptr);
  size_t pos = 0;
  Status st;
  while (pos < norm.size() && st.ok()) {
    const int rc = pcre2_match(split_->code, reinterpret_cast<PCRE2_SPTR>(norm.data()), norm.size(), pos, 0, md, nullptr);
    if (rc < 0) {  // no further match: the rest is one piece
      st = encode_piece(norm.substr(pos), ids);
      break;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[0] > pos) st = encode_piece(norm.substr(pos, ov[0] - pos), ids);  // the gap before a match
    if (!st.ok()) break;
    if (ov[1] == ov[0]) {  // an empty match: step one character so the scan moves on
      size_t next = ov[0] + 1;
      while (next < norm.size() && (static_cast<unsigned char>(norm[next]) & 0xC0) == 0x80) ++next;
      st = encode_piece(norm.substr(ov[0], next - ov[0]), ids);
      pos = next;
      continue;
    }
    st = encode_piece(norm.substr(ov[0], ov[1] - ov[0]), ids);
    pos = ov[1];
  }
  pcre2_match_data_free(md);
  return st;
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
  while (i < text.size()) {
    const Added* hit = nullptr;
    for (const Added& a : added_) {  // longest first
      if (text.compare(i, a.content.size(), a.content) == 0) {
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
  const std::string& tok = id_to_token_[id];
  if (is_added_[id]) return tok;
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
