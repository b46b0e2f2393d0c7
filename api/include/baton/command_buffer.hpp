/// \file
/// baton/command_buffer.hpp — recorded work for a device's queues.
///
/// Record between begin() and end(), then submit to any queue of the same device, as often as
/// wanted: a submission keeps the recording it was given, so begin() may re-record while earlier
/// submissions are still pending. Recording is not thread safe: one thread at a time per command
/// buffer (external synchronisation, as in Vulkan). Commands execute in order.
///
/// Graph command buffers (CommandBufferUsage::Graph): on the CUDA and HIP backends, end() turns
/// the recording into driver graphs (CUDA graphs, HIP graphs) and instantiates them; each
/// submission then launches them on the queue's stream, one driver call per graph instead of one
/// per command. Submission semantics do not change: waits, signals, ordering, host-call failure
/// and device loss behave as for a replayed command buffer. How commands map:
///   - copyBuffer, fillBuffer, updateBuffer: memcpy and memset nodes (update's bytes are copied
///     into page-locked memory that the recording owns);
///   - hostCall: a host node. A host call followed by other work ends a graph: the work after it
///     is a second graph, launched once the host calls' results are known (a failure must stop
///     it), exactly where a replayed submission is suspended;
///   - native: only callbacks recorded with kNativeCapturable. end() calls each of them once, on a
///     capture stream of the device (NativeQueue::queueIndex is kCaptureQueueIndex), and what it
///     enqueued there becomes a child graph that every submission replays; it is not called at
///     submission;
///   - collectives: each run of consecutive collective commands is captured from the collective
///     library (NCCL, RCCL) into a child graph, at the first submission (not at end(): a
///     communicator's first collectives wait in the library for every peer). The communicators
///     keep that graph; when one of them fails or is destroyed, the graph is dropped and later
///     submissions fail (ErrorInvalidState): record again. Each run of collectives is a graph of
///     its own (the work before it and the work after it are other graphs), so that the failure
///     watch, which times that graph's launch against the communicator's timeout, times the
///     collectives alone. Drive one GPU per process for this: end() returns ErrorNotSupported
///     for collectives of a communicator with other ranks in this process (made together by
///     createCommunicators, or split or shrunk from one) while calls are blocking (the default;
///     BATON_NCCL_BLOCKING_CALLS=0 lifts it): on two H200s NCCL 2.28 invalidated such captures
///     and the devices were lost (the guide, "One GPU per process for collectives in graphs");
///   - the commands of one graph form a linear chain of dependencies, in recording order.
/// Re-recording (begin ... end) updates in place (cuGraphExecUpdate / hipGraphExecUpdate) an
/// executable graph of an earlier recording of the same shape that no submission uses any more
/// (its submissions completed and were retired: Queue::waitIdle guarantees both; in a frame loop
/// those of earlier frames are), and instantiates a new one otherwise (always, for a graph that
/// holds collectives). Buffers must have memory at end() (a queue-ordered alloca must have run),
/// or at the first submission for a graph that holds collectives: the graph holds their device
/// addresses. Launches
/// of one executable graph are ordered by the driver, on any stream: two submissions of one graph
/// command buffer to two queues run one after the other, in submission order, even when no
/// semaphore orders them. The host backend accepts graph command buffers and replays them
/// (capturable native callbacks then run at each submission, as other native callbacks do).
#pragma once

#include <cstddef>
#include <cstdint>

#include "baton/communicator.hpp"
#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/image.hpp"
#include "baton/result.hpp"
#include "baton/span.hpp"
#include "baton/unique.hpp"

