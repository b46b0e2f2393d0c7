#include "parker.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "mutex.hpp"

namespace baton::core {
namespace {

// Before sleeping, park() polls the token a few times, yielding the CPU between polls: a
// hand-off that lands within microseconds is cheaper to catch awake than through a futex sleep,
// and yielding (rather than a pause loop) lets the signalling thread run when both share a CPU.
// Measured with bench/host_bench WakeLatency: a 200-iteration pause spin made the one-CPU
// ping-pong 2.9x a condition variable; yielding polls bring it to ~0.8x.
constexpr int kSpinPolls = 20;
// A contended Mutex polls this often (with a pause between polls, ~1-3 µs in all) before it
// sleeps: its critical sections are short, so the holder is usually about to leave.
constexpr int kMutexSpins = 100;

}  // namespace

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, Deadline deadline) noexcept {
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

void futexWake(std::atomic<uint32_t>* word, int count) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr,
          0);
}

bool Parker::park(Deadline deadline) noexcept { return park(deadline, 0); }

bool Parker::park(Deadline deadline, uint64_t spinNs) noexcept {
  return park(deadline, spinNs, nullptr);
}

bool Parker::park(Deadline deadline, uint64_t spinNs, SpinOutcome* outcome) noexcept {
  const uint64_t start = spinNs || outcome ? nowNs() : 0;
  for (int i = 0;; ++i) {
    uint32_t expected = kNotified;
    if (state_.compare_exchange_strong(expected, kEmpty, std::memory_order_acquire)) {
      if (outcome) {
        outcome->caught = true;
        outcome->caughtAfterNs = nowNs() - start;
      }
      return true;
    }
    if (deadline.expired()) return parkWithoutSpin(deadline);
    if (i >= kSpinPolls && (spinNs == 0 || nowNs() - start >= spinNs)) break;
    sched_yield();
  }
  if (outcome) outcome->slept = true;
  return parkWithoutSpin(deadline);
}

bool Parker::parkWithoutSpin(Deadline deadline) noexcept {
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

// ---- Mutex (mutex.hpp) ----------------------------------------------------------------------

void Mutex::lockContended() noexcept {
  // The holder is most likely running and about to leave a short critical section: poll a
  // little before sleeping.
  for (int i = 0; i < kMutexSpins; ++i) {
    cpuRelax();
    uint32_t expected = kFree;
    if (state_.load(std::memory_order_relaxed) == kFree &&
        state_.compare_exchange_weak(expected, kLocked, std::memory_order_acquire))
      return;
  }
  // Taken from here on as kContended, not kLocked: this thread cannot know whether others still
  // sleep, so its unlock wakes one (at worst a wake-up for nobody).
  while (state_.exchange(kContended, std::memory_order_acquire) != kFree)
    futexWait(&state_, kContended, Deadline::never());
}

void Mutex::wakeOne() noexcept { futexWake(&state_, 1); }

}  // namespace baton::core
