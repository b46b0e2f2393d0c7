// The backend interface (DESIGN §2, §8: the frontend validates, backends trust).
//
// The core owns everything that is backend-independent: validation, handles, the semaphore
// timeline, host waits, the deferred-submission scheduler, failure propagation and device loss.
// A backend supplies devices, queues that execute released submissions in order, memory, and —
// for device signals that complete asynchronously — Timepoints attached to semaphores.
//
// Contract of a released submission (QueueImpl::issue): every wait left in it carries a timepoint
// the queue accepted (canWait); waits already reached have been removed. The backend must, in
// queue order, wait for those timepoints, execute the commands, and then either complete every
// signal (Semaphore::reach, directly or through a timepoint it attaches with addTimepoint and
// later observes) or fail every signal (failSignals) with the reason. Nothing may be dropped:
// a signal that is neither reached nor failed leaves its waiters hanging.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "baton/buffer.hpp"
#include "baton/command_buffer.hpp"
#include "baton/physical_device.hpp"
#include "clock.hpp"
#include "object.hpp"
#include "semaphore.hpp"
#include "status.hpp"

namespace baton::core {

class Device;
class Queue;
class Buffer;
class CommandList;

// Memory a backend allocated for a Buffer.
struct Allocation {
  void* host = nullptr;        // host-visible address, or null
  uint64_t deviceAddress = 0;  // address device work uses
  uint64_t size = 0;
  void* native = nullptr;  // backend-private
};

struct Submission {
  enum class Kind { Commands, Alloca, Dealloca };
  struct Wait {
    Ref<Semaphore> semaphore;
    uint64_t value;
    Ref<Timepoint> timepoint;  // set by the scheduler when a recorded signal covers the wait
  };
  struct Signal {
    Ref<Semaphore> semaphore;
    uint64_t value;
  };
  Kind kind = Kind::Commands;
  std::vector<Wait> waits;
  std::vector<Ref<CommandList>> commandLists;
  std::vector<Signal> signals;
  Ref<Buffer> buffer;  // Alloca, Dealloca
};

// Completes every signal of `sub` (value reached).
void reachSignals(Submission& sub);
// Fails every signal of `sub` with ErrorSemaphoreFailed (or `why`'s code when it is
// ErrorDeviceLost) and a reason built from `why`.
void failSignals(Submission& sub, const Status& why);

class QueueImpl {
 public:
  virtual ~QueueImpl() = default;
  // Whether this queue can wait for `timepoint` itself (GPU-side or on its own thread), so that
  // a submission waiting on it may be issued before the value is reached.
  virtual bool canWait(const Timepoint& timepoint) const = 0;
  // Takes a released submission; see the contract above. Called in submission order, never
  // concurrently for one queue, under the core queue's lock and inside a Notifier::Scope.
  virtual void issue(std::unique_ptr<Submission> submission) = 0;
  // Blocks until everything issued so far has finished, or the deadline (Timeout).
  virtual Status waitIdle(Deadline deadline) = 0;
  // What native callbacks receive.
  virtual NativeQueue native() const = 0;
};

class DeviceImpl {
 public:
  virtual ~DeviceImpl() = default;
  virtual Status createQueue(uint32_t index, Queue& queue, std::unique_ptr<QueueImpl>* out) = 0;
  // Blocking allocation (Device::createBuffer).
  virtual Status allocate(const BufferCreateInfo& info, Allocation* out) = 0;
  // Frees memory of allocate() or of an executed Alloca.
  virtual void free(const Allocation& allocation) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  // Loads the driver and enumerates devices. Success, or ErrorBackendUnavailable with the
  // reason (paths tried, the driver's error).
  virtual Status load() = 0;
  virtual uint32_t deviceCount() const = 0;
  virtual PhysicalDeviceProperties properties(uint32_t ordinal) const = 0;
  virtual Status createDevice(uint32_t ordinal, Device& device,
                              std::unique_ptr<DeviceImpl>* out) = 0;
};

// The backends built into this library, host first. Defined in registry.cpp.
std::vector<std::unique_ptr<Backend>> createBackends();
// Whether a backend kind is compiled in.
bool backendCompiled(BackendKind kind);

}  // namespace baton::core
