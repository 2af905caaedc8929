// Status: how every hanpu entry point reports a bad input (never exit(), never abort).
#pragma once

#include <string>
#include <utility>

namespace hanpu {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

}  // namespace hanpu

#define HANPU_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::hanpu::Status hanpu_status_ = (expr);        \
    if (!hanpu_status_.ok()) return hanpu_status_; \
  } while (0)
