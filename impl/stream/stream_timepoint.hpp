// StreamTimepoint: a signal recorded on a queue's stream (one recording of a pooled event): what
// semaphores hold for their pending values, what other queues of the backend wait for GPU-side
// and what host threads wait for. Waker: how those host waiters reach the queue's completion
// thread. abandon(): gives up a timepoint whose event will never be recorded.
//
// Threads: a timepoint is made on the submitting thread (published at release, StreamQueue::issue)
// or on the issuing thread (when recorded, Issuer); the issuing thread records its event and marks
// it (markRecorded); the completion thread publishes its outcome (complete); any thread waits for
// it (wait, query, waitRecorded). No lock: its states are atomics with futex waits, and its fields
// lie on cache lines by the thread that writes them (see pad_).
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "backend.hpp"
#include "clock.hpp"
#include "cpu.hpp"
#include "device_shared.hpp"
#include "lazy_observers.hpp"
#include "objects.hpp"
#include "parker.hpp"
#include "stream_counters.hpp"
#include "stream_driver.hpp"
#include "stream_tuning.hpp"
#include "timepoint.hpp"

namespace baton::stream {
namespace {

using core::Deadline;
using core::Ref;

// Sleeping host waiters use the core's futex helpers (parker.hpp).
using core::futexWait;
using core::futexWakeAll;

// How host threads reach a queue's completion thread. Shared with the queue's timepoints, which
// outlive the queue when semaphores hold them.
//
// The completion thread looks for completed records only while something needs it (needed()):
// a host thread asleep until it observes one (sleepers), a held submission of another backend
// waiting for a value it publishes (watchers, StreamTimepoint::watch), a record that must be
// published promptly (its own count of urgent records), the issuing thread waiting for room on
// the stream (QueueShared::throttled); a one-off request (lookNow) asks for one look. Otherwise it
// parks
// (`lazy`) and looks again only when kLookRecords more records arrived or kLazyLookMinNs to
// kLazyLookMaxNs passed: no thread polls while the GPU is simply busy.
struct Waker final : core::LazyObserver {
  core::Parker parker;                // the completion thread parks on it
  std::atomic<uint32_t> sleepers{0};  // host threads asleep until it observes completions
  std::atomic<int32_t> watchers{0};   // watched timepoints not yet completed
  std::atomic<bool> idle{false};      // it parked with nothing in flight: a push must wake it
  // It parked with records in flight that nothing needs: only an urgent push, kLookRecords
  // records, a need or its deadline wake it.
  std::atomic<bool> lazy{false};
  std::atomic<bool> lookRequested{false};  // look once, now (lookNow)
  // It parked until a record's host calls have run (Completion::awaitHostCalls): the trampoline
  // wakes it after each call.
  std::atomic<bool> awaitingHostCalls{false};

  // A host thread is about to sleep until the completion thread observes an event: it must
  // stop polling and sleep in the driver, which notices completion at interrupt latency.
  void addSleeper() {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    parker.unpark();
  }
  void removeSleeper() { sleepers.fetch_sub(1, std::memory_order_seq_cst); }

  // One prompt look at what completed, e.g. before an object is declared in use.
  void lookNow() noexcept override {
    lookRequested.store(true, std::memory_order_seq_cst);
    parker.unpark();
  }
  // As lookNow, but only wakes a lazily parked thread (a thread that is looking anyway will see
  // the completion): for frequent callers such as queries of gated timepoints.
  void nudge() noexcept {
    if (lazy.load(std::memory_order_seq_cst) && lazy.exchange(false, std::memory_order_seq_cst)) {
      lookRequested.store(true, std::memory_order_seq_cst);
      parker.unpark();
    }
  }
  void addWatcher() {
    watchers.fetch_add(1, std::memory_order_seq_cst);
    parker.unpark();
  }
  void removeWatcher() { watchers.fetch_sub(1, std::memory_order_seq_cst); }

  // The newest submission of the queue (its release number, QueueShared::issued then) known to
  // have completed: a host thread's wait or query saw its timepoint's event complete, or the
  // completion thread retired it. Submissions complete in release order, so all before it have
  // too (StreamQueue::startDirect).
  // On a line of its own: every submit reads it (StreamQueue::startDirect), while the fields
  // above change at every park and wake of the completion thread.
  alignas(64) std::atomic<uint64_t> seenDone{0};
  void sawComplete(uint64_t seq) noexcept {
    uint64_t seen = seenDone.load(std::memory_order_relaxed);
    while (seen < seq && !seenDone.compare_exchange_weak(seen, seq, std::memory_order_release,
                                                         std::memory_order_relaxed)) {
    }
  }

