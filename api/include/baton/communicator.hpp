/// \file
/// baton/communicator.hpp — collectives across GPUs, processes and machines (NCCL, RCCL).
///
/// A Communicator is one rank of a group of devices that exchange data with collective
/// operations (allReduce, broadcast, ...) and point-to-point transfers. The collective library
/// (NCCL on CUDA, RCCL on HIP, loaded at run time) carries the traffic, over NVLink, shared memory,
/// sockets or InfiniBand; baton orders it. Collective commands are recorded in command buffers
/// (CommandBuffer::allReduce, ...) and run in queue order on the queue's stream, so timeline
/// semaphores order computation and communication like any other work, across queues, devices
/// and — through the application's own channel for the CommunicatorId — processes and machines.
///
/// **Failure, not hangs.** While a communicator has collectives in flight, baton watches it: an
/// error the library reports (a peer process exited, a network error) or no progress for the
/// communicator's timeout marks it failed, and every submission that used it fails its signal
/// semaphores with a reason naming the communicator, this rank and the error. Waiters — host
/// waits and queued submissions — return at once, as for any failed semaphore; the device stays
/// usable (a communicator failure is not device loss). A failed communicator accepts no more
/// collectives (recording or submitting one returns ErrorInvalidState); shrink() makes a new one
/// without the dead ranks, destroy() ends it. See the guide's "Collectives" section for what the
/// queue does while the stuck operations end.
///
/// **Two library communicators per rank.** Each Communicator holds a non-blocking library
/// communicator (made, split and shrunk with the timeout, never used for a collective) and a
/// blocking one split from it, to which the collective calls go (NCCL launches a non-blocking
/// group from a thread of its own, which costs more per group: docs/performance.md has the
/// figures). When the communicator fails, the blocking one is aborted at once (with any library
/// version: the queue moves on) and the non-blocking one stays for shrink() (split() is refused
/// on a failed communicator; a ready one splits the non-blocking one). The environment variable
/// BATON_NCCL_BLOCKING_CALLS=0 makes every call go to the non-blocking communicator instead (as
/// before; then the stuck operations end by ncclCommRevoke where the library has it, else only at
/// shrink or destroy).
#pragma once

#include <cstddef>
#include <cstdint>

#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/result.hpp"
#include "baton/span.hpp"
#include "baton/unique.hpp"

