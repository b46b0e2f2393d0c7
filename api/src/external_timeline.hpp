// External timelines: the counterparts of a baton semaphore that live outside this process's core
// (a Vulkan timeline semaphore, a timeline shared with other processes), and the primitives
// through which a device's queues wait for and signal such a counterpart in stream order
// (docs/architecture.md, 'External timelines').
//
// A semaphore has any number of counterparts (Semaphore::addExternal), attached before its handle
// is published and immutable after. Each counterpart is told of every value the semaphore reaches
// and of its failure, brings the semaphore up to what its own side reached when asked (refresh),
// and says per device whether that device's queues can wait for and signal it GPU-side
// (onDevice): a DeviceTimeline, whose enqueueWait / enqueueSignal the stream machinery calls
// without knowing which kind it is. Mesa's vk_sync types are the model: one interface, a type per
// kind of payload, the choice made by a virtual call.
#pragma once

#include <cstdint>

#include "object.hpp"
#include "status.hpp"

namespace baton::core {

class Semaphore;

// Where DeviceTimeline::watch reports: see there.
class WatchSink {
 public:
  virtual void reached(uint64_t value) = 0;

 protected:
  ~WatchSink() = default;
};

// A counterpart imported into (or registered with) one device, which that device's queues wait
// for and signal GPU-side, in stream order. Owned through Refs by its ExternalTimeline; queues
// only borrow it, through the Ref<Semaphore> their submissions hold. An implementation releases
// its driver object when the last reference goes, which is after every submission that used it
// has finished (a submission's record keeps its semaphores).
class DeviceTimeline : public Object {
 public:
  explicit DeviceTimeline(uint64_t deviceHandle) : deviceHandle_(deviceHandle) {}
  // The handle of the core Device it belongs to (handles are never reused, pointers are).
  uint64_t deviceHandle() const noexcept { return deviceHandle_; }
  // Enqueues, on `stream` (the backend's native stream; the device's context is current), a wait
  // until the counterpart's value is at least `value` / a signal of `value` after the stream's
  // earlier work. Called on the queue's issuing thread. Errors are the driver's, with context
  // added by the caller.
  virtual Status enqueueWait(void* stream, uint64_t value) = 0;
  virtual Status enqueueSignal(void* stream, uint64_t value) = 0;

  // Host access through the device, for a counterpart that only the device can see (a Vulkan
  // timeline imported from its descriptor alone: the driver waits for it and signals it in a
  // stream, and cannot read it). The device's context need not be current; thread safe.
  //
  // hostSignal: enqueues a signal of `value` on a stream of the primitive's own, after the earlier
  // ones made this way, and returns (the signal takes effect when that stream runs it, at once).
  virtual Status hostSignal(uint64_t value) {
    (void)value;
    return Status(Result::ErrorNotSupported, "this device timeline has no host signal");
  }
  // watch: calls sink->reached(value) once the counterpart's value is at least `value`, on a
  // driver thread that must not call the driver: a sink only notes the value and wakes a thread
  // of its own. Each watch waits on a stream of its own, so a lower value is never held up behind
  // a higher one. `keep` is held until the call (the sink's owner). A watch for a value that never
  // comes stays pending, and keeps this primitive alive, until the process ends.
  virtual Status watch(uint64_t value, WatchSink* sink, Ref<Object> keep) {
    (void)value, (void)sink, (void)keep;
    return Status(Result::ErrorNotSupported, "this device timeline cannot be watched");
  }

 private:
  uint64_t deviceHandle_;
};

// A counterpart of a semaphore. It is told of every value rise and of the failure, on the thread
// that caused the change, after the semaphore's lock is released (so that it may call its
// driver), and forwards them. Device signals arrive as rises too: backends reach() values when
// they observe completion. Attached before the semaphore's handle is published; detach() is
// called while the handle is destroyed, after which the counterpart must not touch its external
// object or the semaphore.
class ExternalTimeline : public Object {
 public:
  // What the counterpart is, for the entry points that report on one kind
  // (getVulkanSemaphoreInterop) and for messages.
  // Vulkan: a VkSemaphore of this process (importVulkanSemaphore); VulkanFd: a Vulkan timeline
  // known by its descriptor alone (importVulkanSemaphoreFd); Shared: a timeline shared with other
  // processes.
  enum class Kind : uint8_t { Vulkan, VulkanFd, Shared };
  virtual Kind kind() const noexcept = 0;
  virtual void onReached(Semaphore& semaphore, uint64_t value) = 0;
  virtual void onFailed(Semaphore& semaphore) = 0;
  virtual void detach() = 0;
  // The primitive through which queues of the device with handle `deviceHandle` wait for and
  // signal this counterpart GPU-side, or null (that device has none: its queues wait until the
  // value is reached on the host, and the counterpart hears of it through onReached). Thread
  // safe; the same object for a device for the counterpart's lifetime once non-null.
  virtual DeviceTimeline* onDevice(uint64_t deviceHandle) noexcept {
    (void)deviceHandle;
    return nullptr;
  }
  // A queue enqueued a GPU-side signal of `value` on onDevice(): the counterpart will have the
  // value without forwarding when it is reached. Called on the issuing thread, before the
  // signal's timepoint is added.
  virtual void onDeviceSignal(uint64_t value) { (void)value; }
  // A waiter (a host wait about to sleep, a held submission) linked on the semaphore for `value`,
  // above its current one: a counterpart that observes its side only on demand starts now.
  // Called under the semaphore's lock: must not call the semaphore, and should be cheap.
  virtual void onWaitLinked(uint64_t value) { (void)value; }
  // A submission that signals `value` was accepted (Queue::submit, on the submitting thread):
  // the value is promised, not reached. Should be cheap.
  virtual void onSignalSubmitted(uint64_t value) { (void)value; }
  // Brings the semaphore up to the counterpart's value (Semaphore::reach with what the other side
  // reached), for reads that must not lag: Semaphore::value(refresh = true), a host signal's
  // check that it raises the value. Called with no lock held.
  virtual void refresh(Semaphore& semaphore) { (void)semaphore; }
};

}  // namespace baton::core
