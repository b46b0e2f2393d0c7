#include "status.hpp"

#include <cstdarg>
#include <cstdio>

namespace baton::core {

static std::string vformat(const char* fmt, va_list args) {
  char small[256];
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) return fmt;
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  return s;
}

void Status::dropMessage() noexcept { delete message_; }

const std::string& Status::noMessage() noexcept {
  // Never destroyed: statuses may be inspected during static destruction.
  static const std::string* const empty = new std::string;
  return *empty;
}

Status error(Result code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  return Status(code, std::move(s));
}

}  // namespace baton::core
