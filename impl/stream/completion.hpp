// Completion: the body of a queue's completion thread, one per queue (StreamQueue starts it). It
// observes the events of the queue's records in order, publishes the signalled values, recycles
// events, asks the issuing thread to resume suspended submissions, and turns sticky driver errors
// into device loss.
//
// Threads: it runs on its own thread only, and is the only owner of the queue's records in flight:
// it takes them from the queue's inbox (under inboxMutex), polls or sleeps on the oldest event, and
// publishes what completed in one Notifier scope; on device loss it fails them all, with the
// suspended and deferred submissions (under issueMutex).
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "cpu.hpp"
#include "head_vector.hpp"
#include "issue_ring.hpp"
#include "issuer.hpp"
#include "notifier.hpp"
#include "objects.hpp"
#include "queue_shared.hpp"
#include "stream_counters.hpp"
#include "stream_tuning.hpp"
#include "trace.hpp"

namespace baton::stream {
namespace {

// The records a completion thread has in flight, oldest first (core::HeadVector), in place of
// a std::deque. A deque holds 4 Records per 512-byte node, so it allocated and freed a node every
// 4 records, and its indexing (the bisection, each loop of finish) divides by the node size;
// together about 200 of the ~800 instructions the thread spent per record in the ping-pong on the
// fake driver (callgrind). Here a batch taken while nothing is in flight is swapped in (no record
// moves, and the storage goes back to the issuing side through the inbox), and retired records
// (popFront: what they hold, submission, timepoints, host calls, goes then) leave the front
// without moving the others.
using RecordQueue = core::HeadVector<Record, 64>;

class Completion {
 public:
  explicit Completion(std::shared_ptr<QueueShared> q) : q_(std::move(q)), d_(q_->driver) {}

  void run() {
    InternalThreadScope internal;
    // The thread's own driver calls always run in the device's context: made current here, and
    // again before it observes records if this failed (useContext).
    contextCurrent_ = d_.setCurrent(q_->device->config.context).ok();
    std::vector<Ref<core::Queue>> passes;
    for (;;) {
      std::string lost;
      bool empty;
      {
        std::lock_guard<core::Mutex> records(mutex_);
        // The flag first: the lock (a cache line the issuing thread writes) only when there is
        // something to take.
        if (q_->inboxPending.load(std::memory_order_acquire)) {
          std::lock_guard<core::Mutex> lock(q_->inboxMutex);
          q_->inboxPending.store(false, std::memory_order_relaxed);
          takeInboxLocked(q_->inbox.size());
          passes.swap(q_->passes);
          if (q_->lostPending) {
            lost = std::move(q_->lostReason);
            q_->lostPending = false;
          }
        }
        empty = inflight_.empty();
      }
      for (Ref<core::Queue>& queue : passes) queue->evaluate();
      passes.clear();
      if (!lost.empty()) q_->coreDevice->markLost(lost);
      if (empty) {
        // Nothing in flight: the core Device may be gone (see ~StreamQueue), touch only q_.
        q_->waker->lookRequested.store(false, std::memory_order_relaxed);
        if (q_->stop.load(std::memory_order_acquire)) return;
        // While the queue keeps working, park lazily (the next records do not wake it, see
        // parkLazily); after kIdleAfterNs without records, sleep until a push wakes it: one
        // wake-up when the queue starts working again.
        uint64_t now = core::nowNs();
        if (publishedCollectives_.exchange(false, std::memory_order_relaxed)) {
          // See kCompletionNextSpinNs: the next collective's record, without a wake-up.
          if (awaitInbox(now)) continue;
          now = core::nowNs();
        }
        if (emptySince_ == 0) emptySince_ = now;
        if (now - emptySince_ < kIdleAfterNs) {
          // Nothing to look at: only records (a push wakes it for urgent ones, kLookRecords of
          // them, or while something needs completions) or the queue's end end this park.
          Waker& w = *q_->waker;
          w.lazy.store(true, std::memory_order_seq_cst);
          if (!q_->inboxPending.load(std::memory_order_seq_cst) &&
              !q_->stop.load(std::memory_order_seq_cst)) {
            w.parker.parkWithoutSpin(Deadline::after(lazyNs_));
            core::trace::span(core::trace::kCompletionLazy, 0, now);
          }
          w.lazy.store(false, std::memory_order_seq_cst);
          lazyNs_ = std::min(lazyNs_ * 2, kLazyLookMaxNs);
          continue;
        }
        q_->waker->idle.store(true, std::memory_order_seq_cst);
        if (!q_->inboxPending.load(std::memory_order_seq_cst) &&
            !q_->stop.load(std::memory_order_acquire)) {
          q_->waker->parker.parkWithoutSpin(Deadline::never());
          core::trace::span(core::trace::kCompletionIdle, 0, now);
        }
        q_->waker->idle.store(false, std::memory_order_seq_cst);
        pollNs_ = kPollMinNs;
        lazyNs_ = kLazyLookMinNs;
        emptySince_ = 0;
        continue;
      }
      emptySince_ = 0;
      // The records are this thread's and the submitting threads' (retireOnSubmit): looked at
      // under mutex_, which is let go, with the scope's releases run, before the thread sleeps
      // or parks; `holding_` while it still uses a record then.
      Next next;
      {
        core::Notifier::Scope scope;
        std::lock_guard<core::Mutex> records(mutex_);
        next = look();
      }
      switch (next.kind) {
        case Next::kLoop: break;
        case Next::kParkLazily: parkLazily(next.progressed); break;
        case Next::kAwaitHostCalls:
          awaitHostCalls(next.calls);
          letGo();
          break;
        case Next::kSleep: {
          Status err =
              sleepOnOldest(next.event, next.seq, next.spinNs, next.traceId, next.privateEvent);
          letGo();
          if (err.isError()) lose(err);
          break;
        }
        case Next::kLost: lose(next.error); break;
      }
    }
  }