  // Whether a host thread or a held submission needs completions observed until they come
  // (a one-off request, lookRequested, asks for a single look instead).
  bool needed() const {
    return sleepers.load(std::memory_order_seq_cst) != 0 ||
           watchers.load(std::memory_order_seq_cst) > 0;
  }
};

// A recorded device signal: one recording of a pooled event on a queue's stream.
//
// Lifetime: the base class's reference to the core Device keeps the device, its queues (a Device
// destroys them only in its destructor), their QueueShared and Waker, and the DeviceShared alive
// until this destructor's body has run, so plain pointers to them suffice. Shared pointers cost two
// more reference counts per submission, raised on the submitting thread and dropped on a completion
// thread.
//
// A timepoint is made either when its event is recorded, or earlier, when its submission is
// released to its device's issuing thread (`recorded` false): it is attached to the signal
// semaphores at once, so that queues waiting for those values are released without waiting for
// the issuing thread, and it becomes usable once that thread recorded the event
// (markRecorded) or gave it up (abandon): whoever needs its event waits for that first
// (waitRecorded), which the issuing thread ends promptly since the submission is already in its
// ring, ahead of anything that could wait for it.
class StreamTimepoint final : public core::Timepoint, public core::Recycled<StreamTimepoint> {
 public:
  // `gated`: the event's completion alone does not mean success (the submission waited for an
  // imported semaphore, see Completion::failIfReleasedByFailure): the host learns the outcome
  // only from the completion thread. GPU-side waits still use the event.
  StreamTimepoint(DeviceShared* shared, Waker* waker, core::Device* device, void* event,
                  void* stream, bool gated, bool recorded, uint64_t number = 0)
      : Timepoint(device, shared->driver.kind),
        shared_(shared),
        waker_(waker),
        event_(event),
        stream_(stream),
        gated_(gated),
        recorded_(recorded ? kRecorded : kUnrecorded),
        number_(number) {
    Counters::add(kTimepointsMade, 1);
  }
  ~StreamTimepoint() override {
    if (watched_.load(std::memory_order_relaxed) == kWatched) waker_->removeWatcher();
    shared_->pool.release(event_);
    Counters::add(kTimepointsGone, 1);
  }

  void* event() const noexcept { return event_; }
  void* stream() const noexcept { return stream_; }
  // The cache line the issuing thread reads and writes (see pad_).
  const void* issueLine() const noexcept { return &event_; }

  // Whether the completion thread published the outcome; *outcome receives it.
  bool done(Status* outcome) const {
    if (state_.load(std::memory_order_acquire) != kDone) return false;
    *outcome = outcome_;
    return true;
  }

  // Whether the event was recorded (or the timepoint abandoned, with its outcome published).
  bool recorded() const noexcept { return recorded_.load(std::memory_order_acquire) == kRecorded; }

  // Blocks until recorded(), or the deadline (Timeout): a short spin, then a futex sleep that
  // markRecorded ends.
  Status waitRecorded(Deadline deadline) {
    const uint64_t start = core::nowNs();
    while (!recorded()) {
      const uint64_t now = core::nowNs();
      if (now < start + kRecordSpinNs) {
        // Yield after the first microseconds: the recording thread may be waiting for a core.
        if (now < start + kSpinBeforeYieldNs)
          core::cpuRelax();
        else
          std::this_thread::yield();
        continue;
      }
      uint32_t s = kUnrecorded;
      if (!recorded_.compare_exchange_weak(s, kUnrecordedWaiters, std::memory_order_acq_rel) &&
          s == kRecorded)
        break;
      if (deadline.expired()) return Status(Result::Timeout);
      futexWait(&recorded_, kUnrecordedWaiters, deadline);
    }
    return Status();
  }

  // Issuing thread only, once: the event is recorded, consumers may wait for it.
  void markRecorded() {
    if (recorded_.exchange(kRecorded, std::memory_order_acq_rel) == kUnrecordedWaiters)
      futexWakeAll(&recorded_);
  }

  Status query() override {
    Status outcome;
    if (done(&outcome)) return outcome;
    if (gated_ || !recorded()) {
      // Only the completion thread learns a gated record's outcome: ask it to look.
      if (gated_) waker_->nudge();
      return Status(Result::NotReady);
    }
    // The driver's answer is a shortcut: the completion thread publishes every outcome in the
    // device's own context. When this thread cannot make the context current, it waits for that
    // instead of querying in another context (whose error would be read as device loss).
    ContextScope scope(shared_->driver, shared_->config.context);
    if (!scope.ok()) return Status(Result::NotReady);
    Status st = shared_->driver.eventQuery(event_);
    if (st.ok()) waker_->sawComplete(number_);
    return st;
  }