namespace baton {

/// How a command buffer runs its recording (CommandBufferCreateInfo::usage).
enum class CommandBufferUsage : uint32_t {
  Replay = 0,  ///< each submission issues the recorded commands one by one (the default)
  Graph = 1,   ///< end() builds driver graphs; each submission launches them (file comment)
};

/// Parameters of Device::createCommandBuffer.
struct CommandBufferCreateInfo {
  CommandBufferUsage usage = CommandBufferUsage::Replay;  ///< replayed, or built into graphs
  const char* debugName = nullptr;  ///< copied; names the command buffer in messages (may be null)
};

/// CommandBuffer::native flag: the callback may be captured into a graph. Its contract: it only
/// enqueues work on NativeQueue::stream (kernels, copies, library calls that support stream
/// capture), makes no synchronising call (stream or device synchronize, event query or
/// synchronize, blocking allocation), calls no baton entry point, and enqueues the same work
/// every time it is called. A graph command buffer records native callbacks only with this flag.
constexpr uint32_t kNativeCapturable = 1u << 0;

/// CommandBuffer::hostCall flag: the call's error return does not fail the submission. It is
/// reported through the debug callback (a warning naming the queue and the result), the commands
/// after it run, and the submission's signals are published as a replayed submission without host
/// calls publishes them: GPU-side, as soon as the GPU reaches them, rather than by baton's
/// completion thread once the host call has run (a host round trip that a waiter on the next
/// value of the same semaphore pays). For callbacks that only observe or account (a frame's
/// bookkeeping), as cuLaunchHostFunc's void functions do. A graph command buffer keeps such host
/// calls inside the graph (no new graph after them).
constexpr uint32_t kHostCallInfallible = 1u << 0;

/// The most bytes one updateBuffer records (the data is copied at record time).
constexpr uint64_t kMaxUpdateSize = 65536;

/// Runs on the host, in queue order, when a submission reaches it. Returning an error code fails
/// the submission: its signal semaphores fail with a reason naming the code; commands after it in
/// the same submission do not run. It must not block on work queued behind it, and must not
/// call the native driver's stream API (CUDA forbids it inside host functions). On GPU backends it
/// runs inside the driver's host function.
/// Calling baton from inside (host calls and native callbacks alike, every backend): signal, fail,
/// query and wait for semaphores (a wait for work queued behind the callback never ends: give it
/// a timeout), submit to any queue including its own, create and destroy semaphores, command
/// buffers (also the one it runs from: the submission keeps what it runs) and buffers, and
/// queue-ordered alloca/dealloca are honoured. What would wait for the callback's own device —
/// Queue::waitIdle or Device::waitIdle of that device, Device::destroy of it, Instance::destroy of
/// its instance — returns ErrorInvalidState at once and changes nothing.
using HostCallback = Result (*)(void* userData);

/// The backend's native queue, handed to native callbacks at execution time.
struct NativeQueue {
  BackendKind backend = BackendKind::Host;  ///< the backend of the queue the callback runs on
  void* stream = nullptr;                   ///< CUstream / hipStream_t; null on the host backend
  int32_t deviceOrdinal = 0;  ///< the CUDA/HIP device ordinal (PhysicalDeviceProperties::ordinal)
  uint32_t queueIndex = 0;    ///< the queue's index in its device (Device::getQueue), or
                              ///< kCaptureQueueIndex
};

/// NativeQueue::queueIndex while end() captures a graph command buffer's capturable native
/// callback: the stream is then a capture stream of the device, not a queue's.
constexpr uint32_t kCaptureQueueIndex = 0xFFFFFFFFu;

/// Runs on a host thread when the submission is issued, in queue order, with the native stream:
/// enqueue work there (kernels, library calls) and it executes in order with the rest of the
/// submission. On the host backend it runs on the queue's worker thread and its own work is the
/// work. An error return fails the submission like a HostCallback. On GPU backends it runs with
/// the device current (CUDA: its primary context; HIP: hipSetDevice to its ordinal, so runtime
/// calls target it; the calling thread's own context is restored afterwards), on one of three
/// threads:
///   - the thread that called Queue::submit, inside that call, when nothing is held or still being
///     issued before the submission on its queue, each of its waits is reached or recorded on a
///     GPU queue, it has no collectives, the submit is made outside any baton callback, and one
///     of these holds: every earlier submission of the queue is known to have completed; the
///     device's issuing thread is asleep and a query of the queue's newest event finds that the
///     queue ran dry; its command buffers are all graph command buffers (such a submission
///     runs no callback: its capturable ones ran at end()). BATON_STREAM_DIRECT_ISSUE=1:
///     whenever nothing holds it back; =0: never;
///   - for a submission that was held (wait-before-signal), under the same conditions, the thread
///     whose signal released it, inside that call: a Semaphore::signal, a host queue's worker
///     thread, or baton's bridge thread for a value Vulkan signalled;
///   - otherwise the device's issuing thread (one baton thread per device enqueues the held and
///     released submissions of all its queues, in each queue's order), after the submit returned.
/// Which one it is can change from one submission to the next (Queue::submit states the same
/// rules).
/// Either way it must enqueue work and return, never block waiting for other baton work (the
/// queue, and on the issuing thread the device's other queues, wait meanwhile).
/// What it may call of baton: as for HostCallback.
using NativeCallback = Result (*)(const NativeQueue& queue, void* userData);

/// Recorded work for a device's queues (see baton/command_buffer.hpp): commands recorded between
/// begin() and end(), submitted with Queue::submit. A non-owning handle (see Handle);
/// Device::createCommandBuffer makes one, destroy() ends it, UniqueCommandBuffer owns one.
class BATON_API CommandBuffer : public Handle<CommandBuffer> {
 public:
  using Handle::Handle;

  /// Destroys the command buffer; pending submissions keep their recording. Thread safe.
  /// Returns Success, ErrorInvalidHandle.
  [[nodiscard]] Result destroy() const noexcept;

