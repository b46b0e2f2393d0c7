#include "parker.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace baton::core {
namespace {

// How long park() spins before sleeping, in polls of the token (~2-4 µs on current x86).
constexpr int kSpinPolls = 200;

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, Deadline deadline) {
  timespec ts;
  timespec* tsp = nullptr;
  if (!deadline.isNever()) {
    ts.tv_sec = static_cast<time_t>(deadline.ns / 1000000000ull);
    ts.tv_nsec = static_cast<long>(deadline.ns % 1000000000ull);
    tsp = &ts;
  }
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_BITSET_PRIVATE, expected, tsp,
          nullptr, FUTEX_BITSET_MATCH_ANY);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

}  // namespace

bool Parker::park(Deadline deadline) noexcept {
  for (int i = 0; i < kSpinPolls; ++i) {
    uint32_t expected = kNotified;
    if (state_.compare_exchange_weak(expected, kEmpty, std::memory_order_acquire)) return true;
    cpuRelax();
  }
  for (;;) {
    uint32_t s = state_.load(std::memory_order_acquire);
    if (s == kNotified) {
      if (state_.compare_exchange_strong(s, kEmpty, std::memory_order_acquire)) return true;
      continue;
    }
    if (s == kEmpty && !state_.compare_exchange_strong(s, kParked, std::memory_order_relaxed))
      continue;
    if (deadline.expired()) {
      uint32_t p = kParked;
      if (state_.compare_exchange_strong(p, kEmpty, std::memory_order_relaxed)) return false;
      continue;  // notified meanwhile
    }
    futexWait(&state_, kParked, deadline);
  }
}

void Parker::unpark() noexcept {
  if (state_.exchange(kNotified, std::memory_order_release) == kParked) futexWakeAll(&state_);
}

}  // namespace baton::core
