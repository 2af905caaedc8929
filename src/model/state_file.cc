// Sequence state files (see state_file.h).
#include "model/state_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

namespace hanpu::model {

Status save_state(const Model& model, const SequenceState& s, const std::string& path) {
  const ModelConfig& c = model.config();
  if (static_cast<int64_t>(s.tokens.size()) != s.position) {  // a state not made by Model::forward
    return Status::Error(fmt::format("{}: the sequence holds {} token ids for position {}", path,
                                     s.tokens.size(), s.position));
  }
  // The state goes to a fresh file beside `path`, created exclusively (no symlink or earlier
  // file of that name is followed or truncated), synced, then renamed over `path`: a reader
  // sees the old file or the whole new one, and a failure leaves neither a partial file nor a
  // temporary behind.
  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string tmp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return Status::Error(fmt::format("{}: cannot create a temporary file in {}: {}", path,
                                     dir.string(), std::strerror(errno)));
  std::FILE* out = ::fdopen(fd, "wb");
  if (out == nullptr) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status::Error(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
  }
  const auto fail = [&](Status st) {
    std::fclose(out);
    ::unlink(tmp.c_str());
    return st;
  };
  bool wrote = true;
  const auto put = [&](const void* p, size_t n) {
    wrote = wrote && (n == 0 || std::fwrite(p, 1, n, out) == n);
  };
  put(kStateMagic, sizeof(kStateMagic));
  put(&kStateVersion, sizeof(kStateVersion));
  const auto fp = state_fingerprint(c);
  put(fp.data(), sizeof(fp));
  put(&s.position, sizeof(s.position));
  put(s.tokens.data(), s.tokens.size() * sizeof(int));
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
          const Status read = s.kv[i]->read_f32(t0, n, which == 0 ? wide.data() : nullptr,
                                                which == 1 ? wide.data() : nullptr);
          if (!read.ok()) return fail(read);
          put(wide.data(), static_cast<size_t>(n * row) * sizeof(float));
        }
      }
    }
  }
  if (!wrote || std::fflush(out) != 0 || ::fsync(fd) != 0) {
    return fail(
        Status::Error(fmt::format("{}: write failed (disk full?): {}", tmp, std::strerror(errno))));
  }
  if (std::fclose(out) != 0) {
    ::unlink(tmp.c_str());
    return Status::Error(fmt::format("{}: write failed: {}", tmp, std::strerror(errno)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::Error(fmt::format("{}: cannot rename into place: {}", path, std::strerror(err)));
  }
  return Status::Ok();
}

Status load_state(const Model& model, const std::string& path, SequenceState* out, DType kv_dtype) {
  const ModelConfig& c = model.config();
  std::vector<char> bytes;
  HANPU_RETURN_IF_ERROR(read_state_file(c, path, &bytes));
  SavedSequence saved;
  HANPU_RETURN_IF_ERROR(parse_state_file(c, std::move(bytes), path, &saved));
  SequenceState s = model.new_state(kv_dtype);
  s.position = saved.position;
  s.tokens = std::move(saved.tokens);
  for (int i = 0; i < c.layers; ++i) {
    if (c.layer_kinds[i] == LayerKind::kLinearAttention) {
      s.conv[i] = std::move(saved.conv[i]);
      s.recurrent[i].assign(saved.recurrent[i].begin(), saved.recurrent[i].end());
    } else if (s.position > 0) {
      HANPU_RETURN_IF_ERROR(s.kv[i]->append(
          {saved.keys[i].data(), DType::kF32, {s.position, c.kv_heads, c.head_dim}},
          {saved.values[i].data(), DType::kF32, {s.position, c.kv_heads, c.head_dim}}));
      saved.keys[i] = {};  // each layer's fp32 rows are freed once in the cache
      saved.values[i] = {};
    }
  }
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace hanpu::model
