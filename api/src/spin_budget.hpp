// SpinBudget: how long a thread polls for something it expects soon before it sleeps, adapted to
// how long that something has taken lately. Used where a thread can either spin (cheap to wake,
// costs its core while it waits) or sleep (free while it waits, costs a wake-up: a futex syscall
// on the waker's side and tens of microseconds before the sleeper runs again): a device's issuing
// thread between submissions (impl/stream/issue_thread.hpp), and host waits for values another
// host thread publishes (semaphore.cpp). Per gap (from the moment the thread starts to wait to
// the moment what it waits for comes):
//  - a gap that the spin caught raises the budget to twice that gap (at most the limit's
//    maximum), so that gaps that vary around a typical length keep being caught without a
//    wake-up;
//  - once `misses` spins in a row ended without it (no gap of `minNs` or more caught between
//    them), each further one halves the budget, down to `minNs`: what is waited for takes longer
//    than the spin, which then only burns a core. Fewer misses would make the short gaps of a
//    mixed workload sleep as well;
//  - a gap that ended in a wake-up says nothing: what the thread sees then includes its own
//    wake-up, so a short gap looks long and the budget would never grow back. Instead, below the
//    full budget every `probeEvery`-th spin that ends without it is followed by one full spin (a
//    probe); when it catches a gap, the budget grows back from it.
// A waiter whose gaps are mostly under the maximum keeps the full spin; one whose gaps are longer
// spins about the floor, plus a full spin every `probeEvery` waits.
//
// Thread safety: any thread may call any member at any time; the fields are relaxed atomics, so
// concurrent updates may lose one another (the budget is a heuristic, never a correctness matter)
// and a budget owned by one thread costs plain loads and stores.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace baton::core {

// The bounds of a SpinBudget (see above). Static storage: budgets point at them.
struct SpinLimits {
  uint64_t maxNs;       // the longest spin, and the first
  uint64_t minNs;       // the shortest
  uint32_t misses;      // spins in a row without a catch before the budget shrinks
  uint32_t probeEvery;  // below the maximum, a full spin after this many misses
};

class SpinBudget {
 public:
  explicit SpinBudget(const SpinLimits& limits) noexcept : limits_(&limits), ns_(limits.maxNs) {}

  // The length of the next spin.
  uint64_t ns() const noexcept {
    return probe_.load(std::memory_order_relaxed) ? limits_->maxNs
                                                  : ns_.load(std::memory_order_relaxed);
  }
  // The spin caught what it waited for `gapNs` after it began to wait.
  void caught(uint64_t gapNs) noexcept {
    const uint64_t ns = ns_.load(std::memory_order_relaxed);
    const uint64_t grown = std::max(ns, std::min(limits_->maxNs, 2 * gapNs));
    if (grown != ns) ns_.store(grown, std::memory_order_relaxed);
    if (gapNs >= limits_->minNs && misses_.load(std::memory_order_relaxed) != 0)
      misses_.store(0, std::memory_order_relaxed);
    if (probe_.load(std::memory_order_relaxed)) probe_.store(false, std::memory_order_relaxed);
  }
  // A spin of ns() ended without it: the thread sleeps.
  void timedOut() noexcept {
    probe_.store(false, std::memory_order_relaxed);
    const uint32_t misses = misses_.load(std::memory_order_relaxed);
    uint64_t ns = ns_.load(std::memory_order_relaxed);
    if (misses < limits_->misses) {
      misses_.store(misses + 1, std::memory_order_relaxed);
    } else {
      ns = std::max(limits_->minNs, ns / 2);
      ns_.store(ns, std::memory_order_relaxed);
    }
    if (ns < limits_->maxNs) {
      const uint32_t since = sinceProbe_.load(std::memory_order_relaxed) + 1;
      const bool probe = since >= limits_->probeEvery;
      sinceProbe_.store(probe ? 0 : since, std::memory_order_relaxed);
      if (probe) probe_.store(true, std::memory_order_relaxed);
    }
  }

 private:
  const SpinLimits* limits_;
  std::atomic<uint64_t> ns_;
  std::atomic<uint32_t> misses_{0};      // spins in a row that ended without it, up to `misses`
  std::atomic<uint32_t> sinceProbe_{0};  // spins that ended without it since the last probe
  std::atomic<bool> probe_{false};       // the next spin is a full one
};

}  // namespace baton::core
