/// \file
/// baton/instance.hpp — the Instance: the root object, its backends and its semaphores.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/result.hpp"
#include "baton/span.hpp"
#include "baton/unique.hpp"

namespace baton {

/// How serious a message given to the DebugCallback is.
enum class MessageSeverity : uint32_t { Info = 0, Warning = 1, Error = 2 };
/// \var MessageSeverity::Info
/// Information: which backends loaded, and why one did not; the interop modes chosen.
/// \var MessageSeverity::Warning
/// Something the caller should fix, e.g. a parent destroyed with live children.
/// \var MessageSeverity::Error
/// An error a call returned (the lastErrorMessage() text), or a device lost.

/// Receives every message baton reports for objects of this instance: each error a call returns
/// (the same text as lastErrorMessage()), warnings (e.g. a parent destroyed with live children) and
/// information (which backends loaded, and why one did not). May be called from any thread,
/// including baton's worker threads, concurrently; it must not call back into baton.
using DebugCallback = void (*)(MessageSeverity severity, const char* message, void* userData);

/// What createInstance needs. Read during the call only.
struct InstanceCreateInfo {
  DebugCallback debugCallback = nullptr;  ///< receives the instance's messages; may be null
  void* debugUserData = nullptr;  ///< passed to debugCallback as userData; baton never touches it
  /// Backends to load, as backendBit() flags. The host backend is always loaded.
  uint32_t backendMask = kAllBackends;
  /// Where to write a timeline trace (Chrome trace-event JSON, for the Perfetto UI or
  /// chrome://tracing; tools/baton-trace-render draws it as an SVG), or null for none. Starts a
  /// trace session when none runs; the file is written when the last live instance is destroyed
  /// (and at process exit), which ends the session. The environment variable `BATON_TRACE=<path>`
  /// does the same for every instance and takes precedence. The string is copied. Tracing costs
  /// one relaxed load per hook when off; see the guide's "The timeline trace" (docs/guide.md) for
  /// what is recorded and its cost when on. A file that cannot be written is reported on stderr.
  const char* tracePath = nullptr;
};

/// What enumerateBackends reports for each backend baton knows (built in or not).
struct BackendInfo {
  BackendKind kind = BackendKind::Host;  ///< which backend this entry describes
  bool compiled = false;                 ///< built into this library
  bool available = false;    ///< compiled, asked for, and its driver loaded and initialised
  uint32_t deviceCount = 0;  ///< how many physical devices it reported; 0 when not available
  /// Why not available (paths tried, driver error); when available with no devices, why the
  /// driver reports none ("hipGetDeviceCount failed: hipErrorNoDevice (...)"); else "".
  char reason[512] = {};
};

/// Creates an instance and loads the backends of info.backendMask. A backend whose driver is
/// missing is reported unavailable (enumerateBackends says why); that is not an error.
/// Ownership: the caller owns *instance and destroys it with Instance::destroy (or UniqueInstance).
/// Thread safety: may be called from any thread. Returns Success, ErrorInvalidArgument (null
/// output, unknown mask bits), ErrorOutOfHostMemory.
[[nodiscard]] BATON_API Result createInstance(const InstanceCreateInfo& info,
                                              Instance* instance) noexcept;

/// The root object: it loads the backends, enumerates their physical devices, and creates devices
/// and semaphores. A non-owning handle (see Handle); createInstance makes one, destroy() ends it,
/// UniqueInstance owns one.
class BATON_API Instance : public Handle<Instance> {
 public:
  using Handle::Handle;

  /// Destroys the instance. Children still alive (devices, semaphores and what they own) are
  /// destroyed too — each reported through the debug callback — and the result is then
  /// ErrorObjectInUse; the instance is gone either way. Pending work on destroyed devices is
  /// failed, never left hanging. Not to be called concurrently with other calls on this instance
  /// or its children. Returns Success, ErrorObjectInUse, ErrorInvalidHandle, ErrorInvalidState
  /// (called from a host call or native callback running on one of its devices: the instance is
  /// left as it was).
  [[nodiscard]] Result destroy() const noexcept;

  /// Vulkan-style two-call enumeration: with infos null, writes the count; otherwise fills up to
  /// *count entries and writes how many were written; NotReady (not an error) when the array was
  /// too small. Thread safe. Returns Success, NotReady, ErrorInvalidArgument (null count),
  /// ErrorInvalidHandle.
  [[nodiscard]] Result enumerateBackends(uint32_t* count, BackendInfo* infos) const noexcept;

  /// Lists the physical devices of every available backend, host first (same two-call idiom).
  /// The handles are owned by the instance and stay valid until it is destroyed. Thread safe.
  /// Returns Success, NotReady, ErrorInvalidArgument (null count), ErrorInvalidHandle.
  [[nodiscard]] Result enumeratePhysicalDevices(uint32_t* count,
                                                PhysicalDevice* devices) const noexcept;

