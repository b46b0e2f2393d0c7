// HostCalls: the host callbacks (HostCall commands) of one submission, and the trampoline through
// which the driver calls them (defined after QueueShared, in queue_shared.hpp: it hands scheduler
// passes to the queue).
//
// Threads: the issuing thread fills `calls` and enqueues them (Issuer::enqueueWork); the driver's
// callback thread runs the trampoline, which records the first failure in `firstError` and hands
// the scheduler passes a callback caused to the completion thread (QueueShared::handOff); the
// completion and issuing threads read `firstError` once an event recorded behind the calls has
// completed.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "baton/command_buffer.hpp"

namespace baton::stream {
namespace {

struct QueueShared;
struct Waker;

// The host callbacks of one submission. The trampoline is the cuLaunchHostFunc function: it
// runs on the driver's callback thread, calls the user's callback and records a failure; it
// makes no driver call of its own (CUDA forbids driver calls inside a host function: they can
// deadlock). The completion thread acts on the recorded result once an event recorded after the
// host call has completed: it reaches or fails the signals there, not here, because a semaphore
// change can release and issue other submissions inline.
struct HostCalls {
  struct Call {
    HostCalls* owner;
    HostCallback callback;
    void* userData;
    bool infallible;  // kHostCallInfallible: an error is reported, not recorded in firstError
  };
  static void trampoline(void* data);
  void ranOne();  // a call was run or skipped: counts it in `ran`, wakes the completion thread
  std::vector<Call> calls;  // reserved up front: the driver holds pointers into it
  std::atomic<int32_t> firstError{0};
  // How many of the submission's `total` host calls the trampoline has been through (run, or
  // skipped after a failure), and the queue's completion thread's Waker: after each call the
  // trampoline wakes that thread when it parked until they have all run (Waker::awaitingHostCalls).
  uint32_t total = 0;
  std::atomic<uint32_t> ran{0};
  std::shared_ptr<Waker> waker;
  std::weak_ptr<QueueShared> queue;  // where scheduler passes the callback caused are handed
  // The queue running the calls, for core::CallbackScope (entry points that would wait for it
  // refuse inside its callbacks). The device outlives its submissions' host calls.
  const core::Device* device = nullptr;
  uint32_t queueIndex = 0;
  uint64_t traceId = 0;  // the submission's Submission::traceId (trace.hpp)
};

// Keeps `calls` for the rest of the process: the host calls of a stream that could not be
// drained (device loss, or an injected fault), which the driver may still run or never run, so
// their data must stay valid either way. Kept reachable rather than leaked (an unowned pointer),
// so that LeakSanitizer reports only real leaks: the fault sweep under ASan saw these as leaked
// whenever an injected cuStreamSynchronize failure left a host call in flight. Bounded by the
// host calls in flight when such a stream is abandoned. Thread safe.
inline void keepForDriver(std::unique_ptr<HostCalls> calls) {
  if (!calls) return;
  static std::mutex mutex;
  static auto* kept = new std::vector<std::unique_ptr<HostCalls>>();  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(calls));
}

}  // namespace
}  // namespace baton::stream
