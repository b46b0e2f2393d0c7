// The stream/event machinery shared by the CUDA and HIP backends; see stream_backend.hpp for the
// overview. Figures quoted below are from DESIGN §6 (H100, driver 580, CUDA 13).
#include "stream_backend.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <typeinfo>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "cpu.hpp"
#include "mutex.hpp"
#include "notifier.hpp"
#include "objects.hpp"
#include "parker.hpp"

namespace baton::stream {
namespace {

using core::Deadline;
using core::Ref;

// What stats() reports. Events in use, timepoints and records in flight are each counted as two
// sums that only grow (what was taken or made, what was returned or finished), and every thread
// counts in a block of its own: a plain load and store of its own cache line, where shared
// counters moved their cache line between the submitting, issuing and completion threads on
// every submission (issue 3, item 9). stats() sums the blocks of live threads and what exited
// threads left.
enum Counter : size_t {
  kEventsTaken,     // from a pool
  kEventsReturned,  // to a pool
  kTimepointsMade,
  kTimepointsGone,
  kRecordsPushed,  // to a completion thread
  kRecordsFinished,
  kPublishedLate,  // see Stats::timepointsPublishedLate
  kCounterCount
};

class Counters {
 public:
  static void add(Counter c, uint64_t n) noexcept {
    Block* b = tBlock_;
    if (!b) [[unlikely]]
      b = attach();
    if (!b) {  // the thread's block is gone (thread exit): count in the shared sums
      registry().exited[c].fetch_add(n, std::memory_order_relaxed);
      return;
    }
    b->v[c].store(b->v[c].load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  // Every counter, returned ones read before taken ones (under one lock, so no block is folded
  // meanwhile): a retirement counted here had its issue counted before it.
  static void sum(uint64_t out[kCounterCount]) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (size_t pass = 0; pass < 2; ++pass) {
      for (size_t c = 0; c < kCounterCount; ++c) {
        const bool retired = c == kEventsReturned || c == kTimepointsGone || c == kRecordsFinished;
        if (retired != (pass == 0)) continue;
        uint64_t total = r.exited[c].load(std::memory_order_seq_cst);
        for (Block* b : r.live) total += b->v[c].load(std::memory_order_seq_cst);
        out[c] = total;
      }
    }
  }

 private:
  struct Block {
    std::atomic<uint64_t> v[kCounterCount] = {};
  };
  struct Registry {
    std::mutex mutex;
    std::vector<Block*> live;
    std::atomic<uint64_t> exited[kCounterCount] = {};
  };
  // Never destroyed: threads may count after static destructors ran.
  static Registry& registry() {
    static Registry* r = new Registry;
    return *r;
  }
  struct Owner {
    alignas(64) Block block;
    Owner() {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      r.live.push_back(&block);
    }
    ~Owner() {
      tBlock_ = nullptr;
      tGone_ = true;
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      for (size_t c = 0; c < kCounterCount; ++c)
        r.exited[c].fetch_add(block.v[c].load(std::memory_order_relaxed),
                              std::memory_order_relaxed);
      r.live.erase(std::find(r.live.begin(), r.live.end(), &block));
    }
  };
  [[gnu::noinline]] static Block* attach() noexcept {
    if (tGone_) return nullptr;
    thread_local Owner owner;
    tBlock_ = &owner.block;
    return tBlock_;
  }
  // Through a trivial pointer in the initial-exec TLS model, as core::Recycled does.
  static inline thread_local Block* tBlock_ __attribute__((tls_model("initial-exec"))) = nullptr;
  static inline thread_local bool tGone_ __attribute__((tls_model("initial-exec"))) = false;
};

std::atomic<uint64_t> gEventsCreated{0};

// A host wait spins on the event this long before it sleeps. An event query sees a completed
// record ~0.35 µs after the GPU passes it, while a sleeping waiter needs a wake-up by the
// completion thread, which itself sleeps in the driver (interrupt-driven) or polls at most
// kUrgentPollMaxNs apart (see sleepOnOldest). 50 µs covers short
// GPU work at full speed and costs a waiter of a long frame (ms) almost nothing.
constexpr uint64_t kHostWaitSpinNs = 50'000;
// The completion thread spins this long on the oldest event before it sleeps: a short spin
// catches back-to-back small submissions without a sleep/wake per record, and bounds what a
// queue that is always busy with long work burns.
constexpr uint64_t kCompletionSpinNs = 10'000;
// Its queries during that spin are this far apart: the driver serialises a query of an event
// with other threads' calls that use the same event, and the event a completion thread watches
// is what other queues' issuing threads wait for. On the H100, a second thread querying the
// waited event back to back made each cuStreamWaitEvent + cuEventRecord pair 2.3x slower
// (0.61 -> 1.41 us), with 16 pauses between queries 1.6x, every 20 us not measurably.
constexpr uint64_t kCompletionQueryGapNs = 2'000;
// When nothing waits for it on the host, the completion thread sleeps by polling, with a
// backoff from 20 µs to 200 µs (at most 5000 polls of two event queries per second and busy
// queue). Sleeping in the driver instead needs a blocking-sync event behind the oldest record
// (blocking-sync pool events cost 17.4 µs per record on the H100, plain ones 0.57 µs), so it
// is done only while a host thread waits or a record needs prompt publication, and only when
// the oldest record is the last work on the stream (see sleepOnOldest); with later work queued
// behind it, the poll's backoff stops at kUrgentPollMaxNs instead.
constexpr uint64_t kPollMinNs = 20'000;
constexpr uint64_t kPollMaxNs = 200'000;
constexpr uint64_t kUrgentPollMaxNs = 50'000;
// With nothing in flight, the completion thread keeps polling this long before it sleeps until
// the next submission wakes it.
constexpr uint64_t kLingerNs = 2'000'000;
// Free events a queue takes from its device's pool at once (QueueShared::eventStash).
constexpr size_t kEventStash = 16;
// Records an issuing thread hands to its completion thread at once while it has more to issue
// (QueueShared::push), and the longest it keeps fewer (IssueThread::serve); it hands over what
// it has whenever it runs out of work. A hand-off takes the completion thread's inbox lock and
// that thread then takes the records: handed over per submission, the inbox's cache lines
// moved between the two threads at every submission.
constexpr size_t kOutboxBatch = 32;
constexpr uint64_t kOutboxMaxAgeNs = 100'000;
// Of the issuing thread's passes that issue for a queue, every kAgeCheckPasses-th looks at the
// age of its outbox (the others hand it over by size); passes that issue nothing always look.
constexpr uint64_t kAgeCheckPasses = 8;
// Driver operations (waits, commands, records) a queue may have on its stream before its
// issuing thread stops issuing for it until some complete (QueueShared::overOpsLimit). The
// driver blocks the enqueuing thread when a stream holds some thousands (DESIGN §4); below that,
// the device's other queues keep being issued while one waits.
constexpr uint64_t kMaxOpsInFlight = 1024;
// Submissions the issuing thread takes from one queue before it looks at the next.
constexpr size_t kIssueBurst = 32;
// Released submissions a queue's issue ring holds (IssueRing). A user thread that finds it full
// waits for the issuing thread, as it would wait in the driver for a full stream; baton's own
// threads never wait: they queue behind the ring instead.
constexpr uint64_t kIssueRingCapacity = 1024;
// The issuing thread polls its ring this long after its last work before it sleeps until a
// submission wakes it: bursts of submissions then cost their submitter no wake-up (a futex
// syscall) and wait for no thread to be scheduled.
constexpr uint64_t kIssueSpinNs = 50'000;
// A waiter for a signal that is published but not yet recorded (StreamTimepoint::waitRecorded)
// spins this long before it sleeps: recording is a driver call already under way on another
// thread, well under a microsecond unless the driver throttles it.
constexpr uint64_t kRecordSpinNs = 20'000;
// Spins poll with a pause instruction this long, then yield the core between polls: on a machine
// with fewer free cores than busy threads, the thread being waited for may need it.
constexpr uint64_t kSpinBeforeYieldNs = 5'000;

// Set on this backend's own threads (issuing and completion threads): a full issue ring never
// blocks them (see QueueShared::post).
thread_local bool tInternalThread = false;

// Sleeping host waiters use the core's futex helpers (parker.hpp).
using core::futexWait;
using core::futexWakeAll;

// What Allocation::native says about where memory came from, so that free() and dealloca pick
// the matching release.
enum class MemoryTag : uintptr_t { Device = 1, HostPinned = 2, StreamOrdered = 3 };

void* tagOf(MemoryTag tag) { return reinterpret_cast<void*>(static_cast<uintptr_t>(tag)); }
MemoryTag tagOf(const core::Allocation& a) {
  return static_cast<MemoryTag>(reinterpret_cast<uintptr_t>(a.native));
}

// Events are recycled rather than created per submission: creation is a driver allocation, and
// in steady state the number of events alive equals the number of recorded signals that someone
// can still wait for (a timepoint owns its event until it dies).
class EventPool {
 public:
  EventPool(const DriverTable& driver, bool blockingSync)
      : driver_(driver), blockingSync_(blockingSync) {}