  // Polls the inbox for up to kCompletionNextSpinNs from `start` (pausing, then yielding the
  // core between polls); true when records (or the queue's end) came.
  bool awaitInbox(uint64_t start) {
    for (;;) {
      const bool came = q_->inboxPending.load(std::memory_order_acquire) ||
                        q_->stop.load(std::memory_order_acquire);
      const uint64_t now = core::nowNs();
      if (came || now - start >= kCompletionNextSpinNs) {
        core::trace::span(core::trace::kCompletionNext, 0, start);
        return came;
      }
      if (now - start < kSpinBeforeYieldNs)
        for (int i = 0; i < 16; ++i) core::cpuRelax();
      else
        std::this_thread::yield();
    }
  }

  // A submitting thread, after it issued a submission directly (StreamQueue::finishDirect; no
  // lock held, inside the submit's Notifier::Scope): once QueueShared::retireAt records wait in
  // the inbox, it retires those that completed itself, as this thread would (finish). The
  // records' submissions, timepoints, events and semaphore references were made and last
  // written on that thread, and go back there rather than moving to this thread's core and back
  // (about 0.2 µs per cache line on the H100 test machine, bench/core_latency); this thread then
  // only looks when something needs it, or lazily. One or two event queries per look: the
  // newest record in the inbox, else the one halfway (records recorded a few microseconds ago
  // have mostly run; in a stream of small submissions the newest is often still queued). Only
  // tried: it never waits for this thread, leaves the records to it while it uses one outside
  // the lock (holding_), and after device loss.
  // Measured on the H100 (cuda_bench's live ping-pong, pinned to 4 CPUs, 8 processes each way):
  // with every submission issued directly, process CPU per round trip 2.67 µs against 3.78 µs
  // left to the completion threads (medians), the round trip 2.58 against 2.93 µs. Records of
  // the issuing thread stay with the completion threads: retired by the submitting thread too,
  // the default mode's round trip went from 1.66 to 1.98 µs (medians; the submitting thread, at
  // 1.8-1.9 µs of CPU per round trip instead of 1.4-1.6, set the pace) for 3.85 against 4.06 µs
  // of process CPU.
  void retireOnSubmit() {
    QueueShared& q = *q_;
    if (q.inboxRecords.load(std::memory_order_relaxed) < q.retireAt.load(std::memory_order_relaxed))
      return;
    std::unique_lock<core::Mutex> records(mutex_, std::try_to_lock);
    if (!records.owns_lock() || holding_ || q.coreDevice->lost()) return;
    size_t count;
    void *newest = nullptr, *halfway = nullptr;
    {
      std::lock_guard<core::Mutex> lock(q.inboxMutex);
      count = q.inbox.size();
      if (count) newest = q.inbox[count - 1].timepoint->event();
      if (count >= 2) halfway = q.inbox[count / 2 - 1].timepoint->event();
    }
    if (!newest) return;  // the completion thread took them
    size_t take = 0;
    Status s;
    {
      ContextScope context(d_, q.device->config.context);
      s = context.status();
      if (s.ok()) s = d_.eventQuery(newest);
      if (s.ok()) {
        take = count;
      } else if (s.code() == Result::NotReady && halfway) {
        s = d_.eventQuery(halfway);
        if (s.ok()) take = count / 2;
      }
    }
    Counters::add(kCompletionLooks, 1);
    if (s.isError()) {
      q.waker->lookNow();  // the completion thread's to report (device loss), at once
      return;
    }
    if (take == 0) {
      q.retireAt.store(static_cast<uint32_t>(count + kRetireBatch / 2), std::memory_order_relaxed);
      return;
    }
    {
      std::lock_guard<core::Mutex> lock(q.inboxMutex);
      takeInboxLocked(take);
      q.inboxPending.store(!q.inbox.empty() || !q.passes.empty() || q.lostPending,
                           std::memory_order_relaxed);
      q.retireAt.store(static_cast<uint32_t>(q.inbox.size() + kRetireBatch / 2),
                       std::memory_order_relaxed);
    }
    // The stream is in order: the records before it, in flight or taken, completed too.
    const size_t n = inflight_.size();
    Counters::add(kRetiredOnSubmit, n);
    finish(n);
  }

