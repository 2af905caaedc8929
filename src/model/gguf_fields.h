// Typed reads of one architecture's GGUF metadata keys ("<arch>.<key>"), each size checked
// into [0, 2^30] and every error naming the file and the key.
#pragma once

#include <string>
#include <vector>

#include "hanpu/status.h"
#include "model/gguf.h"

namespace hanpu::model {

class GgufFields {
 public:
  GgufFields(const GgufMetadata& meta, const std::string& arch, std::string file)
      : meta_(meta), prefix_(arch + "."), file_(std::move(file)) {}
  // An integer size; `fallback` where missing unless `required`.
  Status count(const char* key, bool required, int fallback, int* out) const;
  Status number(const char* key, double fallback, double* out) const;
  Status flag(const char* key, bool fallback, bool* out) const;
  // A key llama.cpp reads with get_key_or_arr: one integer for every layer, or an array of one
  // per layer. `out` gets `layers` entries.
  Status per_layer(const char* key, int layers, bool required, int fallback,
                   std::vector<int>* out) const;
  bool has(const char* key) const { return meta_.count(prefix_ + key) != 0; }
  std::string name(const char* key) const { return prefix_ + key; }
  const std::string& file() const { return file_; }

 private:
  Status in_range(const char* key, int64_t v, int* out) const;

  const GgufMetadata& meta_;
  std::string prefix_, file_;
};

}  // namespace hanpu::model