  Status acquire(void** event) {
    {
      std::lock_guard<core::Mutex> lock(mutex_);
      if (!free_.empty()) {
        *event = free_.back();
        free_.pop_back();
        Counters::add(kEventsTaken, 1);
        return Status();
      }
    }
    Status s = driver_.eventCreate(event, blockingSync_);
    if (!s.ok()) return s;
    gEventsCreated.fetch_add(1, std::memory_order_relaxed);
    Counters::add(kEventsTaken, 1);
    return Status();
  }

  void release(void* event) {
    Counters::add(kEventsReturned, 1);
    std::lock_guard<core::Mutex> lock(mutex_);
    free_.push_back(event);
  }

  // Moves up to `max` free events to `out` under one lock (a queue's stash, below); they count
  // as in use once taken from the stash.
  void takeFree(std::vector<void*>& out, size_t max) {
    std::lock_guard<core::Mutex> lock(mutex_);
    size_t n = std::min(max, free_.size());
    out.insert(out.end(), free_.end() - static_cast<ptrdiff_t>(n), free_.end());
    free_.resize(free_.size() - n);
  }
  // Returns events of a stash that were never used.
  void giveBack(std::vector<void*>& events) {
    std::lock_guard<core::Mutex> lock(mutex_);
    free_.insert(free_.end(), events.begin(), events.end());
    events.clear();
  }

  // Destroys the pooled events; every event is back in the pool by then (timepoints keep the
  // device's shared state, and with it the pool, alive).
  void destroyAll() {
    std::lock_guard<core::Mutex> lock(mutex_);
    for (void* e : free_) (void)driver_.eventDestroy(e);
    gEventsCreated.fetch_sub(free_.size(), std::memory_order_relaxed);
    free_.clear();
  }

 private:
  const DriverTable& driver_;
  const bool blockingSync_;
  core::Mutex mutex_;
  std::vector<void*> free_;
};

// State of one device that outlives the core objects as long as anything uses it: timepoints
// (held by semaphores and host waiters) need the event pool and the context after the device's
// handle, or even the core Device, is gone.
struct DeviceShared {
  explicit DeviceShared(DeviceConfig c)
      : config(std::move(c)), driver(*config.driver), pool(driver, config.blockingSyncEvents) {}
  ~DeviceShared() {
    {
      ContextScope scope(driver, config.context);
      pool.destroyAll();
    }
    if (config.release) config.release();
  }

  // Releases memory that no pending work uses any more.
  void freeAllocation(const core::Allocation& a) {
    ContextScope scope(driver, config.context);
    switch (tagOf(a)) {
      case MemoryTag::Device:
      case MemoryTag::StreamOrdered:
        // cuMemFree accepts pool memory too; its users are done (the caller guarantees it).
        (void)driver.memFree(a.deviceAddress);
        break;
      case MemoryTag::HostPinned: (void)driver.hostFree(a.host); break;
    }
  }

  DeviceConfig config;
  const DriverTable& driver;
  EventPool pool;
};

// How host threads reach a queue's completion thread. Shared with the queue's timepoints, which
// outlive the queue when semaphores hold them.
struct Waker {
  core::Parker parker;                // the completion thread parks on it
  std::atomic<uint32_t> sleepers{0};  // host threads asleep until it observes completions
  std::atomic<bool> idle{false};      // it parked with nothing in flight: a push must wake it

  // A host thread is about to sleep until the completion thread observes an event: it must
  // stop polling and sleep in the driver, which notices completion at interrupt latency.
  void addSleeper() {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    parker.unpark();
  }
  void removeSleeper() { sleepers.fetch_sub(1, std::memory_order_seq_cst); }
};

// A recorded device signal: one recording of a pooled event on a queue's stream.
//
// Lifetime: the base class's reference to the core Device keeps the device, its queues (a Device
// destroys them only in its destructor), their QueueShared and Waker, and the DeviceShared alive
// until this destructor's body has run, so plain pointers to them suffice. Shared pointers cost
// two more reference counts per submission, raised on the submitting thread and dropped on a
// completion thread (issue 3, item 9).
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
                  void* stream, bool gated, bool recorded)
      : Timepoint(device, shared->driver.kind),
        shared_(shared),
        waker_(waker),
        event_(event),
        stream_(stream),
        gated_(gated),
        recorded_(recorded ? kRecorded : kUnrecorded) {
    Counters::add(kTimepointsMade, 1);
  }
  ~StreamTimepoint() override {
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
    if (gated_ || !recorded()) return Status(Result::NotReady);
    ContextScope scope(shared_->driver, shared_->config.context);
    return shared_->driver.eventQuery(event_);
  }