 private:
  // What the thread does after a look, once mutex_ is let go.
  struct Next {
    enum Kind { kLoop, kParkLazily, kAwaitHostCalls, kSleep, kLost } kind = kLoop;
    bool progressed = false;     // kParkLazily: the look finished records
    HostCalls* calls = nullptr;  // kAwaitHostCalls: the first urgent record's (holding_)
    void* event = nullptr;       // kSleep: the oldest record's event (holding_)
    uint64_t seq = 0;            // kSleep: the oldest record's Record::seq
    uint64_t spinNs = 0;         // kSleep: how long to spin on it first (after progress)
    uint64_t traceId = 0;        // kSleep: the oldest record's submission's (the trace's spans)
    bool privateEvent = false;   // kSleep: only this thread queries its event (collectives)
    Status error;                // kLost: the driver's error
  };

  // One look at the records in flight (mutex_ held, inside a Notifier::Scope): publishes what
  // completed, and says what the thread does next.
  Next look() {
    Next next;
    if (inflight_.empty()) return next;  // a submitting thread retired them meanwhile
    if (q_->coreDevice->lost()) {
      failAll(q_->coreDevice->lostStatus());
      return next;
    }
    if (q_->hostPublished.load(std::memory_order_seq_cst) != 0) publishBehindHostCalls();
    // Whether anything needs the completions now (Waker): if not, one look, then a lazy park.
    // A queue that is going (stop) waits for its records here: watched too.
    const bool othersNeed = q_->waker->needed() || q_->throttled.load(std::memory_order_seq_cst) ||
                            q_->stop.load(std::memory_order_acquire);
    const bool needed = urgent_ != 0 || othersNeed;
    q_->waker->lookRequested.store(false, std::memory_order_seq_cst);
    size_t n = 0;
    Status err = useContext();
    if (err.ok()) err = countCompleted(&n);
    if (err.isError()) {
      next.kind = Next::kLost;
      next.error = std::move(err);
      return next;
    }
    if (n == 0 && needed) {
      // Only urgent records need watching, and the first of them waits for host calls that
      // have not run: the trampoline says when they have (awaitHostCalls), no polling meanwhile.
      if (!othersNeed) {
        HostCalls* calls = firstUrgentHostCalls();
        if (calls && calls->ran.load(std::memory_order_acquire) < calls->total) {
          holding_ = true;
          next.kind = Next::kAwaitHostCalls;
          next.calls = calls;
          return next;
        }
      }
      holding_ = true;
      next.kind = Next::kSleep;
      next.event = inflight_.front().timepoint->event();
      next.seq = inflight_.front().seq;
      if (inflight_.front().submission) next.traceId = inflight_.front().submission->traceId;
      // A collective's signals are published by this thread only (collectives.hpp): their host
      // waiters cannot spin on its event, so this thread spins for them, as long as the device's
      // host waits do (Device::setHostWaitSpin), at least kCompletionSpinNs.
      next.spinNs = kCompletionSpinNs;
      if (inflight_.front().collectives) {
        next.spinNs =
            std::max(kCompletionSpinNs, q_->device->hostWaitSpinNs.load(std::memory_order_relaxed));
        next.privateEvent = true;
      }
      return next;
    }
    if (n) {
      finish(n);
      pollNs_ = kPollMinNs;
      lazyNs_ = kLazyLookMinNs;
    }
    if (!needed && !inflight_.empty()) {
      next.kind = Next::kParkLazily;
      next.progressed = n != 0;
    }
    return next;
  }

  // The thread no longer uses a record outside mutex_.
  void letGo() {
    std::lock_guard<core::Mutex> records(mutex_);
    holding_ = false;
  }

  // A driver error while observing the records: the device is lost, and everything in flight
  // fails with it.
  void lose(const Status& err) {
    q_->coreDevice->markLost(err.message());
    core::Notifier::Scope scope;
    std::lock_guard<core::Mutex> records(mutex_);
    failAll(q_->coreDevice->lostStatus());
  }

  // Makes the device's context current when the thread's start could not (or a scope for another
  // device left that device's context on this thread, see ContextScope). A failure is handled
  // as any driver error of this thread is (below): without it the thread cannot observe the
  // records, whose signals would never be published, so the device is marked lost with the
  // error (naming cuCtxSetCurrent / hipSetDevice) and every pending signal fails with it.
  Status useContext() {
    if (contextCurrent_ && !tContextReplaced) [[likely]]
      return Status();
    tContextReplaced = false;  // a scope for another device failed to restore ours (ContextScope)
    Status st = d_.setCurrent(q_->device->config.context);
    contextCurrent_ = st.ok();
    return st;
  }

