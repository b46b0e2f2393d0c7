// Parker: blocks one thread until another unparks it or a deadline passes, without burning a
// core. On Linux a futex on one word (FUTEX_WAIT_BITSET with an absolute CLOCK_MONOTONIC time,
// so timeouts do not drift across spurious wake-ups); a brief spin comes first, because a
// hand-off that arrives within a few microseconds is cheaper to catch awake than to sleep for.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>

#include "clock.hpp"
#include "cpu.hpp"  // cpuRelax, for the users of the futex helpers

namespace baton::core {

class Parker {
 public:
  // Blocks until unpark() has been called since the last park() returned true (or reset()), or
  // until the deadline. Returns true when unparked, false on timeout. The token is consumed only
  // when set; callers re-check their condition anyway, since a late unpark meant for an earlier
  // wait can leave a token behind.
  bool park(Deadline deadline) noexcept;
  // As park, polling (yielding the CPU between polls) for at least `spinNs` before it sleeps: for
  // a host wait whose wake-up comes from another host thread within microseconds (a value that
  // only a completion thread publishes), where the futex sleep and wake-up would cost more.
  bool park(Deadline deadline, uint64_t spinNs) noexcept;
  // How a park with a spin went, for a caller that adapts its spin (SpinBudget): `caught` when the
  // unpark came during the spin, `caughtAfterNs` after the park began; `slept` when the spin ran
  // out and the thread slept (woken or not). Neither: the deadline passed during the spin.
  struct SpinOutcome {
    bool caught = false;
    bool slept = false;
    uint64_t caughtAfterNs = 0;
  };
  bool park(Deadline deadline, uint64_t spinNs, SpinOutcome* outcome) noexcept;
  // As park, without the polls before the sleep: for a thread that parks for milliseconds while
  // nothing is expected sooner (a completion thread's lazy park), whose polls only cost the CPU
  // (on the H100, sched_yield was 17% of a lazily parking completion thread's samples).
  bool parkWithoutSpin(Deadline deadline) noexcept;
  // Sets the token and wakes the parked thread, if any. Callable from any thread, with locks
  // held (it never blocks).
  void unpark() noexcept;
  // Clears a pending token (before re-arming a wait).
  void reset() noexcept { state_.store(kEmpty, std::memory_order_relaxed); }

 private:
  static constexpr uint32_t kEmpty = 0, kParked = 1, kNotified = 2;
  std::atomic<uint32_t> state_{kEmpty};
};

// Futex wait on one 32-bit word while it holds `expected`, until woken or the deadline
// (FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time, so retries after spurious wake-ups
// do not stretch the timeout). May return spuriously: callers re-check their word.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, Deadline deadline) noexcept;
// Wakes up to `count` threads in futexWait on `word`.
void futexWake(std::atomic<uint32_t>* word, int count) noexcept;
// Wakes every thread in futexWait on `word`.
inline void futexWakeAll(std::atomic<uint32_t>* word) noexcept { futexWake(word, INT_MAX); }

}  // namespace baton::core
