/// \file
/// baton/buffer.hpp — linear memory owned by a device.
#pragma once

#include <cstdint>

#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/result.hpp"
#include "baton/unique.hpp"

namespace baton {

/// Where a buffer's memory lives (BufferCreateInfo::memory).
enum class MemoryKind : uint32_t {
  Device = 0,      ///< device-local memory (host memory on the host backend)
  HostPinned = 1,  ///< page-locked host memory the device can access; always mappable
};

/// Flags of BufferCreateInfo::flags.
enum BufferCreateFlags : uint32_t {
  /// The buffer's memory can be mapped by other processes (Buffer::exportFd,
  /// Device::importBuffer). Device::createBuffer only (Queue::allocaBuffer refuses it), on a device
  /// with kCapabilityShareableMemory. How the memory is shared, and how long it lives:
  ///   - host backend: a sealed memfd, mapped shared by every process;
  ///   - CUDA: virtual memory management (cuMemCreate with POSIX descriptor export); the driver
  ///     keeps the memory until every process released it (destroyed its buffer and closed every
  ///     descriptor), whichever process goes first;
  ///   - HIP (ROCm 5.2 has no exportable allocations): hipMalloc memory and hipIpcGetMemHandle.
  ///     The IPC rule is that the exporting allocation must outlive every mapping of it in other
  ///     processes; baton enforces it within the exporting process: destroying the exporter's
  ///     buffer (or its device) returns at once, but the memory is freed only once every importing
  ///     buffer was destroyed or its process died, and from then on no new import is accepted.
  ///     The exporting process itself must outlive the importers' use of the memory (a process
  ///     that exits frees its allocations: the driver's rule, which baton cannot hold back).
  /// MemoryKind::HostPinned is shareable on the host backend only.
  kBufferShareable = 1u << 0,
};

/// What Device::createBuffer and Queue::allocaBuffer need. Read during the call only.
struct BufferCreateInfo {
  uint64_t size = 0;                       ///< bytes, > 0
  MemoryKind memory = MemoryKind::Device;  ///< one the device lacks is ErrorNotSupported
  uint32_t flags = 0;                      ///< BufferCreateFlags
};

/// What Device::importBuffer needs. Read during the call only.
struct BufferImportInfo {
  /// A descriptor from Buffer::exportFd, in this process or received from another one (over a
  /// Unix socket with SCM_RIGHTS, pidfd_getfd, or inherited). Borrowed: the caller still owns it
  /// and may close it after the call.
  int fd = -1;
  /// The exported buffer's size in bytes (Buffer::getSize there): a different size is refused.
  /// On CUDA the driver tells an allocation's size only to its granularity (2 MiB on an H100):
  /// there a size that rounds up to the same number of granules cannot be told apart.
  uint64_t size = 0;
  MemoryKind memory = MemoryKind::Device;  ///< the exported buffer's kind: another is refused
};

/// Linear memory owned by a device, used by command buffers and, through map() and
/// getDeviceAddress(), by the host and native callbacks. A non-owning handle (see Handle);
/// Device::createBuffer or Queue::allocaBuffer makes one, destroy() (or Queue::deallocaBuffer)
/// ends it, UniqueBuffer owns one.
class BATON_API Buffer : public Handle<Buffer> {
 public:
  using Handle::Handle;

  /// Destroys the buffer handle. Command buffers recorded with it keep its memory alive until
  /// their pending submissions finish, so destroying it with work pending is safe. A shared
  /// buffer's memory may outlive it in other processes, and on HIP an exporter's memory is freed
  /// only once its importers let go (kBufferShareable). Thread safe.
  /// Returns Success, ErrorInvalidHandle.
  [[nodiscard]] Result destroy() const noexcept;

  /// Writes the size in bytes. Thread safe. Returns Success, ErrorInvalidArgument,
  /// ErrorInvalidHandle.
  [[nodiscard]] Result getSize(uint64_t* size) const noexcept;

  /// Writes a host pointer to the memory, valid until the buffer is destroyed. The caller orders
  /// host access against device work with semaphores. Thread safe. Returns Success, NotReady (a
  /// Queue::allocaBuffer buffer whose allocation has not run yet; *hostPointer is null),
  /// ErrorNotSupported (device memory that the host cannot map), ErrorInvalidArgument (null),
  /// ErrorInvalidHandle.
  [[nodiscard]] Result map(void** hostPointer) const noexcept;

  /// Writes the address device code uses (a CUdeviceptr on CUDA, the host address on the host
  /// backend). Thread safe. Returns Success, NotReady (a Queue::allocaBuffer buffer whose
  /// allocation has not run yet; *address is 0), ErrorInvalidArgument (null), ErrorInvalidHandle.
  [[nodiscard]] Result getDeviceAddress(uint64_t* address) const noexcept;

  /// Writes to *fd a new file descriptor of a shareable buffer's memory (kBufferShareable, or a
  /// buffer made by Device::importBuffer), for another process to import with
  /// Device::importBuffer together with the buffer's size and memory kind. What it is: the
  /// memfd on the host backend, the driver's POSIX descriptor of the allocation on CUDA, a sealed
  /// memfd holding the IPC handle and the importers' count on HIP. Ownership: the caller owns
  /// *fd (close it once it has been passed on; it does not keep the buffer's handle alive, and on
  /// CUDA and the host backend it keeps the memory alive while it is open). Close-on-exec is set:
  /// clear it to pass the descriptor through exec. Data written to the memory by one process is
  /// seen by the others once the writer's work is ordered before the reader's (a shared
  /// semaphore: Semaphore::exportFd). Thread safe. Returns Success, ErrorInvalidArgument (null
  /// fd; a buffer that is not shareable: *fd is -1), ErrorOutOfHostMemory (no descriptor left),
  /// ErrorDriver (the driver's export failed; the message names the call), ErrorInvalidHandle.
  [[nodiscard]] Result exportFd(int* fd) const noexcept;
};

/// A Buffer that is destroyed with its owner (see Unique).
using UniqueBuffer = Unique<Buffer>;

}  // namespace baton
