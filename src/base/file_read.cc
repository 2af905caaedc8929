// Bounded reads of regular files (see file_read.h).
#include "base/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace hanpu {

const char* file_kind_name(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Status open_regular_file(const std::string& path, const char* what, int* fd, int64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer forever.
  const int f = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f < 0)
    return Status::Error(fmt::format("{}: cannot open {}: {}", path, what, std::strerror(errno)));
  struct stat st {};
  if (fstat(f, &st) != 0) {
    const int err = errno;
    ::close(f);
    return Status::Error(fmt::format("{}: cannot stat {}: {}", path, what, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(f);
    return Status::Error(fmt::format("{}: {} must be a regular file, this is {}", path, what,
                                     file_kind_name(st.st_mode)));
  }
  // Back to blocking reads: a regular file never blocks, and the flag must not leak into them.
  fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK);
  *fd = f;
  *size = static_cast<int64_t>(st.st_size);
  return Status::Ok();
}

Status read_regular_file(const std::string& path, int64_t max_bytes, const char* what,
                         std::string* out) {
  int fd = -1;
  int64_t size = 0;
  HANPU_RETURN_IF_ERROR(open_regular_file(path, what, &fd, &size));
  const auto too_big = [&](int64_t n) {
    return Status::Error(fmt::format("{}: {} is {} bytes or more, over the limit of {} bytes", path,
                                     what, n, max_bytes));
  };
  if (size > max_bytes) {
    ::close(fd);
    return too_big(size);
  }
  std::string text(static_cast<size_t>(size), '\0');
  size_t got = 0;
  // Read to the end, not to the size fstat gave: the file may grow meanwhile, but never past
  // the bound.
  for (;;) {
    if (got == text.size()) {
      if (static_cast<int64_t>(text.size()) > max_bytes) {
        ::close(fd);
        return too_big(static_cast<int64_t>(text.size()));
      }
      text.resize(text.size() + 4096);
    }
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::Error(
          fmt::format("{}: reading {} failed at byte {}: {}", path, what, got, std::strerror(err)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  *out = std::move(text);
  return Status::Ok();
}

}  // namespace hanpu
