// What a submission travels in between threads: an Issue, released, from the submitting thread to
// the device's issuing thread through the queue's IssueRing; a Record, issued, from the issuing
// thread to the queue's completion thread (QueueShared::push), which owns it until its event
// completes.
//
// Threads: IssueRing has one producer at a time (the submitting side, under the core queue's
// lock) and one consumer (the issuing thread), with no lock: each slot's sequence number says
// whether it is filled. A Record belongs to one thread at a time.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "collectives.hpp"
#include "cpu.hpp"
#include "host_calls.hpp"
#include "stream_timepoint.hpp"
#include "stream_tuning.hpp"

namespace baton::stream {
namespace {

// A released submission on its way to the device's issuing thread (StreamQueue::issue decides
// how its signals are published; the issuing thread enqueues it).
struct Issue {
  std::unique_ptr<core::Submission> submission;
  // The timepoint of its signals, attached to the semaphores at release, before its event is
  // recorded; null when the completion thread publishes the signals (`hostPublish`), when it
  // signals nothing, or when no event could be had then (it is attached after recording).
  Ref<StreamTimepoint> timepoint;
  uint32_t hostCalls = 0;        // HostCall commands in it
  uint32_t collectives = 0;      // Collective commands in it
  bool hostPublish = false;      // counted in QueueShared::hostPublished until published or failed
  bool urgent = false;           // see Record::urgent
  bool gated = false;            // it waits GPU-side for an imported semaphore
  bool externalSignals = false;  // it signals an imported semaphore of this device GPU-side
  uint64_t number = 0;           // QueueShared::issued once it was released (Waker::seenDone)
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
  // while the one popped is issued (they were written on the submitting thread's core): the slot
  // after the next one, and for the next one (its slot prefetched by the previous call) its
  // submission and the timepoint its issue writes. With the other changes of this kind, the issuing
  // thread's own time per submission in the live ping-pong fell on the H100 (docs/performance.md,
  // 'Measurements behind design choices').
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
  // With collectives: who decides the signals (collectives.hpp). Declared after `submission`, so
  // that it is let go (taken) before the submission is destroyed.
  ClaimRef collectives;
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
  uint64_t number = 0;                      // Issue::number; 0 for a suspension record
  uint32_t ops = 0;                         // driver operations it enqueued (overOpsLimit)
};

}  // namespace
}  // namespace baton::stream
