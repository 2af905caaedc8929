// Whether the client of a request that is not streamed has gone. A streamed reply finds out
// when a write fails; a plain one writes nothing until the reply is whole, and a client that
// gave up (a timeout, a closed tab) would leave its sequence running to max_tokens. Debian's
// cpp-httplib (0.11) gives a handler neither the socket nor a way to ask, so the socket is found
// once among the process's descriptors by the connection's two ends (the request's addresses
// and ports), and asked with a non-blocking MSG_PEEK read: 0 bytes means the client closed its
// end. The socket stays open (and its descriptor the same) while its handler runs.
#pragma once

#include <string>

namespace hanpu::serve {

class ClientWatch {
 public:
  ClientWatch(const std::string& remote_addr, int remote_port, const std::string& local_addr,
              int local_port);
  // True once the client has closed or reset the connection; false while it is open or when
  // the socket was not found (nothing is known then).
  bool gone() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace hanpu::serve