  Status wait(Deadline deadline) override {
    Status outcome;
    if (done(&outcome)) return outcome;
    BATON_TRY(waitRecorded(deadline));
    if (done(&outcome)) return outcome;  // abandoned
    if (!gated_) {
      ContextScope scope(shared_->driver, shared_->config.context);
      const uint64_t spinEnd = core::nowNs() + kHostWaitSpinNs;
      for (;;) {
        Status s = shared_->driver.eventQuery(event_);
        if (s.code() != Result::NotReady) return s;  // completed, or an error (device lost)
        uint64_t now = core::nowNs();
        if (!deadline.isNever() && now >= deadline.ns) return Status(Result::Timeout);
        if (now >= spinEnd) break;
        core::cpuRelax();
      }
    }
    // Sleep until the queue's completion thread observes the event (it sleeps in the driver
    // itself while someone waits, so nobody burns a core while the GPU works).
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

  // Once, by the completion thread (or by the issuing thread for a timepoint it abandons):
  // publishes the outcome and wakes sleeping waiters.
  void complete(const Status& outcome) {
    outcome_ = outcome;
    if (state_.exchange(kDone, std::memory_order_acq_rel) == kPendingWaiters) futexWakeAll(&state_);
  }

 private:
  static constexpr uint32_t kPending = 0, kPendingWaiters = 1, kDone = 2;
  static constexpr uint32_t kUnrecorded = 0, kUnrecordedWaiters = 1, kRecorded = 2;
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

// A timeline semaphore imported from another API (Vulkan) into one device (native interop). Its
// last reference goes with the baton semaphore's mirror or with the last submission that waits
// for or signals it, whichever is later: the driver requires outstanding waits and signals to
// be done before the object is destroyed.
class StreamExternalSemaphore final : public core::ExternalSemaphore {
 public:
  StreamExternalSemaphore(std::shared_ptr<DeviceShared> shared, uint64_t deviceHandle, void* handle)
      : ExternalSemaphore(deviceHandle), shared_(std::move(shared)), handle_(handle) {}
  ~StreamExternalSemaphore() override {
    ContextScope scope(shared_->driver, shared_->config.context);
    (void)shared_->driver.destroyExternalSemaphore(handle_);
  }
  void* handle() const noexcept { return handle_; }

 private:
  std::shared_ptr<DeviceShared> shared_;
  void* handle_;
};

// Memory imported from another API and mapped into the device: the mapping and the import are
// released with the last reference (the Buffer's, which submissions using it hold).
class StreamExternalMemory final : public core::Object {
 public:
  StreamExternalMemory(std::shared_ptr<DeviceShared> shared, void* memory)
      : shared_(std::move(shared)), memory_(memory) {}
  ~StreamExternalMemory() override {
    ContextScope scope(shared_->driver, shared_->config.context);
    if (address_) (void)shared_->driver.memFree(address_);
    (void)shared_->driver.destroyExternalMemory(memory_);
  }
  void setAddress(uint64_t address) noexcept { address_ = address; }

 private:
  std::shared_ptr<DeviceShared> shared_;
  void* memory_;
  uint64_t address_ = 0;
};

struct QueueShared;

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
  };
  static void trampoline(void* data);
  std::vector<Call> calls;  // reserved up front: the driver holds pointers into it
  std::atomic<int32_t> firstError{0};
  std::weak_ptr<QueueShared> queue;  // where scheduler passes the callback caused are handed
};

// A released submission on its way to the device's issuing thread (StreamQueue::issue decides
// how its signals are published; the issuing thread enqueues it).
struct Issue {
  std::unique_ptr<core::Submission> submission;
  // The timepoint of its signals, attached to the semaphores at release, before its event is
  // recorded; null when the completion thread publishes the signals (`hostPublish`), when it
  // signals nothing, or when no event could be had then (it is attached after recording).
  Ref<StreamTimepoint> timepoint;
  uint32_t hostCalls = 0;        // HostCall commands in it
  bool hostPublish = false;      // counted in QueueShared::hostPublished until published or failed
  bool urgent = false;           // see Record::urgent
  bool gated = false;            // it waits GPU-side for an imported semaphore
  bool externalSignals = false;  // it signals an imported semaphore of this device GPU-side
};

// The released submissions of one queue, in order: written under the core queue's lock (one
// producer at a time), read by the device's issuing thread. A bounded ring of slots, each on its
// own cache line with a sequence number that says whether it is filled: a push or a pop touches
// the slot handed over and nothing the other side writes (with a shared tail index, an issuing
// thread that kept up read the index's line from the submitting thread's core at every
// hand-off). Slot i is free for position p when its number is p, filled when it is p + 1.
class IssueRing {
 public:
  IssueRing() : slots_(new Slot[kIssueRingCapacity]) {
    for (uint64_t i = 0; i < kIssueRingCapacity; ++i)
      slots_[i].seq.store(i, std::memory_order_relaxed);
  }
  // Producer. seq_cst stores and loads: each pairs with the other side's look at who sleeps
  // (QueueShared::post and popIssue, DeviceIssuer::idle).
  bool tryPush(Issue& e) {
    Slot& slot = slots_[tail_ % kIssueRingCapacity];
    if (slot.seq.load(std::memory_order_seq_cst) != tail_) return false;  // full
    slot.e = std::move(e);
    slot.seq.store(tail_ + 1, std::memory_order_seq_cst);
    ++tail_;
    // The next push writes this slot, which the issuing thread wrote last (its pop).
    core::prefetchForWrite(&slots_[tail_ % kIssueRingCapacity]);
    return true;
  }
  // Consumer.
  bool tryPop(Issue* out) {
    Issue* e = front();
    if (!e) return false;
    *out = std::move(*e);
    slots_[head_ % kIssueRingCapacity].seq.store(head_ + kIssueRingCapacity,
                                                 std::memory_order_seq_cst);
    ++head_;
    return true;
  }
  // Consumer.
  bool empty() const {
    return slots_[head_ % kIssueRingCapacity].seq.load(std::memory_order_seq_cst) != head_ + 1;
  }
  // Consumer: the oldest entry, left in place; null when empty.
  Issue* front() {
    Slot& slot = slots_[head_ % kIssueRingCapacity];
    if (slot.seq.load(std::memory_order_acquire) != head_ + 1) return nullptr;
    return &slot.e;
  }
  // Consumer, after a pop: starts loading what the next submissions need into this core's cache
  // while the one popped is issued (they were written on the submitting thread's core): the
  // slot after the next one, and for the next one (its slot prefetched by the previous call)
  // its submission and the timepoint its issue writes. With the other changes of this kind
  // (issue 3, item 9), the issuing thread's own time per submission in the live ping-pong fell
  // from 0.65-0.7 to 0.4-0.5 us on the H100.
  void prefetchNext() const {
    core::prefetchForWrite(&slots_[(head_ + 1) % kIssueRingCapacity]);  // its pop writes it
    const Slot& slot = slots_[head_ % kIssueRingCapacity];
    if (slot.seq.load(std::memory_order_acquire) != head_ + 1) return;  // only what is there
    const char* sub = reinterpret_cast<const char*>(slot.e.submission.get());
    for (int line = 0; line < 4; ++line) __builtin_prefetch(sub + 64 * line);
    if (const StreamTimepoint* tp = slot.e.timepoint.get())
      core::prefetchForWrite(tp->issueLine());  // markRecorded writes it
  }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> seq;
    Issue e;
  };

  std::unique_ptr<Slot[]> slots_;
  alignas(64) uint64_t head_ = 0;  // consumer's next position
  alignas(64) uint64_t tail_ = 0;  // producer's next position (under the core queue's lock)
};

// One issued submission, owned by the queue's completion thread until its event completes: the
// submission keeps its command lists (buffers, update data) and semaphores alive that long.
// A suspension record (`resumes`) has no submission: its event follows host calls whose result
// decides whether the rest of the suspended submission (QueueShared::continuation) runs.
struct Record {
  Ref<StreamTimepoint> timepoint;
  std::unique_ptr<core::Submission> submission;
  std::unique_ptr<HostCalls> hostCalls;
  Ref<StreamTimepoint> published;           // Issue::timepoint, until recorded or abandoned
  uint32_t hostCallCount = 0;               // Issue::hostCalls
  bool hostPublish = false;                 // Issue::hostPublish
  bool signalsDone = false;                 // signals were failed at issue
  bool resumes = false;                     // suspension record
  bool hostPublished = false;               // signals reached by the completion thread only
  bool urgent = false;                      // someone needs its completion seen promptly
  bool externalWaits = false;               // it waited GPU-side for an imported semaphore
  bool externalSignals = false;             // Issue::externalSignals
  std::vector<core::Allocation> freeAfter;  // dealloca of memory without a stream-ordered free
  size_t nextList = 0, nextCommand = 0;     // where enqueueing continues after a suspension
  uint64_t seq = 0;                         // QueueShared::pushed when it was pushed
  uint32_t ops = 0;                         // driver operations it enqueued (overOpsLimit)
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
};

struct QueueShared : std::enable_shared_from_this<QueueShared> {
  QueueShared(std::shared_ptr<DeviceShared> d, core::Device* cd, uint32_t i, std::string l)
      : device(std::move(d)),
        coreDevice(cd),
        driver(device->driver),
        index(i),
        label(std::move(l)) {}
  ~QueueShared() {
    ContextScope scope(driver, device->config.context);
    device->pool.giveBack(eventStash);
    device->pool.giveBack(publishStash);
    if (sleepEvent) (void)driver.eventDestroy(sleepEvent);
    if (stream) (void)driver.streamDestroy(stream);
  }

  // Hands a record to the completion thread; issueMutex held.
  void push(Record&& record) {
    record.seq = ++pushed;
    opsIssued += record.ops;
    const bool now = record.urgent;
    if (outbox.empty()) outboxSince = core::nowNs();
    outbox.push_back(std::move(record));
    // The next record goes here: lines the completion thread wrote last (the outbox's storage
    // was its inbox before a swap, see flushOutbox).
    if (outbox.size() < outbox.capacity()) {
      const char* next = reinterpret_cast<const char*>(outbox.data() + outbox.size());
      for (size_t line = 0; line < sizeof(Record); line += 64) core::prefetchForWrite(next + line);
    }
    // Handed over in batches: one lock and one wake check per batch. A batch waits at most
    // kOutboxBatch issues or kOutboxMaxAgeNs (IssueThread::serve); urgent records go at once.
    if (now || outbox.size() >= kOutboxBatch) flushOutbox();
  }

  // Hands the records of `outbox` to the completion thread; issueMutex held.
  void flushOutbox() {
    if (outbox.empty()) return;
    const size_t n = outbox.size();
    {
      std::lock_guard<core::Mutex> lock(inboxMutex);
      if (inbox.empty()) {
        inbox.swap(outbox);
      } else {
        for (Record& r : outbox) inbox.push_back(std::move(r));
        outbox.clear();
      }
      inboxPending.store(true, std::memory_order_release);
    }
    Counters::add(kRecordsPushed, n);
    // Wake the completion thread only when it sleeps with nothing in flight: while it polls,
    // the next poll finds the record (a wake per submission would cost a syscall each).
    // A seq_cst load first: the exchange (a locked instruction) only when it is idle. The
    // completion thread stores idle = true before it checks the inbox under inboxMutex, so a
    // load that misses that store comes before it, and the check then sees this record.
    if (waker->idle.load(std::memory_order_seq_cst) &&
        waker->idle.exchange(false, std::memory_order_seq_cst))
      waker->parker.unpark();
  }

  // Takes a free event from `stash` (refilled from the device's pool a batch at a time), or
  // creates one.
  Status takeEvent(std::vector<void*>& stash, void** event) {
    if (stash.empty()) device->pool.takeFree(stash, kEventStash);
    if (stash.empty()) {  // none free: creates one, in the device's context (any thread may ask)
      ContextScope scope(driver, device->config.context);
      return device->pool.acquire(event);
    }
    *event = stash.back();
    stash.pop_back();
    Counters::add(kEventsTaken, 1);
    return Status();
  }

