// EventPool: a device's recycled driver events. A timepoint takes one per recorded signal and
// returns it when it dies; creation is a driver allocation, so events are not created per
// submission.
//
// Threads: any. The free list is under the pool's mutex; queues take events from it a batch at a
// time into stashes of their own (QueueShared::takeEvent), so that a submission does not take the
// lock. Creating and destroying events are driver calls: the caller makes the device's context
// current.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <vector>

#include "mutex.hpp"
#include "stream_counters.hpp"
#include "stream_driver.hpp"

namespace baton::stream {
namespace {

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
    if (ReturnBatch* b = tBatch; b && b->pool_ == this) {
      b->events_.push_back(event);  // returned when the batch ends
      return;
    }
    Counters::add(kEventsReturned, 1);
    std::lock_guard<core::Mutex> lock(mutex_);
    free_.push_back(event);
  }

  // While one is open on a thread, events of this pool that timepoints dying on the thread
  // return are collected and go back to the pool under one lock when it closes. A completion
  // thread opens one per batch of records it retires (Completion::finish), where most
  // timepoints die: their events went back one lock each, on the pool's line, which the
  // device's other completion threads and the queues' stash refills also take. The pool must
  // outlive the batch (the completion thread holds its queue's DeviceShared); events of other
  // pools go back at once.
  class ReturnBatch {
   public:
    ReturnBatch(EventPool& pool, std::vector<void*>& storage)
        : pool_(&pool), events_(storage), outer_(tBatch) {
      tBatch = this;
    }
    ~ReturnBatch() {
      tBatch = outer_;
      if (events_.empty()) return;
      Counters::add(kEventsReturned, events_.size());
      pool_->giveBack(events_);
    }
    ReturnBatch(const ReturnBatch&) = delete;
    ReturnBatch& operator=(const ReturnBatch&) = delete;

   private:
    friend class EventPool;
    EventPool* pool_;
    std::vector<void*>& events_;  // the caller's, so that its capacity is kept between batches
    ReturnBatch* outer_;          // a batch this one is nested in (none in practice)
  };

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
  // The batch open on this thread, if any (initial-exec TLS: one load, see notifier.cpp).
  static inline thread_local ReturnBatch* tBatch __attribute__((tls_model("initial-exec"))) =
      nullptr;

  const DriverTable& driver_;
  const bool blockingSync_;
  core::Mutex mutex_;
  std::vector<void*> free_;
};

}  // namespace
}  // namespace baton::stream
