// baton/fwd.hpp — forward declarations of every handle type, shared by the object headers.
#pragma once

#include <cstdint>

#include "baton/export.h"

namespace baton {

class Instance;
class PhysicalDevice;
class Device;
class Queue;
class Semaphore;
class CommandBuffer;
class Buffer;
struct SemaphoreValue;
struct SubmitInfo;

// The common part of every handle: a 64-bit value naming an object in baton's handle table
// (slot index and generation), 0 for null. Handles are trivially copyable and non-owning, like
// vk::Semaphore; using a handle after its object was destroyed returns ErrorInvalidHandle.
template <class Derived>
class Handle {
 public:
  constexpr Handle() noexcept = default;
  constexpr explicit Handle(uint64_t raw) noexcept : handle_(raw) {}
  constexpr uint64_t raw() const noexcept { return handle_; }
  constexpr explicit operator bool() const noexcept { return handle_ != 0; }
  friend constexpr bool operator==(Derived a, Derived b) noexcept { return a.handle_ == b.handle_; }
  friend constexpr bool operator!=(Derived a, Derived b) noexcept { return a.handle_ != b.handle_; }

 protected:
  uint64_t handle_ = 0;
};

// A timeout meaning "never expire", for every wait that takes timeoutNs.
constexpr uint64_t kWaitForever = UINT64_MAX;

// Which backend a physical device, queue or native handle belongs to.
enum class BackendKind : uint32_t {
  Host = 0,  // CPU worker threads; always available
  Cuda = 1,  // NVIDIA CUDA driver API, loaded at run time
  Hip = 2,   // AMD HIP runtime, loaded at run time
};
constexpr uint32_t kBackendKindCount = 3;

// Bit of a backend in InstanceCreateInfo::backendMask.
constexpr uint32_t backendBit(BackendKind kind) noexcept {
  return 1u << static_cast<uint32_t>(kind);
}
constexpr uint32_t kAllBackends = (1u << kBackendKindCount) - 1;

// The printable name of a backend: "host", "cuda", "hip". Never null. Thread safe.
BATON_API const char* backendName(BackendKind kind) noexcept;

// Host waits over several semaphores: satisfied when all, or any one, of the values is reached.
enum class WaitMode : uint32_t { All = 0, Any = 1 };

}  // namespace baton