namespace baton {

class Communicator;

/// The size of a CommunicatorId: NCCL's and RCCL's unique id (NCCL_UNIQUE_ID_BYTES).
constexpr size_t kCommunicatorIdSize = 128;

/// What the ranks of one communicator share: made once by one rank
/// (Instance::createCommunicatorId), handed to every other rank by the application (a file, MPI, a
/// key-value store: any channel; it is plain bytes), and given to each rank's
/// Device::createCommunicator. It names the group and where its first rank listens for the others;
/// an id is used for one communicator only.
struct CommunicatorId {
  uint8_t bytes[kCommunicatorIdSize] = {};  ///< opaque to baton and to the application
};

/// The element type of a collective's buffers. Each maps to the library's own type of the same
/// width and format, never to a wider one, so that reductions happen in the type itself.
enum class ElementType : uint32_t {
  Int8 = 0,         ///< signed 8-bit integer
  Uint8 = 1,        ///< unsigned 8-bit integer
  Int32 = 2,        ///< signed 32-bit integer
  Uint32 = 3,       ///< unsigned 32-bit integer
  Int64 = 4,        ///< signed 64-bit integer
  Uint64 = 5,       ///< unsigned 64-bit integer
  Float16 = 6,      ///< IEEE 754 half precision
  Float32 = 7,      ///< IEEE 754 single precision
  Float64 = 8,      ///< IEEE 754 double precision
  Bfloat16 = 9,     ///< bfloat16: float32's exponent, 7 mantissa bits
  Float8E4M3 = 10,  ///< 8-bit float, 4 exponent and 3 mantissa bits (OCP FP8 E4M3)
  Float8E5M2 = 11,  ///< 8-bit float, 5 exponent and 2 mantissa bits (OCP FP8 E5M2)
};
/// The number of ElementType values.
constexpr uint32_t kElementTypeCount = 12;

/// The size in bytes of one element of `type`; 0 for a value that is not an ElementType.
/// Thread safe.
constexpr uint64_t elementSize(ElementType type) noexcept {
  switch (type) {
    case ElementType::Int8:
    case ElementType::Uint8:
    case ElementType::Float8E4M3:
    case ElementType::Float8E5M2: return 1;
    case ElementType::Float16:
    case ElementType::Bfloat16: return 2;
    case ElementType::Int32:
    case ElementType::Uint32:
    case ElementType::Float32: return 4;
    case ElementType::Int64:
    case ElementType::Uint64:
    case ElementType::Float64: return 8;
  }
  return 0;
}

/// The printable name of an element type ("float32", "bfloat16"); "?" for an unknown value.
/// Never null. Thread safe.
BATON_API const char* elementTypeName(ElementType type) noexcept;

/// How a reduction combines the ranks' elements.
enum class ReduceOp : uint32_t {
  Sum = 0,   ///< the sum
  Prod = 1,  ///< the product
  Max = 2,   ///< the largest
  Min = 3,   ///< the smallest
  Avg = 4,   ///< the sum divided by the rank count (integer types: rounded toward zero)
};
/// The number of ReduceOp values.
constexpr uint32_t kReduceOpCount = 5;

/// The printable name of a reduction ("sum", "avg"); "?" for an unknown value. Never null.
/// Thread safe.
BATON_API const char* reduceOpName(ReduceOp op) noexcept;

/// Communicator::getState.
enum class CommunicatorState : uint32_t {
  Ready = 0,   ///< accepts collectives
  Failed = 1,  ///< failed (getFailureReason says why): accepts only shrink(), split() is refused
};

/// What Device::createCommunicator needs. Read during the call only.
struct CommunicatorCreateInfo {
  CommunicatorId id;       ///< the group's id (Instance::createCommunicatorId on one rank)
  uint32_t rank = 0;       ///< this device's rank: 0..rankCount-1, each rank once in the group
  uint32_t rankCount = 0;  ///< how many ranks the group has: 1 or more
  /// How long creation waits for every rank to arrive, and how long a collective of this
  /// communicator may make no progress before baton fails it: 0 for kCollectiveTimeoutDefaultNs.
  uint64_t timeoutNs = 0;
  /// Copied; names the communicator in messages ("communicator 'grads' (rank 1 of 4, device #1
  /// (cuda:0))"). May be null.
  const char* debugName = nullptr;
};

/// What Instance::createCommunicators needs. Read during the call only.
struct CommunicatorGroupCreateInfo {
  uint64_t timeoutNs = 0;           ///< as CommunicatorCreateInfo::timeoutNs
  const char* debugName = nullptr;  ///< as CommunicatorCreateInfo::debugName, for every rank
};

/// CommunicatorCreateInfo::timeoutNs 0: 30 seconds.
constexpr uint64_t kCollectiveTimeoutDefaultNs = 30'000'000'000ull;

/// What Instance::getCollectiveSupport reports for a backend.
struct CollectiveSupport {
  BackendKind backend = BackendKind::Host;  ///< the backend this describes
  bool available = false;                   ///< the library loaded: communicators can be made
  /// The library's version as it reports it (ncclGetVersion: 22809 for 2.28.9); 0 if absent.
  uint32_t version = 0;
  char library[256] = {};  ///< the path that loaded ("libnccl.so.2"), or ""
  /// Why not available (the paths tried and dlopen's errors, "the host backend has no
  /// collective engine", "built without nccl.h"); "" when available.
  char reason[512] = {};
  bool canRevoke = false;  ///< the library ends stuck operations and keeps the communicator
                           ///< (ncclCommRevoke, NCCL 2.28.9 and later)
  bool canShrink = false;  ///< the library has ncclCommShrink (NCCL 2.27 and later)
  /// Collective calls go to a blocking library communicator split from the non-blocking one (the
  /// default; see "Two library communicators per rank" above); false when
  /// BATON_NCCL_BLOCKING_CALLS=0 puts every call on the non-blocking one, or when not available.
  /// Read once per process.
  bool blockingCalls = false;
};

/// One rank of a group of devices that run collectives together (see baton/communicator.hpp).
/// A non-owning handle (see Handle); Device::createCommunicator, Instance::createCommunicators,
/// split() and shrink() make one, destroy() ends it, UniqueCommunicator owns one. The
/// communicator keeps its device alive; command buffers that recorded it keep it alive until
/// their submissions finished.
class BATON_API Communicator : public Handle<Communicator> {
 public:
  using Handle::Handle;

