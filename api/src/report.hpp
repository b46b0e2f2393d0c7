// Where errors leave the library: every public entry point ends in report(), which turns a
// Status into the returned Result, the calling thread's last error message and a call of the
// debug callback of the instance the object belongs to (or of every live instance, when the
// object is unknown, e.g. a null handle).
#pragma once

#include <cstring>

#include "baton/instance.hpp"
#include "status.hpp"

namespace baton::core {

class Instance;

// Copies `text` into dst[cap] (cap > 0), cut to fit, NUL-terminated.
inline void copyText(char* dst, size_t cap, const std::string& text) {
  size_t n = cap - 1 < text.size() ? cap - 1 : text.size();
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

// Returns status.code(). For errors: sets the thread's last error to "<operation>: <message>"
// and passes it to the debug callback(s) with severity Error.
Result report(const char* operation, const Instance* owner, const Status& status) noexcept;

// Passes a message that is not a returned error (a warning, or information) to the debug
// callback of `owner` (every live instance when null).
void message(const Instance* owner, MessageSeverity severity, const std::string& text) noexcept;

// The callbacks of every live instance, for reports about unknown owners.
void registerInstance(const Instance* instance);
void unregisterInstance(const Instance* instance);

}  // namespace baton::core
