// Lazy observers: backends whose threads observe completed work only when asked (the stream
// backends' completion threads, impl/stream/completion.hpp) register here, so that the core can
// ask all of them to publish now what has completed, where it cannot tell which queue's work
// holds an object: Semaphore::destroy asks before it decides that pending work still uses the
// semaphore.
//
// Threads: any. A process-wide list under one mutex; registration happens when a queue is made
// or destroyed, lookNowEverywhere on rare paths only. lookNow() must not block.
#pragma once

namespace baton::core {

class LazyObserver {
 public:
  // Asks for one prompt look at the completions of its work, without waiting for it.
  // Non-blocking; called with the registry's lock held.
  virtual void lookNow() noexcept = 0;

 protected:
  ~LazyObserver() = default;
};

// Adds or removes an observer; remove() returns after any lookNow() call on it has returned.
void addLazyObserver(LazyObserver* observer);
void removeLazyObserver(LazyObserver* observer);
// Calls lookNow() on every registered observer.
void lookNowEverywhere();

}  // namespace baton::core
