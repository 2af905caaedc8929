// Reading a sequence state file's bytes (see state_file_format.h).
#include "model/state_file_format.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "base/file_read.h"

namespace hanpu::model {

namespace {

class Reader {
 public:
  Reader(std::vector<char> b, const std::string& path) : b_(std::move(b)), path_(path) {}
  Status read(void* dst, size_t n, const char* what) {
    if (b_.size() - pos_ < n) {
      return Status::Error(fmt::format("{}: file ends at byte {} inside {} ({} bytes needed)",
                                       path_, b_.size(), what, n));
    }
    if (n > 0) std::memcpy(dst, b_.data() + pos_, n);  // an empty vector's data() may be null
    pos_ += n;
    return Status::Ok();
  }
  // `count` floats that must all be finite: a state holding NaN or infinity would only ever
  // give NaN logits, so it is refused here, naming the layer and the byte.
  Status read_finite(std::vector<float>* dst, size_t count, const char* what, int layer) {
    dst->resize(count);
    const size_t at = pos_;
    HANPU_RETURN_IF_ERROR(read(dst->data(), count * sizeof(float), what));
    for (size_t j = 0; j < count; ++j) {
      if (!std::isfinite((*dst)[j])) {
        return Status::Error(fmt::format("{}: layer {} {} holds {} at byte {}", path_, layer, what,
                                         (*dst)[j], at + j * sizeof(float)));
      }
    }
    return Status::Ok();
  }
  size_t left() const { return b_.size() - pos_; }
  size_t offset() const { return pos_; }

 private:
  std::vector<char> b_;
  size_t pos_ = 0;
  const std::string& path_;
};

// The magic, version, model fingerprint, position and token ids, each checked.
Status parse_header_and_tokens(Reader& r, const ModelConfig& c, const std::string& path,
                               SavedSequence* s) {
  char magic[8];
  uint32_t version = 0;
  HANPU_RETURN_IF_ERROR(r.read(magic, sizeof(magic), "the magic"));
  if (std::memcmp(magic, kStateMagic, sizeof(kStateMagic)) != 0) {
    return Status::Error(fmt::format("{}: not a hanpu state file", path));
  }
  HANPU_RETURN_IF_ERROR(r.read(&version, sizeof(version), "the version"));
  if (version == 1) {
    return Status::Error(
        fmt::format("{}: state format version 1, saved before the token ids were kept; this build "
                    "reads version {}: run the sequence again to save it",
                    path, kStateVersion));
  }
  if (version == 2) {
    return Status::Error(
        fmt::format("{}: state format version 2, whose fingerprint lacks the architecture; this "
                    "build reads version {}: run the sequence again to save it",
                    path, kStateVersion));
  }
  if (version != kStateVersion) {
    return Status::Error(fmt::format("{}: state format version {} (this build reads {})", path,
                                     version, kStateVersion));
  }
  std::array<uint32_t, kStateFingerprintSize> fp{};
  HANPU_RETURN_IF_ERROR(r.read(fp.data(), sizeof(fp), "the model fingerprint"));
  const auto want = state_fingerprint(c);
  for (size_t i = 0; i < fp.size(); ++i) {
    if (fp[i] != want[i]) {
      return Status::Error(fmt::format("{}: saved for a model with {} {}, this model has {}", path,
                                       kStateFingerprintNames[i], fp[i], want[i]));
    }
  }
  HANPU_RETURN_IF_ERROR(r.read(&s->position, sizeof(s->position), "the position"));
  if (s->position < 0 || static_cast<uint64_t>(s->position) > r.left() / sizeof(int)) {
    return Status::Error(
        fmt::format("{}: position {} at byte {} does not fit the file ({} bytes left)", path,
                    s->position, r.offset() - sizeof(s->position), r.left()));
  }
  s->tokens.resize(static_cast<size_t>(s->position));
  HANPU_RETURN_IF_ERROR(r.read(s->tokens.data(), s->tokens.size() * sizeof(int), "the token ids"));
  for (size_t t = 0; t < s->tokens.size(); ++t) {
    if (s->tokens[t] < 0 || s->tokens[t] >= c.vocab) {
      return Status::Error(
          fmt::format("{}: token id {} at position {} is outside the vocabulary [0, {})", path,
                      s->tokens[t], t, c.vocab));
    }
  }
  return Status::Ok();
}

}  // namespace

const char* const kStateFingerprintNames[kStateFingerprintSize] = {
    "architecture (0 Qwen3.5, 1 Qwen3-Next)",
    "layer pattern hash",
    "attention heads",
    "layers",
    "hidden",
    "vocab",
    "linear key heads",
    "linear value heads",
    "linear key dim",
    "linear value dim",
    "kv heads",
    "head dim",
    "conv kernel"};

namespace {

// FNV-1a over the layer kinds: two models whose GDN and attention layers sit in other places
// have states of other shapes per layer.
uint32_t layer_pattern_hash(const ModelConfig& c) {
  uint32_t h = 2166136261u;
  for (LayerKind k : c.layer_kinds)
    h = (h ^ (k == LayerKind::kFullAttention ? 1u : 2u)) * 16777619u;
  return h;
}

}  // namespace

int64_t state_file_bytes(const ModelConfig& c, int64_t position) {
  int64_t n = sizeof(kStateMagic) + sizeof(uint32_t) * (1 + kStateFingerprintSize) +
              sizeof(int64_t) + position * static_cast<int64_t>(sizeof(int));
  for (int i = 0; i < c.layers; ++i) {
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      n += (c.la_conv_state_floats() + c.la_recurrent_floats()) *
           static_cast<int64_t>(sizeof(float));
    } else {
      n += static_cast<int64_t>(sizeof(int64_t)) +
           2 * position * c.kv_heads * c.head_dim * static_cast<int64_t>(sizeof(float));
    }
  }
  return n;
}

