// The watchdog: one thread per process that looks periodically at what can stop making progress
// without telling anyone, and fails the semaphores that wait on it: a communicator's collectives in
// flight (a rank that died or hangs), a process that shares a timeline and died. Each kind says
// what "stopped" means in its check; the thread only runs the checks when they are due
// (docs/architecture.md, 'Threads').
#pragma once

#include <cstdint>
#include <functional>

namespace baton::core {

class Watchdog {
 public:
  // Runs `check(nowNs)` on the watchdog's thread (named "baton-watch", started with the first
  // watch) about every `periodNs` while it returns true; once it returns false it is dropped, and
  // what it captured is destroyed on that thread, outside the watchdog's lock. A check must not
  // block for long (it delays the others); it may call watch(). Thread safe. A child
  // process made by fork starts with no checks (its parent's are about the parent's objects).
  static void watch(std::function<bool(uint64_t nowNs)> check, uint64_t periodNs);
};

}  // namespace baton::core
