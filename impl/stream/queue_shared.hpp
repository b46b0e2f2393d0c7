// What the threads working for a device's queues share. DeviceIssuer: the device's issuing thread
// as its queues see it (the queues registered with it, how they wake it). QueueShared: one queue's
// state that the submitting thread (StreamQueue::issue: post), the issuing thread (IssueThread,
// Issuer: peekIssue, popIssue, push), the queue's completion thread (Completion: the inbox) and the
// driver's callback thread (HostCalls::trampoline, below: handOff) share: the issue ring and its
// overflow, the records on their way to the completion thread, the suspended submission, the
// event stashes and the in-flight counts.
//
// Threads and locks: DeviceIssuer::mutex guards its queue list (queues register and unregister
// from StreamQueue's constructor and destructor, or the issuing thread itself); waking it (wake)
// costs one load unless it sleeps. QueueShared's fields are grouped by the thread that writes
// them, each group on cache lines of its own (see the fields). issueMutex: held by the issuing
// thread while it enqueues (continuation, deferred, outbox), taken by the completion thread to
// look at the stream or to fail everything; inboxMutex: the hand-over to the completion thread
// (inbox, passes, lost); overflowMutex: posts while the ring is full. The ring takes no lock.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "cpu.hpp"
#include "device_shared.hpp"
#include "host_calls.hpp"
#include "issue_ring.hpp"
#include "mutex.hpp"
#include "notifier.hpp"
#include "objects.hpp"
#include "parker.hpp"
#include "stream_counters.hpp"
#include "stream_timepoint.hpp"
#include "stream_tuning.hpp"

namespace baton::stream {
namespace {

// Set on this backend's own threads (issuing and completion threads): a full issue ring never
// blocks them (see QueueShared::post).
// Both in the initial-exec TLS model, as every thread-local of the submit path: each is read on
// every direct issue (StreamQueue::startDirect), where the default model's __tls_get_addr calls
// cost ~25 instructions apiece (callgrind, submit_micro on the fake driver).
thread_local bool tInternalThread __attribute__((tls_model("initial-exec"))) = false;
// Set while a driver host function runs a submission's host calls (HostCalls::trampoline): the
// driver forbids its own API there (CUDA documents that such a call may deadlock), so a submit made
// from a host call takes an event only if one is free, and otherwise leaves it to the issuing
// thread (published late).
thread_local bool tInsideHostFunction __attribute__((tls_model("initial-exec"))) = false;

// The kernel thread ids of the machinery's own threads that are running (stream::threadIds).
struct OwnThreads {
  std::mutex mutex;
  std::vector<int> tids;
  static OwnThreads& get() {
    static OwnThreads* own = new OwnThreads;  // never destroyed: threads may outlive statics
    return *own;
  }
};

// Marks the calling thread as one of the machinery's own (tInternalThread, OwnThreads) for the
// scope's life: the body of an issuing or a completion thread.
class InternalThreadScope {
 public:
  InternalThreadScope() : tid_(static_cast<int>(::syscall(SYS_gettid))) {
    tInternalThread = true;
    OwnThreads& own = OwnThreads::get();
    std::lock_guard<std::mutex> lock(own.mutex);
    own.tids.push_back(tid_);
  }
  ~InternalThreadScope() {
    OwnThreads& own = OwnThreads::get();
    std::lock_guard<std::mutex> lock(own.mutex);
    own.tids.erase(std::remove(own.tids.begin(), own.tids.end(), tid_), own.tids.end());
  }
  InternalThreadScope(const InternalThreadScope&) = delete;
  InternalThreadScope& operator=(const InternalThreadScope&) = delete;

 private:
  int tid_;
};

// The issuing thread of one device (IssueThread), shared by its queues. One thread issues for
// every queue of a device: the driver calls of a hand-off between two queues then run on one
// thread, as in a single-threaded raw CUDA loop. From two threads, one per stream, the same
// cross-stream event ping-pong cost 3.1-3.2 us per round trip on the H100 against 1.2-1.35 us
// from one thread (the driver's own state moves between cores).
struct DeviceIssuer {
  // Wakes the thread when it sleeps. The load first: the exchange (a locked instruction) only
  // when it is idle; it stores `idle` before it looks for work, so a load that misses that store
  // comes before the look, which then finds the work.
  void wake() {
    if (idle.load(std::memory_order_seq_cst) && idle.exchange(false, std::memory_order_seq_cst))
      parker.unpark();
  }

