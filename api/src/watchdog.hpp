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
  // Once the process exits (exit handlers run), no check or release runs any more: the drivers
  // they would call are being torn down; what is pending is left to the process's end.
  static void watch(std::function<bool(uint64_t nowNs)> check, uint64_t periodNs);
  // Runs `release` on a thread of its own ("baton-release", started with the first), in the
  // order given, for releases that may block until a device drains (unregistering host memory
  // synchronizes with the device's work, which may itself wait on something another release or
  // a check would end): they must block neither the thread that dropped the object (a completion
  // thread, the watchdog) nor each other's progress for long. Thread safe.
  static void releaseLater(std::function<void()> release);
};

}  // namespace baton::core