std::array<uint32_t, kStateFingerprintSize> state_fingerprint(const ModelConfig& c) {
  return {static_cast<uint32_t>(c.arch),         layer_pattern_hash(c),
          static_cast<uint32_t>(c.attn_heads),   static_cast<uint32_t>(c.layers),
          static_cast<uint32_t>(c.hidden),       static_cast<uint32_t>(c.vocab),
          static_cast<uint32_t>(c.la_key_heads), static_cast<uint32_t>(c.la_value_heads),
          static_cast<uint32_t>(c.la_key_dim),   static_cast<uint32_t>(c.la_value_dim),
          static_cast<uint32_t>(c.kv_heads),     static_cast<uint32_t>(c.head_dim),
          static_cast<uint32_t>(c.conv_kernel)};
}

Status parse_state_file(const ModelConfig& c, std::vector<char> bytes, const std::string& path,
                        SavedSequence* out) {
  Reader r(std::move(bytes), path);
  SavedSequence s;
  HANPU_RETURN_IF_ERROR(parse_header_and_tokens(r, c, path, &s));
  s.conv.resize(c.layers);
  s.recurrent.resize(c.layers);
  s.keys.resize(c.layers);
  s.values.resize(c.layers);
  for (int i = 0; i < c.layers; ++i) {
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      HANPU_RETURN_IF_ERROR(r.read_finite(&s.conv[i], static_cast<size_t>(c.la_conv_state_floats()),
                                          "conv state", i));
      HANPU_RETURN_IF_ERROR(r.read_finite(
          &s.recurrent[i], static_cast<size_t>(c.la_recurrent_floats()), "recurrent state", i));
    } else {
      int64_t len = 0;
      HANPU_RETURN_IF_ERROR(r.read(&len, sizeof(len), "a KV cache length"));
      const size_t row = static_cast<size_t>(c.kv_heads) * c.head_dim;
      if (len < 0 || len != s.position ||
          static_cast<uint64_t>(len) > r.left() / (2 * row * sizeof(float))) {
        return Status::Error(
            fmt::format("{}: layer {} KV length {} does not fit the file or the position {}", path,
                        i, len, s.position));
      }
      HANPU_RETURN_IF_ERROR(r.read_finite(&s.keys[i], static_cast<size_t>(len) * row, "keys", i));
      HANPU_RETURN_IF_ERROR(
          r.read_finite(&s.values[i], static_cast<size_t>(len) * row, "values", i));
    }
  }
  if (r.left() != 0)
    return Status::Error(fmt::format("{}: {} unexpected bytes after the state", path, r.left()));
  *out = std::move(s);
  return Status::Ok();
}

namespace {

// The first `n` bytes of the open file `fd` (fewer if it is shorter).
Status read_prefix(int fd, const std::string& path, size_t n, std::vector<char>* out) {
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out->data() + got, n - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return Status::Error(
          fmt::format("{}: read failed at byte {}: {}", path, got, std::strerror(errno)));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  out->resize(got);
  return Status::Ok();
}

// Opens the state file `path` for a model with config `c`: a regular file no larger than the
// state of kMaxStatePositions tokens of that model.
Status open_state_file(const ModelConfig& c, const std::string& path, int* fd, int64_t* size) {
  HANPU_RETURN_IF_ERROR(open_regular_file(path, "the state file", fd, size));
  const int64_t limit = state_file_bytes(c, kMaxStatePositions);
  if (*size > limit) {
    ::close(*fd);
    return Status::Error(
        fmt::format("{}: {} bytes, more than the {} bytes of a {}-token state of this model", path,
                    *size, limit, kMaxStatePositions));
  }
  return Status::Ok();
}

}  // namespace

Status read_state_file(const ModelConfig& c, const std::string& path, std::vector<char>* bytes) {
  int fd = -1;
  int64_t size = 0;
  HANPU_RETURN_IF_ERROR(open_state_file(c, path, &fd, &size));
  const Status st = read_prefix(fd, path, static_cast<size_t>(size), bytes);
  ::close(fd);
  return st;
}

Status read_state_tokens(const ModelConfig& c, const std::string& path, std::vector<int>* ids) {
  int fd = -1;
  int64_t size = 0;
  HANPU_RETURN_IF_ERROR(open_state_file(c, path, &fd, &size));
  // The header ends with the position; the ids follow it.
  constexpr uint64_t kHeader =
      sizeof(kStateMagic) + sizeof(uint32_t) * (1 + kStateFingerprintSize) + sizeof(int64_t);
  const auto file_bytes = static_cast<uint64_t>(size);
  std::vector<char> bytes;
  Status st = read_prefix(fd, path, std::min(file_bytes, kHeader), &bytes);
  if (st.ok() && bytes.size() == kHeader) {
    int64_t position = 0;
    std::memcpy(&position, bytes.data() + kHeader - sizeof(position), sizeof(position));
    if (position > 0) {  // a position past the file is refused by name below
      const uint64_t want =
          kHeader +
          std::min<uint64_t>(static_cast<uint64_t>(position) * sizeof(int), file_bytes - kHeader);
      st = read_prefix(fd, path, want, &bytes);
    }
  }
  ::close(fd);
  HANPU_RETURN_IF_ERROR(st);
  Reader r(std::move(bytes), path);
  SavedSequence s;
  HANPU_RETURN_IF_ERROR(parse_header_and_tokens(r, c, path, &s));
  *ids = std::move(s.tokens);
  return Status::Ok();
}

}  // namespace hanpu::model
