/// \file
/// baton/physical_device.hpp — a device some backend can run work on, and what it can do.
#pragma once

#include <cstdint>

#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/result.hpp"

namespace baton {

/// Capability bits of PhysicalDeviceProperties::capabilities (capabilityNames() prints them).
enum Capability : uint64_t {
  kCapabilityDeviceMemory = 1ull << 0,          ///< MemoryKind::Device buffers
  kCapabilityHostPinnedMemory = 1ull << 1,      ///< MemoryKind::HostPinned buffers (mappable)
  kCapabilityStreamOrderedAlloc = 1ull << 2,    ///< queue-ordered alloca/dealloca (memory pools)
  kCapabilityStreamMemOps64 = 1ull << 3,        ///< 64-bit GPU-side value waits and writes
  kCapabilityNativeTimepointWaits = 1ull << 4,  ///< waits on recorded device signals stay on GPU
  kCapabilityExternalSemaphoreTimelineFd = 1ull << 5,  ///< imports Vulkan timeline OPAQUE_FD
  kCapabilityExternalMemoryOpaqueFd = 1ull << 6,       ///< imports Vulkan memory OPAQUE_FD
  kCapabilityHostMappedDeviceMemory = 1ull << 7,       ///< Device buffers are host-mappable
  /// CommandBufferUsage::Graph builds driver graphs (the host backend replays them instead)
  kCapabilityGraphCommandBuffers = 1ull << 8,
  /// kBufferShareable buffers and Device::importBuffer: memory shared with other processes (CUDA:
  /// virtual memory management with POSIX descriptors; HIP: IPC memory handles; host: memfd)
  kCapabilityShareableMemory = 1ull << 9,
};

/// Writes the names of the set bits of `capabilities`, comma-separated, into buffer (always
/// NUL-terminated when capacity > 0), e.g. "device-memory, host-pinned-memory". Returns the
/// number of characters the full text needs (without the NUL). Thread safe.
BATON_API size_t capabilityNames(uint64_t capabilities, char* buffer, size_t capacity) noexcept;

/// What PhysicalDevice::getProperties writes: the device's identity, its limits and its
/// capabilities.
struct PhysicalDeviceProperties {
  BackendKind backend = BackendKind::Host;  ///< the backend that runs work on it
  uint32_t ordinal = 0;   ///< index among this backend's devices (the CUDA/HIP device ordinal)
  char name[256] = {};    ///< as the driver names it; the host: "host (N CPU threads)"
  uint8_t uuid[16] = {};  ///< matches VkPhysicalDeviceIDProperties::deviceUUID on GPUs
  /// The GPU architecture as its toolchain names it: "sm_90" (CUDA), the gcnArchName
  /// "gfx90a:sramecc+:xnack-" (HIP); "" on the host.
  char arch[64] = {};
  uint32_t computeMajor = 0;  ///< compute capability (CUDA) or gfx version (HIP); 0 on the host
  uint32_t computeMinor = 0;  ///< the minor number of the same version; 0 on the host
  uint64_t totalMemory = 0;   ///< bytes
  uint32_t maxQueues = 0;     ///< the largest DeviceCreateInfo::queueCount accepted
  uint64_t capabilities = 0;  ///< Capability bits
};

/// A device some backend can run work on, as Instance::enumeratePhysicalDevices lists it. A
/// non-owning handle (see Handle), owned by the instance: valid until the instance is destroyed.
class BATON_API PhysicalDevice : public Handle<PhysicalDevice> {
 public:
  using Handle::Handle;
  /// Writes the device's properties into *properties (caller-owned).
  /// Ownership: owned by the instance that enumerated it; valid until that instance is
  /// destroyed. Thread safe. Returns Success, ErrorInvalidArgument (null), ErrorInvalidHandle.
  [[nodiscard]] Result getProperties(PhysicalDeviceProperties* properties) const noexcept;
};

}  // namespace baton