  // Moves the inbox's first `count` records to the end of inflight_ (mutex_ and inboxMutex held).
  // All of them, while nothing is in flight: swapped in (no record moves, and the storage goes
  // back to the issuing side through the inbox).
  void takeInboxLocked(size_t count) {
    std::vector<Record>& inbox = q_->inbox;
    if (count == 0) return;
    for (size_t i = 0; i < count; ++i) urgent_ += inbox[i].urgent;
    if (count == inbox.size()) {
      inflight_.append(inbox);
    } else {
      for (size_t i = 0; i < count; ++i) inflight_.push_back(std::move(inbox[i]));
      inbox.erase(inbox.begin(), inbox.begin() + static_cast<ptrdiff_t>(count));
    }
    q_->inboxRecords.store(static_cast<uint32_t>(inbox.size()), std::memory_order_relaxed);
    q_->retireAt.store(kRetireBatch, std::memory_order_relaxed);
  }

  // How many records, oldest first, have completed. The stream is in order, so when the newest has
  // completed all have: one query in the common catch-up case; otherwise the completed prefix is
  // found by bisection. A scan from the oldest made up to one query per record, each on an event
  // the issuing thread had just recorded; bisection made the live ping-pong faster on the H100
  // (docs/performance.md, 'Measurements behind design choices').
  Status countCompleted(size_t* n) {
    *n = 0;
    Counters::add(kCompletionLooks, 1);
    // The oldest's event was just seen complete (sleepOnOldest): no second query for it.
    if (inflight_.size() == 1 && inflight_.front().seq == seenCompleteSeq_) {
      *n = 1;
      return Status();
    }
    Status s = d_.eventQuery(inflight_.back().timepoint->event());
    if (s.ok()) {
      *n = inflight_.size();
      return Status();
    }
    if (s.isError()) return s;
    size_t lo = 0, hi = inflight_.size() - 1;  // [0, lo) completed, hi not
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      s = d_.eventQuery(inflight_[mid].timepoint->event());
      if (s.isError()) return s;
      if (s.ok())
        lo = mid + 1;
      else
        hi = mid;
    }
    *n = lo;
    return Status();
  }

  // Nothing needs the records in flight: parks until a need arises (Waker), kLookRecords more
  // records arrive (QueueShared::wakeCompletion), or lazyNs_ passed, doubling lazyNs_ up to
  // kLazyLookMaxNs while looks find nothing.
  // Without mutex_ (records may be retired meanwhile).
  void parkLazily(bool progressed) {
    Waker& w = *q_->waker;
    w.lazy.store(true, std::memory_order_seq_cst);
    // (stop: the thread then watches its last records, see run.)
    if (!lazyParkEnds()) {
      Counters::add(kLazyParks, 1);
      const uint64_t begin = core::trace::on() ? core::nowNs() : 0;
      w.parker.parkWithoutSpin(Deadline::after(lazyNs_));
      core::trace::span(core::trace::kCompletionLazy, 0, begin);
    }
    w.lazy.store(false, std::memory_order_seq_cst);
    if (!progressed) lazyNs_ = std::min(lazyNs_ * 2, kLazyLookMaxNs);
  }

  // The first urgent record in flight (only urgent records need watching: run) waits for host calls
  // that have not all run: parks until the trampoline wakes it after a call (HostCalls::ranOne), or
  // a need, an urgent push or kLookRecords records arrive (as a lazy park), at most kLazyLookMaxNs.
  // When that record has no host calls left to run, its event is about to complete, and
  // sleepOnOldest watches it instead (look). Records before it are not urgent; it cannot complete
  // before its calls ran. On the H100, spinning and polling for it cost the completion thread of
  // frame_bench's queue with a host call per frame a large share of each frame
  // (docs/performance.md, 'Measurements behind design choices').
  HostCalls* firstUrgentHostCalls() {
    for (size_t i = 0; i < inflight_.size(); ++i)
      if (inflight_[i].urgent) return inflight_[i].hostCalls.get();
    return nullptr;
  }
  // Without mutex_; `calls` stays valid while holding_ (look() found calls left to run).
  void awaitHostCalls(HostCalls* calls) {
    Waker& w = *q_->waker;
    w.awaitingHostCalls.store(true, std::memory_order_seq_cst);
    w.lazy.store(true, std::memory_order_seq_cst);
    // After the flag (see HostCalls::ranOne): a call that missed it is seen here.
    if (calls->ran.load(std::memory_order_seq_cst) < calls->total && !lazyParkEnds()) {
      Counters::add(kHostCallParks, 1);
      // Bounded only to notice a device lost elsewhere: the trampoline's wake is what ends it.
      w.parker.parkWithoutSpin(Deadline::after(kLazyLookMaxNs));
    }
    w.lazy.store(false, std::memory_order_seq_cst);
    w.awaitingHostCalls.store(false, std::memory_order_seq_cst);
  }

  // With Waker::lazy set: whether something already asks for the look a lazy park waits for (a
  // need, a look request, room on the stream, the queue's end, an urgent push or kLookRecords
  // records). Read after `lazy` is set, so that a push or a need that missed it is seen here (the
  // pusher sets inboxPending before it looks at `lazy`; a need sets its count before unparking).
  bool lazyParkEnds() {
    const Waker& w = *q_->waker;
    return w.needed() || w.lookRequested.load(std::memory_order_seq_cst) ||
           q_->throttled.load(std::memory_order_seq_cst) ||
           q_->stop.load(std::memory_order_seq_cst) || pendingUrgentOrMany();
  }

