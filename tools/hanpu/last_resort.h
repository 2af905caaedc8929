// The CLI's last line of defence: every bad input is meant to come back as a Status with its
// own message, but an exception that escapes anyway (an allocation the checks missed, a
// library's throw) ends the run with a message on stderr and exit code 2, never
// std::terminate's abort.
#pragma once

#include <cstdio>
#include <exception>
#include <new>

namespace hanpu::cli {

template <class F>
int run_with_last_resort(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory (an input asked for more than this machine has)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "error: an unexpected exception ended the run\n");
  }
  return 2;
}

}  // namespace hanpu::cli
