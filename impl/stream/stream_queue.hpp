// StreamQueue: the core::QueueImpl of a CUDA or HIP queue, over a stream of its own.
//
// Threads: issue() runs on the submitting thread, under the core queue's lock: it decides how the
// submission's signals are published (a timepoint attached now, or by the completion thread later)
// and posts it to the device's issuing thread. waitIdle() and the rest run on any thread. The
// queue owns its completion thread (completion.hpp); its destructor waits for the issuing thread
// to drain it.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <typeinfo>
#include <utility>

#include "backend.hpp"
#include "callback_scope.hpp"
#include "completion.hpp"
#include "issue_ring.hpp"
#include "issuer.hpp"
#include "lazy_observers.hpp"
#include "objects.hpp"
#include "queue_shared.hpp"
#include "stream_timepoint.hpp"

namespace baton::stream {
namespace {

class StreamQueue final : public core::QueueImpl {
 public:
  explicit StreamQueue(std::shared_ptr<QueueShared> shared) : q_(std::move(shared)) {
    completion_ = std::make_shared<Completion>(q_);
    thread_ = std::thread([c = completion_] { c->run(); });
    // Named here rather than by the thread itself, so that the name is there on return.
    pthread_setname_np(thread_.native_handle(), "baton-complete");
    q_->issuer->add(q_);
    core::addLazyObserver(q_->waker.get());
  }

  ~StreamQueue() override {
    // The device's issuing thread drains the queue first (it may still hand records to the
    // completion thread) and unregisters it. When that thread is this one (it dropped the last
    // reference to the core Device, which destroys the queues), it is between submissions of
    // some queue, holding that queue's issue lock: the queue is unregistered here instead.
    core::removeLazyObserver(q_->waker.get());
    q_->stop.store(true, std::memory_order_seq_cst);
    DeviceIssuer& issuer = *q_->issuer;
    if (issuer.threadId == std::this_thread::get_id()) {
      issuer.remove(q_.get());
    } else {
      issuer.parker.unpark();
      while (!q_->drained.load(std::memory_order_seq_cst))
        q_->drainedParker.park(Deadline::after(1'000'000));
    }
    // The completion thread can itself drop the last reference to the core Device (a record's
    // timepoint), which destroys this queue on that thread: then it must not join itself. It
    // finds nothing in flight and exits, touching only the shared queue state.
    q_->waker->parker.unpark();
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();
    else
      thread_.join();
  }

  bool canWait(const core::Timepoint& tp) const override {
    // Any device of this driver: streamWaitEvent accepts events of other contexts and devices.
    return tp.backend() == q_->driver.kind && typeid(tp) == typeid(StreamTimepoint);
  }

  NativeQueue native() const override {
    NativeQueue nq;
    nq.backend = q_->driver.kind;
    nq.stream = q_->stream;
    nq.deviceOrdinal = q_->device->config.ordinal;
    nq.queueIndex = q_->index;
    return nq;
  }

  Status waitIdle(Deadline deadline) override {
    uint64_t target = q_->issued.load(std::memory_order_seq_cst);
    if (q_->completed.load(std::memory_order_seq_cst) >= target) return Status();
    q_->idleWaiters.fetch_add(1, std::memory_order_seq_cst);
    q_->waker->addSleeper();  // the completion thread must not poll lazily now
    std::unique_lock<std::mutex> lock(q_->idleMutex);
    Status result;
    while (q_->completed.load(std::memory_order_seq_cst) < target) {
      // Asks to be woken at `target` (see QueueShared::submissionsDone), then looks again: under
      // idleMutex, so no reset of idleWakeAt falls between this and the wait.
      if (target < q_->idleWakeAt.load(std::memory_order_relaxed))
        q_->idleWakeAt.store(target, std::memory_order_seq_cst);
      if (q_->completed.load(std::memory_order_seq_cst) >= target) break;
      if (deadline.isNever()) {
        q_->idleCv.wait(lock);
      } else {
        uint64_t left = deadline.remaining();
        if (left == 0) {
          result = Status(Result::Timeout);
          break;
        }
        q_->idleCv.wait_for(lock, std::chrono::nanoseconds(left));
      }
    }
    lock.unlock();
    q_->waker->removeSleeper();
    q_->idleWaiters.fetch_sub(1, std::memory_order_seq_cst);
    return result;
  }

  // Decides how the submission's signals are published and posts it to the issuing thread.
  void issue(std::unique_ptr<core::Submission> sub) override {
    Issue e = release(std::move(sub));
    q_->posted++;
    Counters::add(kPosted, 1);
    q_->post(std::move(e));
  }

