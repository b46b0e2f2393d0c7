/// \file
/// baton/device.hpp — a logical device: its queues, command buffers and buffers.
#pragma once

#include <cstdint>

#include "baton/buffer.hpp"
#include "baton/command_buffer.hpp"
#include "baton/communicator.hpp"
#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/physical_device.hpp"
#include "baton/queue.hpp"
#include "baton/result.hpp"
#include "baton/semaphore.hpp"
#include "baton/span.hpp"
#include "baton/unique.hpp"

namespace baton {

/// The most queues any device accepts (a physical device may accept fewer: maxQueues).
constexpr uint32_t kMaxQueues = 64;

/// Device::setHostWaitSpin: a new device's spin (50 µs).
constexpr uint64_t kHostWaitSpinDefaultNs = 50'000;
/// Device::setHostWaitSpin: the value that spins for as long as a wait lasts.
constexpr uint64_t kHostWaitSpinForever = UINT64_MAX;

/// What Instance::createDevice needs. Read during the call only.
struct DeviceCreateInfo {
  uint32_t queueCount = 1;  ///< 1..PhysicalDeviceProperties::maxQueues
  /// Copied; names the device in messages. Every message names a device as
  /// "device #<n> '<debugName>' (<backend>:<ordinal>)" — "device #2 'physics' (cuda:0)", or
  /// "device #2 (cuda:0)" without a name — where n numbers the instance's devices from 1 in
  /// creation order, so that two devices on one physical device are told apart; its queues are
  /// "queue <index> of <device>".
  const char* debugName = nullptr;
};

/// A logical device on one physical device: it owns its queues and creates command buffers and
/// buffers. A non-owning handle (see Handle); Instance::createDevice makes one, destroy() ends it,
/// UniqueDevice owns one.
class BATON_API Device : public Handle<Device> {
 public:
  using Handle::Handle;

  /// Destroys the device. Held submissions on its queues fail their signals (reason
  /// "<device> was destroyed before this submission ran"); issued work is waited for. Command
  /// buffers and buffers still alive are destroyed too, reported through the debug callback, and
  /// the result is then ErrorObjectInUse; the device is gone in every case. Not to be called
  /// concurrently with other calls on this device.
  /// Returns Success, ErrorObjectInUse, ErrorInvalidHandle, ErrorInvalidState (called from a host
  /// call or native callback running on this device's queues: it would wait for that callback's
  /// own work; the device is left as it was).
  [[nodiscard]] Result destroy() const noexcept;

  /// Writes queue `index` (0..queueCount-1); queues are owned by the device. Thread safe.
  /// Returns Success, ErrorInvalidArgument (index out of range, null), ErrorInvalidHandle.
  [[nodiscard]] Result getQueue(uint32_t index, Queue* queue) const noexcept;
  /// Writes the number of queues. Returns Success, ErrorInvalidArgument, ErrorInvalidHandle.
  [[nodiscard]] Result getQueueCount(uint32_t* count) const noexcept;
  /// Writes the physical device this device was created on. Thread safe. Returns Success,
  /// ErrorInvalidArgument (null), ErrorInvalidHandle.
  [[nodiscard]] Result getPhysicalDevice(PhysicalDevice* physicalDevice) const noexcept;

  /// Creates an empty command buffer for this device's queues. Ownership: the caller owns it.
  /// Thread safe. Returns Success, ErrorInvalidArgument, ErrorInvalidHandle, ErrorDeviceLost.
  [[nodiscard]] Result createCommandBuffer(CommandBuffer* commandBuffer) const noexcept;
  /// The same, with parameters (see CommandBufferCreateInfo). Returns also ErrorInvalidArgument
  /// (a usage that is not one of its enumerators) and ErrorNotSupported (Graph usage on a GPU
  /// device whose driver has no graph entry points: kCapabilityGraphCommandBuffers is clear).
  [[nodiscard]] Result createCommandBuffer(const CommandBufferCreateInfo& info,
                                           CommandBuffer* commandBuffer) const noexcept;

  /// Allocates a buffer now (blocking; see Queue::allocaBuffer for queue-ordered allocation).
  /// Ownership: the caller owns it. Thread safe. Returns Success, ErrorInvalidArgument (size 0,
  /// a MemoryKind value that is not one of its enumerators, an unknown flag, null output),
  /// ErrorNotSupported (a memory kind the device lacks: see kCapabilityDeviceMemory,
  /// kCapabilityHostPinnedMemory; kBufferShareable on a device without kCapabilityShareableMemory,
  /// or with HostPinned memory on a GPU), ErrorOutOfDeviceMemory, ErrorOutOfHostMemory,
  /// ErrorDeviceLost, ErrorDriver (a driver error while making shareable memory: the message names
  /// the call), ErrorInvalidHandle.
  [[nodiscard]] Result createBuffer(const BufferCreateInfo& info, Buffer* buffer) const noexcept;