  Status wait(Deadline deadline) override {
    Status outcome;
    if (done(&outcome)) return outcome;
    BATON_TRY(waitRecorded(deadline));
    if (done(&outcome)) return outcome;  // abandoned
    if (!gated_) {
      ContextScope scope(shared_->driver, shared_->config.context);
      // The spin on the event is a shortcut too (see query): skipped without the context.
      const uint64_t spinNs = shared_->hostWaitSpinNs.load(std::memory_order_relaxed);
      const uint64_t start = core::nowNs();
      if (scope.ok() && spinNs != 0) Counters::add(kHostWaitSpins, 1);
      while (scope.ok()) {
        Status s = shared_->driver.eventQuery(event_);
        if (s.ok()) waker_->sawComplete(number_);
        if (s.code() != Result::NotReady) return s;  // completed, or an error (device lost)
        const uint64_t now = core::nowNs();
        if (!deadline.isNever() && now >= deadline.ns) return Status(Result::Timeout);
        const uint64_t spun = now - start;
        if (spun >= spinNs) break;  // kHostWaitSpinForever: never
        if (spun >= kHostWaitSpinYieldAfterNs) {
          // The completion thread may publish an outcome the event does not give (device loss
          // found on another record, a failure before the signal): a long spin must see it.
          if (done(&outcome)) return outcome;
          if (spinNs > kHostWaitSpinNs) {
            std::this_thread::yield();
            continue;
          }
        }
        core::cpuRelax();
      }
    }
    // Sleep until the queue's completion thread observes the event (it sleeps in the driver
    // itself while someone waits, so nobody burns a core while the GPU works).
    Counters::add(kHostWaitSleeps, 1);
    waker_->addSleeper();
    Status result;
    for (;;) {
      uint32_t s = state_.load(std::memory_order_acquire);
      if (s == kDone) {
        result = outcome_;
        break;
      }
      if (s == kPending &&
          !state_.compare_exchange_weak(s, kPendingWaiters, std::memory_order_acq_rel))
        continue;
      if (deadline.expired()) {
        result = Status(Result::Timeout);
        break;
      }
      futexWait(&state_, kPendingWaiters, deadline);
    }
    waker_->removeSleeper();
    return result;
  }

  // The queue's completion thread reaches every signal of its records, those on mirrored
  // semaphores promptly (their records are urgent: QueueShared::promptReach), so a host waiter
  // that saw the event first leaves the Vulkan forwarding to it.
  bool forwardsExternals() const override { return true; }

  // A held submission of another backend waits for the value this timepoint signals: the
  // completion thread watches until complete() (Waker::needed). Once per timepoint; not after
  // completion.
  void watch() override {
    uint32_t w = kUnwatched;
    if (watched_.compare_exchange_strong(w, kWatched, std::memory_order_seq_cst))
      waker_->addWatcher();
  }

  // Once, by the completion thread (or by the issuing thread for a timepoint it abandons):
  // publishes the outcome and wakes sleeping waiters.
  void complete(const Status& outcome) {
    outcome_ = outcome;
    if (state_.exchange(kDone, std::memory_order_acq_rel) == kPendingWaiters) futexWakeAll(&state_);
    // A watch() racing with this may count the watcher after its removal: the count is then
    // briefly negative, which needed() reads as "no watcher".
    if (watched_.exchange(kClosed, std::memory_order_seq_cst) == kWatched) waker_->removeWatcher();
  }

 private:
  static constexpr uint32_t kPending = 0, kPendingWaiters = 1, kDone = 2;
  static constexpr uint32_t kUnrecorded = 0, kUnrecordedWaiters = 1, kRecorded = 2;
  static constexpr uint32_t kUnwatched = 0, kWatched = 1, kClosed = 2;
  DeviceShared* shared_;
  Waker* waker_;
  // What the issuing thread reads and writes (event, stream, states) starts 64 bytes into the
  // object, so on a cache line apart from the reference count, which the submitting and
  // completion threads change with every Ref they take or drop (objects are 16-byte aligned).
  char pad_[64 - sizeof(core::Timepoint) - 2 * sizeof(void*)];
  void* event_;
  void* stream_;
  const bool gated_;
  std::atomic<uint32_t> recorded_;
  std::atomic<uint32_t> state_{kPending};
  std::atomic<uint32_t> watched_{kUnwatched};  // see watch()
  // The release number of the submission whose signals it publishes (Waker::seenDone); 0 for
  // a timepoint made at recording, whose completion is reported by the completion thread only.
  const uint64_t number_;
  Status outcome_;  // written before state_ becomes kDone
};

// Gives up a timepoint published at release whose event will not be recorded (the submission
// failed before its signals, whose semaphores the caller failed first): waiters learn it from
// its outcome, ErrorSemaphoreFailed (or ErrorDeviceLost), not from the event.
void abandon(Ref<StreamTimepoint>& timepoint, const Status& why) {
  if (!timepoint) return;
  timepoint->complete(why.code() == Result::ErrorDeviceLost
                          ? why
                          : Status(Result::ErrorSemaphoreFailed, why.message()));
  timepoint->markRecorded();
  timepoint = nullptr;
}

}  // namespace
}  // namespace baton::stream