  // Direct issue: when the issuing thread has nothing of this queue (nothing posted and not yet
  // taken, nothing suspended or deferred) and every timepoint the submission waits for is
  // recorded, the submitting thread takes the queue's issueMutex — its place in the queue's
  // order — here, under the core queue's lock, and makes the driver calls in finishDirect,
  // after that lock is released. The submitting thread is the one in submit(), or the one whose
  // signal released a held submission (core::Queue::evaluate: a host signal, a host queue's
  // worker, the bridge thread reaching a value Vulkan signalled). Not on the stream machinery's
  // own threads (issuing and completion: they hand work on rather than make driver calls for
  // other queues), not inside a driver host function (no driver calls there), not inside a
  // callback (a native callback's thread already holds an issueMutex).
  // By default only on a queue whose earlier submissions are all known to have completed
  // (IssueMode::WhenIdle, stream_tuning.hpp says why): Waker::seenDone against the release
  // count, both read first, without touching what the issuing thread writes, so that within a
  // stream of submissions this costs one load. A submission of graph command buffers only
  // (light: a few driver calls, stream_tuning.hpp says why) is issued directly in a stream too.
  bool startDirect(std::unique_ptr<core::Submission>& sub) override {
    const IssueMode mode = gIssueMode.load(std::memory_order_relaxed);
    if (mode == IssueMode::IssuingThread) return false;
    // Not known idle: unless the issuing thread sleeps, the hand-off to it is the cheaper way.
    // When it sleeps, the hand-off costs a wake-up (a futex syscall here, and tens of µs before
    // it runs: 30-40 µs on the H200 test machines), while the queue may well have run dry
    // unobserved (its completions looked at lazily: nothing waited for them): one query of its
    // newest record's event, below, says so.
    bool askStream = false;
    if (mode == IssueMode::WhenIdle &&
        q_->waker->seenDone.load(std::memory_order_acquire) <
            q_->issued.load(std::memory_order_relaxed) &&
        !light(*sub)) {
      if (!q_->issuer->idle.load(std::memory_order_relaxed)) return false;
      askStream = true;
    }
    if (tInternalThread || tInsideHostFunction || core::CallbackScope::current() != nullptr)
      return false;
    if (askStream) {
      // Work that runs dry as fast as it is submitted (no waits, short or no commands) makes every
      // submission of a burst find the issuing thread asleep and the queue dry, and each would
      // pay the whole issue here (the query, the driver calls, the record's hand-over and
      // retirement) where the issuing thread would cost it a hand-off. So one that comes within
      // kDirectBurstGapNs of the previous such one wakes the issuing thread instead, which then
      // takes the rest of the burst; a submission after a pause still goes direct.
      const uint64_t now = core::nowNs();
      const uint64_t previous = q_->askedStreamNs;
      q_->askedStreamNs = now;
      if (now - previous < kDirectBurstGapNs) return declined(kDirectInBurst);
    }
    // Everything posted was taken by the issuing thread (it counts what it took after taking
    // it); what it took it issues under issueMutex, which is free only when it is done.
    if (q_->taken.load(std::memory_order_acquire) != q_->posted) return declined(kDirectBehind);
    if (!q_->issueMutex.try_lock()) return declined(kDirectBehind);
    if (q_->continuation || !q_->deferred.empty() ||
        q_->resumePending.load(std::memory_order_acquire)) {
      q_->issueMutex.unlock();
      return declined(kDirectBehind);
    }
    if (!readyForDirect(*sub) || (askStream && !ranDry())) {
      q_->issueMutex.unlock();
      return declined(kDirectNotReady);
    }
    direct_ = release(std::move(sub));
    return true;
  }

  void finishDirect() override {
    QueueShared& q = *q_;
    {
      // The device's context on this thread for the calls (and the caller's back after them).
      // Without it the submission fails, naming the call, as on the issuing thread.
      ContextScope scope(q.driver, q.device->config.context);
      bool current = scope.ok();
      q.directIssuing = true;
      Issuer(q, &current).start(std::move(direct_));
      q.directIssuing = false;
      direct_ = Issue();
      Counters::add(kDirectIssued, 1);
    }
    q.issueMutex.unlock();
    // The records this thread issued, once enough of them completed, it retires itself.
    if (gRetireOnSubmit) completion_->retireOnSubmit();
  }

 private:
  // With issueMutex held and everything posted issued: whether the newest record's event
  // completed (so every record of the queue did). Counted in kDirectAfterQuery when it did.
  bool ranDry() {
    if (!q_->newestEvent) return true;  // nothing was ever recorded
    ContextScope scope(q_->driver, q_->device->config.context);
    if (!scope.ok() || !q_->driver.eventQuery(q_->newestEvent).ok()) return false;
    Counters::add(kDirectAfterQuery, 1);
    return true;
  }

