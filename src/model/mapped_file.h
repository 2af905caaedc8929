// A read-only memory map of a whole file: weights are used in place (or converted once) and
// the page cache, not a heap copy, holds the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hanpu/status.h"

namespace hanpu::model {

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }
  MappedFile& operator=(MappedFile&& o) noexcept;
  ~MappedFile();

  // Maps `path`; an empty file maps to size 0 with a null data pointer.
  static Status open(const std::string& path, MappedFile* out);

  const uint8_t* data() const { return data_; }
  // Drops the whole pages inside bytes [begin, end) of the map from this process's resident
  // memory (madvise): bytes a loader copied out are never read from the map again, and
  // should anything read them, the kernel maps them from the file once more.
  void release(size_t begin, size_t end) const;
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace hanpu::model
