// Sequence state files (see state_file.h).
#include "model/state_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

namespace hanpu::model {

Status save_state(const Model& model, const SequenceState& s, const std::string& path) {
  const ModelConfig& c = model.config();
  if (static_cast<int64_t>(s.tokens.size()) != s.position) {  // a state not made by Model::forward
    return Status::Error(fmt::format("{}: the sequence holds {} token ids for position {}", path, s.tokens.size(),
                                     s.position));
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::Error(fmt::format("{}: cannot write", tmp));
    const auto put = [&](const void* p, size_t n) { out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n)); };
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
  if (in.bad()) return Status::Error(fmt::format("{}: read failed", path));
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
      HANPU_RETURN_IF_ERROR(s.kv[i]->append({saved.keys[i].data(), DType::kF32, {s.position, c.kv_heads, c.head_dim}},
                                            {saved.values[i].data(), DType::kF32, {s.position, c.kv_heads, c.head_dim}}));
      saved.keys[i] = {};  // each layer's fp32 rows are freed once in the cache
      saved.values[i] = {};
    }
  }
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace hanpu::model