  // Counts why a submission that could have been issued directly went to the issuing thread.
  static bool declined(Counter why) {
    Counters::add(why, 1);
    return false;
  }

  // Whether the submission's driver calls are few: its command buffers are all graph command
  // buffers (one launch per segment: GraphProgram), so issuing it here costs the submitting
  // thread about what the hand-off and the issuing thread's wake-ups would cost the process.
  static bool light(const core::Submission& sub) {
    if (sub.commandLists.empty()) return false;
    for (const Ref<core::CommandList>& list : sub.commandLists)
      if (!list->program && !list->commands.empty()) return false;
    return true;
  }

  // Issuer::ready, for a submission not yet released: its waits' timepoints are recorded (or
  // this queue's own), and the stream has room.
  bool readyForDirect(const core::Submission& sub) {
    // Collectives go to the device's issuing thread (collectives.hpp says why).
    for (const Ref<core::CommandList>& list : sub.commandLists)
      if (!list->communicators.empty()) return false;
    for (const core::Submission::Wait& w : sub.waits) {
      if (!w.timepoint) continue;
      auto* tp = static_cast<const StreamTimepoint*>(w.timepoint.get());
      if (tp->stream() != q_->stream && !tp->recorded()) return false;
    }
    return !q_->overOpsLimit();
  }

  // Decides how the submission's signals are published. Unless the completion thread must
  // publish them (host calls, or such a submission still ahead of it), they are published here,
  // as a timepoint whose event is recorded next when the submission is issued: queues waiting
  // for them are released now, without waiting for the driver calls.
  Issue release(std::unique_ptr<core::Submission> sub) {
    // Only here, under the core queue's lock (issue and startDirect), so one writer at a time:
    // a plain increment rather than a locked one. Release: the completion that counts it in
    // `completed` happens after it (through the ring or the issueMutex), so waitIdle never sees
    // more completed than issued.
    const uint64_t number = q_->issued.load(std::memory_order_relaxed) + 1;
    q_->issued.store(number, std::memory_order_release);
    Issue e;
    e.number = number;
    for (const core::Submission::Wait& w : sub->waits) e.gated |= w.external != nullptr;
    uint32_t fallible = 0;
    for (const Ref<core::CommandList>& list : sub->commandLists) {
      e.hostCalls += list->hostCalls;  // counted by CommandBuffer::end
      fallible += list->fallibleHostCalls;
      e.collectives += list->collectives;
    }
    // Host calls that may fail and collectives decide on the host whether the signals are
    // reached or failed (collectives.hpp says why for collectives); kHostCallInfallible ones do
    // not.
    e.hostPublish = fallible != 0 || e.collectives != 0 ||
                    q_->hostPublished.load(std::memory_order_seq_cst) != 0;
    // Decided here, where the semaphores are in this thread's cache, so that the issuing thread
    // looks at them only when it has to signal one: which signals it makes GPU-side (imported
    // semaphores), and whether a mirror needs the values reached promptly (promptReach).
    bool prompt = false;
    for (const core::Submission::Signal& s : sub->signals)
      if (s.semaphore->hasExternals()) {
        e.externalSignals |= s.semaphore->deviceTimeline(q_->coreDevice->handle) != nullptr;
        prompt |= s.semaphore->forwardedFromHost(q_->coreDevice->handle);
      }
    if (e.hostPublish) {
      q_->hostPublished.fetch_add(1, std::memory_order_seq_cst);
      // Their host waiters have no event to spin on: they poll as this device's would.
      const uint64_t spinNs = q_->device->hostWaitSpinNs.load(std::memory_order_relaxed);
      for (const core::Submission::Signal& s : sub->signals)
        s.semaphore->noteHostPublisherSpin(spinNs);
    } else if (!sub->signals.empty()) {
      void* event = nullptr;
      // Without an event now, the issuing thread publishes the signals after recording.
      if (q_->takeEvent(q_->publishStash, &event).ok()) {
        e.timepoint = Ref<StreamTimepoint>::adopt(
            new StreamTimepoint(q_->device.get(), q_->waker.get(), q_->coreDevice, event,
                                q_->stream, e.gated, false, number));
        for (const core::Submission::Signal& s : sub->signals)
          s.semaphore->addTimepoint(s.value, e.timepoint);
        e.urgent = prompt;
      }
    }
    e.submission = std::move(sub);
    return e;
  }

  std::shared_ptr<QueueShared> q_;
  std::shared_ptr<Completion> completion_;  // run by thread_; retireOnSubmit by direct issuers
  std::thread thread_;                      // completion
  Issue direct_;  // between startDirect and finishDirect (issueMutex held)
};

}  // namespace
}  // namespace baton::stream
