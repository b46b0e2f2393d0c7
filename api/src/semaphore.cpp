#include "semaphore.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "baton/device.hpp"  // kHostWaitSpinDefaultNs
#include "notifier.hpp"
#include "objects.hpp"
#include "parker.hpp"
#include "trace.hpp"

namespace baton::core {

namespace {

// Host waits for host-published values (Semaphore::hostPublishedSpinNs): at most the default host
// wait spin; at least about what the wake-up of a sleeping waiter costs its publisher (a futex
// syscall, 2-5 µs), so that a spin that catches nothing costs little more than sleeping at once.
// A full probe every 16 timed-out spins: a waiter whose values come late (a frame's end, three
// frames in flight) then spends the floor plus a sixteenth of the full spin per wait.
constexpr SpinLimits kHostPublishedSpinLimits{kHostWaitSpinDefaultNs, 5'000, 4, 16};

bool fixedHostPublishedSpinFromEnv() {
  const char* v = std::getenv("BATON_HOST_PUBLISHED_SPIN");
  return v && std::strcmp(v, "fixed") == 0;
}
const bool gFixedHostPublishedSpin = fixedHostPublishedSpinFromEnv();

}  // namespace

Semaphore::Semaphore(Ref<Instance> instance, uint64_t initialValue, std::string name)
    : value_(initialValue),
      instance_(std::move(instance)),
      name_(std::move(name)),
      hostPublishedSpin_(kHostPublishedSpinLimits) {
  std::lock_guard<std::mutex> lock(instance_->semaphoresMutex);
  instance_->semaphores.insert(this);
}

Semaphore::~Semaphore() {
  std::lock_guard<std::mutex> lock(instance_->semaphoresMutex);
  instance_->semaphores.erase(this);
}

uint64_t Semaphore::value(bool refresh) {
  if (refresh)
    for (const Ref<ExternalTimeline>& x : externals_) x->refresh(*this);
  if (refresh && hasTimepoints_.load(std::memory_order_acquire)) {
    // Query recorded signals outside the lock (driver calls), then publish what completed.
    std::vector<Pending> pending;
    {
      std::lock_guard<Mutex> lock(mutex_);
      pending.assign(pending_.begin(), pending_.end());
    }
    uint64_t completed = 0;
    bool forward = true;
    for (const Pending& p : pending) {
      Status s = p.timepoint->query();
      if (s.ok()) {
        if (p.value > completed) forward = !p.timepoint->forwardsExternals();
        completed = std::max(completed, p.value);
      } else if (s.isError() && s.code() != Result::ErrorSemaphoreFailed) {
        p.timepoint->device()->markLost(s.message());
        break;
      }
    }
    if (completed) reach(completed, forward);
  }
  return value_.load(std::memory_order_acquire);
}

Status Semaphore::failure() {
  if (!failed()) return Status();
  std::lock_guard<Mutex> lock(mutex_);
  return Status(failureCode_, "semaphore '" + name_ + "' failed: " + failureReason_);
}

std::string Semaphore::rootReason() {
  std::lock_guard<Mutex> lock(mutex_);
  return rootReason_;
}

std::string Semaphore::failureReason() {
  std::lock_guard<Mutex> lock(mutex_);
  return failureReason_;
}

Status Semaphore::signal(uint64_t v) {
  const uint64_t traceBegin = trace::on() ? nowNs() : 0;
  // The check below must see what the counterparts reached (they may observe it lazily).
  for (const Ref<ExternalTimeline>& x : externals_) x->refresh(*this);
  Notifier::Scope scope;
  {
    std::lock_guard<Mutex> lock(mutex_);
    if (failed_.load(std::memory_order_relaxed))
      return Status(failureCode_, "semaphore '" + name_ + "' failed: " + failureReason_);
    uint64_t current = value_.load(std::memory_order_relaxed);
    if (v <= current) {
      return error(Result::ErrorNonIncreasingValue,
                   "semaphore '%s': signal value %llu is not greater than its current value %llu",
                   name_.c_str(), static_cast<unsigned long long>(v),
                   static_cast<unsigned long long>(current));
    }
    value_.store(v, std::memory_order_release);
    trace::reached(*this, v);
    dropReachedLocked(v);
    notifyLocked(SemaphoreEvent::Reached, nullptr);
  }
  if (traceBegin) trace::hostSignal(*this, v, traceBegin);
  for (const Ref<ExternalTimeline>& x : externals_) x->onReached(*this, v);
  return Status();
}

void Semaphore::reach(uint64_t v, bool forward) {
  Notifier::Scope scope;
  {
    std::lock_guard<Mutex> lock(mutex_);
    // A failed semaphore's value stays where the failure found it: a signal completing later
    // (work released by a failure policy, a host waiter that saw its event) satisfies nothing.
    if (failed_.load(std::memory_order_relaxed)) return;
    if (v > value_.load(std::memory_order_relaxed)) {
      value_.store(v, std::memory_order_release);
      trace::reached(*this, v);
      dropReachedLocked(v);
      if (waiters_) notifyLocked(SemaphoreEvent::Reached, nullptr);  // the call only when needed
    } else if (externals_.empty() || !forward) {
      return;
    }
  }
  // Also when this call did not raise it: a host waiter may have raised it without forwarding
  // (see reach's comment), leaving that to this call.
  if (forward)
    for (const Ref<ExternalTimeline>& x : externals_) x->onReached(*this, v);
}

bool Semaphore::fail(Result code, const std::string& reason, const std::string& root) {
  Notifier::Scope scope;
  {
    std::lock_guard<Mutex> lock(mutex_);
    if (failed_.load(std::memory_order_relaxed)) return false;
    failureCode_ = code;
    failureReason_ = reason;
    rootReason_ = root.empty() ? reason : root;
    failed_.store(true, std::memory_order_release);
    pending_.clear();
    hasTimepoints_.store(false, std::memory_order_release);
    notifyLocked(SemaphoreEvent::Failed, nullptr);
  }
  trace::semaphoreFailed(*this, code, reason);
  for (const Ref<ExternalTimeline>& x : externals_) x->onFailed(*this);
  return true;
}

void Semaphore::addTimepoint(uint64_t v, Ref<Timepoint> timepoint) {
  Notifier::Scope scope;
  std::lock_guard<Mutex> lock(mutex_);
  if (v <= value_.load(std::memory_order_relaxed) || failed_.load(std::memory_order_relaxed))
    return;
  Timepoint* raw = timepoint.get();
  if (pending_.empty() || pending_.back().value < v) {
    pending_.push_back(Pending{v, std::move(timepoint)});  // in value order: the common case
  } else {
    auto at = std::upper_bound(pending_.begin(), pending_.end(), v,
                               [](uint64_t value, const Pending& p) { return value < p.value; });
    pending_.insert(at, Pending{v, std::move(timepoint)});
  }
  hasTimepoints_.store(true, std::memory_order_release);
  trace::published(*this, v);
  // Usually nobody waits (a call with an empty list was ~20 instructions of every device signal).
  if (waiters_) notifyLocked(SemaphoreEvent::TimepointAdded, raw, v);
}

void Semaphore::failIfPendingOn(const Device* device, const std::string& reason) {
  bool pendingOnDevice = false;
  {
    std::lock_guard<Mutex> lock(mutex_);
    for (const Pending& p : pending_)
      if (p.timepoint->device() == device) pendingOnDevice = true;
  }
  if (pendingOnDevice) fail(Result::ErrorDeviceLost, reason);
}

void Semaphore::dropReachedLocked(uint64_t v) {
  if (pending_.empty()) return;
  const Pending* end =
      std::upper_bound(pending_.begin(), pending_.end(), v,
                       [](uint64_t value, const Pending& p) { return value < p.value; });
  // From the front without moving the rest (HeadVector): an erase there moved every later
  // entry, O(pending signals) per reach with the lock held while a queue ran ahead of its
  // completions (about half the completion threads' instructions in the live ping-pong on the
  // fake driver, callgrind).
  pending_.popFront(static_cast<size_t>(end - pending_.begin()));
  if (pending_.empty()) hasTimepoints_.store(false, std::memory_order_release);
}

void Semaphore::notifyLocked(SemaphoreEvent event, Timepoint* timepoint, uint64_t tpValue) {
  // tpValue comes from the caller: searching pending_ for the timepoint made every device signal
  // O(pending signals), quadratic while a queue runs ahead of its completions.
  uint64_t v = value_.load(std::memory_order_relaxed);
  WaitNode* n = waiters_;
  while (n) {
    WaitNode* next = n->next;
    bool relevant =
        event == SemaphoreEvent::Failed || (event == SemaphoreEvent::Reached && n->value <= v) ||
        (event == SemaphoreEvent::TimepointAdded && n->wantsTimepoints && n->value <= tpValue);
    if (relevant && n->waiter->onSemaphoreEvent(*n, event, timepoint)) {
      if (n->prev)
        n->prev->next = n->next;
      else
        waiters_ = n->next;
      if (n->next) n->next->prev = n->prev;
      n->prev = n->next = nullptr;
      n->linkedTo.store(nullptr, std::memory_order_release);
    }
    n = next;
  }
}

WaitState Semaphore::poll(uint64_t v) {
  WaitState state;
  if (value_.load(std::memory_order_acquire) >= v) {
    state.kind = WaitState::Reached;
    return state;
  }
  std::lock_guard<Mutex> lock(mutex_);
  if (value_.load(std::memory_order_relaxed) >= v) {
    state.kind = WaitState::Reached;
  } else if (failed_.load(std::memory_order_relaxed)) {
    state.kind = WaitState::Failed;
    state.failure = Status(failureCode_, "semaphore '" + name_ + "' failed: " + failureReason_);
  } else if (!pending_.empty() && pending_.back().value >= v) {
    // The earliest pending signal >= v. A wait is usually for the newest signal recorded (a
    // queue waiting for another's last signal), while pending_ holds every signal not yet seen
    // complete (completion threads look lazily): that one is checked before a binary search.
    const size_t n = pending_.size();
    const Pending* it =
        n == 1 || pending_[n - 2].value < v
            ? pending_.end() - 1
            : std::lower_bound(pending_.begin(), pending_.end(), v,
                               [](const Pending& p, uint64_t value) { return p.value < value; });
    state.kind = WaitState::Covered;
    state.timepoint = it->timepoint;
    state.timepointValue = it->value;
  }
  return state;
}

bool Semaphore::link(WaitNode& node) {
  std::lock_guard<Mutex> lock(mutex_);
  if (value_.load(std::memory_order_relaxed) >= node.value ||
      failed_.load(std::memory_order_relaxed))
    return false;
  if (node.wantsTimepoints && !pending_.empty() && pending_.back().value >= node.value)
    return false;
  node.prev = nullptr;
  node.next = waiters_;
  if (waiters_) waiters_->prev = &node;
  waiters_ = &node;
  node.linkedTo.store(this, std::memory_order_release);
  for (const Ref<ExternalTimeline>& x : externals_) x->onWaitLinked(node.value);
  return true;
}

void Semaphore::unlink(WaitNode& node) {
  std::lock_guard<Mutex> lock(mutex_);
  if (node.linkedTo.load(std::memory_order_relaxed) != this) return;
  if (node.prev)
    node.prev->next = node.next;
  else
    waiters_ = node.next;
  if (node.next) node.next->prev = node.prev;
  node.prev = node.next = nullptr;
  node.linkedTo.store(nullptr, std::memory_order_release);
}

uint64_t Semaphore::hostPublishedSpinNs() const noexcept {
  const uint64_t asked = hostPublishSpinNs_.load(std::memory_order_relaxed);
  if (asked > kHostWaitSpinDefaultNs) return asked;
  return gFixedHostPublishedSpin ? kHostWaitSpinDefaultNs : hostPublishedSpin_.ns();
}

void Semaphore::noteHostPublishedSpin(const Parker::SpinOutcome& outcome) noexcept {
  if (gFixedHostPublishedSpin ||
      hostPublishSpinNs_.load(std::memory_order_relaxed) > kHostWaitSpinDefaultNs)
    return;
  if (outcome.caught)
    hostPublishedSpin_.caught(outcome.caughtAfterNs);
  else if (outcome.slept)
    hostPublishedSpin_.timedOut();
}

bool Semaphore::hasWaiters() {
  std::lock_guard<Mutex> lock(mutex_);
  return waiters_ != nullptr;
}

// ---- host waits ---------------------------------------------------------------------------

namespace {

// Reference-counted so that a wake deferred past the semaphore's lock (Notifier::unparkLater)
// never touches a waiter that has already returned.
class HostWaiter : public Object, public Waiter {
 public:
  bool onSemaphoreEvent(WaitNode&, SemaphoreEvent, Timepoint*) override {
    Notifier::unparkLater(Ref<Object>(this), &parker);
    return true;
  }
  Parker parker;
};

Status waitUntraced(std::vector<HostWaitEntry>& entries, WaitMode mode, Deadline deadline) {
  if (entries.empty()) return Status();
  const bool any = mode == WaitMode::Any;
  Ref<HostWaiter> waiterRef;  // made on the first sleep: satisfied waits allocate nothing
  std::vector<WaitNode> nodes;
  std::vector<size_t> pending;
  uint64_t backoffNs = 20000;
  bool refreshed = false;

  for (;;) {
    // Evaluate every entry: satisfied, failed, or still pending.
    pending.clear();
    Status firstFailure;
    for (size_t i = 0; i < entries.size(); ++i) {
      Semaphore* s = entries[i].semaphore.get();
      if (s->value(refreshed) >= entries[i].value) {
        if (any) return Status();
        continue;
      }
      if (s->failed()) {
        if (!any) return s->failure();
        if (firstFailure.ok()) firstFailure = s->failure();
        continue;
      }
      pending.push_back(i);
    }
    // ANY: nothing is reached (that returned above), so a failed entry ends the wait now;
    // waiting on for the others would contradict "returns when a waited semaphore fails".
    if (any && !firstFailure.ok()) return firstFailure;
    if (pending.empty()) return Status();
    if (!refreshed) {  // one pass that queries recorded device signals before any blocking
      refreshed = true;
      continue;
    }
    refreshed = false;
    if (deadline.expired()) return Status(Result::Timeout);

    // Native waits on recorded device signals.
    std::vector<WaitState> covered;
    std::vector<size_t> coveredIndex;
    for (size_t i : pending) {
      WaitState st = entries[i].semaphore->poll(entries[i].value);
      if (st.kind == WaitState::Covered) {
        covered.push_back(std::move(st));
        coveredIndex.push_back(i);
      }
    }
    if (!covered.empty() && (!any || pending.size() == 1)) {
      // ALL: wait for the entries one at a time; ANY with one entry left: wait for it.
      WaitState& st = covered.front();
      Status s = st.timepoint->wait(deadline);
      if (s.ok()) {
        entries[coveredIndex.front()].semaphore->reach(st.timepointValue,
                                                       !st.timepoint->forwardsExternals());
      } else if (s.code() == Result::Timeout) {
        return s;
      } else if (s.code() != Result::ErrorSemaphoreFailed) {  // that one: the loop sees it
        st.timepoint->device()->markLost(s.message());
      }
      continue;
    }

    // Sleep until a semaphore event: link a node on every pending semaphore. With recorded
    // device signals among several ANY entries, nobody will notify their completion, so the
    // sleep is bounded and they are queried on waking (backoff 20 µs .. 1 ms).
    if (!waiterRef) waiterRef = makeRef<HostWaiter>();
    HostWaiter& waiter = *waiterRef;
    nodes = std::vector<WaitNode>(pending.size());
    bool decided = false;
    size_t linked = 0;
    for (; linked < pending.size(); ++linked) {
      WaitNode& n = nodes[linked];
      n.waiter = &waiter;
      n.value = entries[pending[linked]].value;
      // With recorded signals among the entries, the loop polls them; a node that also wanted
      // timepoints would refuse to link (the wait is covered) and the loop would spin.
      n.wantsTimepoints = covered.empty();
      if (!entries[pending[linked]].semaphore->link(n)) {
        decided = true;
        break;
      }
    }
    if (!decided) {
      Deadline until = deadline;
      if (!covered.empty()) {
        until = Deadline::after(backoffNs);
        if (!deadline.isNever() && deadline.ns < until.ns) until = deadline;
        backoffNs = std::min<uint64_t>(backoffNs * 2, 1000000);
        refreshed = true;  // query the recorded signals on the next pass
      }
      // Nothing to spin on: a value another host thread publishes (the host backend, host calls,
      // collectives: see impl/stream/collectives.hpp), often microseconds away. Polled as long as
      // the semaphores' publications lately took (Semaphore::hostPublishedSpinNs), then a sleep.
      if (covered.empty()) {
        uint64_t spinNs = 0;
        for (size_t i : pending)
          spinNs = std::max(spinNs, entries[i].semaphore->hostPublishedSpinNs());
        Parker::SpinOutcome outcome;
        waiter.parker.park(until, spinNs, &outcome);
        for (size_t i : pending) entries[i].semaphore->noteHostPublishedSpin(outcome);
      } else {
        waiter.parker.park(until);
      }
    }
    for (size_t i = 0; i < linked; ++i) entries[pending[i]].semaphore->unlink(nodes[i]);
    // A wake deferred past a semaphore's lock may still land after this reset; the next park
    // then returns at once and the loop simply looks again.
    waiter.parker.reset();
    if (deadline.expired()) {
      // One last look, so that a value reached exactly at the deadline is not a timeout.
      refreshed = true;
      deadline = Deadline::immediate();
    }
  }
}

}  // namespace

Status hostWait(std::vector<HostWaitEntry>& entries, WaitMode mode, Deadline deadline) {
  if (!trace::on()) [[likely]]
    return waitUntraced(entries, mode, deadline);
  trace::HostWaitSlice traced(entries, mode);
  Status s = waitUntraced(entries, mode, deadline);
  traced.setResult(s.code());
  return s;
}

}  // namespace baton::core