  /// Maps memory another buffer exported (Buffer::exportFd, in this process or another one) into
  /// this device: a new buffer, of info.size bytes, whose memory is the exported buffer's (writes
  /// of either are the other's; order them with shared semaphores). The importing buffer is
  /// shareable itself (it exports the same memory again). Its memory lives as
  /// kBufferShareable says: on CUDA and the host backend until the last buffer and descriptor of it
  /// in any process is gone; on HIP while the exporting buffer lives, which holds its free back
  /// until this buffer is destroyed. Ownership: the caller owns *buffer; info.fd stays the
  /// caller's. Thread safe.
  /// Returns Success;
  /// ErrorInvalidArgument: null output, a negative, closed or foreign descriptor (a pipe, a
  /// shared semaphore's, a file), a size of 0 or other than the exported buffer's, a memory kind
  /// other than the exported one, or a HIP buffer whose exporter was destroyed since;
  /// ErrorDeviceMismatch: memory of another device (its UUID or ordinal differs) or of another
  /// backend's device (a host-backend or HIP buffer's descriptor given to a device of another
  /// backend; a CUDA buffer's descriptor is the driver's, which says nothing about itself: on
  /// another backend's device it is ErrorInvalidArgument, whose message says so);
  /// ErrorNotSupported: a device without kCapabilityShareableMemory (the message names the
  /// device and what its driver lacks); ErrorOutOfDeviceMemory (no address range for it),
  /// ErrorOutOfHostMemory, ErrorDeviceLost, ErrorDriver (another driver error, named),
  /// ErrorInvalidHandle.
  [[nodiscard]] Result importBuffer(const BufferImportInfo& info, Buffer* buffer) const noexcept;

  /// Waits for every queue of the device to be idle (see Queue::waitIdle; the same results,
  /// ErrorInvalidState from inside a callback running on any of its queues). Thread safe.
  [[nodiscard]] Result waitIdle(uint64_t timeoutNs = kWaitForever) const noexcept;

  /// The same as Instance::waitSemaphores; additionally returns ErrorDeviceLost when this
  /// device is lost. Thread safe.
  [[nodiscard]] Result waitSemaphores(Span<const SemaphoreValue> waits, WaitMode mode,
                                      uint64_t timeoutNs) const noexcept;

  /// How long a host wait for a signal of this device spins before it sleeps: CPU time traded
  /// for wake-up latency, as CUDA's spin and blocking-sync scheduling trade them. It applies to
  /// a host wait (Semaphore::wait, Instance::waitSemaphores, Device::waitSemaphores) for a value
  /// that one recorded signal of a submission to this device's queues covers: the waiting
  /// thread queries the signal's driver event, which sees the GPU finish as soon as the driver
  /// does, and keeps its core busy meanwhile. When the spin ends first, the thread sleeps until
  /// the queue's completion thread, itself asleep in the driver until the GPU's interrupt, wakes
  /// it, about when a raw blocking-sync event would: later by tens of microseconds than a
  /// spinning wait (docs/performance.md, "Host waits", has the figures).
  /// `spinNs`: kHostWaitSpinDefaultNs (50 µs) on a new device; 0 sleeps at once;
  /// kHostWaitSpinForever spins for the whole wait (past the first 5 µs, yielding the core
  /// between queries to other runnable threads). A wait for a value that a submission to this
  /// device publishes from the host (one with host calls or collectives: no event to spin on)
  /// polls that long too when it is longer than the default (the latest such submission's device
  /// decides); otherwise it polls up to 50 µs, as long as that semaphore's values lately took to
  /// come (down to 5 µs while they come later than the poll lasts, with a full poll now and then
  /// to notice when they come sooner again). Waits
  /// that no single recorded signal covers (a value not submitted yet, WaitMode::Any over several
  /// pending semaphores) sleep as before.
  /// Waits that start after the call use it. No effect on a host-backend device, whose queue
  /// threads wake waiters as they signal. Thread safe. Returns Success, ErrorInvalidHandle.
  [[nodiscard]] Result setHostWaitSpin(uint64_t spinNs) const noexcept;

  /// Creates this device's rank of a communicator group (see baton/communicator.hpp;
  /// ncclCommInitRankConfig, non-blocking): blocks until every rank of the group has arrived, at
  /// most info.timeoutNs — a rank that never arrives is an error then, not a hang. Ownership:
  /// the caller owns *communicator. Thread safe. Returns Success, ErrorInvalidArgument (rankCount
  /// 0, rank out of range, null output), ErrorInvalidHandle, ErrorNotSupported (the host backend,
  /// or no collective library: the message says why), ErrorDeviceLost, ErrorDriver (the
  /// library's error with its message — ids that do not match, two ranks on one GPU — or ranks
  /// that did not arrive within the timeout).
  [[nodiscard]] Result createCommunicator(const struct CommunicatorCreateInfo& info,
                                          Communicator* communicator) const noexcept;
};

/// A Device that is destroyed with its owner (see Unique).
using UniqueDevice = Unique<Device>;

}  // namespace baton
