// Sequence state files (see state_file.h).
#include "model/state_file.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "simd/vec_ops.h"

namespace hanpu::model {

namespace {

constexpr char kMagic[8] = {'H', 'A', 'N', 'P', 'U', 'S', 'E', 'Q'};
constexpr uint32_t kVersion = 1;

std::array<uint32_t, 10> fingerprint(const ModelConfig& c) {
  return {static_cast<uint32_t>(c.layers),       static_cast<uint32_t>(c.hidden),
          static_cast<uint32_t>(c.vocab),        static_cast<uint32_t>(c.la_key_heads),
          static_cast<uint32_t>(c.la_value_heads), static_cast<uint32_t>(c.la_key_dim),
          static_cast<uint32_t>(c.la_value_dim), static_cast<uint32_t>(c.kv_heads),
          static_cast<uint32_t>(c.head_dim),     static_cast<uint32_t>(c.conv_kernel)};
}
constexpr const char* kFingerprintNames[10] = {"layers", "hidden", "vocab", "linear key heads", "linear value heads",
                                               "linear key dim", "linear value dim", "kv heads", "head dim",
                                               "conv kernel"};

class Reader {
 public:
  Reader(std::vector<char> b, const std::string& path) : b_(std::move(b)), path_(path) {}
  Status read(void* dst, size_t n, const char* what) {
    if (b_.size() - pos_ < n) {
      return Status::Error(fmt::format("{}: file ends at byte {} inside {} ({} bytes needed)", path_, b_.size(), what, n));
    }
    std::memcpy(dst, b_.data() + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  size_t left() const { return b_.size() - pos_; }

 private:
  std::vector<char> b_;
  size_t pos_ = 0;
  const std::string& path_;
};

}  // namespace

Status save_state(const Model& model, const SequenceState& s, const std::string& path) {
  const ModelConfig& c = model.config();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::Error(fmt::format("{}: cannot write", tmp));
    const auto put = [&](const void* p, size_t n) { out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n)); };
    put(kMagic, sizeof(kMagic));
    put(&kVersion, sizeof(kVersion));
    const auto fp = fingerprint(c);
    put(fp.data(), sizeof(fp));
    put(&s.position, sizeof(s.position));
    for (int i = 0; i < c.layers; ++i) {
      if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
        put(s.conv[i].data(), s.conv[i].size() * sizeof(float));
        put(s.recurrent[i].data(), s.recurrent[i].size() * sizeof(float));
      } else {
        const int64_t len = s.kv[i]->length();
        put(&len, sizeof(len));
        // The file keeps fp32 token-major [len, Hkv, D] keys, then values, whatever the
        // cache's dtype and layout; written through a bounded buffer of whole tokens.
        const int64_t row = static_cast<int64_t>(c.kv_heads) * c.head_dim;
        const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 20) / row);
        std::vector<float> wide(static_cast<size_t>(std::min(len, chunk) * row));
        for (int which = 0; which < 2; ++which) {
          for (int64_t t0 = 0; t0 < len; t0 += chunk) {
            const int64_t n = std::min(chunk, len - t0);
            const Status read =
                s.kv[i]->read_f32(t0, n, which == 0 ? wide.data() : nullptr, which == 1 ? wide.data() : nullptr);
            if (!read.ok()) {  // no file is left behind
              out.close();
              std::remove(tmp.c_str());
              return read;
            }
            put(wide.data(), static_cast<size_t>(n * row) * sizeof(float));
          }
        }
      }
    }
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::Error(fmt::format("{}: write failed (disk full?)", tmp));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return Status::Error(fmt::format("{}: cannot rename into place: {}", path, ec.message()));
  }
  return Status::Ok();
}

Status load_state(const Model& model, const std::string& path, SequenceState* out, DType kv_dtype) {
  const ModelConfig& c = model.config();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(fmt::format("{}: cannot open", path));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Reader r(std::move(bytes), path);
  char magic[8];
  uint32_t version = 0;
  HANPU_RETURN_IF_ERROR(r.read(magic, sizeof(magic), "the magic"));
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) return Status::Error(fmt::format("{}: not a hanpu state file", path));
  HANPU_RETURN_IF_ERROR(r.read(&version, sizeof(version), "the version"));
  if (version != kVersion) return Status::Error(fmt::format("{}: state format version {} (this build reads {})", path, version, kVersion));
  std::array<uint32_t, 10> fp{};
  HANPU_RETURN_IF_ERROR(r.read(fp.data(), sizeof(fp), "the model fingerprint"));
  const auto want = fingerprint(c);
  for (size_t i = 0; i < fp.size(); ++i) {
    if (fp[i] != want[i]) {
      return Status::Error(fmt::format("{}: saved for a model with {} {}, this model has {}", path, kFingerprintNames[i],
                                       fp[i], want[i]));
    }
  }
  SequenceState s = model.new_state(kv_dtype);
  HANPU_RETURN_IF_ERROR(r.read(&s.position, sizeof(s.position), "the position"));
  for (int i = 0; i < c.layers; ++i) {
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      HANPU_RETURN_IF_ERROR(r.read(s.conv[i].data(), s.conv[i].size() * sizeof(float), "a conv state"));
      HANPU_RETURN_IF_ERROR(r.read(s.recurrent[i].data(), s.recurrent[i].size() * sizeof(float), "a recurrent state"));
    } else {
      int64_t len = 0;
      HANPU_RETURN_IF_ERROR(r.read(&len, sizeof(len), "a KV cache length"));
      const size_t row = static_cast<size_t>(c.kv_heads) * c.head_dim;
      if (len < 0 || len != s.position || static_cast<uint64_t>(len) > r.left() / (2 * row * sizeof(float))) {
        return Status::Error(fmt::format("{}: layer {} KV length {} does not fit the file or the position {}", path, i,
                                         len, s.position));
      }
      std::vector<float> k(static_cast<size_t>(len) * row), v(k.size());
      HANPU_RETURN_IF_ERROR(r.read(k.data(), k.size() * sizeof(float), "keys"));
      HANPU_RETURN_IF_ERROR(r.read(v.data(), v.size() * sizeof(float), "values"));
      if (len > 0) {
        HANPU_RETURN_IF_ERROR(s.kv[i]->append({k.data(), DType::kF32, {len, c.kv_heads, c.head_dim}},
                                              {v.data(), DType::kF32, {len, c.kv_heads, c.head_dim}}));
      }
    }
  }
  if (r.left() != 0) return Status::Error(fmt::format("{}: {} unexpected bytes after the state", path, r.left()));
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace hanpu::model
