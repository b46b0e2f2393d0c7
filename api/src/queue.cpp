// The deferred-submission scheduler (docs/architecture.md, 'Wait-before-signal and deferred
// submissions'): a queue issues a submission as soon as each of its waits is either reached or
// covered by a recorded signal the queue can wait for itself; otherwise it holds it, with
// everything behind it, and links one WaitNode on the semaphore that blocks the head. The node's
// event schedules a pass on the signalling thread (Notifier), which releases what became
// releasable, in order.
#include <utility>

#include "notifier.hpp"
#include "objects.hpp"
#include "trace.hpp"

namespace baton::core {

Queue::Queue(Device* device, uint32_t index)
    : device_(device),
      index_(index),
      label_(format("queue %u of %s", index, device->label().c_str())) {
  node_.waiter = this;
}

Queue::~Queue() {
  if (Semaphore* s = node_.linkedTo.load(std::memory_order_acquire)) s->unlink(node_);
}

bool Queue::waitExternally(Submission::Wait& w) const {
  // A semaphore with an external counterpart this queue's device waits for GPU-side (a Vulkan
  // timeline imported natively, a timeline shared with other processes): whoever signals the value
  // (the other API or process, a queue of this device in stream order, or baton forwarding a
  // host-side signal) signals the counterpart, so the backend can wait for it GPU-side now
  // (docs/architecture.md, 'External timelines').
  if (!w.semaphore->hasExternals()) return false;
  w.external = w.semaphore->deviceTimeline(device_->handle);
  return w.external != nullptr;
}

Queue::Resolution Queue::resolve(Submission& sub, Status* failure, Semaphore** blocking) {
  for (size_t i = 0; i < sub.waits.size();) {
    Submission::Wait& w = sub.waits[i];
    if (w.timepoint) {
      ++i;
      continue;
    }
    WaitState st = w.semaphore->poll(w.value);
    switch (st.kind) {
      case WaitState::Reached:
        sub.waits.erase(sub.waits.begin() + static_cast<ptrdiff_t>(i));
        continue;
      case WaitState::Failed:
        *failure = failedWait(label_, w, st.failure.code());
        return Resolution::Failed;
      case WaitState::Covered:
        if (impl_->canWait(*st.timepoint)) {
          w.timepoint = std::move(st.timepoint);
          ++i;
          continue;
        }
        if (waitExternally(w)) {
          ++i;
          continue;
        }
        // Only reaching the value helps: its backend must look for the completion promptly.
        st.timepoint->watch();
        node_.value = w.value;
        node_.wantsTimepoints = false;
        *blocking = w.semaphore.get();
        return Resolution::Blocked;
      case WaitState::Pending:
        if (waitExternally(w)) {
          ++i;
          continue;
        }
        node_.value = w.value;
        node_.wantsTimepoints = true;
        *blocking = w.semaphore.get();
        return Resolution::Blocked;
    }
  }
  return Resolution::Ready;
}

bool Queue::releaseLocked(bool direct) {
  if (Semaphore* s = node_.linkedTo.load(std::memory_order_acquire)) s->unlink(node_);
  // With `direct`, the first submission this pass releases is kept back until the pass ends:
  // released alone (the usual case: one signal, one submission), it is issued on this thread when
  // the backend can, rather than handed to a backend thread that must wake or keep polling for it
  // (a bridged Vulkan <-> CUDA round trip kept the issuing thread spinning: docs/performance.md,
  // 'Floors and where the time goes'). When more follow, it is handed on first, in order, as they
  // are: a direct issue holds the queue's place until its driver calls are made after this pass,
  // and a hand-off that waited for room behind it would never get it.
  std::unique_ptr<Submission> first;
  auto flushFirst = [&] {
    if (first) impl_->issue(std::move(first));
  };
  bool started = false;
  auto finish = [&] {
    if (first) {
      if (impl_->startDirect(first))
        started = true;
      else
        impl_->issue(std::move(first));
    }
  };
  bool releasedAny = false;
  while (!held_.empty()) {
    Submission& head = *held_.front();
    Status failure;
    Semaphore* blocking = nullptr;
    Resolution r = resolve(head, &failure, &blocking);
    if (r == Resolution::Blocked) {
      if (blocking->link(node_)) {
        finish();
        return started;
      }
      continue;  // decided meanwhile: resolve again
    }
    std::unique_ptr<Submission> sub = std::move(held_.front());
    held_.pop_front();
    if (r == Resolution::Ready) {
      trace::released(*sub);
      if (direct && !releasedAny) {
        first = std::move(sub);
      } else {
        flushFirst();
        impl_->issue(std::move(sub));
      }
      releasedAny = true;
    } else {
      flushFirst();
      failSignals(*sub, failure);
    }
  }
  finish();
  if (drainWaiters_) heldDrained_.notify_all();
  return started;
}

Status Queue::submit(std::vector<std::unique_ptr<Submission>>& submissions) {
  Notifier::Scope scope;
  std::lock_guard<Mutex> lock(mutex_);
  if (device_->lost()) return device_->lostStatus();
  bool wasEmpty = held_.empty();
  for (auto& sub : submissions) held_.push_back(std::move(sub));
  if (wasEmpty) releaseLocked();
  return Status();
}

Status Queue::submit(std::unique_ptr<Submission> sub) {
  Notifier::Scope scope;
  std::unique_lock<Mutex> lock(mutex_);
  if (device_->lost()) return device_->lostStatus();
  if (!held_.empty()) {  // behind held submissions: in order
    held_.push_back(std::move(sub));
    return Status();
  }
  // Nothing is held, so node_ is not linked (releaseLocked unlinks it before draining held_)
  // and this submission is the head: decide it as releaseLocked would.
  Status failure;
  Semaphore* blocking = nullptr;
  switch (resolve(*sub, &failure, &blocking)) {
    case Resolution::Ready:
      trace::released(*sub);
      // Issued on this thread when the backend can (QueueImpl::startDirect): the driver calls
      // run after the lock is released, in the order startDirect took.
      if (impl_->startDirect(sub)) {
        lock.unlock();
        impl_->finishDirect();
        return Status();
      }
      impl_->issue(std::move(sub));
      return Status();
    case Resolution::Failed: failSignals(*sub, failure); return Status();
    case Resolution::Blocked: break;
  }
  held_.push_back(std::move(sub));
  if (!blocking->link(node_)) releaseLocked();  // decided meanwhile: resolve again
  return Status();
}

void Queue::evaluate() {
  Notifier::Scope scope;
  std::unique_lock<Mutex> lock(mutex_);
  if (releaseLocked(/*direct=*/true)) {
    lock.unlock();
    impl_->finishDirect();
  }
}

bool Queue::onSemaphoreEvent(WaitNode&, SemaphoreEvent event, Timepoint* timepoint) {
  // A timepoint this queue cannot wait for does not unblock it; stay linked for the value.
  if (event == SemaphoreEvent::TimepointAdded && !impl_->canWait(*timepoint)) return false;
  Notifier::schedule(this);
  return true;
}

Status Queue::waitIdle(Deadline deadline) {
  {
    std::unique_lock<Mutex> lock(mutex_);
    ++drainWaiters_;
    while (!held_.empty()) {
      if (deadline.isNever()) {
        heldDrained_.wait(lock);
      } else {
        uint64_t left = deadline.remaining();
        if (left == 0) {
          --drainWaiters_;
          return Status(Result::Timeout);
        }
        heldDrained_.wait_for(lock, std::chrono::nanoseconds(left));
      }
    }
    --drainWaiters_;
  }
  BATON_TRY(impl_->waitIdle(deadline));
  if (device_->lost()) return device_->lostStatus();
  return Status();
}

void Queue::failHeld(const Status& why) {
  Notifier::Scope scope;
  std::lock_guard<Mutex> lock(mutex_);
  if (Semaphore* s = node_.linkedTo.load(std::memory_order_acquire)) s->unlink(node_);
  while (!held_.empty()) {
    std::unique_ptr<Submission> sub = std::move(held_.front());
    held_.pop_front();
    failSignals(*sub, why);
  }
  if (drainWaiters_) heldDrained_.notify_all();
}

// ---- completion helpers for backends --------------------------------------------------------

void reachSignals(Submission& sub) {
  Notifier::Scope scope;
  for (Submission::Signal& s : sub.signals) s.semaphore->reach(s.value);
}

Status failedWait(const std::string& queueLabel, const Submission::Wait& w, Result code) {
  return Status(
      code, format("a submission on %s waited for semaphore '%s' >= %llu, which "
                   "failed: %s",
                   queueLabel.c_str(), w.semaphore->name().c_str(),
                   static_cast<unsigned long long>(w.value), w.semaphore->rootReason().c_str()));
}

void failSignals(Submission& sub, const Status& why) {
  trace::failed(sub.traceId, why);
  Notifier::Scope scope;
  Result code = why.code() == Result::ErrorDeviceLost ? Result::ErrorDeviceLost
                                                      : Result::ErrorSemaphoreFailed;
  std::string root = why.message();
  for (const Submission::Wait& w : sub.waits) {
    if (w.semaphore->failed()) {
      root = w.semaphore->rootReason();
      break;
    }
  }
  for (Submission::Signal& s : sub.signals) s.semaphore->fail(code, why.message(), root);
}

}  // namespace baton::core