  // A mirrored semaphore forwards reached values to Vulkan: reach them promptly, unless the GPU
  // signals its external counterpart itself.
  bool promptReach(const core::Submission::Signal& s) const {
    core::SemaphoreMirror* m = s.semaphore->mirror();
    return m && !m->external(coreDevice->handle);
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
  // Issuing thread: removes what peekIssue returned.
  void popIssue(Issue* out) {
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
  void submissionsDone(uint64_t n) {
    if (n == 0) return;
    completed.fetch_add(n, std::memory_order_seq_cst);
    if (idleWaiters.load(std::memory_order_seq_cst) != 0) {
      std::lock_guard<std::mutex> lock(idleMutex);
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
  // Whether continuation or deferred holds something: the issuing thread looks at them only
  // then. Read and written by that thread only (failAll leaves it set: a harmless extra look).
  bool suspended = false;
  uint64_t opsIssued = 0;    // driver operations enqueued (see overOpsLimit)
  uint64_t opsDoneSeen = 0;  // the last reading of opsDone
  // Held by the issuing thread while it enqueues; orders that with the completion thread's
  // look at the stream (sleepOnOldest) and its failAll.
  core::Mutex issueMutex;
  uint64_t pushed = 0;         // records pushed so far (issueMutex)
  std::vector<Record> outbox;  // pushed, not yet handed to the completion thread (issueMutex)
  uint64_t outboxSince = 0;    // when its oldest record was pushed
  uint64_t issuedPasses = 0;   // passes of the issuing thread that issued for the queue (serve)
  // Free events taken from the device's pool a batch at a time, so that a submission does not
  // take the pool's lock (issue 3, item 9); at most kEventStash, returned when the queue dies.
  std::vector<void*> eventStash;
  std::optional<Record> continuation;  // a suspended submission
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
  std::mutex idleMutex;
  std::condition_variable idleCv;
};

void HostCalls::trampoline(void* data) {
  auto* call = static_cast<Call*>(data);
  HostCalls& owner = *call->owner;
  // Commands after a failed host call do not run: later host calls of the submission skip.
  if (owner.firstError.load(std::memory_order_acquire) != 0) return;
  Result r;
  std::vector<Ref<core::Queue>> passes;
  {
    // A callback may signal baton semaphores; what that releases must not be issued here.
    core::Notifier::Scope scope;
    r = call->callback(call->userData);
    passes = core::Notifier::takeScheduled();
  }
  if (isError(r)) owner.firstError.store(static_cast<int32_t>(r), std::memory_order_release);
  if (!passes.empty())
    if (std::shared_ptr<QueueShared> q = owner.queue.lock()) q->handOff(std::move(passes));
}

// ---- issuing --------------------------------------------------------------------------------

// Enqueues submissions on a queue's stream, in queue order, on the device's issuing thread
// (IssueThread) with QueueShared::issueMutex held.
//
// Host calls and the commands after them: "commands after a failed host call do not run" cannot
// be decided when the host call is enqueued, so a submission with GPU commands (or native
// callbacks) after a host call is suspended there: the host call and an event behind it are
// enqueued, the rest of the submission waits in QueueShared::continuation (and later
// submissions of the queue in `deferred`), and the completion thread resumes it once the event
// completes — with the rest of its commands, or with its signals failed. This costs a host
// round trip, only for such submissions; a host call at the end of a submission costs none.
class Issuer {
 public:
  explicit Issuer(QueueShared& q) : q_(q), d_(q.driver) {}

  void start(Issue&& e) {
    Record rec;
    rec.submission = std::move(e.submission);
    rec.published = std::move(e.timepoint);
    rec.hostCallCount = e.hostCalls;
    rec.hostPublish = e.hostPublish;
    rec.urgent = e.urgent;
    rec.externalWaits = e.gated;
    rec.externalSignals = e.externalSignals;
    if (q_.coreDevice->lost()) {
      failUnrecorded(rec, q_.coreDevice->lostStatus());
      return;
    }
    ContextScope context(d_, q_.device->config.context, ContextScope::kCurrent);
    bool waitFailed = false;
    rec.ops += static_cast<uint32_t>(rec.submission->waits.size());
    Status st = enqueueWaits(*rec.submission, &waitFailed);
    // The waited timepoints stay with the submission until it completes (their events stay out
    // of the pool that long): dropping them here would write to cache lines that other threads
    // use, on the issuing path.
    if (!st.ok()) {  // nothing enqueued yet
      failUnrecorded(rec, st, /*issuing=*/!waitFailed);
      return;
    }
    proceed(std::move(rec), context);
  }

  // The suspension record completed: the host calls before it ran.
  void resume() {
    Record rec = std::move(*q_.continuation);
    q_.continuation.reset();
    ContextScope context(d_, q_.device->config.context, ContextScope::kCurrent);
    int32_t failed = rec.hostCalls->firstError.load(std::memory_order_acquire);
    if (failed != 0) {
      finish(std::move(rec), hostCallFailure(failed));  // the rest does not run
      return;
    }
    proceed(std::move(rec), context);
  }

  // Whether `e` can be issued now without waiting: every timepoint it waits for GPU-side is
  // recorded (the device's issuing thread must not wait for a signal it has yet to record
  // itself), and the stream is not over kMaxOpsInFlight.
  bool ready(const Issue& e) {
    for (const core::Submission::Wait& w : e.submission->waits) {
      if (!w.timepoint) continue;
      auto* tp = static_cast<const StreamTimepoint*>(w.timepoint.get());
      // This queue's own: recorded earlier on this thread, in queue order.
      if (tp->stream() != q_.stream && !tp->recorded()) return false;
    }
    return !q_.overOpsLimit();
  }

  // Issues what waited behind a suspended submission, until the next suspension or one that is
  // not ready. Returns false when it stopped at one that is not ready.
  bool drainDeferred() {
    while (!q_.continuation && !q_.deferred.empty()) {
      if (!ready(q_.deferred.front())) return false;
      Issue e = std::move(q_.deferred.front());
      q_.deferred.pop_front();
      start(std::move(e));
    }
    return true;
  }

  Status hostCallFailure(int32_t code) const {
    return core::error(Result::ErrorHostCallFailed, "a hostCall on %s returned %s",
                       q_.label.c_str(), resultName(static_cast<Result>(code)));
  }

 private:
  void proceed(Record&& rec, ContextScope& context) {
    bool suspend = false;
    Status st = enqueueWork(rec, context, &suspend);
    if (st.ok() && suspend) {
      Record marker;
      st = recordEvent(&marker.timepoint);
      if (st.ok()) {
        marker.ops = 1;
        marker.resumes = true;
        marker.urgent = true;
        q_.continuation.emplace(std::move(rec));
        q_.push(std::move(marker));
        return;
      }
    }
    finish(std::move(rec), st);
  }

  Status recordEvent(Ref<StreamTimepoint>* out, bool gated = false) {
    void* event = nullptr;
    BATON_TRY(q_.takeEvent(q_.eventStash, &event));
    Status st = d_.eventRecord(event, q_.stream);
    if (!st.ok()) {
      q_.device->pool.release(event);
      return st;
    }
    *out = Ref<StreamTimepoint>::adopt(new StreamTimepoint(
        q_.device.get(), q_.waker.get(), q_.coreDevice, event, q_.stream, gated, true));
    return Status();
  }

  // Records the submission's completion event and hands it to the completion thread; `st` is
  // the outcome of enqueueing (an error fails the signals now, but the record still keeps what
  // the already enqueued work uses alive until the event completes).
  void finish(Record&& rec, Status st) {
    core::Submission& sub = *rec.submission;
    // Signals go out as timepoints unless the completion thread must publish them (host calls,
    // see below). Only then may imported semaphores be signalled GPU-side, and before the
    // record: when the event completes, the OS semaphore already has the value, so forwarding
    // it from the host (the mirror's onReached, after reach()) finds nothing left to do.
    const bool hostPublish = rec.hostPublish;
    if (st.ok() && !hostPublish && rec.externalSignals) st = signalExternals(sub);
    rec.ops += 1 + static_cast<uint32_t>(sub.signals.size());  // the record (and signals)
    Status rs;
    const bool atRelease = st.ok() && rec.published;  // its timepoint is already published
    if (atRelease) {
      rs = d_.eventRecord(rec.published->event(), q_.stream);
      if (rs.ok()) rec.timepoint = std::move(rec.published);
    } else {
      rs = recordEvent(&rec.timepoint, rec.externalWaits);
    }
    if (!rs.ok()) {
      // Nothing can track the enqueued work: wait for the stream so that what it uses outlives
      // it (only after a driver error, in practice a lost device).
      if (!d_.streamSynchronize(q_.stream).ok()) (void)rec.hostCalls.release();  // see failAll
      for (const core::Allocation& a : rec.freeAfter) q_.device->freeAllocation(a);
      failUnrecorded(rec, st.ok() ? rs : st);
      return;
    }
    if (!st.ok()) {
      fail(sub, st);
      q_.dropRelease(rec.published, hostPublish, st);
      rec.signalsDone = true;
    } else if (hostPublish) {
      // With host calls, the signals are NOT published as timepoints: a GPU-side waiter would
      // run as soon as the event completes, even when a host call failed and the signals must
      // fail. The completion thread reaches (or fails) them once the event completed and the
      // host calls' results are known; waiters are then released from the host. Records behind
      // such a one follow it, to keep the queue's signal order (see hostPublished).
      rec.hostPublished = true;
      rec.urgent = true;
    } else if (atRelease) {
      rec.timepoint->markRecorded();  // waiters may use the event now
    } else {
      // No event could be had at release: publish the signals as GPU-waitable timepoints now.
      // Queues waiting for these values are released when this thread's Notifier scope closes.
      if (!sub.signals.empty()) Counters::add(kPublishedLate, 1);
      for (core::Submission::Signal& s : sub.signals) {
        s.semaphore->addTimepoint(s.value, rec.timepoint);
        if (q_.promptReach(s)) rec.urgent = true;
      }
    }
    q_.push(std::move(rec));
  }

  // Signals, in stream order, the imported counterparts (native interop) of the submission's
  // signal semaphores that belong to this queue's device.
  Status signalExternals(core::Submission& sub) {
    for (core::Submission::Signal& s : sub.signals) {
      core::SemaphoreMirror* m = s.semaphore->mirror();
      core::ExternalSemaphore* x = m ? m->external(q_.coreDevice->handle) : nullptr;
      if (!x) continue;
      BATON_TRY(
          d_.signalExternal(static_cast<StreamExternalSemaphore*>(x)->handle(), s.value, q_.stream)
              .context(core::format("%s signalling semaphore '%s' = %llu", q_.label.c_str(),
                                    s.semaphore->name().c_str(),
                                    static_cast<unsigned long long>(s.value))));
      m->onDeviceSignal(s.value);
    }
    return Status();
  }

  // *waitFailed: the error is a waited signal that failed (its semaphore says why).
  Status enqueueWaits(core::Submission& sub, bool* waitFailed) {
    for (core::Submission::Wait& w : sub.waits) {
      if (w.external) {
        // Nothing recorded covers the value yet: wait for the imported OS semaphore, which
        // whoever signals the value signals too (Vulkan, or baton forwarding to it).
        auto* x = static_cast<StreamExternalSemaphore*>(w.external);
        BATON_TRY(d_.waitExternal(x->handle(), w.value, q_.stream)
                      .context(core::format("%s waiting for semaphore '%s' >= %llu",
                                            q_.label.c_str(), w.semaphore->name().c_str(),
                                            static_cast<unsigned long long>(w.value))));
        continue;
      }
      if (!w.timepoint) continue;  // the scheduler removes reached waits; defensive
      auto* tp = static_cast<StreamTimepoint*>(w.timepoint.get());
      // Published at release, maybe before its event was recorded: ready() saw it recorded or
      // abandoned, or it is this queue's own, recorded earlier on this thread in queue order.
      // So this never waits (a wait here for a signal this thread has yet to record would never
      // end); kept for the order of the loads.
      if (!tp->recorded()) BATON_TRY(tp->waitRecorded(Deadline::never()));
      Status outcome;
      if (tp->done(&outcome)) {
        if (outcome.code() == Result::ErrorSemaphoreFailed) {  // abandoned
          *waitFailed = true;
          return core::failedWait(q_.label, w, Result::ErrorSemaphoreFailed);
        }
        if (!outcome.ok())
          return outcome.context(core::format("%s waiting for semaphore '%s' >= %llu",
                                              q_.label.c_str(), w.semaphore->name().c_str(),
                                              static_cast<unsigned long long>(w.value)));
        continue;  // completed: nothing to wait for
      }
      if (tp->stream() == q_.stream) continue;  // recorded earlier on this in-order stream
      BATON_TRY(d_.streamWaitEvent(q_.stream, tp->event()));
    }
    return Status();
  }

  static Status unbacked() {
    return Status(Result::ErrorInvalidState,
                  "a command used a buffer whose queue-ordered allocation had not run (or that "
                  "was already freed): order it after the alloca's signal");
  }

  // The command at the current position (moved past finished command lists), or null at the
  // end of the submission.
  static const core::Command* current(Record& rec) {
    const auto& lists = rec.submission->commandLists;
    while (rec.nextList < lists.size() && rec.nextCommand >= lists[rec.nextList]->commands.size()) {
      ++rec.nextList;
      rec.nextCommand = 0;
    }
    return rec.nextList < lists.size() ? &lists[rec.nextList]->commands[rec.nextCommand] : nullptr;
  }

  Status enqueueWork(Record& rec, ContextScope& context, bool* suspend) {
    core::Submission& sub = *rec.submission;
    switch (sub.kind) {
      case core::Submission::Kind::Alloca: {
        core::Buffer& b = *sub.buffer;
        core::Allocation a;
        a.size = b.info.size;
        if (b.info.memory == MemoryKind::HostPinned) {
          // Pinned host memory has no stream-ordered allocator; allocating it here is still in
          // queue order (after the waits, before the signals) and never waits for the GPU.
          BATON_TRY(d_.hostAlloc(&a.host, &a.deviceAddress, a.size));
          a.native = tagOf(MemoryTag::HostPinned);
        } else {
          if (!q_.device->config.memoryPool)
            return Status(Result::ErrorNotSupported, q_.label + " has no memory pool");
          BATON_TRY(
              d_.memAllocAsync(&a.deviceAddress, a.size, q_.device->config.memoryPool, q_.stream));
          a.native = tagOf(MemoryTag::StreamOrdered);
        }
        b.allocation = a;
        b.backed.store(true, std::memory_order_release);
        return Status();
      }
      case core::Submission::Kind::Dealloca: {
        core::Buffer& b = *sub.buffer;
        if (!b.backed.exchange(false, std::memory_order_acq_rel)) return Status();
        if (tagOf(b.allocation) == MemoryTag::StreamOrdered)
          return d_.memFreeAsync(b.allocation.deviceAddress, q_.stream);
        rec.freeAfter.push_back(b.allocation);  // freed once the work before it completed
        return Status();
      }
      case core::Submission::Kind::Commands: break;
    }

    if (!rec.hostCalls && rec.hostCallCount) {  // counted at release
      rec.hostCalls = std::make_unique<HostCalls>();
      rec.hostCalls->calls.reserve(rec.hostCallCount);
      rec.hostCalls->queue = q_.weak_from_this();
    }

    while (const core::Command* next = current(rec)) {
      const core::Command& c = *next;
      ++rec.nextCommand;
      ++rec.ops;
      for (const Ref<core::Buffer>* b : {&c.src, &c.dst})
        if (*b && !(*b)->backed.load(std::memory_order_acquire)) return unbacked();
      switch (c.kind) {
        case core::Command::Kind::Copy:
          BATON_TRY(d_.memcpyAsync(c.dst->allocation.deviceAddress + c.dstOffset,
                                   c.src->allocation.deviceAddress + c.srcOffset, c.size,
                                   q_.stream));
          break;
        case core::Command::Kind::Fill:
          BATON_TRY(d_.memsetD32Async(c.dst->allocation.deviceAddress + c.dstOffset, c.pattern,
                                      c.size / 4, q_.stream));
          break;
        case core::Command::Kind::Update:
          // The data lives in the command list, which the record keeps until the event
          // completes. Updates are at most kMaxUpdateSize (64 KiB): the driver stages pageable
          // copies that small without waiting for the stream.
          BATON_TRY(d_.memcpyHtoDAsync(c.dst->allocation.deviceAddress + c.dstOffset, c.data.data(),
                                       c.size, q_.stream));
          break;
        case core::Command::Kind::HostCall: {
          rec.hostCalls->calls.push_back({rec.hostCalls.get(), c.hostCallback, c.userData});
          BATON_TRY(
              d_.launchHostFunc(q_.stream, &HostCalls::trampoline, &rec.hostCalls->calls.back()));
          // Consecutive host calls go together (the trampoline skips those after a failure);
          // anything else after a host call waits for its result.
          const core::Command* after = current(rec);
          if (after && after->kind != core::Command::Kind::HostCall) {
            *suspend = true;
            return Status();
          }
          break;
        }
        case core::Command::Kind::Native: {
          // In queue order, on the issuing thread: what the callback enqueues on the stream runs
          // after the waits and before the signals. A failure stops the rest of the submission.
          NativeQueue nq;
          nq.backend = d_.kind;
          nq.stream = q_.stream;
          nq.deviceOrdinal = q_.device->config.ordinal;
          nq.queueIndex = q_.index;
          Result r = c.nativeCallback(nq, c.userData);
          context.reapply();  // the callback may have switched contexts (cudaSetDevice)
          if (isError(r))
            return core::error(Result::ErrorHostCallFailed, "a native callback on %s returned %s",
                               q_.label.c_str(), resultName(r));
          break;
        }
      }
    }
    return Status();
  }

  void fail(core::Submission& sub, Status st) {
    if (st.code() == Result::ErrorDeviceLost) q_.deferLost(st.message());
    core::failSignals(sub, st.context("issuing a submission on " + q_.label));
  }

  // Fails a submission that has no record (nothing of it is in flight) and counts it done.
  // `issuing`: the error arose in issuing it (named so in the reason), rather than in a wait.
  void failUnrecorded(Record& rec, Status st, bool issuing = true) {
    if (issuing) {
      fail(*rec.submission, st);
    } else {
      core::failSignals(*rec.submission, st);
    }
    q_.dropRelease(rec.published, rec.hostPublish, st);
    q_.submissionsDone(1);
  }

  QueueShared& q_;
  const DriverTable& d_;
};

// ---- completion thread ----------------------------------------------------------------------

class Completion {
 public:
  explicit Completion(std::shared_ptr<QueueShared> q) : q_(std::move(q)), d_(q_->driver) {}

  void run() {
    tInternalThread = true;
    // The thread's own driver calls always run in the device's context.
    (void)d_.setCurrent(q_->device->config.context);
    std::vector<Record> incoming;
    std::vector<Ref<core::Queue>> passes;
    for (;;) {
      std::string lost;
      // The flag first: the lock (a cache line the issuing thread writes) only when there is
      // something to take.
      if (q_->inboxPending.load(std::memory_order_acquire)) {
        std::lock_guard<core::Mutex> lock(q_->inboxMutex);
        q_->inboxPending.store(false, std::memory_order_relaxed);
        incoming.swap(q_->inbox);
        passes.swap(q_->passes);
        if (q_->lostPending) {
          lost = std::move(q_->lostReason);
          q_->lostPending = false;
        }
      }
      for (Record& r : incoming) {
        urgent_ += r.urgent;
        inflight_.push_back(std::move(r));
      }
      incoming.clear();
      for (Ref<core::Queue>& queue : passes) queue->evaluate();
      passes.clear();
      if (!lost.empty()) q_->coreDevice->markLost(lost);
      if (inflight_.empty()) {
        // Nothing in flight: the core Device may be gone (see ~StreamQueue), touch only q_.
        if (q_->stop.load(std::memory_order_acquire)) return;
        if (lingerNs_ < kLingerNs) {
          // Linger, polling, before sleeping until a push wakes it: while submissions keep
          // coming, submitters then never pay for a wake-up (a futex syscall per submission).
          lingerNs_ += pollNs_;
          q_->waker->parker.park(Deadline::after(pollNs_));
          pollNs_ = std::min(pollNs_ * 2, kPollMaxNs);
          continue;
        }
        q_->waker->idle.store(true, std::memory_order_seq_cst);
        bool empty;
        {
          std::lock_guard<core::Mutex> lock(q_->inboxMutex);
          empty = q_->inbox.empty() && q_->passes.empty() && !q_->lostPending;
        }
        if (empty && !q_->stop.load(std::memory_order_acquire))
          q_->waker->parker.park(Deadline::never());
        q_->waker->idle.store(false, std::memory_order_seq_cst);
        pollNs_ = kPollMinNs;
        lingerNs_ = 0;
        continue;
      }
      lingerNs_ = 0;
      if (q_->coreDevice->lost()) {
        failAll(q_->coreDevice->lostStatus());
        continue;
      }
      size_t n = 0;
      Status err = countCompleted(&n);
      if (err.ok() && n == 0) err = sleepOnOldest();
      if (err.isError()) {
        q_->coreDevice->markLost(err.message());
        failAll(q_->coreDevice->lostStatus());
        continue;
      }
      if (n) {
        finish(n);
        pollNs_ = kPollMinNs;
      }
    }
  }

 private:
  // How many records, oldest first, have completed. The stream is in order, so when the newest
  // has completed all have: one query in the common catch-up case; otherwise the completed
  // prefix is found by bisection. A scan from the oldest made up to one query per record, each
  // on an event the issuing thread had just recorded; with bisection, the live ping-pong went
  // from 1.70-1.92x to 1.54-1.82x raw on the H100 (4 alternating pairs, issue 3, item 9).
  Status countCompleted(size_t* n) {
    *n = 0;
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

  // Waits for the oldest record's event without burning the core: a short spin, then either a
  // blocking-sync wait in the driver (interrupt driven) when a host thread waits for this
  // thread or a record needs prompt publication, or a poll after a backoff sleep otherwise.
  // Returns NotReady when it woke without completion.
  Status sleepOnOldest() {
    void* event = inflight_.front().timepoint->event();
    // Spin only after progress, not at every poll of a long wait.
    const uint64_t spinEnd = core::nowNs() + (pollNs_ == kPollMinNs ? kCompletionSpinNs : 0);
    for (;;) {
      Status s = d_.eventQuery(event);
      if (s.code() != Result::NotReady) return s;
      uint64_t now = core::nowNs();
      if (now >= spinEnd) break;
      // Not back to back: see kCompletionQueryGapNs.
      const uint64_t next = now + kCompletionQueryGapNs;
      while (core::nowNs() < next) core::cpuRelax();
    }
    if (urgent_ == 0 && q_->waker->sleepers.load(std::memory_order_seq_cst) == 0) {
      // A host thread that starts waiting unparks this sleep (Waker::addSleeper).
      q_->waker->parker.park(Deadline::after(pollNs_));
      pollNs_ = std::min(pollNs_ * 2, kPollMaxNs);
      return Status(Result::NotReady);
    }
    if (q_->device->config.blockingSyncEvents) return d_.eventSynchronize(event);
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
      if (lock.owns_lock() && q_->pushed == inflight_.front().seq) {
        BATON_TRY(d_.eventRecord(q_->sleepEvent, q_->stream));
        lock.unlock();
        return d_.eventSynchronize(q_->sleepEvent);
      }
    }
    // Later work is queued behind the oldest record (a sleep in the driver would last until that
    // work is done too), or the issuing thread is busy: poll, at most kUrgentPollMaxNs apart.
    q_->waker->parker.park(Deadline::after(std::min(pollNs_, kUrgentPollMaxNs)));
    pollNs_ = std::min(pollNs_ * 2, kUrgentPollMaxNs);
    return Status(Result::NotReady);
  }

  // Publishes the first n records: timepoints completed, signal values reached, host-call
  // failures propagated, deferred frees done; then resumes a suspended submission whose host
  // calls have run.
  void finish(size_t n) {
    uint64_t submissions = 0, ops = 0;
    bool resume = false;
    for (size_t i = 0; i < n; ++i) ops += inflight_[i].ops;
    {
      core::Notifier::Scope scope;  // releases run once, when the batch is published
      // Before the timepoints complete: their host waiters must find the signals failed.
      for (size_t i = 0; i < n; ++i)
        if (inflight_[i].externalWaits && !inflight_[i].signalsDone)
          failIfReleasedByFailure(inflight_[i]);
      for (size_t i = 0; i < n; ++i) inflight_[i].timepoint->complete(Status());
      // Signals published as timepoints are already visible (a query of their event sees them
      // complete): reach them in any order, once per semaphore with its highest value — one
      // update of each semaphore's pending list instead of one per record, which matters when
      // the thread catches up with many records.
      reach_.clear();
      for (size_t i = 0; i < n; ++i) {
        Record& r = inflight_[i];
        if (r.submission && !r.signalsDone && !r.hostPublished)
          for (core::Submission::Signal& s : r.submission->signals)
            reach_.emplace_back(s.semaphore.get(), s.value);
      }
      std::sort(reach_.begin(), reach_.end());
      for (size_t i = 0; i < reach_.size(); ++i) {
        if (i + 1 < reach_.size() && reach_[i + 1].first == reach_[i].first) continue;  // max
        reach_[i].first->reach(reach_[i].second);
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
        if (failed != 0)
          core::failSignals(*r.submission, Issuer(*q_).hostCallFailure(failed));
        else
          core::reachSignals(*r.submission);
        q_->hostPublished.fetch_sub(1, std::memory_order_seq_cst);
      }
      for (size_t i = 0; i < n; ++i)
        for (const core::Allocation& a : inflight_[i].freeAfter) q_->device->freeAllocation(a);
      // Drop the references (semaphores, buffers, timepoints) before reporting the queue idle:
      // Device::shutdown waits for idle, and must find nothing of ours holding the device.
      inflight_.erase(inflight_.begin(), inflight_.begin() + static_cast<ptrdiff_t>(n));
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
      if (!w.external || !w.semaphore->failed() || w.semaphore->value(false) >= w.value) continue;
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
    // Loss can be declared while this stream still runs (a fault seen on another queue or
    // injected by a test): let it drain before the records release the memory it may use. On a
    // faulted context this returns the sticky error at once.
    (void)d_.streamSynchronize(q_->stream);
    {
      core::Notifier::Scope scope;
      for (Record& r : inflight_) {
        r.timepoint->complete(why);
        if (r.submission) {
          ++submissions;
          if (!r.signalsDone) core::failSignals(*r.submission, why);
          if (r.hostPublished) q_->hostPublished.fetch_sub(1, std::memory_order_seq_cst);
        }
        for (const core::Allocation& a : r.freeAfter) q_->device->freeAllocation(a);
        // The driver may still call host functions of a faulted stream, or never: their data
        // must stay valid either way, so it is deliberately leaked (only after device loss).
        (void)r.hostCalls.release();
      }
      inflight_.clear();
      urgent_ = 0;
      std::lock_guard<core::Mutex> lock(q_->issueMutex);
      if (q_->continuation) {
        Record& c = *q_->continuation;
        core::failSignals(*c.submission, why);
        q_->dropRelease(c.published, c.hostPublish, why);
        (void)c.hostCalls.release();
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
  std::deque<Record> inflight_;
  std::vector<std::pair<core::Semaphore*, uint64_t>> reach_;
  size_t urgent_ = 0;  // records in inflight_ with Record::urgent
  uint64_t pollNs_ = kPollMinNs;
  uint64_t lingerNs_ = 0;  // polled with nothing in flight so far
};

// ---- issuing thread -------------------------------------------------------------------------

// Takes released submissions from the rings of a device's queues, each queue in order, and
// enqueues them (Issuer); also resumes suspended submissions once the completion thread saw
// their host calls run. The driver calls of a submission (and its native callbacks) run here,
// not on the thread that submitted it, which only pays for the scheduler and the hand-off
// (issue 3, item 9). A queue whose next submission waits for a signal not yet recorded (by
// another device's issuing thread), or whose stream holds kMaxOpsInFlight operations, is
// passed over until that changes; the other queues go on.
class IssueThread {
 public:
  IssueThread(std::shared_ptr<DeviceIssuer> issuer, std::shared_ptr<DeviceShared> device)
      : issuer_(std::move(issuer)), device_(std::move(device)) {}

  void run() {
    tInternalThread = true;
    (void)device_->driver.setCurrent(device_->config.context);
    uint64_t idleSince = 0, version = ~uint64_t{0};
    std::vector<std::shared_ptr<QueueShared>> queues;
    for (;;) {
      if (issuer_->version.load(std::memory_order_acquire) != version) {
        std::lock_guard<core::Mutex> lock(issuer_->mutex);
        version = issuer_->version.load(std::memory_order_relaxed);
        queues = issuer_->queues;
      }
      bool worked = false, waiting = false;
      passNow_ = 0;
      for (const std::shared_ptr<QueueShared>& q : queues) serve(*q, &worked, &waiting);
      if (worked) {
        idleSince = 0;
        continue;
      }
      // Out of work: hand every record over before polling or sleeping. The outboxes are
      // written by this thread only.
      for (const std::shared_ptr<QueueShared>& q : queues) {
        if (q->outbox.empty()) continue;
        std::lock_guard<core::Mutex> lock(q->issueMutex);
        q->flushOutbox();
      }
      if (issuer_->stop.load(std::memory_order_acquire) && queues.empty()) return;
      // Poll a while, then sleep until a post, a resume request, room on a stream, or a queue's
      // end wakes it; a signal of another device is polled for.
      const uint64_t now = core::nowNs();
      if (idleSince == 0) idleSince = now;
      if (now - idleSince < kIssueSpinNs) {
        if (now - idleSince < kSpinBeforeYieldNs)
          for (int i = 0; i < 16; ++i) core::cpuRelax();
        else
          std::this_thread::yield();  // leave the core to runnable threads meanwhile
        continue;
      }
      issuer_->idle.store(true, std::memory_order_seq_cst);
      bool work = issuer_->stop.load(std::memory_order_seq_cst) ||
                  issuer_->version.load(std::memory_order_seq_cst) != version;
      for (const std::shared_ptr<QueueShared>& q : queues)
        work |= q->issueWork() || q->stop.load(std::memory_order_seq_cst);
      if (!work)
        issuer_->parker.park(Deadline::never());
      else if (waiting)
        issuer_->parker.park(Deadline::after(kPollMinNs));
      issuer_->idle.store(false, std::memory_order_seq_cst);
      idleSince = 0;
    }
  }

 private:
  // One pass over a queue: resume, deferred submissions, then released ones, as long as they
  // are ready; then the queue's end, when it is going.
  void serve(QueueShared& q, bool* worked, bool* waiting) {
    const bool resume = q.resumePending.load(std::memory_order_acquire);
    Issue* next = q.peekIssue();
    bool issued = false;
    if (next || resume || q.suspended) {
      core::Notifier::Scope scope;  // declared first: it drains after the lock is released
      std::lock_guard<core::Mutex> lock(q.issueMutex);
      Issuer issuer(q);
      if (resume && q.resumePending.exchange(false, std::memory_order_acq_rel)) {
        if (q.continuation) issuer.resume();
        issued = true;
      }
      if (!q.continuation && !q.deferred.empty()) {
        size_t before = q.deferred.size();
        if (!issuer.drainDeferred()) *waiting = true;
        issued |= q.deferred.size() != before;
      }
      for (size_t n = 0; next && n < kIssueBurst; ++n, next = q.peekIssue()) {
        const bool behind = q.continuation || !q.deferred.empty();
        if (!behind && !issuer.ready(*next)) {
          *waiting = true;
          break;
        }
        Issue e;
        q.popIssue(&e);
        q.ring.prefetchNext();
        if (behind)
          q.deferred.push_back(std::move(e));  // behind a suspended submission, in order
        else
          issuer.start(std::move(e));
        issued = true;
      }
      q.suspended = q.continuation || !q.deferred.empty();
      if (issued) *worked = true;
    }
    // Records go to the completion thread in batches (kOutboxBatch), at the latest after
    // kOutboxMaxAgeNs (also while other queues keep this thread busy), at once while a host
    // thread sleeps until that thread observes a completion (it may need one of them), and all
    // of them when this thread runs out of work (run). The outbox is written by this thread only.
    // The age is looked at in every pass that issued nothing for the queue, and in every
    // kAgeCheckPasses-th one that did: a clock read per pass was 4% of this thread's time in the
    // live ping-pong on the H100 (issue 3, item 9).
    if (!q.outbox.empty() && (q.waker->sleepers.load(std::memory_order_relaxed) != 0 ||
                              ((!issued || ++q.issuedPasses % kAgeCheckPasses == 0) &&
                               passNow() - q.outboxSince >= kOutboxMaxAgeNs))) {
      std::lock_guard<core::Mutex> lock(q.issueMutex);
      q.flushOutbox();
    }
    if (q.stop.load(std::memory_order_acquire) && !q.drained.load(std::memory_order_relaxed) &&
        finished(q)) {
      unregister(q);
      *worked = true;  // the queue list changed
    }
  }

  // Nothing is left to issue: no suspended submission (the completion thread would ask to
  // resume it) and nothing deferred or posted.
  static bool finished(QueueShared& q) {
    std::lock_guard<core::Mutex> lock(q.issueMutex);
    q.flushOutbox();
    return !q.continuation && q.deferred.empty() && !q.issueWork();
  }

  void unregister(QueueShared& q) {
    issuer_->remove(&q);
    q.drained.store(true, std::memory_order_seq_cst);
    q.drainedParker.unpark();
  }

  // The time, read once per pass over the queues and only when needed.
  uint64_t passNow() {
    if (passNow_ == 0) passNow_ = core::nowNs();
    return passNow_;
  }

  std::shared_ptr<DeviceIssuer> issuer_;
  std::shared_ptr<DeviceShared> device_;
  uint64_t passNow_ = 0;
};

// ---- queue ----------------------------------------------------------------------------------

class StreamQueue final : public core::QueueImpl {
 public:
  explicit StreamQueue(std::shared_ptr<QueueShared> shared) : q_(std::move(shared)) {
    thread_ = std::thread([q = q_] { Completion(q).run(); });
    // Named here rather than by the thread itself, so that the name is there on return.
    pthread_setname_np(thread_.native_handle(), "baton-complete");
    q_->issuer->add(q_);
  }

  ~StreamQueue() override {
    // The device's issuing thread drains the queue first (it may still hand records to the
    // completion thread) and unregisters it. When that thread is this one (it dropped the last
    // reference to the core Device, which destroys the queues), it is between submissions of
    // some queue, holding that queue's issue lock: the queue is unregistered here instead.
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
  // Unless the completion thread must publish them (host calls, or such a submission still
  // ahead of it), they are published here, as a timepoint whose event the issuing thread records
  // next: queues waiting for them are released now, without waiting for the issuing thread.
  void issue(std::unique_ptr<core::Submission> sub) override {
    q_->issued.fetch_add(1, std::memory_order_seq_cst);
    Issue e;
    for (const core::Submission::Wait& w : sub->waits) e.gated |= w.external != nullptr;
    for (const Ref<core::CommandList>& list : sub->commandLists)
      for (const core::Command& c : list->commands)
        e.hostCalls += c.kind == core::Command::Kind::HostCall;
    e.hostPublish = e.hostCalls != 0 || q_->hostPublished.load(std::memory_order_seq_cst) != 0;
    // Decided here, where the semaphores are in this thread's cache, so that the issuing thread
    // looks at them only when it has to signal one: which signals it makes GPU-side (imported
    // semaphores), and whether a mirror needs the values reached promptly (promptReach).
    bool prompt = false;
    for (const core::Submission::Signal& s : sub->signals)
      if (core::SemaphoreMirror* m = s.semaphore->mirror()) {
        const bool external = m->external(q_->coreDevice->handle) != nullptr;
        e.externalSignals |= external;
        prompt |= !external;
      }
    if (e.hostPublish) {
      q_->hostPublished.fetch_add(1, std::memory_order_seq_cst);
    } else if (!sub->signals.empty()) {
      void* event = nullptr;
      // Without an event now, the issuing thread publishes the signals after recording.
      if (q_->takeEvent(q_->publishStash, &event).ok()) {
        e.timepoint = Ref<StreamTimepoint>::adopt(new StreamTimepoint(
            q_->device.get(), q_->waker.get(), q_->coreDevice, event, q_->stream, e.gated, false));
        for (const core::Submission::Signal& s : sub->signals)
          s.semaphore->addTimepoint(s.value, e.timepoint);
        e.urgent = prompt;
      }
    }
    e.submission = std::move(sub);
    q_->post(std::move(e));
  }

 private:
  std::shared_ptr<QueueShared> q_;
  std::thread thread_;  // completion
};

// ---- device ---------------------------------------------------------------------------------

class StreamDevice final : public core::DeviceImpl {
 public:
  StreamDevice(core::Device& device, std::shared_ptr<DeviceShared> shared)
      : device_(device), shared_(std::move(shared)), issuer_(std::make_shared<DeviceIssuer>()) {
    thread_ = std::thread([i = issuer_, d = shared_] { IssueThread(i, d).run(); });
    pthread_setname_np(thread_.native_handle(), "baton-issue");  // for profilers, debuggers
    issuer_->threadId = thread_.get_id();
  }

  // The queues are gone (the core Device destroys them first): the issuing thread exits. It can
  // be this thread (see ~StreamQueue); then it exits after the call that destroyed the device.
  ~StreamDevice() override {
    issuer_->stop.store(true, std::memory_order_seq_cst);
    issuer_->parker.unpark();
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();
    else
      thread_.join();
  }

  Status createQueue(uint32_t index, core::Queue& queue,
                     std::unique_ptr<core::QueueImpl>* out) override {
    const DriverTable& d = shared_->driver;
    ContextScope context(d, shared_->config.context);
    auto q = std::make_shared<QueueShared>(shared_, &device_, index, queue.label());
    q->issuer = issuer_;
    BATON_TRY(d.streamCreate(&q->stream).context("creating the stream of " + queue.label()));
    if (!shared_->config.blockingSyncEvents)
      BATON_TRY(d.eventCreate(&q->sleepEvent, true).context("creating a blocking-sync event"));
    *out = std::make_unique<StreamQueue>(std::move(q));
    return Status();
  }

  Status allocate(const BufferCreateInfo& info, core::Allocation* out) override {
    const DriverTable& d = shared_->driver;
    ContextScope context(d, shared_->config.context);
    core::Allocation a;
    a.size = info.size;
    if (info.memory == MemoryKind::HostPinned) {
      BATON_TRY(d.hostAlloc(&a.host, &a.deviceAddress, info.size));
      a.native = tagOf(MemoryTag::HostPinned);
    } else {
      BATON_TRY(d.memAlloc(&a.deviceAddress, info.size));
      a.native = tagOf(MemoryTag::Device);
    }
    *out = a;
    return Status();
  }

  void free(const core::Allocation& allocation) override { shared_->freeAllocation(allocation); }

  bool importsTimelineFd() const override { return shared_->driver.importTimelineFd != nullptr; }
  bool importsMemoryFd() const override { return shared_->driver.importMemoryFd != nullptr; }

  Status importTimelineFd(int fd, uint64_t deviceHandle,
                          Ref<core::ExternalSemaphore>* out) override {
    const DriverTable& d = shared_->driver;
    if (!d.importTimelineFd)
      return Status(Result::ErrorNotSupported,
                    core::format("the %s driver cannot import external semaphores", d.name));
    ContextScope context(d, shared_->config.context);
    void* handle = nullptr;
    BATON_TRY(d.importTimelineFd(fd, &handle));
    *out = Ref<core::ExternalSemaphore>::adopt(
        new StreamExternalSemaphore(shared_, deviceHandle, handle));
    return Status();
  }

  Status importMemoryFd(const core::MemoryFdImport& in, core::Allocation* out,
                        Ref<core::Object>* keep) override {
    const DriverTable& d = shared_->driver;
    if (!d.importMemoryFd)
      return Status(Result::ErrorNotSupported,
                    core::format("the %s driver cannot import external memory", d.name));
    ContextScope context(d, shared_->config.context);
    void* memory = nullptr;
    BATON_TRY(d.importMemoryFd(in.fd, in.allocationSize, in.dedicated, &memory));
    // The fd is the driver's now; from here on the import object releases everything.
    auto imported = Ref<StreamExternalMemory>::adopt(new StreamExternalMemory(shared_, memory));
    uint64_t address = 0;
    BATON_TRY(d.mapExternalMemory(memory, in.offset, in.size, &address));
    imported->setAddress(address);
    core::Allocation a;
    a.deviceAddress = address;
    a.size = in.size;
    *out = a;
    *keep = std::move(imported);
    return Status();
  }

 private:
  core::Device& device_;
  std::shared_ptr<DeviceShared> shared_;
  std::shared_ptr<DeviceIssuer> issuer_;
  std::thread thread_;  // the device's issuing thread
};

}  // namespace

std::unique_ptr<core::DeviceImpl> createDevice(core::Device& device, DeviceConfig config) {
  auto shared = std::make_shared<DeviceShared>(std::move(config));
  return std::make_unique<StreamDevice>(device, std::move(shared));
}

Stats stats() noexcept {
  Stats s;
  s.eventsCreated = gEventsCreated.load(std::memory_order_relaxed);
  uint64_t c[kCounterCount];
  Counters::sum(c);
  s.eventsInUse = c[kEventsTaken] - c[kEventsReturned];
  s.timepointsLive = c[kTimepointsMade] - c[kTimepointsGone];
  s.recordsIssued = c[kRecordsPushed];
  s.recordsInFlight = c[kRecordsPushed] - c[kRecordsFinished];
  s.timepointsPublishedLate = c[kPublishedLate];
  return s;
}

}  // namespace baton::stream