  // Registers or unregisters a queue: the thread picks the change up by `version`.
  void add(std::shared_ptr<QueueShared> q) {
    std::lock_guard<core::Mutex> lock(mutex);
    queues.push_back(std::move(q));
    version.fetch_add(1, std::memory_order_acq_rel);
  }
  void remove(const QueueShared* q) {
    std::lock_guard<core::Mutex> lock(mutex);
    queues.erase(
        std::remove_if(queues.begin(), queues.end(),
                       [&](const std::shared_ptr<QueueShared>& x) { return x.get() == q; }),
        queues.end());
    version.fetch_add(1, std::memory_order_acq_rel);
  }

  core::Parker parker;
  std::atomic<bool> idle{false};
  std::atomic<bool> stop{false};  // the device is going: exit once no queue is registered
  core::Mutex mutex;
  std::vector<std::shared_ptr<QueueShared>> queues;  // registered queues (mutex)
  std::atomic<uint64_t> version{0};                  // raised when `queues` changes
  std::thread::id threadId;                          // set before any queue exists
  // Whether the device's context is current on the issuing thread (that thread only): it makes
  // it current when it starts and keeps it so, rather than switching per submission. False
  // after a failed attempt or a native callback that changed it (Issuer::useContext).
  bool contextCurrent = false;
};

struct QueueShared : std::enable_shared_from_this<QueueShared> {
  QueueShared(std::shared_ptr<DeviceShared> d, core::Device* cd, uint32_t i, std::string l)
      : device(std::move(d)),
        coreDevice(cd),
        driver(device->driver),
        index(i),
        label(std::move(l)) {}
  ~QueueShared() {
    ContextScope scope(driver, device->config.context, ContextScope::kRelease,
                       "destroying a queue's stream and events");
    device->pool.giveBack(eventStash);
    device->pool.giveBack(publishStash);
    if (sleepEvent) (void)driver.eventDestroy(sleepEvent);
    if (stream) (void)driver.streamDestroy(stream);
  }

  // Hands a record to the completion thread; issueMutex held.
  void push(Record&& record) {
    record.seq = ++pushed;
    if (record.timepoint) newestEvent = record.timepoint->event();
    opsIssued += record.ops;
    if (directIssuing) {
      // On a submitting thread (StreamQueue::finishDirect): handed over at once, behind what the
      // issuing thread left in the outbox. (Batched as the issuing thread's records are, with the
      // completion thread taking the outbox under a tried issueMutex, the try_lock of the next
      // direct issue failed while it did, and most submissions went to the issuing thread:
      // BATON_STREAM_DIRECT_BATCH, an experiment since removed.)
      flushOutbox();
      handOver(std::move(record));
      return;
    }
    if (outbox.empty()) {
      outboxSince.store(core::nowNs(), std::memory_order_relaxed);
      outboxFilled.store(true, std::memory_order_relaxed);
    }
    outbox.push_back(std::move(record));
    // The next record goes here: lines the completion thread wrote last (the outbox's storage
    // was its inbox before a swap, see flushOutbox).
    if (outbox.size() < outbox.capacity()) {
      const char* next = reinterpret_cast<const char*>(outbox.data() + outbox.size());
      for (size_t line = 0; line < sizeof(Record); line += 64) core::prefetchForWrite(next + line);
    }
    // Handed over in batches: one lock and one wake check per batch. A batch waits at most
    // kOutboxBatch issues or kOutboxMaxAgeNs (IssueThread::serve); urgent records go at once.
    if (record.urgent || outbox.size() >= kOutboxBatch) flushOutbox(record.urgent);
  }

