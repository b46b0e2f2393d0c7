// Timepoint: a device-side signal that a backend has *recorded* (issued to its stream), or is
// about to record, but that may not have executed yet — on CUDA/HIP, a pooled event. A semaphore
// keeps the timepoints of its pending device signals (Semaphore::addTimepoint); they let
//   - a queue of the same backend wait GPU-side for a value as soon as its signal is recorded
//     (the deferred-submission scheduler releases it then, not when the value is reached);
//   - a host waiter wait on the native primitive (cuEventSynchronize) and advance the value when
//     it observes completion.
// The host backend signals directly and records no timepoints.
#pragma once

#include <cstdint>

#include "baton/fwd.hpp"
#include "clock.hpp"
#include "object.hpp"
#include "status.hpp"

namespace baton::core {

class Device;

class Timepoint : public Object {
 public:
  Timepoint(Device* device, BackendKind backend);
  ~Timepoint() override;

  // The device whose work signals this timepoint (for device loss), and its backend.
  Device* device() const noexcept { return device_.get(); }
  BackendKind backend() const noexcept { return backend_; }

  // Non-blocking. Success when the recorded work has completed, NotReady when not yet, an error
  // when it never will: ErrorDeviceLost or ErrorDriver, or ErrorSemaphoreFailed when the work
  // failed before its signal and the signalled semaphores failed (the device is fine). Thread
  // safe.
  virtual Status query() = 0;
  // Blocks until completion (Success), the deadline (Timeout) or an error. Must not burn a core
  // beyond a short spin. Thread safe.
  virtual Status wait(Deadline deadline) = 0;
  // Something on the host needs this timepoint's completion observed promptly without waiting
  // for it itself: a queue of another backend holds a submission until the value it signals is
  // reached. Backends that observe completions lazily (the stream backends look only when asked,
  // see impl/stream/completion.hpp) then watch it actively until it completes. Non-blocking, any
  // thread, any lock held; repeated calls are harmless. The default does nothing.
  virtual void watch() {}
  // Whether this timepoint's backend itself reaches, promptly once the work completed, the values
  // it signals on semaphores with a mirror (a bridged Vulkan semaphore), so that the mirror is
  // told of them without a host thread that saw the completion first (Semaphore::reach's
  // `forward`). The default, false, makes that thread forward them. Thread safe.
  virtual bool forwardsExternals() const { return false; }

 private:
  Ref<Device> device_;  // keeps the backend device (its event pool) alive
  BackendKind backend_;
};

}  // namespace baton::core
