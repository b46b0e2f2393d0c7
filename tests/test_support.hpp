// Shared test helpers: result printing, a thread-safe sink for the debug callback, timing
// constants, and small RAII helpers. Used by the conformance suite, the bad-input tests and the
// backend-specific suites (tests/cuda/).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baton/baton.hpp"

namespace baton {
// gtest finds these through ADL, so failures print "ErrorInvalidHandle" instead of raw bytes.
inline void PrintTo(Result result, std::ostream* os) { *os << resultName(result); }
inline void PrintTo(BackendKind kind, std::ostream* os) { *os << backendName(kind); }
inline void PrintTo(WaitMode mode, std::ostream* os) {
  *os << (mode == WaitMode::All ? "All" : "Any");
}
}  // namespace baton

namespace baton_test {

// The usage the suites record their command buffers with: BATON_TEST_COMMAND_BUFFERS=graph runs
// them again with graph command buffers (the registrations ending in -graph set it). Tests whose
// native callbacks are not capturable, or that observe how a replayed submission is issued,
// record replayed command buffers explicitly.
inline baton::CommandBufferCreateInfo testCommandBufferInfo() {
  baton::CommandBufferCreateInfo info;
  const char* mode = std::getenv("BATON_TEST_COMMAND_BUFFERS");
  if (mode && std::string_view(mode) == "graph") info.usage = baton::CommandBufferUsage::Graph;
  return info;
}

using baton::Result;

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;
// How long a wait that must succeed may take. Finite, so that a hang becomes a failure instead of
// a stuck test run, and generous, because sanitizer builds on a loaded CI machine are slow.
constexpr uint64_t kLongNs = 20'000 * kMs;
// How long we watch something that must NOT happen (a held submission, an unsignalled value).
// Short: a correct library passes whatever the value; a broken one is caught most of the time.
constexpr uint64_t kShortNs = 30 * kMs;

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Case-insensitive substring test, used to check that messages name the problem without
// depending on their exact wording.
inline bool containsText(std::string_view haystack, std::string_view needle) {
  return lower(haystack).find(lower(needle)) != std::string::npos;
}

// lastErrorMessage() is only valid until this thread's next baton call: copy it at once.
inline std::string lastError() { return baton::lastErrorMessage(); }

// Receives the instance's debug callback. The callback may run on baton's worker threads,
// concurrently, so everything is under a mutex.
class MessageSink {
 public:
  struct Message {
    baton::MessageSeverity severity;
    std::string text;
  };

  static void callback(baton::MessageSeverity severity, const char* message, void* userData) {
    auto* self = static_cast<MessageSink*>(userData);
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->messages_.push_back({severity, message ? message : ""});
  }

  baton::InstanceCreateInfo instanceInfo(uint32_t backendMask = baton::kAllBackends) {
    baton::InstanceCreateInfo info;
    info.debugCallback = &MessageSink::callback;
    info.debugUserData = this;
    info.backendMask = backendMask;
    return info;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.clear();
  }
  std::vector<Message> snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }
  // Whether a message of `severity` containing `needle` (case-insensitive) arrived.
  bool has(baton::MessageSeverity severity, std::string_view needle = {}) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Message& m : messages_)
      if (m.severity == severity && containsText(m.text, needle)) return true;
    return false;
  }
  std::string dump() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    for (const Message& m : messages_) {
      out += m.severity == baton::MessageSeverity::Error     ? "  [error] "
             : m.severity == baton::MessageSeverity::Warning ? "  [warning] "
                                                             : "  [info] ";
      out += m.text;
      out += '\n';
    }
    return out.empty() ? "  (no messages)\n" : out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Message> messages_;
};

// Reads an unsigned integer from the environment, or `fallback` when unset or malformed.
inline uint64_t envUint(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  return (end && *end == '\0') ? static_cast<uint64_t>(value) : fallback;
}

}  // namespace baton_test

// Expects a baton call to succeed, printing the library's explanation when it does not. The
// message is read only on failure, right after the call, while it is still this thread's last.
#define EXPECT_OK(expr) EXPECT_EQ((expr), ::baton::Result::Success) << ::baton::lastErrorMessage()
#define ASSERT_OK(expr) ASSERT_EQ((expr), ::baton::Result::Success) << ::baton::lastErrorMessage()
