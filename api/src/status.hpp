// Status: a Result plus the message that explains it, carried from where an error happens up to
// the public entry point, gathering context on the way (DESIGN §8). The entry point turns it into
// the returned Result, the per-thread last error and the debug callback (report.hpp).
#pragma once

#include <string>
#include <utility>

#include "baton/result.hpp"

namespace baton::core {

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;                   // Success
  Status(Result code) noexcept : code_(code) {}  // NOLINT(google-explicit-constructor)
  Status(Result code, std::string message) : code_(code), message_(std::move(message)) {}

  Result code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  bool ok() const noexcept { return code_ == Result::Success; }
  bool isError() const noexcept { return baton::isError(code_); }

  // Prefixes context: "while X: <message>".
  Status& context(const std::string& what) {
    message_ = message_.empty() ? what : what + ": " + message_;
    return *this;
  }

 private:
  Result code_ = Result::Success;
  std::string message_;
};

// Builds an error status with a printf-style message.
Status error(Result code, const char* format, ...) __attribute__((format(printf, 2, 3)));

// printf into a std::string.
std::string format(const char* format, ...) __attribute__((format(printf, 1, 2)));

#define BATON_TRY(expr)                     \
  do {                                      \
    ::baton::core::Status status_ = (expr); \
    if (!status_.ok()) return status_;      \
  } while (0)

}  // namespace baton::core
