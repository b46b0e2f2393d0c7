/// \file
/// baton/queue.hpp — in-order queues, submission with semaphore waits and signals, and
/// queue-ordered (stream-ordered) allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baton/buffer.hpp"
#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/result.hpp"
#include "baton/semaphore.hpp"
#include "baton/span.hpp"

namespace baton {

/// The most SubmitInfos one submit accepts.
constexpr size_t kMaxSubmitInfos = 4096;
/// The most entries of each list (waits, command buffers, signals) in one SubmitInfo.
constexpr size_t kMaxSubmitEntries = 4096;

/// One batch, as in vkQueueSubmit2: it runs after every wait is satisfied, executes the command
/// buffers in order, then signals every signal. Waits and signals may name semaphores that any
/// queue, device, backend or the host signals; wait-before-signal is allowed.
struct SubmitInfo {
  Span<const SemaphoreValue> waits;          ///< values the batch waits for before it runs
  Span<const CommandBuffer> commandBuffers;  ///< ended command buffers, executed in this order
  Span<const SemaphoreValue> signals;        ///< values signalled once the command buffers have run
};

/// An in-order queue of a device: it runs submitted batches one after the other, and allocates
/// and frees memory in queue order. A non-owning handle (see Handle) from Device::getQueue; the
/// device owns its queues (there is nothing to destroy).
class BATON_API Queue : public Handle<Queue> {
 public:
  using Handle::Handle;

  /// Submits batches in order. Never blocks on their waits: a batch whose waits are not yet met
  /// is held (with everything behind it on this queue) and released as soon as they can be met.
  /// On a GPU backend a released batch's signals become waitable by other queues at once.
  /// Who makes a batch's driver calls on a GPU backend (the same rules as for NativeCallback): a
  /// batch that nothing holds back (nothing held or still being issued before it on this queue,
  /// every wait reached or recorded on a GPU queue, no collectives) is enqueued on the queue's
  /// stream by the calling thread, inside this call (its native callbacks run here too), when
  ///   - every earlier batch of this queue is known to have completed (a wait or query saw it, or
  ///     baton did): a submit after a wait pays no hand-off; or
  ///   - the device's issuing thread is asleep and a query of the queue's newest event finds that
  ///     the queue ran dry: one query instead of waking that thread; or
  ///   - its command buffers are all graph command buffers: a few driver calls, made here even
  ///     while earlier batches run.
  /// A held batch is issued, under the same conditions, by the thread whose signal released it.
  /// Otherwise the device's issuing thread (a baton thread) makes the driver calls, after the
  /// call returned, overlapping them with the caller's next submits.
  /// BATON_STREAM_DIRECT_ISSUE=1 in the environment makes the calling thread enqueue every batch
  /// that nothing holds back, =0 none. The issuing thread keeps at most about 1024
  /// operations the GPU has not finished on a stream; when 1024 released batches of this queue
  /// wait behind them, the call waits for room, as a driver blocks on a full stream. If a wait's
  /// semaphore fails, the batch does not execute and its signals fail with a reason naming the
  /// first failure. Validation is all-or-nothing: on an error nothing is submitted. Ownership: the
  /// caller keeps command buffers and semaphores; pending work references them, so destroying them
  /// afterwards is safe. Thread safe (several threads may submit to one queue). Returns Success,
  /// ErrorInvalidHandle, ErrorInvalidArgument (an over-long list, a null list pointer with a
  /// non-zero count), ErrorInvalidState (a command buffer without an ended recording),
  /// ErrorDeviceMismatch (a command buffer of another device, a semaphore of another instance),
  /// ErrorNonIncreasingValue (a signal not above the semaphore's current value), ErrorDeviceLost.
  [[nodiscard]] Result submit(Span<const SubmitInfo> submits) const noexcept;

  /// Queue-ordered allocation: creates *buffer now, backed by memory that is allocated in queue
  /// order once `waits` are met, before `signals` are signalled. Use the buffer only in work
  /// ordered after the signals; getDeviceAddress returns NotReady before the allocation ran.
  /// Never waits for `waits` (the driver may still throttle, as for submit). Ownership: the caller
  /// owns *buffer; release it with deallocaBuffer (or Buffer::destroy, which frees at once when no
  /// work is pending).
  /// Returns what submit returns, plus ErrorNotSupported (backend without stream-ordered
  /// allocation, a memory kind the device lacks), ErrorInvalidArgument (as for
  /// Device::createBuffer: size 0, an unknown memory kind, an unknown flag, null output;
  /// kBufferShareable, which only Device::createBuffer takes) and ErrorOutOfDeviceMemory.
  [[nodiscard]] Result allocaBuffer(Span<const SemaphoreValue> waits, const BufferCreateInfo& info,
                                    Span<const SemaphoreValue> signals,
                                    Buffer* buffer) const noexcept;

  /// Queue-ordered free: the memory of `buffer` (made by allocaBuffer) is returned in queue order
  /// after `waits`, then `signals` are signalled. Ownership: Success consumes the handle (another
  /// deallocaBuffer or Buffer::destroy of it returns ErrorInvalidHandle), whatever happens to the
  /// free later: if the driver's queue-ordered free fails when the queue reaches it
  /// (cuMemFreeAsync, hipFreeAsync), the signals fail with a reason naming that call and its error,
  /// and baton still releases the memory, with the driver's synchronous free once the work ordered
  /// before the dealloca has finished. An error result consumed nothing (ErrorDeviceLost included):
  /// the buffer is still the caller's, to free again or destroy. Returns what submit returns, plus
  /// ErrorInvalidHandle (a null or destroyed buffer), ErrorInvalidArgument (a buffer not made by
  /// allocaBuffer: destroy it with Buffer::destroy) and ErrorDeviceMismatch (a buffer of another
  /// device than this queue's).
  [[nodiscard]] Result deallocaBuffer(Span<const SemaphoreValue> waits, Buffer buffer,
                                      Span<const SemaphoreValue> signals) const noexcept;

  /// Blocks until every batch submitted to this queue before the call has finished, or timeoutNs
  /// passes. Batches held on unmet waits count as unfinished. Thread safe. Returns Success,
  /// Timeout, ErrorDeviceLost, ErrorInvalidHandle, ErrorInvalidState (at once, when called from a
  /// host call or native callback running on a queue of this queue's device: it would wait for
  /// that callback's own work).
  [[nodiscard]] Result waitIdle(uint64_t timeoutNs = kWaitForever) const noexcept;

  /// Writes the device that owns this queue. Returns Success, ErrorInvalidArgument,
  /// ErrorInvalidHandle.
  [[nodiscard]] Result getDevice(Device* device) const noexcept;
};

}  // namespace baton
