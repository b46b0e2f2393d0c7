// Monotonic time and deadlines for every wait with a timeout.
#pragma once

#include <time.h>

#include <cstdint>

namespace baton::core {

inline uint64_t nowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// An absolute CLOCK_MONOTONIC time in ns; UINT64_MAX never comes.
struct Deadline {
  uint64_t ns = UINT64_MAX;

  static Deadline never() noexcept { return {}; }
  static Deadline immediate() noexcept { return {0}; }
  // timeoutNs from now, saturating; kWaitForever (UINT64_MAX) never expires.
  static Deadline after(uint64_t timeoutNs) noexcept {
    if (timeoutNs == UINT64_MAX) return {};
    uint64_t now = nowNs();
    return {timeoutNs > UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + timeoutNs};
  }
  bool isNever() const noexcept { return ns == UINT64_MAX; }
  bool expired() const noexcept { return !isNever() && nowNs() >= ns; }
  // ns left, 0 when expired, UINT64_MAX for never.
  uint64_t remaining() const noexcept {
    if (isNever()) return UINT64_MAX;
    uint64_t now = nowNs();
    return now >= ns ? 0 : ns - now;
  }
};

}  // namespace baton::core
