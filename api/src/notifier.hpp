// The Notifier runs scheduler passes that semaphore events ask for, on the thread that caused
// the event, once that thread holds no lock.
//
// A semaphore notifies its waiters under its own lock; a queue whose held submission may now be
// releasable must not be evaluated there (issuing takes the queue's lock and calls the driver).
// So the waiter only schedules the queue here; every operation that can change a semaphore opens
// a Scope before taking its locks, and the outermost Scope on the thread drains the scheduled
// queues when it closes. A release therefore happens on the signalling thread before its call
// returns — host signal, submit that records a signal, worker that completes one — with no
// thread hand-off on the path (docs/architecture.md, 'Wait-before-signal and deferred
// submissions').
#pragma once

#include <vector>

#include "object.hpp"

namespace baton::core {

class Queue;
class Parker;

namespace notifier_detail {
// The thread's Scope depth, and whether anything was scheduled or woken since its outermost
// Scope last drained. Plain thread_locals in the initial-exec TLS model (one load each, see
// notifier.cpp), constinit so that other translation units reach them without a TLS wrapper
// call: a Scope that has nothing to drain, nearly every one on the submit path, is inline.
extern thread_local constinit int tDepth __attribute__((tls_model("initial-exec")));
extern thread_local constinit bool tPending __attribute__((tls_model("initial-exec")));
}  // namespace notifier_detail

class Notifier {
 public:
  // Inline because a submit opens two or three of them and a completion thread one per batch:
  // out of line, they were ~55 instructions a submit (callgrind, fake-driver ping-pong).
  class Scope {
   public:
    Scope() noexcept { ++notifier_detail::tDepth; }
    ~Scope() {
      if (notifier_detail::tDepth > 1 || !notifier_detail::tPending) [[likely]] {
        --notifier_detail::tDepth;
        return;
      }
      drain();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    // The outermost scope closes with work scheduled: runs it, then leaves the scope.
    static void drain();
  };
  // Asks for a scheduler pass of `queue` when the outermost Scope of this thread closes.
  // Callable with any lock held.
  static void schedule(Queue* queue);
  // Wakes `parker` when the outermost Scope of this thread closes, once no lock is held: a wake
  // issued under a semaphore's lock sends the woken thread straight into that lock (it unlinks
  // its nodes), to sleep a second time. `owner` keeps the parker alive until the wake, so a
  // waiter that timed out meanwhile may return safely. Callable with any lock held.
  static void unparkLater(Ref<Object> owner, Parker* parker);
  // Wakes the host waiters that this thread's scopes collected so far, now rather than when the
  // outermost Scope closes (the scheduler passes still wait for that): for a thread that
  // published values and has more to do before its scope closes (a completion thread, which
  // then destroys the records it retired). Only with no semaphore lock held. Inside a Scope.
  static void wakeWaitersNow();
  // Removes and returns the passes scheduled on this thread, for a thread that must not run
  // them itself: a CUDA/HIP host function, where issuing (driver calls) is forbidden, hands
  // them to another thread, which calls Queue::evaluate() on each. Call it inside a Scope.
  static std::vector<Ref<Queue>> takeScheduled();
};

}  // namespace baton::core
