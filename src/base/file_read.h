// Reading an untrusted file whole: regular files only (a FIFO, a device such as /dev/zero,
// a directory or a socket is refused without blocking), and never more than a stated bound.
#pragma once

#include <cstdint>
#include <string>

#include "hanpu/status.h"

namespace hanpu {

// Reads `path` into `out` if it is a regular file of at most `max_bytes`; `what` names the
// file's role in errors ("config.json", "prompt file"). `out` is untouched on error.
Status read_regular_file(const std::string& path, int64_t max_bytes, const char* what,
                         std::string* out);

// Opens `path` for reading only if it is a regular file (O_NONBLOCK, so a FIFO cannot block
// the open); returns the descriptor in *fd and its size in *size. The caller closes it.
Status open_regular_file(const std::string& path, const char* what, int* fd, int64_t* size);

// "a directory", "a FIFO", ... for an error message.
const char* file_kind_name(unsigned mode);

}  // namespace hanpu