  // Hands the records of `outbox` to the completion thread; issueMutex held. `urgent`: one of
  // them is (Record::urgent).
  void flushOutbox(bool urgent = false) {
    if (outbox.empty()) return;
    const size_t n = outbox.size();
    // Counted before the hand-off: once handed over they may finish and be counted finished, and
    // a thread that saw them complete (waitIdle) must see them pushed too (stats()).
    Counters::add(kRecordsPushed, n);
    size_t waiting;
    {
      std::lock_guard<core::Mutex> lock(inboxMutex);
      if (inbox.empty()) {
        inbox.swap(outbox);
      } else {
        for (Record& r : outbox) inbox.push_back(std::move(r));
        outbox.clear();
      }
      waiting = inbox.size();
      inboxRecords.store(static_cast<uint32_t>(waiting), std::memory_order_relaxed);
      inboxPending.store(true, std::memory_order_seq_cst);
    }
    outboxFilled.store(false, std::memory_order_relaxed);
    wakeCompletion(urgent, waiting);
  }

  // One record straight to the completion thread (direct issue); issueMutex held.
  void handOver(Record&& record) {
    const bool urgent = record.urgent;
    Counters::add(kRecordsPushed, 1);  // before the hand-off, as in flushOutbox
    size_t waiting;
    {
      std::lock_guard<core::Mutex> lock(inboxMutex);
      inbox.push_back(std::move(record));
      waiting = inbox.size();
      inboxRecords.store(static_cast<uint32_t>(waiting), std::memory_order_relaxed);
      inboxPending.store(true, std::memory_order_seq_cst);
    }
    wakeCompletion(urgent, waiting);
  }

  // Wakes the completion thread when it sleeps with nothing in flight, or when it parked
  // lazily (Waker) and an urgent record or kLookRecords records wait in the inbox (`waiting`),
  // or a host waiter or held submission needs completions (they may wait for these records):
  // otherwise it finds them at its next look, and a submission costs no wake-up (a syscall).
  // A seq_cst load first: the exchange (a locked instruction) only when it parked. The thread
  // stores the flag before it looks at inboxPending (seq_cst, stored above before this load), so
  // a load that misses that store comes before that look, which then sees the records.
  void wakeCompletion(bool urgent, size_t waiting) {
    Waker& w = *waker;
    if (w.idle.load(std::memory_order_seq_cst)) {
      if (w.idle.exchange(false, std::memory_order_seq_cst)) w.parker.unpark();
      return;
    }
    if ((urgent || waiting >= kLookRecords || w.needed()) &&
        w.lazy.load(std::memory_order_seq_cst) && w.lazy.exchange(false, std::memory_order_seq_cst))
      w.parker.unpark();
  }

  // Takes a free event from `stash` (refilled from the device's pool a batch at a time), or
  // creates one.
  Status takeEvent(std::vector<void*>& stash, void** event) {
    if (stash.empty()) device->pool.takeFree(stash, kEventStash);
    if (stash.empty()) {  // none free: creates one, in the device's context (any thread may ask)
      if (tInsideHostFunction) [[unlikely]]
        return Status(Result::NotReady, "no free event, and a host function may not create one");
      ContextScope scope(driver, device->config.context);
      BATON_TRY(scope.status());
      return device->pool.acquire(event);
    }
    *event = stash.back();
    stash.pop_back();
    Counters::add(kEventsTaken, 1);
    return Status();
  }

  // A semaphore with external counterparts forwards reached values to them: reach them promptly,
  // unless the GPU signals every counterpart itself.
  bool promptReach(const core::Submission::Signal& s) const {
    return s.semaphore->hasExternals() && s.semaphore->forwardedFromHost(coreDevice->handle);
  }

  // A released submission's signals will not be published (it failed): gives up what its
  // release planned, the timepoint published then and its count in hostPublished. Once per
  // submission.
  void dropRelease(Ref<StreamTimepoint>& published, bool hostPublish, const Status& why) {
    abandon(published, why);
    if (hostPublish) hostPublished.fetch_sub(1, std::memory_order_seq_cst);
  }

