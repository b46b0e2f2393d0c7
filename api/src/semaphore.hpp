// The semaphore core (the semantics: docs/guide.md, 'The model: timelines and wait-before-signal'):
// the value, the timepoints of recorded device signals, the first failure, and the waiters to
// notify when any of these changes.
//
// Locking: one mutex per semaphore guards the timepoint list, the failure and the waiter list;
// the value is also an atomic so that queries and satisfied waits take no lock. Waiters are
// notified with the lock held and must only record the event (set a flag, unpark a thread, queue
// a scheduler pass on the Notifier): nothing that can block or take another semaphore's lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "baton/fwd.hpp"
#include "external_timeline.hpp"
#include "head_vector.hpp"
#include "mutex.hpp"
#include "object.hpp"
#include "parker.hpp"
#include "spin_budget.hpp"
#include "status.hpp"
#include "timepoint.hpp"

namespace baton::core {

class Instance;
class Semaphore;
struct WaitNode;

enum class SemaphoreEvent { Reached, Failed, TimepointAdded };

// Something waiting on semaphores: a host waiter, or a queue whose head submission is held.
class Waiter {
 public:
  virtual ~Waiter() = default;
  // Called under the semaphore's lock when `node` may be satisfied: its value was reached, the
  // semaphore failed, or a timepoint with value >= node.value was added (`timepoint`).
  // Return true to unlink the node (it is then not called again), false to stay linked.
  virtual bool onSemaphoreEvent(WaitNode& node, SemaphoreEvent event, Timepoint* timepoint) = 0;
};

// A registration on one semaphore, owned by the waiter; linked into the semaphore's list.
struct WaitNode {
  Waiter* waiter = nullptr;
  uint64_t value = 0;
  bool wantsTimepoints = false;  // also notify on TimepointAdded
  // Semaphore-owned fields (under its lock).
  WaitNode* prev = nullptr;
  WaitNode* next = nullptr;
  std::atomic<Semaphore*> linkedTo{nullptr};
};

// What a semaphore says about a wait for a value (poll()).
struct WaitState {
  enum Kind { Reached, Failed, Covered, Pending } kind = Pending;
  Ref<Timepoint> timepoint;  // Covered: the earliest recorded signal of a value >= the wait
  uint64_t timepointValue = 0;
  Status failure;  // Failed: ErrorSemaphoreFailed and the reason
};

class alignas(64) Semaphore : public Object {
 public:
  Semaphore(Ref<Instance> instance, uint64_t initialValue, std::string name);
  ~Semaphore() override;

  Instance* instance() const noexcept { return instance_.get(); }
  const std::string& name() const noexcept { return name_; }
  uint64_t handle() const noexcept { return handle_; }
  void setHandle(uint64_t h) noexcept { handle_ = h; }

  // The value reached so far; with refresh, recorded timepoints are queried first.
  uint64_t value(bool refresh = true);
  // The value reached so far, without querying timepoints: value(false), inline.
  uint64_t current() const noexcept { return value_.load(std::memory_order_acquire); }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  Status failure();  // ErrorSemaphoreFailed with the reason, or Success

  // Host signal: value must be greater than the current one.
  Status signal(uint64_t value);
  // A queue's signal executed (or a timepoint observed complete): raises the value to at least
  // `value`; a value not above the current one changes nothing (signals of different queues may
  // complete out of value order), nor does any value once the semaphore failed. `forward`: the
  // external counterparts are told of the value on this thread, whether or not this call raised
  // it (a counterpart skips what it forwarded already). A host thread that saw a
  // timepoint complete passes false when the timepoint's backend reaches the value itself and
  // forwards it promptly (Timepoint::forwardsExternals), so that it returns without making the
  // Vulkan calls (about 12 µs on the NVIDIA driver).
  void reach(uint64_t value, bool forward = true);
  // Fails the semaphore with code (ErrorSemaphoreFailed or ErrorDeviceLost) and reason; returns
  // false when it had already failed (the first failure stays).
  // `root` is the original cause carried along chains (defaults to reason), so that messages
  // stay bounded however long the chain.
  bool fail(Result code, const std::string& reason, const std::string& root = {});
  // Records a pending device signal of `value`.
  void addTimepoint(uint64_t value, Ref<Timepoint> timepoint);
  // Fails the semaphore if a pending timepoint belongs to `device` (device loss).
  void failIfPendingOn(const Device* device, const std::string& reason);

