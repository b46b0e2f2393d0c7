// Mutex: the lock of the short critical sections on the submit path (a queue's scheduler state, a
// semaphore's lists, a stream queue's issue state and inbox).
//
// Uncontended, lock and unlock are one atomic instruction each, inline. std::mutex calls
// pthread_mutex_lock/unlock in glibc, many times that, and one submit takes several pairs (the
// counts: docs/performance.md, 'Measurements behind design choices'). Contended, it spins briefly
// (critical sections here are a few dozen instructions), then sleeps on a futex: the three-state
// mutex of Drepper's "Futexes Are Tricky". Not recursive. Meets Lockable (std::lock_guard,
// std::unique_lock); to wait on a condition with it, use std::condition_variable_any.
#pragma once

#include <atomic>
#include <cstdint>

namespace baton::core {

class Mutex {
 public:
  Mutex() noexcept = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() noexcept {
    uint32_t expected = kFree;
    if (!state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire)) [[unlikely]]
      lockContended();
  }
  bool try_lock() noexcept {
    uint32_t expected = kFree;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire);
  }
  void unlock() noexcept {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) [[unlikely]]
      wakeOne();
  }

 private:
  // kContended: locked, and a thread may sleep on the word; unlock() must wake one.
  static constexpr uint32_t kFree = 0, kLocked = 1, kContended = 2;
  void lockContended() noexcept;
  void wakeOne() noexcept;

  std::atomic<uint32_t> state_{kFree};
};

}  // namespace baton::core
