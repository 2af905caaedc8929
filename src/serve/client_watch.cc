// ClientWatch (see client_watch.h).
#include "serve/client_watch.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace hanpu::serve {

namespace {

// An address and port as cpp-httplib writes them (getnameinfo, numeric).
bool numeric_name(const sockaddr_storage& a, socklen_t len, std::string* host, int* port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  *host = h;
  *port = std::atoi(s);
  return true;
}

bool end_is(int fd, bool peer, const std::string& addr, int port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::string host;
  int p = -1;
  return rc == 0 && numeric_name(a, len, &host, &p) && p == port && host == addr;
}

}  // namespace

ClientWatch::ClientWatch(const std::string& remote_addr, int remote_port,
                         const std::string& local_addr, int local_port) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = e.path().filename().string();  // strtol's `end` points into it
    char* end = nullptr;
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end == nullptr || *end != '\0' || fd < 0) continue;
    if (end_is(static_cast<int>(fd), true, remote_addr, remote_port) &&
        end_is(static_cast<int>(fd), false, local_addr, local_port)) {
      fd_ = static_cast<int>(fd);
      return;
    }
  }
}

bool ClientWatch::gone() const {
  if (fd_ < 0) return false;
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // a next request already sent: still there
  if (n == 0) return true;  // closed
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset
}

}  // namespace hanpu::serve
