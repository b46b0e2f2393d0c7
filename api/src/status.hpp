// Status: a Result plus the message that explains it, carried from where an error happens up to the
// public entry point, gathering context on the way. The entry point turns it into the returned
// Result, the per-thread last error and the debug callback (report.hpp).
#pragma once

#include <string>
#include <utility>

#include "baton/result.hpp"

namespace baton::core {

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;                   // Success
  Status(Result code) noexcept : code_(code) {}  // NOLINT(google-explicit-constructor)
  Status(Result code, std::string message)
      : code_(code), message_(message.empty() ? nullptr : new std::string(std::move(message))) {}
  Status(const Status& o)
      : code_(o.code_), message_(o.message_ ? new std::string(*o.message_) : nullptr) {}
  Status(Status&& o) noexcept : code_(o.code_), message_(std::exchange(o.message_, nullptr)) {}
  Status& operator=(Status o) noexcept {
    code_ = o.code_;
    std::swap(message_, o.message_);
    return *this;
  }
  // Inline, and a test of one word when there is no message (Success), the case of every call
  // on the submit path: a plain `delete` was often left out of line (a call per Status).
  ~Status() {
    if (message_) [[unlikely]]
      dropMessage();
  }

  Result code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_ ? *message_ : noMessage(); }
  bool ok() const noexcept { return code_ == Result::Success; }
  bool isError() const noexcept { return baton::isError(code_); }

  // Prefixes context: "while X: <message>".
  Status& context(const std::string& what) {
    if (!message_)
      message_ = new std::string(what);
    else
      *message_ = what + ": " + *message_;
    return *this;
  }

 private:
  static const std::string& noMessage() noexcept;
  [[gnu::cold, gnu::noinline]] void dropMessage() noexcept;

  Result code_ = Result::Success;
  // Null when there is no message. Success travels through every call of the submit path (each
  // driver call returns a Status): a pointer makes making, moving and dropping one a word, where an
  // inline std::string cost more each time (docs/performance.md, 'Measurements behind design
  // choices').
  std::string* message_ = nullptr;
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
