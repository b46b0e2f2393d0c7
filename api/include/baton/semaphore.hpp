/// \file
/// baton/semaphore.hpp — timeline semaphores with failure (docs/guide.md, 'The model').
///
/// A semaphore holds a 64-bit value that only rises. A wait for W is satisfied by any value >= W
/// and stays satisfied. Queue submissions may wait for values whose signal has not been
/// submitted yet (wait-before-signal). A semaphore can fail, with a reason: it then stays failed,
/// every waiter returns ErrorSemaphoreFailed with the first reason, and submissions that waited on
/// it fail their own signal semaphores in turn.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/result.hpp"
#include "baton/span.hpp"
#include "baton/unique.hpp"

namespace baton {

/// The most entries one host wait accepts; more is ErrorInvalidArgument.
constexpr size_t kMaxWaitCount = 1u << 16;

/// SemaphoreCreateInfo::flags.
enum SemaphoreCreateFlags : uint32_t {
  /// The semaphore can be shared with other processes (Semaphore::exportFd,
  /// Instance::importSemaphore; docs/guide.md, 'Across processes'). Its values stay at or below
  /// kSharedSemaphoreMaxValue.
  kSemaphoreShareable = 1u << 0,
};

/// The highest value a shared semaphore holds: a signal above it, or an initial value above it,
/// is ErrorInvalidArgument. (GPU-side waits across processes compare values cyclically, as the
/// drivers' stream memory operations do; values up to 2^62 - 1 keep every comparison ordered.)
constexpr uint64_t kSharedSemaphoreMaxValue = (uint64_t{1} << 62) - 1;

/// What Instance::createSemaphore needs. Read during the call only.
struct SemaphoreCreateInfo {
  uint64_t initialValue = 0;        ///< the value the semaphore starts at
  const char* debugName = nullptr;  ///< copied; appears in messages about this semaphore
  uint32_t flags = 0;               ///< SemaphoreCreateFlags
};

/// What Instance::importSemaphore needs. Read during the call only.
struct SemaphoreImportInfo {
  /// A descriptor from Semaphore::exportFd, in this process or received from another one (over
  /// a Unix socket with SCM_RIGHTS, pidfd_getfd, or inherited). Borrowed: the caller still owns
  /// it and may close it after the call.
  int fd = -1;
  const char* debugName = nullptr;  ///< copied; appears in messages about this semaphore
};

/// A timeline semaphore (see baton/semaphore.hpp): a 64-bit value that only rises, and that
/// can fail. A non-owning handle (see Handle); Instance::createSemaphore (or, with Vulkan interop,
/// importVulkanSemaphore) makes one, destroy() ends it, UniqueSemaphore owns one.
class BATON_API Semaphore : public Handle<Semaphore> {
 public:
  using Handle::Handle;

  /// Destroys the semaphore handle. If pending work still uses it (submissions not yet finished
  /// that wait on or signal it, or host threads waiting on it), the semaphore is failed with the
  /// reason "destroyed while pending work used it", so that its waiters return promptly with it
  /// (and submissions waiting on it fail their signals), and the result is ErrorObjectInUse; the
  /// handle is invalid afterwards in every case. Work that has just finished (a wait for its
  /// signal may already have returned) lets go of the semaphore within microseconds; destroy
  /// gives it up to 10 ms before counting it as pending, so destroying right after a wait
  /// succeeds. Memory lives on until the last pending submission that references it is done.
  /// Thread safe.
  /// Returns Success, ErrorObjectInUse, ErrorInvalidHandle.
  [[nodiscard]] Result destroy() const noexcept;

  /// Writes the current value. Device signals are observed as they complete (recorded events
  /// are queried), so the value is current to within the query. Thread safe.
  /// Returns Success, ErrorSemaphoreFailed (*value is still written: the last value reached),
  /// ErrorInvalidArgument (null), ErrorInvalidHandle.
  [[nodiscard]] Result getValue(uint64_t* value) const noexcept;

  /// Signals `value` from the host, waking host waiters and releasing queued submissions that
  /// wait for it (released on this thread before the call returns; on a GPU backend this thread
  /// enqueues a released submission itself, native callbacks included, when its queue has
  /// nothing else pending, and the device's issuing thread enqueues the others: see
  /// NativeCallback). Thread safe.
  /// Returns Success, ErrorNonIncreasingValue (value <= current value; nothing changes),
  /// ErrorSemaphoreFailed (already failed), ErrorInvalidHandle.
  [[nodiscard]] Result signal(uint64_t value) const noexcept;

  /// Fails the semaphore with `reason` (copied; null gives "failed by the host"). The first
  /// failure wins: on a semaphore that has failed already, nothing changes and the result is that
  /// failure's own (what its waiters return): ErrorDeviceLost when device loss failed it (a signal
  /// of it was pending on a lost device, or waited for a semaphore that device loss failed; the
  /// reason names the device and the driver's error), ErrorSemaphoreFailed otherwise (failed by
  /// the host, or by work that failed). Thread safe.
  /// Returns Success, ErrorSemaphoreFailed, ErrorDeviceLost (both: already failed),
  /// ErrorInvalidHandle.
  [[nodiscard]] Result fail(const char* reason) const noexcept;

  /// Writes the first failure reason (NUL-terminated, truncated to capacity) or "" when the
  /// semaphore has not failed. Thread safe. Returns Success, ErrorInvalidArgument (null buffer,
  /// capacity 0; nothing is written), ErrorInvalidHandle.
  [[nodiscard]] Result getFailureReason(char* buffer, size_t capacity) const noexcept;

  /// Host wait for one value; the same as Instance::waitSemaphores with a single entry.
  [[nodiscard]] Result wait(uint64_t value, uint64_t timeoutNs) const noexcept;

  /// Writes to *fd a new file descriptor of a shareable semaphore (kSemaphoreShareable, or one
  /// imported with Instance::importSemaphore), for another process to import. Ownership: the
  /// caller owns *fd (close it once it has been passed on; the semaphore lives on in every
  /// process that holds it). Close-on-exec is set: clear it to pass the descriptor through exec.
  /// Thread safe. Returns Success, ErrorInvalidArgument (null fd; a semaphore that is not
  /// shareable), ErrorOutOfHostMemory (no descriptor left), ErrorInvalidHandle.
  [[nodiscard]] Result exportFd(int* fd) const noexcept;
};

/// A Semaphore that is destroyed with its owner (see Unique).
using UniqueSemaphore = Unique<Semaphore>;

/// A {semaphore, value} pair: an entry of a host wait, or a submission's wait or signal.
struct SemaphoreValue {
  Semaphore semaphore;  ///< the semaphore waited for or signalled
  uint64_t value = 0;   ///< the value: a wait is satisfied by any value >= it
};

}  // namespace baton