  /// Destroys the communicator. A ready one is finalized first (blocks until its issued
  /// collectives complete, which needs the other ranks to run theirs, at most its timeout; past
  /// it, the communicator fails and is aborted), then destroyed; a failed one is aborted (its
  /// stuck operations end, and the queue behind them moves on). Submissions not yet issued that
  /// use it fail their signals. Not to be called concurrently with recording or submitting its
  /// collectives. Returns Success, ErrorInvalidHandle, ErrorDriver (the library's error; the
  /// handle is gone either way).
  [[nodiscard]] Result destroy() const noexcept;

  /// Writes this communicator's rank. Thread safe. Returns Success, ErrorInvalidArgument (null),
  /// ErrorInvalidHandle.
  [[nodiscard]] Result getRank(uint32_t* rank) const noexcept;
  /// Writes how many ranks the group has. Thread safe. Returns Success, ErrorInvalidArgument,
  /// ErrorInvalidHandle.
  [[nodiscard]] Result getRankCount(uint32_t* count) const noexcept;
  /// Writes the device the communicator belongs to (its collectives run on that device's
  /// queues). Thread safe. Returns Success, ErrorInvalidArgument, ErrorInvalidHandle.
  [[nodiscard]] Result getDevice(Device* device) const noexcept;
  /// Writes the state; a failure found by baton's watch (an error, a timeout) shows here at the
  /// same moment the submissions' signals fail. Thread safe. Returns Success,
  /// ErrorInvalidArgument, ErrorInvalidHandle.
  [[nodiscard]] Result getState(CommunicatorState* state) const noexcept;
  /// Copies why the communicator failed ("" while Ready) into `reason` (at most `size` bytes,
  /// NUL-terminated, cut if longer). Thread safe. Returns Success, ErrorInvalidArgument (null
  /// reason or size 0), ErrorInvalidHandle.
  [[nodiscard]] Result getFailureReason(char* reason, size_t size) const noexcept;

  /// Splits the group (ncclCommSplit): every rank of this communicator calls split() with a
  /// `color`; ranks of one color form a new communicator, ordered by `key` (then by their rank
  /// here). A rank passing kSplitNoColor takes part but joins none (*out stays null, Success).
  /// Blocks until the ranks of its color arrived, at most this communicator's timeout. Thread
  /// safe against other calls on other communicators. Returns Success, ErrorInvalidState (the
  /// communicator failed), ErrorInvalidArgument (null out, a negative color other than
  /// kSplitNoColor), ErrorInvalidHandle, ErrorDriver (the library's error, or ranks that did not
  /// arrive within the timeout: the message says which).
  [[nodiscard]] Result split(int32_t color, int32_t key, Communicator* out) const noexcept;

  /// Makes a new communicator of the ranks not in `excludedRanks` (ncclCommShrink), typically
  /// after this one failed because those ranks died: each surviving rank calls it with the same
  /// list; their ranks are renumbered in order. On a failed communicator its stuck operations
  /// are ended first (NCCL_SHRINK_ABORT), so the queue behind them moves on; this communicator
  /// then stays failed (destroy it). Blocks until the survivors arrived, at most the timeout.
  /// Returns Success, ErrorNotSupported (the library has no shrink: NCCL before 2.27),
  /// ErrorInvalidArgument (null out, a rank out of range or listed twice, every rank excluded,
  /// this rank excluded), ErrorInvalidHandle, ErrorDriver.
  [[nodiscard]] Result shrink(Span<const uint32_t> excludedRanks, Communicator* out) const noexcept;
};

/// Communicator::split: this rank joins no new communicator.
constexpr int32_t kSplitNoColor = -1;

/// A Communicator that is destroyed with its owner (see Unique).
using UniqueCommunicator = Unique<Communicator>;

}  // namespace baton
