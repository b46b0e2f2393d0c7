/// \file
/// baton/fwd.hpp — forward declarations of every handle type, shared by the object headers.
#pragma once

#include <cstdint>

#include "baton/export.h"

/// Everything baton's C++ API declares: the handle classes (Instance, PhysicalDevice, Device,
/// Queue, Semaphore, CommandBuffer, Buffer, Image, Communicator), their create-info and property structs, the free
/// functions, Result and the helper templates Span and Unique.
namespace baton {

class Instance;
class PhysicalDevice;
class Device;
class Queue;
class Semaphore;
class CommandBuffer;
class Buffer;
class Image;
class Communicator;
struct SemaphoreValue;
struct SubmitInfo;

/// The common part of every handle: a 64-bit value naming an object in baton's handle table
/// (slot index and generation), 0 for null. Handles are trivially copyable and non-owning, like
/// vk::Semaphore; using a handle after its object was destroyed returns ErrorInvalidHandle.
///
/// `Derived` is the handle class itself (Instance, Semaphore, ...), so that only handles of the
/// same type compare. Copying, comparing and testing a handle touch no baton state: thread safe.
template <class Derived>
class Handle {
 public:
  /// The null handle (raw() is 0).
  constexpr Handle() noexcept = default;
  /// A handle holding `raw`, as raw() of a handle of the same type returned it. baton does not
  /// check the value here: a value that names no live object of this type makes calls return
  /// ErrorInvalidHandle.
  constexpr explicit Handle(uint64_t raw) noexcept : handle_(raw) {}
  /// The 64-bit value (0 for null): for logging, hashing, or passing through code that cannot
  /// hold the type. The C API's handles hold the same value.
  constexpr uint64_t raw() const noexcept { return handle_; }
  /// True when the handle is not null. Says nothing about whether its object is still alive.
  constexpr explicit operator bool() const noexcept { return handle_ != 0; }
  /// True when both handles hold the same value (name the same object, or are both null).
  friend constexpr bool operator==(Derived a, Derived b) noexcept { return a.handle_ == b.handle_; }
  /// True when the handles hold different values.
  friend constexpr bool operator!=(Derived a, Derived b) noexcept { return a.handle_ != b.handle_; }

 protected:
  uint64_t handle_ = 0;  ///< The value raw() returns; 0 for null.
};

/// A timeout meaning "never expire", for every wait that takes timeoutNs.
constexpr uint64_t kWaitForever = UINT64_MAX;

/// Which backend a physical device, queue or native handle belongs to.
enum class BackendKind : uint32_t {
  Host = 0,  ///< CPU worker threads; always available
  Cuda = 1,  ///< NVIDIA CUDA driver API, loaded at run time
  Hip = 2,   ///< AMD HIP runtime, loaded at run time
};
/// The number of BackendKind values (enumerateBackends reports this many backends).
constexpr uint32_t kBackendKindCount = 3;

/// Bit of a backend in InstanceCreateInfo::backendMask.
constexpr uint32_t backendBit(BackendKind kind) noexcept {
  return 1u << static_cast<uint32_t>(kind);
}
/// Every backend's bit: the default InstanceCreateInfo::backendMask.
constexpr uint32_t kAllBackends = (1u << kBackendKindCount) - 1;

/// The printable name of a backend: "host", "cuda", "hip". Never null. Thread safe.
BATON_API const char* backendName(BackendKind kind) noexcept;

/// Host waits over several semaphores: satisfied when all, or any one, of the values is reached.
enum class WaitMode : uint32_t { All = 0, Any = 1 };
/// \var WaitMode::All
/// Satisfied when every semaphore has reached its value.
/// \var WaitMode::Any
/// Satisfied when at least one semaphore has reached its value.

}  // namespace baton