  /// Starts a new recording, discarding the previous one (pending submissions keep theirs).
  /// Returns Success, ErrorInvalidHandle.
  [[nodiscard]] Result begin() const noexcept;
  /// Ends the recording; only ended command buffers can be submitted. For a graph command buffer
  /// on a GPU backend it also builds and instantiates the graphs (or updates earlier ones in
  /// place), and runs the capturable native callbacks; on failure the recording is discarded
  /// (begin() again) and nothing was submitted. Thread safe against submissions of earlier
  /// recordings.
  /// Returns Success, ErrorInvalidState (not recording; a buffer whose queue-ordered memory is
  /// not there in a graph command buffer), ErrorInvalidHandle, ErrorHostCallFailed (a capturable
  /// native callback returned an error: named in the message), ErrorDeviceLost, ErrorDriver (the
  /// driver refused the graph or the capture: a native callback made a call that capture does
  /// not allow, for instance; the message names the call), ErrorNotSupported (a graph command
  /// buffer's collectives use a communicator with other ranks in this process while calls are
  /// blocking: the file comment), ErrorOutOfHostMemory, ErrorOutOfDeviceMemory.
  [[nodiscard]] Result end() const noexcept;

  /// \name Recording calls
  /// Each recording call returns Success, ErrorInvalidState (not between begin and end),
  /// ErrorInvalidHandle (this, a buffer or an image), ErrorDeviceMismatch (a buffer or an image of
  /// another device), ErrorInvalidArgument (a range outside a buffer, size 0, null data or
  /// callback, or a break of the call's own rule below: overlapping copy ranges, an unaligned fill,
  /// an update above kMaxUpdateSize). A rejected call records nothing; the recording stays usable.
  ///@{

  /// Copies `size` bytes; the ranges may be in the same buffer but must not overlap.
  [[nodiscard]] Result copyBuffer(Buffer src, uint64_t srcOffset, Buffer dst, uint64_t dstOffset,
                                  uint64_t size) const noexcept;
  /// Writes the 32-bit pattern over [offset, offset+size); offset and size multiples of 4.
  [[nodiscard]] Result fillBuffer(Buffer dst, uint64_t offset, uint64_t size,
                                  uint32_t pattern) const noexcept;
  /// Writes `size` (<= kMaxUpdateSize) bytes of `data`, copied now, at offset.
  [[nodiscard]] Result updateBuffer(Buffer dst, uint64_t offset, uint64_t size,
                                    const void* data) const noexcept;
  /// Copies texels from `src` into `dst` (Image, same device), one BufferImageCopy per region
  /// (baton/image.hpp says how a region lies in the buffer). Regions are copied in order, so
  /// where two overlap in the destination the later one's texels stay. No conversion: the buffer
  /// holds the image's texels as they are.
  /// Besides the recording calls' results: ErrorInvalidArgument (no regions, a region outside
  /// the image or the buffer, a bufferOffset that is not a multiple of the texel size, a
  /// bufferRowLength below `width` or bufferImageHeight below `height`).
  [[nodiscard]] Result copyBufferToImage(Buffer src, Image dst,
                                         Span<const BufferImageCopy> regions) const noexcept;
  /// Copies texels of `src` into `dst`, one BufferImageCopy per region; the reverse of
  /// copyBufferToImage, with its rules.
  [[nodiscard]] Result copyImageToBuffer(Image src, Buffer dst,
                                         Span<const BufferImageCopy> regions) const noexcept;
  /// Records a host callback; see HostCallback.
  [[nodiscard]] Result hostCall(HostCallback callback, void* userData) const noexcept;
  /// Records a host callback with flags (kHostCallInfallible, or 0 as hostCall(callback,
  /// userData)). Other flag bits: ErrorInvalidArgument.
  [[nodiscard]] Result hostCall(HostCallback callback, void* userData,
                                uint32_t flags) const noexcept;
  /// Records a native callback; see NativeCallback.
  [[nodiscard]] Result native(NativeCallback callback, void* userData) const noexcept;
  /// Records a native callback with flags (kNativeCapturable, or 0 as native(callback,
  /// userData)). In a graph command buffer, a callback without kNativeCapturable is refused with
  /// ErrorInvalidArgument (it cannot be replayed from a graph). A capturable callback in a graph
  /// command buffer runs inside end(), once, on a capturing stream; in a replayed command buffer
  /// the flag changes nothing. Other flag bits: ErrorInvalidArgument.
  [[nodiscard]] Result native(NativeCallback callback, void* userData,
                              uint32_t flags) const noexcept;
  ///@}