  // Hands a released submission to the issuing thread; the core queue's lock is held. A user
  // thread that finds the ring full waits for room (the driver would throttle it the same way
  // on a full stream); baton's own threads never wait there, because the issuing thread may be
  // throttled by the driver until the GPU needs their publications: they queue behind the ring.
  void post(Issue&& e) {
    if (!overflowing.load(std::memory_order_acquire)) {
      bool pushed = ring.tryPush(e);
      while (!pushed && !tInternalThread) {
        producerWaiting.store(true, std::memory_order_seq_cst);
        pushed = ring.tryPush(e);
        if (pushed) break;
        wakeIssuer();
        // Bounded: a wake-up lost to the flag's reset costs a millisecond, not a hang.
        producerParker.park(Deadline::after(1'000'000));
        pushed = ring.tryPush(e);
      }
      if (pushed) {
        if (producerWaiting.load(std::memory_order_relaxed))
          producerWaiting.store(false, std::memory_order_relaxed);
        wakeIssuer();
        return;
      }
    }
    {
      std::lock_guard<core::Mutex> lock(overflowMutex);
      overflow.push_back(std::move(e));
      overflowing.store(true, std::memory_order_seq_cst);
    }
    wakeIssuer();
  }

  // Issuing thread: the next released submission, left in place (null when none). What was
  // taken from behind the ring comes first: the ring was empty when it was taken, and what
  // the ring received since is newer.
  Issue* peekIssue() {
    if (!behind.empty()) return &behind.front();
    if (Issue* e = ring.front()) return e;
    if (overflowing.load(std::memory_order_acquire)) {
      // The ring is empty and nothing enters it while `overflowing` is set.
      std::lock_guard<core::Mutex> lock(overflowMutex);
      behind.swap(overflow);
      overflowing.store(false, std::memory_order_release);
    }
    return behind.empty() ? nullptr : &behind.front();
  }
  // Issuing thread, issueMutex held: removes what peekIssue returned.
  void popIssue(Issue* out) {
    // The only writer: a plain increment, published for StreamQueue::startDirect.
    taken.store(taken.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    if (!behind.empty()) {
      *out = std::move(behind.front());
      behind.pop_front();
      return;
    }
    ring.tryPop(out);
    if (producerWaiting.load(std::memory_order_seq_cst) &&
        producerWaiting.exchange(false, std::memory_order_seq_cst))
      producerParker.unpark();
  }

  void wakeIssuer() { issuer->wake(); }

  // Whether anything waits for the issuing thread (besides deferred submissions).
  bool issueWork() const {
    return !ring.empty() || overflowing.load(std::memory_order_seq_cst) || !behind.empty() ||
           resumePending.load(std::memory_order_seq_cst);
  }

  // Driver operations enqueued on the stream and not yet seen complete (an over-estimate: the
  // completion thread sees completions late). The issuing thread stops issuing for a queue
  // with kMaxOpsInFlight of them, so that a full stream never blocks it in the driver, which
  // would stop the device's other queues too.
  bool overOpsLimit() {
    // The completion thread's count is read only when the last reading says the limit is near:
    // its cache line moves with every batch that thread finishes.
    if (opsIssued - opsDoneSeen < kMaxOpsInFlight) return false;
    opsDoneSeen = opsDone.load(std::memory_order_seq_cst);
    if (opsIssued - opsDoneSeen < kMaxOpsInFlight) return false;
    throttled.store(true, std::memory_order_seq_cst);
    // Ordered against the completion thread's update of opsDone and its look at `throttled`.
    opsDoneSeen = opsDone.load(std::memory_order_seq_cst);
    if (opsIssued - opsDoneSeen < kMaxOpsInFlight) {
      throttled.store(false, std::memory_order_relaxed);
      return false;
    }
    // The completion thread watches the stream while this thread waits (Waker).
    waker->parker.unpark();
    return true;
  }

  // A sticky error seen while issuing: the completion thread calls Device::markLost, because the
  // issuing thread holds the core queue's lock and markLost takes every queue's lock.
  void deferLost(const std::string& reason) {
    {
      std::lock_guard<core::Mutex> lock(inboxMutex);
      if (!lostPending) lostReason = reason;
      lostPending = true;
      inboxPending.store(true, std::memory_order_release);
    }
    waker->parker.unpark();
  }

  // Scheduler passes that a host function's callback caused (it signalled a semaphore): the
  // completion thread runs them, since issuing inside the host function would call the driver.
  void handOff(std::vector<Ref<core::Queue>>&& queues) {
    {
      std::lock_guard<core::Mutex> lock(inboxMutex);
      for (Ref<core::Queue>& q : queues) passes.push_back(std::move(q));
      inboxPending.store(true, std::memory_order_release);
    }
    waker->parker.unpark();
  }

  // `n` submissions given to issue() are finished (completed or failed): waitIdle counts them.
  // Waiters are woken only once the count reaches the lowest target one of them sleeps for
  // (idleWakeAt): woken at every batch, a waitIdle between batches of 64 submissions (the
  // submit_micro loop) made pthread_cond_broadcast ~16% of the busier completion thread's
  // samples in the fake-driver ping-pong, and its waiter woke only to sleep again.
  void submissionsDone(uint64_t n) {
    if (n == 0) return;
    const uint64_t done = completed.fetch_add(n, std::memory_order_seq_cst) + n;
    // seq_cst with the waiter's store of idleWakeAt and its load of `completed` (waitIdle):
    // either it sees this count, or this load sees its target.
    if (idleWaiters.load(std::memory_order_seq_cst) != 0 &&
        done >= idleWakeAt.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(idleMutex);
      // The woken waiters register again (under this lock) if they still wait.
      idleWakeAt.store(UINT64_MAX, std::memory_order_seq_cst);
      idleCv.notify_all();
    }
  }

  std::shared_ptr<DeviceShared> device;
  // Valid while the completion thread has records: each holds a timepoint, which holds the
  // core Device.
  core::Device* coreDevice;
  const DriverTable& driver;
  const uint32_t index;
  const std::string label;
  void* stream = nullptr;
  void* sleepEvent = nullptr;  // blocking-sync: what the completion thread sleeps on

  // Released submissions, from StreamQueue::issue to the issuing thread (post, peekIssue). The
  // fields below are grouped by the thread that writes them, each group on cache lines of its
  // own, so that a submission moves no line between threads beyond the ring slot and the flags
  // that say who sleeps.
  IssueRing ring;
  // Written by the submitting side (under the core queue's lock), on every submission. Free
  // events for timepoints made at release; see eventStash.
  alignas(64) std::vector<void*> publishStash;
  uint64_t posted = 0;  // submissions posted to the issuing thread (StreamQueue::issue)
  // Written when one side sleeps or wakes, read by the other side.
  alignas(64) std::atomic<bool> producerWaiting{false};
  std::atomic<bool> overflowing{false};  // overflow has entries: posts go there, in order
  // The completion thread saw a suspension record complete: the issuing thread resumes.
  std::atomic<bool> resumePending{false};
  core::Parker producerParker;  // a user thread waiting for room in the ring
  std::shared_ptr<DeviceIssuer> issuer;
  // The queue is going: the issuing thread drains it, unregisters it and sets `drained`.
  std::atomic<bool> drained{false};
  core::Parker drainedParker;
  core::Mutex overflowMutex;
  std::deque<Issue> overflow;  // posted by baton's threads while the ring was full

  // Written by the issuing thread.
  alignas(64) std::deque<Issue> behind;  // taken from overflow
  std::atomic<uint64_t> taken{0};        // posted submissions it took (popIssue)
  // Whether the outbox holds records: what the issuing thread looks at without issueMutex
  // (a submitting thread may flush the outbox meanwhile, under it).
  std::atomic<bool> outboxFilled{false};
  // Whether continuation or deferred holds something: the issuing thread looks at them only
  // then. Read and written by that thread only (failAll leaves it set: a harmless extra look).
  bool suspended = false;
  uint64_t opsIssued = 0;    // driver operations enqueued (see overOpsLimit)
  uint64_t opsDoneSeen = 0;  // the last reading of opsDone
  // Held by the issuing thread while it enqueues; orders that with the completion thread's
  // look at the stream (sleepOnOldest) and its failAll.
  core::Mutex issueMutex;
  uint64_t pushed = 0;  // records pushed so far (issueMutex)
  // The event of the newest record pushed (issueMutex), for a submitting thread's check that the
  // queue ran dry (StreamQueue::startDirect). Pool events are destroyed only with the device,
  // so a query of it is always defined: complete means that record completed (its event went
  // back to the pool only after that, and whatever recorded it since completed too).
  void* newestEvent = nullptr;
  // When a submitting thread last found the issuing thread asleep while the queue was not known
  // idle (StreamQueue::startDirect: a burst detector). Under the core queue's lock.
  uint64_t askedStreamNs = 0;
  std::vector<Record> outbox;  // pushed, not yet handed to the completion thread (issueMutex)
  std::atomic<uint64_t> outboxSince{0};  // when its oldest record was pushed
  uint64_t issuedPasses = 0;  // passes of the issuing thread that issued for the queue (serve)
  // Free events taken from the device's pool a batch at a time, so that a submission does not
  // take the pool's lock; at most kEventStash, returned when the queue dies.
  std::vector<void*> eventStash;
  std::optional<Record> continuation;  // a suspended submission
  bool directIssuing = false;          // a submitting thread issues (issueMutex; see push)
  std::deque<Issue> deferred;          // issued behind it
  // Submissions whose signals the completion thread publishes (host calls, and what was
  // released behind them), from release until published or failed. While there are any, later
  // submissions are published the same way: a queue's signals become visible in submission
  // order (Vulkan's signal operation order), and a later signal published as a timepoint would
  // be seen first.
  std::atomic<uint32_t> hostPublished{0};

  alignas(64) core::Mutex inboxMutex;
  std::atomic<bool> inboxPending{false};  // inbox, passes or lostPending has something
  std::vector<Record> inbox;
  // The inbox's size, and the size at which a submitting thread next looks for completed
  // records in it (Completion::retireOnSubmit): read without the lock.
  std::atomic<uint32_t> inboxRecords{0};
  std::atomic<uint32_t> retireAt{kRetireBatch};
  std::vector<Ref<core::Queue>> passes;  // see handOff
  bool lostPending = false;
  std::string lostReason;
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();
  std::atomic<bool> stop{false};

  // Submissions given to issue(), and finished: written by the issuing and the completion thread
  // respectively, so on cache lines of their own.
  alignas(64) std::atomic<uint64_t> issued{0};
  alignas(64) std::atomic<uint64_t> completed{0};
  // Driver operations of finished records (see overOpsLimit); `throttled`: the issuing thread
  // waits for it to grow. Written by the completion thread, like `completed`.
  std::atomic<uint64_t> opsDone{0};
  std::atomic<bool> throttled{false};
  std::atomic<uint32_t> idleWaiters{0};
  // The lowest `completed` a waitIdle caller sleeps for (UINT64_MAX: none); written under
  // idleMutex only (StreamQueue::waitIdle, submissionsDone).
  std::atomic<uint64_t> idleWakeAt{UINT64_MAX};
  std::mutex idleMutex;
  std::condition_variable idleCv;
};

void HostCalls::trampoline(void* data) {
  auto* call = static_cast<Call*>(data);
  HostCalls& owner = *call->owner;
  // Commands after a failed host call do not run: later host calls of the submission skip.
  if (owner.firstError.load(std::memory_order_acquire) != 0) {
    owner.ranOne();
    return;
  }
  Result r;
  std::vector<Ref<core::Queue>> passes;
  {
    // A callback may signal baton semaphores; what that releases must not be issued here.
    core::Notifier::Scope scope;
    core::CallbackScope running(owner.device, owner.queueIndex, core::CallbackScope::kHostCall,
                                owner.traceId);
    tInsideHostFunction = true;
    r = call->callback(call->userData);
    tInsideHostFunction = false;
    passes = core::Notifier::takeScheduled();
  }
  if (isError(r)) {
    if (!call->infallible)
      owner.firstError.store(static_cast<int32_t>(r), std::memory_order_release);
    else
      core::message(owner.device->instance(), MessageSeverity::Warning,
                    core::format("an infallible hostCall on queue %u of %s returned %s; the "
                                 "submission goes on (kHostCallInfallible)",
                                 owner.queueIndex, owner.device->label().c_str(), resultName(r)));
  }
  if (!passes.empty())
    if (std::shared_ptr<QueueShared> q = owner.queue.lock()) q->handOff(std::move(passes));
  owner.ranOne();
}

void HostCalls::ranOne() {
  // seq_cst with Completion::awaitHostCalls: it sets awaitingHostCalls, then reads `ran`; either
  // it sees this count or this load sees its flag. An unpark it does not need (a call that is not
  // the last) only makes it look again.
  ran.fetch_add(1, std::memory_order_seq_cst);
  if (waker && waker->awaitingHostCalls.load(std::memory_order_seq_cst)) waker->parker.unpark();
}

}  // namespace
}  // namespace baton::stream
