// Where errors leave the library: every public entry point ends in report(), which turns a
// Status into the returned Result, the calling thread's last error message and a call of the
// debug callback of the instance the object belongs to (or of every live instance, when the
// object is unknown, e.g. a null handle).
#pragma once

#include "baton/instance.hpp"
#include "status.hpp"

namespace baton::core {

class Instance;

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