  /// Creates a semaphore usable by every queue of every device of this instance, and by the
  /// host; with kSemaphoreShareable, by other processes too (Semaphore::exportFd). Ownership:
  /// the caller owns *semaphore. Thread safe. Returns Success, ErrorInvalidArgument (null output;
  /// an unknown flag; a shareable semaphore's initial value above kSharedSemaphoreMaxValue),
  /// ErrorInvalidHandle, ErrorOutOfHostMemory (also: the OS gave no shared page or thread).
  [[nodiscard]] Result createSemaphore(const struct SemaphoreCreateInfo& info,
                                       Semaphore* semaphore) const noexcept;

  /// Imports a semaphore shared by another process (or this one): a new handle of the same
  /// timeline, whose value and failure are the same in every process that holds it, and which
  /// this instance's queues wait for and signal as any other (GPU-side on devices with 64-bit
  /// stream memory operations, through the host elsewhere; docs/guide.md, 'Across processes').
  /// Ownership: the caller owns *semaphore; info.fd stays the caller's. When a process that
  /// holds the timeline dies with a signal of a value above the current one submitted, or while
  /// waits for such values are pending, the semaphore fails in every other process within
  /// 100 ms, with a reason naming the process and the value. Thread safe.
  /// Returns Success, ErrorInvalidArgument (a descriptor that is closed or not a shared
  /// semaphore's; a null output), ErrorOutOfHostMemory (every process slot of the timeline is
  /// taken, or no thread could be started), ErrorInvalidHandle.
  [[nodiscard]] Result importSemaphore(const struct SemaphoreImportInfo& info,
                                       Semaphore* semaphore) const noexcept;

  /// Blocks the calling thread until all (WaitMode::All) or any one (WaitMode::Any) of the
  /// semaphores reach their values, a waited semaphore fails, or timeoutNs passes (0 polls,
  /// kWaitForever never expires). Spins briefly, then sleeps; burns no core while blocked.
  /// An empty list is satisfied at once. Thread safe; any number of threads may wait at once.
  /// Returns Success, Timeout (not an error), ErrorSemaphoreFailed (message: the first failure
  /// reason), ErrorDeviceLost, ErrorInvalidHandle, ErrorInvalidArgument (more than
  /// kMaxWaitCount entries, a null list pointer with a non-zero count, an unknown WaitMode),
  /// ErrorDeviceMismatch (a semaphore of another instance).
  [[nodiscard]] Result waitSemaphores(Span<const SemaphoreValue> waits, WaitMode mode,
                                      uint64_t timeoutNs) const noexcept;

  /// Creates a logical device on one of this instance's physical devices.
  /// Ownership: the caller owns *device. Thread safe. Returns Success, ErrorInvalidArgument
  /// (queueCount 0 or above PhysicalDeviceProperties::maxQueues, null output),
  /// ErrorInvalidHandle, ErrorDeviceMismatch (a physical device of another instance),
  /// ErrorBackendUnavailable, ErrorOutOfHostMemory, ErrorDriver.
  [[nodiscard]] Result createDevice(PhysicalDevice physicalDevice,
                                    const struct DeviceCreateInfo& info,
                                    Device* device) const noexcept;

  /// Reports whether `backend` has a collective library (NCCL for CUDA, RCCL for HIP), which
  /// one and its version, or why not. Loads the library on first use (dlopen; the path in
  /// BATON_NCCL_LIBRARY or BATON_RCCL_LIBRARY first when set). Thread safe. Returns Success
  /// (also when not available: out->reason says why), ErrorInvalidArgument (null, an unknown
  /// backend), ErrorInvalidHandle.
  [[nodiscard]] Result getCollectiveSupport(BackendKind backend,
                                            struct CollectiveSupport* out) const noexcept;
  /// Makes a new id for one communicator group of `backend` (ncclGetUniqueId), to be handed to
  /// every rank (see CommunicatorId). The rank that makes it should be rank 0: the id holds the
  /// address where that process listens. Thread safe. Returns Success, ErrorNotSupported (no
  /// collective library: the message says why), ErrorInvalidArgument, ErrorInvalidHandle,
  /// ErrorDriver.
  [[nodiscard]] Result createCommunicatorId(BackendKind backend,
                                            struct CommunicatorId* id) const noexcept;
  /// Creates a whole group in this process at once: communicators[i] is rank i, on devices[i]
  /// (one device per rank, distinct physical devices, all of one backend), with a fresh id
  /// (as ncclCommInitAll). Blocks until every rank is initialised, at most info.timeoutNs.
  /// Ownership: the caller owns each communicator. Thread safe. Returns Success,
  /// ErrorInvalidArgument (no devices, null output, two ranks on one physical device),
  /// ErrorInvalidHandle, ErrorDeviceMismatch (devices of other instances or mixed backends),
  /// ErrorNotSupported (no collective library, the host backend), ErrorDriver; on an error
  /// nothing is created.
  [[nodiscard]] Result createCommunicators(Span<const Device> devices,
                                           const struct CommunicatorGroupCreateInfo& info,
                                           Communicator* communicators) const noexcept;
};

/// An Instance that is destroyed with its owner (see Unique).
using UniqueInstance = Unique<Instance>;

}  // namespace baton
