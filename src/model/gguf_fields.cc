// GGUF metadata reads (see gguf_fields.h).
#include "model/gguf_fields.h"

#include <fmt/format.h>

namespace hanpu::model {

Status GgufFields::in_range(const char* key, int64_t v, int* out) const {
  if (v < 0 || v > (int64_t{1} << 30))
    return Status::Error(
        fmt::format("{}: metadata '{}' = {} is out of range", file_, name(key), v));
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status GgufFields::count(const char* key, bool required, int fallback, int* out) const {
  int64_t v = 0;
  HANPU_RETURN_IF_ERROR(gguf_int(meta_, name(key), file_, required, fallback, &v));
  return in_range(key, v, out);
}

Status GgufFields::number(const char* key, double fallback, double* out) const {
  return gguf_number(meta_, name(key), file_, fallback, out);
}

Status GgufFields::flag(const char* key, bool fallback, bool* out) const {
  const auto it = meta_.find(name(key));
  if (it == meta_.end()) {
    *out = fallback;
    return Status::Ok();
  }
  const bool* b = std::get_if<bool>(&it->second.v);
  if (b == nullptr)
    return Status::Error(fmt::format("{}: metadata '{}' is not a bool", file_, name(key)));
  *out = *b;
  return Status::Ok();
}

Status GgufFields::per_layer(const char* key, int layers, bool required, int fallback,
                             std::vector<int>* out) const {
  const auto it = meta_.find(name(key));
  if (it == meta_.end() || it->second.is_int()) {
    int v = 0;
    HANPU_RETURN_IF_ERROR(count(key, required, fallback, &v));
    out->assign(layers, v);
    return Status::Ok();
  }
  const auto* list = std::get_if<std::vector<GgufValue>>(&it->second.v);
  if (list == nullptr || list->size() != static_cast<size_t>(layers)) {
    return Status::Error(
        fmt::format("{}: metadata '{}' is not an integer or a list of {} (one a layer)", file_,
                    name(key), layers));
  }
  out->resize(layers);
  for (int i = 0; i < layers; ++i) {
    const GgufValue& e = (*list)[i];
    if (!e.is_int()) {
      return Status::Error(
          fmt::format("{}: metadata '{}'[{}] is not an integer", file_, name(key), i));
    }
    HANPU_RETURN_IF_ERROR(in_range(key, e.as_int(), &(*out)[i]));
  }
  return Status::Ok();
}

}  // namespace hanpu::model