  // Records released while a submission with host calls was in flight on this queue are
  // host-published too (Issuer::finish), only so that the queue's signals become visible in
  // order: none may be seen before the host calls' signals are reached or failed. Once no record
  // with host calls is ahead of them, that order holds with their signals published as
  // timepoints of their (recorded) events: waiters of other queues then wait GPU-side, and the
  // records need no prompt watching. On the H100, frame_bench (a host call per frame, three
  // frames in flight) kept every record of that queue host-published, and its completion thread
  // watched them all: 90 µs of CPU per ~280 µs frame, and each cross-queue edge from that queue
  // went through the host. Not for records that signal imported semaphores (their external
  // signals were not enqueued; reached promptly by the host as before).
  void publishBehindHostCalls() {
    core::Notifier::Scope scope;  // releases run once, after all are published
    for (size_t i = 0; i < inflight_.size(); ++i) {
      Record& r = inflight_[i];
      // Its signals are not out yet (host calls, collectives): nothing behind it may go first.
      if (r.hostCalls || r.collectives) return;
      if (!r.submission || !r.hostPublished || r.signalsDone || r.externalSignals) {
        if (r.hostPublished) return;  // kept host-published: those behind it keep the order
        continue;
      }
      bool prompt = false;
      for (const core::Submission::Signal& sig : r.submission->signals) {
        sig.semaphore->addTimepoint(sig.value, r.timepoint);
        prompt |= q_->promptReach(sig);
      }
      r.hostPublished = false;
      const bool urgent = prompt || r.resumes;
      urgent_ -= r.urgent;
      urgent_ += urgent;
      r.urgent = urgent;
      Counters::add(kRepublished, 1);
      q_->hostPublished.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  // Whether the inbox holds an urgent record or kLookRecords of them (what a push wakes for).
  bool pendingUrgentOrMany() {
    if (!q_->inboxPending.load(std::memory_order_seq_cst)) return false;
    std::lock_guard<core::Mutex> lock(q_->inboxMutex);
    if (q_->lostPending || !q_->passes.empty() || q_->inbox.size() >= kLookRecords) return true;
    for (const Record& r : q_->inbox)
      if (r.urgent) return true;
    return false;
  }

  // Waits for the oldest record's event, while something needs it (run), without burning the
  // core: a short spin, then a blocking-sync wait in the driver (interrupt driven) when it can,
  // or a poll after a short backoff sleep. Returns NotReady when it woke without completion.
  // Without mutex_: `event` and `seq` are the oldest record's, which stays in flight while
  // holding_.
  Status sleepOnOldest(void* event, uint64_t seq, uint64_t spinNs, uint64_t traceId,
                       bool privateEvent) {
    // Spin only after progress, not at every poll of a long wait; past kCompletionLongSpinNs
    // (a spin told to last as long as the wait), the thread looks at its inbox and comes back
    // (NotReady without sleeping), and yields its core between queries.
    const uint64_t start = core::nowNs();
    const uint64_t spin = pollNs_ == kPollMinNs ? std::min(spinNs, kCompletionLongSpinNs) : 0;
    const bool yield = spinNs > kHostWaitSpinNs;
    for (;;) {
      Status s = d_.eventQuery(event);
      if (s.code() != Result::NotReady) {
        core::trace::span(core::trace::kCompletionSpin, traceId, start);
        if (s.ok()) seenCompleteSeq_ = seq;
        return s;
      }
      uint64_t now = core::nowNs();
      if (now - start >= spin) break;
      // Not back to back: see kCompletionQueryGapNs.
      const uint64_t next =
          now + (privateEvent ? kCompletionPrivateQueryGapNs : kCompletionQueryGapNs);
      while (core::nowNs() < next) {
        if (yield && now - start >= kHostWaitSpinYieldAfterNs)
          std::this_thread::yield();
        else
          core::cpuRelax();
      }
    }
    if (spinNs > kCompletionLongSpinNs && pollNs_ == kPollMinNs) {
      core::trace::span(core::trace::kCompletionPoll, traceId, start);
      return Status(Result::NotReady);  // spins on at the next look
    }
    if (q_->device->config.blockingSyncEvents) {
      Status s = d_.eventSynchronize(event);
      core::trace::span(core::trace::kCompletionDriver, traceId, start);
      if (s.ok()) seenCompleteSeq_ = seq;
      return s;
    }
    // A plain event cannot be slept on (eventSynchronize spins on it with the context's default
    // scheduling). When the oldest record is the last work enqueued on the stream, a
    // blocking-sync event recorded behind it on the same stream completes with it: sleep on
    // that. issueMutex keeps anything from being enqueued in between; it is only tried: the
    // issuing thread holds it across driver calls that can block until the GPU progresses, and
    // the GPU may need this thread's publications for that (a Vulkan queue waiting for a value
    // only the host publishes; the demo hung on it). Not on a helper stream that waits for the
    // oldest event: on the H100, such a helper's blocking-sync event sometimes never completed
    // while another queue's stream was blocked GPU-side on an imported semaphore that only this
    // thread's publication would release (NativeInterop.AFailedCudaProducer..., about 1 run in
    // 100; CUDA_DEVICE_MAX_CONNECTIONS=32 did not prevent it).
    {
      std::unique_lock<core::Mutex> lock(q_->issueMutex, std::try_to_lock);
      if (lock.owns_lock() && q_->pushed == seq) {
        BATON_TRY(d_.eventRecord(q_->sleepEvent, q_->stream));
        lock.unlock();
        Status s = d_.eventSynchronize(q_->sleepEvent);
        core::trace::span(core::trace::kCompletionDriver, traceId, start);
        if (s.ok()) seenCompleteSeq_ = seq;  // recorded behind it on its stream
        return s;
      }
    }
    // Later work is queued behind the oldest record (a sleep in the driver would last until that
    // work is done too), or the issuing thread is busy: poll, at most kUrgentPollMaxNs apart.
    q_->waker->parker.park(Deadline::after(std::min(pollNs_, kUrgentPollMaxNs)));
    pollNs_ = std::min(pollNs_ * 2, kUrgentPollMaxNs);
    core::trace::span(core::trace::kCompletionPoll, traceId, start);
    return Status(Result::NotReady);
  }

  // Publishes the first n records: timepoints completed, signal values reached, host-call
  // failures propagated, deferred frees done; then resumes a suspended submission whose host
  // calls have run.
  void finish(size_t n) {
    uint64_t submissions = 0, ops = 0;
    bool resume = false;
    // What this batch writes was last written on other cores: the timepoints' counts and states
    // (the submitting thread made them, the issuing thread recorded them), the submissions (the
    // submitting thread). Their lines are requested for all records first, so that the misses
    // overlap instead of stalling the loops below one record at a time; the waited timepoints,
    // found through the submissions, once those have arrived. Sampled on the H100 in the live
    // ping-pong, 21% of this thread's samples fell on one instruction: the decrement of a waited
    // timepoint's count as its submission was destroyed. With the prefetches, 4 runs alternating
    // with the same build without them: completion threads' CPU per round trip 0.9-1.1 us
    // against 1.0-1.2, and per bench/cuda/frame_bench frame 52.7-60.1 against 58.1-71.3 us.
    for (size_t i = 0; i < n; ++i) prefetchRecord(inflight_[i]);
    for (size_t i = 0; i < n; ++i) {
      ops += inflight_[i].ops;
      if (inflight_[i].collectives) publishedCollectives_.store(true, std::memory_order_relaxed);
    }
    if (core::trace::on())  // the trace's "completed as observed", before the signals go out
      for (size_t i = 0; i < n; ++i)
        if (inflight_[i].submission) core::trace::completed(inflight_[i].submission->traceId);
    {
      core::Notifier::Scope scope;  // releases run once, when the batch is published
      // The events of the timepoints that die here go back to the pool together, before the
      // scope's releases run (they may take events for their timepoints).
      EventPool::ReturnBatch events(q_->device->pool, eventReturns_);
      // Before the timepoints complete: their host waiters must find the signals failed.
      for (size_t i = 0; i < n; ++i)
        if (inflight_[i].externalWaits && !inflight_[i].signalsDone)
          failIfReleasedByFailure(inflight_[i]);
      // Known complete before any waiter learns it (a waiter that then submits finds the
      // queue idle, StreamQueue::startDirect).
      for (size_t i = n; i-- > 0;)
        if (inflight_[i].number) {
          q_->waker->sawComplete(inflight_[i].number);
          break;
        }
      for (size_t i = 0; i < n; ++i) inflight_[i].timepoint->complete(Status());
      for (size_t i = 0; i < n; ++i) prefetchWaited(inflight_[i]);
      // Signals published as timepoints are already visible (a query of their event sees them
      // complete): reach them in any order, once per semaphore with its highest value — one
      // update of each semaphore's pending list instead of one per record, which matters when
      // the thread catches up with many records.
      // A batch signals few semaphores (a queue mostly signals the same ones): each signal is
      // merged into reach_ by a look at its few entries, rather than sorting one entry per
      // signal (the sort was ~50 instructions per record in the ping-pong, callgrind). Past
      // kReachLinear semaphores, entries are appended and sorted as before.
      reach_.clear();
      bool sortReach = false;
      for (size_t i = 0; i < n; ++i) {
        Record& r = inflight_[i];
        if (r.submission && !r.signalsDone && !r.hostPublished)
          for (core::Submission::Signal& s : r.submission->signals)
            sortReach |= addReach(s.semaphore.get(), s.value);
      }
      if (sortReach) {
        std::sort(reach_.begin(), reach_.end());
        for (size_t i = 0; i < reach_.size(); ++i) {
          if (i + 1 < reach_.size() && reach_[i + 1].first == reach_[i].first) continue;  // max
          reach_[i].first->reach(reach_[i].second);
        }
      } else {
        for (const auto& [semaphore, value] : reach_) semaphore->reach(value);
      }
      reach_.clear();
      // Signals only the host publishes become visible here: record by record, in submission
      // order (Vulkan's signal operation order).
      for (size_t i = 0; i < n; ++i) {
        Record& r = inflight_[i];
        resume |= r.resumes;
        urgent_ -= r.urgent;
        if (!r.submission) continue;
        ++submissions;
        if (!r.hostPublished) continue;
        int32_t failed = r.hostCalls ? r.hostCalls->firstError.load(std::memory_order_acquire) : 0;
        if (!r.collectives.take()) {
          // A communicator failure failed the signals already (collectives.hpp).
        } else if (failed != 0)
          core::failSignals(*r.submission, Issuer(*q_).hostCallFailure(failed));
        else
          core::reachSignals(*r.submission);
        q_->hostPublished.fetch_sub(1, std::memory_order_seq_cst);
      }
      // The host waiters of what was published learn it now, not after the records are
      // destroyed below (about a microsecond of a collective's round trip on the H200s).
      core::Notifier::wakeWaitersNow();
      for (size_t i = 0; i < n; ++i)
        for (const core::Allocation& a : inflight_[i].freeAfter) q_->device->freeAllocation(a);
      // Drop the references (semaphores, buffers, timepoints) before reporting the queue idle:
      // Device::shutdown waits for idle, and must find nothing of ours holding the device.
      dropSemaphoreRefs(n);
      inflight_.popFront(n);
    }
    Counters::add(kRecordsFinished, n);
    q_->submissionsDone(submissions);
    opsDone(ops);
    if (resume) {
      // The issuing thread resumes it: this thread makes no driver call that could wait for
      // the GPU, which may need this thread's publications to progress.
      q_->resumePending.store(true, std::memory_order_seq_cst);
      q_->wakeIssuer();
    }
  }

  // finish's prefetches (see there): the record's timepoint (its count, and the line of its
  // state) and its submission's first lines (its waits and signals).
  static void prefetchRecord(const Record& r) {
    if (const StreamTimepoint* tp = r.timepoint.get()) {
      core::prefetchForWrite(tp);
      core::prefetchForWrite(tp->issueLine());
    }
    if (const core::Submission* sub = r.submission.get())
      for (size_t line = 0; line < 3 * 64; line += 64)
        core::prefetchForWrite(reinterpret_cast<const char*>(sub) + line);
  }
  // The counts of the timepoints the record's submission waited for: it drops them when it is
  // destroyed, often as their last reference.
  static void prefetchWaited(const Record& r) {
    if (const core::Submission* sub = r.submission.get())
      for (const core::Submission::Wait& w : sub->waits)
        if (w.timepoint) core::prefetchForWrite(w.timepoint.get());
  }

  // Merges a signal into reach_ (its semaphore's highest value so far). Returns true when it
  // was appended without a merge because reach_ is long: reach_ then needs a sort.
  bool addReach(core::Semaphore* semaphore, uint64_t value) {
    if (reach_.size() <= kReachLinear) {
      for (auto& [s, v] : reach_)
        if (s == semaphore) {
          v = std::max(v, value);
          return false;
        }
      reach_.emplace_back(semaphore, value);
      return false;
    }
    reach_.emplace_back(semaphore, value);
    return true;
  }

  // Drops the first n records' references to their semaphores, once per semaphore with the count
  // (Object::releaseMany) rather than once per wait and signal: a batch of records mostly names the
  // same few semaphores, whose counts the submitting threads raise at every submit. On the H100,
  // deleting submissions, mostly these decrements, was the largest share of the live ping-pong's
  // completion threads' time (sampled: docs/performance.md, 'Measurements behind design choices').
  // Past kDropMerge distinct semaphores the rest are dropped one by one.
  void dropSemaphoreRefs(size_t n) {
    static constexpr size_t kDropMerge = 8;
    drops_.clear();
    auto drop = [&](Ref<core::Semaphore>& ref) {
      core::Semaphore* s = ref.get();
      if (!s) return;
      for (auto& [p, count] : drops_)
        if (p == s) {
          ref.detach();
          ++count;
          return;
        }
      if (drops_.size() == kDropMerge) return;  // left to the record's own release
      drops_.emplace_back(ref.detach(), 1);
    };
    for (size_t i = 0; i < n; ++i) {
      core::Submission* sub = inflight_[i].submission.get();
      if (!sub) continue;
      for (core::Submission::Wait& w : sub->waits) drop(w.semaphore);
      for (core::Submission::Signal& sig : sub->signals) drop(sig.semaphore);
    }
    for (const auto& [p, count] : drops_) p->releaseMany(count);
    drops_.clear();
  }

  // Counts the driver operations of finished records; wakes the issuing thread when it stopped
  // issuing for this queue on their number (QueueShared::overOpsLimit).
  void opsDone(uint64_t ops) {
    if (ops == 0) return;
    q_->opsDone.fetch_add(ops, std::memory_order_seq_cst);
    if (q_->throttled.load(std::memory_order_seq_cst) &&
        q_->throttled.exchange(false, std::memory_order_seq_cst))
      q_->wakeIssuer();
  }

  // A GPU-side wait for an imported semaphore returns when the external semaphore reaches the
  // value, which also happens when the baton semaphore failed and VulkanFailurePolicy::Release
  // signalled it past every wait: baton's value then stays below the wait (a failed semaphore
  // is never raised). Such a submission must fail its signals, not reach them.
  void failIfReleasedByFailure(Record& r) {
    for (const core::Submission::Wait& w : r.submission->waits) {
      if (!w.external) continue;
      // A counterpart that failed elsewhere (another process) released the GPU-side wait with
      // its failure marker: learn of that failure before deciding.
      w.semaphore->refreshExternals();
      if (!w.semaphore->failed() || w.semaphore->value(false) >= w.value) continue;
      if (r.collectives.take())
        core::failSignals(*r.submission,
                          core::failedWait(q_->label, w, Result::ErrorSemaphoreFailed));
      r.signalsDone = true;
      if (r.hostPublished) {  // its publication is done too
        r.hostPublished = false;
        q_->hostPublished.fetch_sub(1, std::memory_order_seq_cst);
      }
      return;
    }
  }

  // Device lost: every record in flight fails, and so do the suspended submission and those
  // behind it.
  void failAll(const Status& why) {
    size_t n = inflight_.size();
    uint64_t submissions = 0, ops = 0;
    for (const Record& r : inflight_) ops += r.ops;
    // An issuer that began before the loss was declared may still be enqueueing on this stream
    // (it holds issueMutex; from now on Issuer::start and resume see the loss and enqueue
    // nothing): wait for it, so that the drain below covers what it enqueued. (Without this, a
    // submitting thread's graph launch made during the drain, with its host node's entries,
    // was suspended, and its host calls freed below while the driver still had to run them:
    // ASan, the fault sweep.)
    { std::lock_guard<core::Mutex> barrier(q_->issueMutex); }
    // Loss can be declared while this stream still runs (a fault seen on another queue or
    // injected by a test): let it drain before the records release the memory it may use. On a
    // faulted context this returns the sticky error at once.
    const bool drained = d_.streamSynchronize(q_->stream).ok();
    {
      core::Notifier::Scope scope;
      for (Record& r : inflight_) {
        r.timepoint->complete(why);
        if (r.submission) {
          ++submissions;
          core::trace::completed(r.submission->traceId);
          if (!r.signalsDone && r.collectives.take()) core::failSignals(*r.submission, why);
          if (r.hostPublished) q_->hostPublished.fetch_sub(1, std::memory_order_seq_cst);
        }
        for (const core::Allocation& a : r.freeAfter) q_->device->freeAllocation(a);
        // The driver may still call host functions of a faulted stream, or never: their data
        // must stay valid either way, so it is kept for the process (keepForDriver; only after
        // loss, and only when the stream could not be drained: a drained stream ran them all).
        if (!drained) keepForDriver(std::move(r.hostCalls));
      }
      inflight_.clear();
      urgent_ = 0;
      std::lock_guard<core::Mutex> lock(q_->issueMutex);
      if (q_->continuation) {
        Record& c = *q_->continuation;
        if (c.collectives.take()) core::failSignals(*c.submission, why);
        q_->dropRelease(c.published, c.hostPublish, why);
        if (!drained) keepForDriver(std::move(c.hostCalls));
        q_->continuation.reset();
        ++submissions;
      }
      for (Issue& e : q_->deferred) {
        core::failSignals(*e.submission, why);
        q_->dropRelease(e.timepoint, e.hostPublish, why);
      }
      submissions += q_->deferred.size();
      q_->deferred.clear();
    }
    Counters::add(kRecordsFinished, n);
    q_->submissionsDone(submissions);
    opsDone(ops);
  }

  std::shared_ptr<QueueShared> q_;
  const DriverTable& d_;
  // Guards the records in flight and what retiring them uses (inflight_ to urgent_, holding_):
  // taken by this thread for each look, and tried by submitting threads (retireOnSubmit).
  core::Mutex mutex_;
  bool holding_ = false;  // the thread uses a record's event or host calls without mutex_
  RecordQueue inflight_;
  std::vector<void*> eventReturns_;  // see EventPool::ReturnBatch
  static constexpr size_t kReachLinear = 8;
  std::vector<std::pair<core::Semaphore*, uint64_t>> reach_;
  std::vector<std::pair<core::Semaphore*, uint32_t>> drops_;  // dropSemaphoreRefs
  size_t urgent_ = 0;            // records in inflight_ with Record::urgent
  bool contextCurrent_ = false;  // the device's context is current on this thread
  uint64_t pollNs_ = kPollMinNs;
  uint64_t lazyNs_ = kLazyLookMinNs;  // the next lazy park's length (parkLazily)
  uint64_t emptySince_ = 0;           // when it last found nothing in flight (0: not empty)
  // finish published a record with collectives (run); finish also runs on submitting threads
  // (retireOnSubmit), so atomic.
  std::atomic<bool> publishedCollectives_{false};
  uint64_t seenCompleteSeq_ = 0;  // Record::seq of the last one sleepOnOldest saw complete
};

}  // namespace
}  // namespace baton::stream
