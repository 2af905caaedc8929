// POSIX mmap of a whole file (see mapped_file.h).
#include "model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "base/file_read.h"

namespace hanpu::model {

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    this->~MappedFile();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    path_ = std::move(o.path_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

Status MappedFile::open(const std::string& path, MappedFile* out) {
  int fd = -1;
  int64_t size = 0;
  HANPU_RETURN_IF_ERROR(open_regular_file(path, "the weights file", &fd, &size));
  MappedFile m;
  m.path_ = path;
  m.size_ = static_cast<size_t>(size);
  if (m.size_ > 0) {
    void* p = mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::Error(
          fmt::format("{}: cannot map {} bytes: {}", path, m.size_, std::strerror(err)));
    }
    m.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  *out = std::move(m);
  return Status::Ok();
}

void MappedFile::release(size_t begin, size_t end) const {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  end = std::min(end, size_);
  begin = (begin + page - 1) / page * page;  // whole pages only: the rest may be in use
  end = end / page * page;
  if (data_ == nullptr || begin >= end) return;
  // Advice, not a contract: a kernel that declines it leaves the pages resident, no worse.
  madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

}  // namespace hanpu::model
