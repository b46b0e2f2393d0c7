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

/// What Device::createBuffer and Queue::allocaBuffer need. Read during the call only.
struct BufferCreateInfo {
  uint64_t size = 0;                       ///< bytes, > 0
  MemoryKind memory = MemoryKind::Device;  ///< one the device lacks is ErrorNotSupported
};

/// Linear memory owned by a device, used by command buffers and, through map() and
/// getDeviceAddress(), by the host and native callbacks. A non-owning handle (see Handle);
/// Device::createBuffer or Queue::allocaBuffer makes one, destroy() (or Queue::deallocaBuffer)
/// ends it, UniqueBuffer owns one.
class BATON_API Buffer : public Handle<Buffer> {
 public:
  using Handle::Handle;

  /// Destroys the buffer handle. Command buffers recorded with it keep its memory alive until
  /// their pending submissions finish, so destroying it with work pending is safe. Thread safe.
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
};

/// A Buffer that is destroyed with its owner (see Unique).
using UniqueBuffer = Unique<Buffer>;

}  // namespace baton