  // A queue's submission will reach (or fail) values of this semaphore from the host (host
  // calls, collectives: no event to spin on), and the host waits of its device spin `spinNs`
  // (Device::setHostWaitSpin). The latest such submission's device decides. Any thread; relaxed.
  void noteHostPublisherSpin(uint64_t spinNs) noexcept {
    if (hostPublishSpinNs_.load(std::memory_order_relaxed) != spinNs)
      hostPublishSpinNs_.store(spinNs, std::memory_order_relaxed);
  }
  // How long a host wait for a value that nothing recorded covers (another host thread publishes
  // it) polls before it sleeps: what the publishing device's host waits were told to spin
  // (noteHostPublisherSpin) when that is longer than kHostWaitSpinDefaultNs; otherwise at most
  // kHostWaitSpinDefaultNs, as long as this semaphore's publications lately took (a SpinBudget:
  // a value published within microseconds, as collectives' often are, keeps the whole spin; one
  // that comes long after the wait began, as a frame's end does, soon costs the waiter only the
  // budget's floor). BATON_HOST_PUBLISHED_SPIN=fixed always spins the whole default (the design
  // before the budget, for comparison). Any thread.
  uint64_t hostPublishedSpinNs() const noexcept;
  // What that poll found (Parker::park's outcome), to adapt the budget. Any thread.
  void noteHostPublishedSpin(const Parker::SpinOutcome& outcome) noexcept;

  WaitState poll(uint64_t value);
  // Links node unless the wait is already decided (reached, failed, or covered by a timepoint
  // and node.wantsTimepoints): then returns false and the caller polls again.
  bool link(WaitNode& node);
  void unlink(WaitNode& node);
  bool hasWaiters();

  // The root failure reason (without propagation prefixes), to keep messages from growing
  // along chains.
  std::string rootReason();
  // The reason this semaphore failed with (what Semaphore::getFailureReason reports), or "".
  std::string failureReason();

  // The external counterparts (external_timeline.hpp): a Vulkan timeline, a timeline shared with
  // other processes. addExternal only before the handle is published; the list is immutable
  // after, so readers take no lock.
  void addExternal(Ref<ExternalTimeline> external) { externals_.push_back(std::move(external)); }
  bool hasExternals() const noexcept { return !externals_.empty(); }
  const std::vector<Ref<ExternalTimeline>>& externals() const noexcept { return externals_; }
  // The counterpart of `kind`, or null.
  ExternalTimeline* external(ExternalTimeline::Kind kind) const noexcept {
    for (const Ref<ExternalTimeline>& x : externals_)
      if (x->kind() == kind) return x.get();
    return nullptr;
  }
  // The primitive through which queues of the device with handle `deviceHandle` wait for this
  // semaphore GPU-side: the first counterpart that has one on that device, or null.
  DeviceTimeline* deviceTimeline(uint64_t deviceHandle) const noexcept {
    for (const Ref<ExternalTimeline>& x : externals_)
      if (DeviceTimeline* t = x->onDevice(deviceHandle)) return t;
    return nullptr;
  }
  // Whether a counterpart hears of this semaphore's values only from the host (it has no
  // primitive on the device with handle `deviceHandle`): a queue of that device signalling the
  // semaphore must then reach the values promptly, for that counterpart's sake.
  bool forwardedFromHost(uint64_t deviceHandle) const noexcept {
    for (const Ref<ExternalTimeline>& x : externals_)
      if (!x->onDevice(deviceHandle)) return true;
    return false;
  }
  // Brings the semaphore up to what its counterparts reached or how they failed
  // (ExternalTimeline::refresh), without querying recorded signals. No lock held.
  void refreshExternals() {
    for (const Ref<ExternalTimeline>& x : externals_) x->refresh(*this);
  }
  // The handle is being destroyed: the counterparts stop forwarding (ExternalTimeline::detach).
  void detachExternals() {
    for (const Ref<ExternalTimeline>& x : externals_) x->detach();
  }

 private:
  struct Pending {
    uint64_t value;
    Ref<Timepoint> timepoint;
  };
  // tpValue: the value of `timepoint` (TimepointAdded only).
  void notifyLocked(SemaphoreEvent event, Timepoint* timepoint, uint64_t tpValue = 0);
  void dropReachedLocked(uint64_t value);

  // Layout (the class is cache-line aligned): the state that both the submitting thread and
  // completion threads write (the reference count in Object, the value, the lock, the pending
  // signals, the waiters) shares the first line, so that a change of hands costs one line, not two;
  // what submissions only read (instance, name) lies on lines that stay shared.
  std::atomic<uint64_t> value_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> hasTimepoints_{false};
  std::atomic<uint64_t> hostPublishSpinNs_{0};  // noteHostPublisherSpin
  Mutex mutex_;
  HeadVector<Pending, 32> pending_;  // ascending value
  WaitNode* waiters_ = nullptr;
  Result failureCode_ = Result::Success;
  std::string failureReason_;
  std::string rootReason_;
  Ref<Instance> instance_;
  uint64_t handle_ = 0;
  std::string name_;
  std::vector<Ref<ExternalTimeline>> externals_;  // immutable once the handle is published
  // hostPublishedSpinNs: written by host waiters on host-published values only, so on a line of
  // its own rather than among the fields every signal writes.
  alignas(64) SpinBudget hostPublishedSpin_;
};

// Host wait on several semaphores (Instance/Device::waitSemaphores, Semaphore::wait).
struct HostWaitEntry {
  Ref<Semaphore> semaphore;
  uint64_t value;
};
Status hostWait(std::vector<HostWaitEntry>& entries, WaitMode mode, Deadline deadline);

}  // namespace baton::core