  /// \name Collective commands
  /// Each records one operation of `communicator` (see baton/communicator.hpp), which must belong
  /// to this command buffer's device, as its buffers must. Counts are in elements of `type`; a
  /// range is [offset, offset + n * elementSize(type)) of its buffer. When the submission runs,
  /// consecutive collective commands of one command buffer go to the library as one group
  /// (ncclGroupStart/End): sends and receives between ranks in one command buffer cannot
  /// deadlock, and several collectives launch together. Every rank of the communicator must
  /// record the same collectives in the same order (and matching send/recv pairs); mismatched
  /// calls are the library's undefined behaviour, in practice a stall that the communicator's
  /// timeout turns into failure.
  /// A submission with collectives publishes its signals from the host once its work completed
  /// (as one with host calls does): a failed communicator then fails them instead.
  /// Each returns Success, ErrorInvalidState (not recording, or the communicator failed: its
  /// reason is in the message), ErrorInvalidHandle (this, the communicator or a buffer),
  /// ErrorDeviceMismatch (a communicator or buffer of another device), ErrorInvalidArgument
  /// (count 0, a type or op that is not one of its enumerators, a root or peer outside
  /// 0..rankCount-1, a range outside its buffer, source and destination overlapping other than
  /// in place as the call allows), ErrorNotSupported (the library is known to refuse the
  /// operation on the type, for its version, this rank's GPU or a communicator of one rank: the
  /// message names the operation, the type and the library; with NCCL: the float8 types before
  /// 2.24, a float8 allReduce, reduce or reduceScatter on a GPU below compute capability 9.0,
  /// avg of float8 with one rank). A rejected call records nothing. What only the library can
  /// judge (another rank's GPU) still fails the submission's signals when it runs; the
  /// communicator stays ready.
  ///@{

  /// Every rank's `dst` receives the reduction of all ranks' `src` (count elements each).
  /// In place when src and dst are the same range; otherwise they must not overlap.
  [[nodiscard]] Result allReduce(Communicator communicator, Buffer src, uint64_t srcOffset,
                                 Buffer dst, uint64_t dstOffset, uint64_t count, ElementType type,
                                 ReduceOp op) const noexcept;
  /// Every rank's `dst` receives rank `root`'s `src` (count elements). `src` is read on the root
  /// only (other ranks may pass their dst range). In place when src and dst are the same range.
  [[nodiscard]] Result broadcast(Communicator communicator, Buffer src, uint64_t srcOffset,
                                 Buffer dst, uint64_t dstOffset, uint64_t count, ElementType type,
                                 uint32_t root) const noexcept;
  /// Rank `root`'s `dst` receives the reduction of all ranks' `src`; `dst` is written on the
  /// root only (other ranks may pass their src range). In place when src and dst are the same.
  [[nodiscard]] Result reduce(Communicator communicator, Buffer src, uint64_t srcOffset, Buffer dst,
                              uint64_t dstOffset, uint64_t count, ElementType type, ReduceOp op,
                              uint32_t root) const noexcept;
  /// Every rank's `dst` (rankCount * count elements) receives each rank r's `src` (count
  /// elements) at element r * count. In place when src is dst's slot of this rank.
  [[nodiscard]] Result allGather(Communicator communicator, Buffer src, uint64_t srcOffset,
                                 Buffer dst, uint64_t dstOffset, uint64_t count,
                                 ElementType type) const noexcept;
  /// Rank r's `dst` (count elements) receives the reduction of slot r (elements r * count ..) of
  /// every rank's `src` (rankCount * count elements). In place when dst is src's slot of this
  /// rank.
  [[nodiscard]] Result reduceScatter(Communicator communicator, Buffer src, uint64_t srcOffset,
                                     Buffer dst, uint64_t dstOffset, uint64_t count,
                                     ElementType type, ReduceOp op) const noexcept;
  /// Rank r sends slot p of its `src` to rank p, which stores it in slot r of its `dst`; slots
  /// are `count` elements, src and dst rankCount * count each, not overlapping.
  [[nodiscard]] Result allToAll(Communicator communicator, Buffer src, uint64_t srcOffset,
                                Buffer dst, uint64_t dstOffset, uint64_t count,
                                ElementType type) const noexcept;
  /// Sends `count` elements to rank `peer`, which records the matching recv().
  [[nodiscard]] Result send(Communicator communicator, Buffer src, uint64_t srcOffset,
                            uint64_t count, ElementType type, uint32_t peer) const noexcept;
  /// Receives `count` elements from rank `peer`, which records the matching send().
  [[nodiscard]] Result recv(Communicator communicator, Buffer dst, uint64_t dstOffset,
                            uint64_t count, ElementType type, uint32_t peer) const noexcept;
  ///@}
};

/// A CommandBuffer that is destroyed with its owner (see Unique).
using UniqueCommandBuffer = Unique<CommandBuffer>;

}  // namespace baton
