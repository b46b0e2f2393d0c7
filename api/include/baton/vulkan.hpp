/// \file
/// baton/vulkan.hpp — Vulkan interop: share timeline semaphores and memory with a Vulkan device
/// (docs/guide.md, 'Vulkan interop'). The only baton header that includes <vulkan/vulkan.h>; it
/// uses Vulkan types only (no prototypes), so it works with VK_NO_PROTOTYPES and loaders such as
/// volk.
///
/// A Vulkan timeline semaphore imported into baton is an ordinary baton Semaphore: any queue of
/// any device of the instance, and the host, wait on it and signal it, with the semantics of
/// baton/semaphore.hpp, while Vulkan queues and the Vulkan host API wait on and signal the
/// VkSemaphore. Both sides see one timeline. Two modes carry it, chosen per import:
///
///   - **Native**: the baton device imports the semaphore's OPAQUE_FD (CUDA:
///     cuImportExternalSemaphore with the timeline fd type). That device's queues signal
///     it in stream order, and wait for it GPU-side (cuWaitExternalSemaphoresAsync) for
///     values no baton queue has recorded a signal of yet, so that Vulkan -> CUDA and
///     CUDA -> Vulkan edges need no host hop. Values raised anywhere else (the host,
///     host queues, other devices) are forwarded as in bridged mode; host waits for
///     values baton queues signal use baton's own events (vkWaitSemaphores took milliseconds
///     to notice a CUDA signal on the NVIDIA driver), values Vulkan signals are observed by
///     the watcher as in bridged mode. Needs a baton device whose backend imports timeline
///     fds (kCapabilityExternalSemaphoreTimelineFd: the CUDA backend), a Vulkan device
///     with VK_KHR_external_semaphore_fd enabled, a semaphore created exportable, and
///     equal device UUIDs. Native memory: cuImportExternalMemory +
///     cuExternalMemoryGetMappedBuffer; the buffer has a device address, no host mapping.
///   - **Bridged**: baton forwards signals on the host: a value baton reaches (host signal, queue
///     signal, device signal observed complete) is passed to vkSignalSemaphore on the
///     thread that reached it; values Vulkan reaches are observed by a watcher thread per
///     import (vkWaitSemaphores on the next value, in slices of at most 10 ms) and passed
///     to baton. Same semantics, higher latency (see bench/interop). Used for the host
///     backend, HIP, and Vulkan drivers without VK_KHR_external_semaphore_fd such as Mesa's
///     lavapipe. A host wait through baton for a value baton signals never goes through
///     Vulkan.
///
/// Ordering in bridged mode: a value baton reaches is published to baton's waiters first and
/// passed to vkSignalSemaphore right after, on the same thread; so a thread that baton woke may
/// still read the older value from Vulkan for a moment (Semaphore::signal itself returns only
/// after the forward). Vulkan work waiting for the value is released either way. The other way
/// round, Semaphore::getValue and baton waits see a value Vulkan reached once the watcher has
/// read it (bench/interop measures the delay).
///
/// InteropModeRequest::Auto bridges semaphores, and imports memory natively when every condition
/// holds (Bridged otherwise). It says why through the instance's debug callback
/// (MessageSeverity::Info, or Warning when the device UUIDs differ); getVulkanSemaphoreInterop /
/// getVulkanMemoryInterop report it later. Semaphores are bridged even where native import is
/// possible because on the driver measured (NVIDIA) bridging was faster for every queue hop
/// between Vulkan and CUDA, by an order of magnitude, and about even for a Vulkan host signal to
/// a CUDA queue; a CUDA signal seen through vkWaitSemaphores took milliseconds natively, and host
/// waits through baton use baton's own events in both modes (docs/performance.md,
/// baton-interop-bench, has the figures). Request InteropModeRequest::Native for GPU-side waits
/// and signals that need no host thread.
///
/// Rules Vulkan imposes that baton cannot check for you:
///   - The values of one timeline must rise in the order they are signalled, across both sides:
///     a baton signal of v while a Vulkan signal of a value below v is still pending breaks
///     VUID-VkSemaphoreSignalInfo-value-03259, as it would in plain Vulkan.
///   - Vulkan cannot be asked whether a semaphore is a timeline or exportable, nor which memory
///     type an allocation has: the import infos ask you to state them.
///
/// Failure (Vulkan has none): when an imported semaphore fails in baton (Semaphore::fail, a
/// failed producer, baton device loss, destruction with work pending), baton waiters return
/// ErrorSemaphoreFailed as usual. What Vulkan sees is set by VulkanFailurePolicy: by default
/// nothing (forwarding stops; Vulkan work waiting for values baton would have signalled stays
/// blocked), or a release signal so that Vulkan waits return (see VulkanFailurePolicy::Release).
/// A Vulkan call of the bridge that fails (VK_ERROR_DEVICE_LOST seen by the watcher's
/// vkWaitSemaphores or by a forwarding vkSignalSemaphore) fails the baton semaphore, with a
/// reason naming the VkResult, so that the two sides never silently diverge.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>

#include "baton/buffer.hpp"
#include "baton/device.hpp"
#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/image.hpp"
#include "baton/instance.hpp"
#include "baton/physical_device.hpp"
#include "baton/result.hpp"
#include "baton/semaphore.hpp"

namespace baton {

/// How an import shares its object between Vulkan and baton (see the top of this header).
enum class InteropMode : uint32_t {
  Native = 0,   ///< the backend imported the OS handle: GPU-side waits and signals
  Bridged = 1,  ///< baton forwards signals on the host; memory is shared by mapping
};

/// Which mode an import may use.
enum class InteropModeRequest : uint32_t {
  Auto = 0,     ///< semaphores Bridged; memory Native when possible, else Bridged (see above)
  Native = 1,   ///< Native or an error (ErrorNotSupported / ErrorDeviceMismatch) saying why not
  Bridged = 2,  ///< Bridged even where Native is possible (tests, measurements)
};

/// "native" or "bridged". Never null. Thread safe.
BATON_API const char* interopModeName(InteropMode mode) noexcept;

/// What the VkSemaphore sees when its baton semaphore fails. Vulkan has no failure state.
enum class VulkanFailurePolicy : uint32_t {
  /// Stop forwarding: Vulkan is never signalled again by baton, so Vulkan work waiting for a
  /// value that baton would have signalled stays blocked (it depends on results that were not
  /// produced). Before tearing Vulkan down, release it yourself (vkSignalSemaphore) or make sure
  /// no such work was submitted. Native mode: a baton queue's GPU-side wait already in its stream
  /// is a wait on the VkSemaphore too, so that queue stays blocked like the Vulkan work (baton
  /// waits on the failed semaphore itself return at once; work behind the blocked wait only
  /// runs once the VkSemaphore reaches the value).
  Hold = 0,
  /// Signal the largest value Vulkan accepts (current + maxTimelineSemaphoreValueDifference), so
  /// that every Vulkan wait on the semaphore returns and vkDeviceWaitIdle/teardown cannot hang.
  /// The data those waits guarded is not valid, and if Vulkan itself still has signals of this
  /// semaphore pending, this breaks Vulkan's ordering rules (VUID-VkSemaphoreSignalInfo-value-
  /// 03259): use it for teardown paths, and read the failure from baton. Native mode: GPU-side
  /// waits of baton queues are released too, and the submissions they belong to fail their
  /// signals (as any submission whose wait failed does) instead of completing them.
  Release = 1,
};

/// The Vulkan device an import belongs to. Borrowed: baton never destroys these objects; keep
/// them alive while any import made with them is alive (see each import for what "alive" means).
struct VulkanDevice {
  VkInstance instance = VK_NULL_HANDLE;              ///< the instance of physicalDevice
  VkPhysicalDevice physicalDevice = VK_NULL_HANDLE;  ///< the physical device of device
  /// Created with Vulkan 1.2's timelineSemaphore feature (or VK_KHR_timeline_semaphore) enabled;
  /// for native imports also with VK_KHR_external_semaphore_fd / VK_KHR_external_memory_fd.
  VkDevice device = VK_NULL_HANDLE;
  /// How baton resolves Vulkan functions; null means the vkGetInstanceProcAddr of the Vulkan
  /// loader baton is linked with.
  PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr;
};

// ---- semaphores -------------------------------------------------------------------------------

/// What importVulkanSemaphore needs. Read during the call only (the fd excepted: see fd).
struct VulkanSemaphoreImportInfo {
  VulkanDevice vulkan;  ///< the Vulkan device the semaphore was created on
  /// The semaphore. Borrowed: keep it alive until the baton semaphore is destroyed (after
  /// Semaphore::destroy returns, baton never touches it again).
  VkSemaphore semaphore = VK_NULL_HANDLE;
  /// The type it was created with (VkSemaphoreTypeCreateInfo). Vulkan cannot be asked, and a
  /// binary semaphore cannot carry a timeline: anything but VK_SEMAPHORE_TYPE_TIMELINE is
  /// refused. The default (MAX_ENUM, "not stated") is ErrorInvalidArgument.
  VkSemaphoreType semaphoreType = VK_SEMAPHORE_TYPE_MAX_ENUM;
  /// VkExportSemaphoreCreateInfo::handleTypes it was created with (0: not exportable, so native
  /// import is impossible; Auto bridges semaphores in any case).
  VkExternalSemaphoreHandleTypeFlags exportHandleTypes = 0;
  /// An OPAQUE_FD already exported from it (vkGetSemaphoreFdKHR), or -1 to let baton export one
  /// when it imports natively. Ownership: after a successful import baton owns the fd in every
  /// mode (native: the driver keeps it, as cuImportExternalSemaphore does; bridged: closed at
  /// once); after a failed import the caller still owns it. A descriptor that is not open is
  /// ErrorInvalidArgument.
  int fd = -1;
  /// The baton device that should import natively when Native is requested (its backend must
  /// declare kCapabilityExternalSemaphoreTimelineFd). Null: no native device, so Bridged. The
  /// semaphore is usable by every device of the instance in either mode.
  Device device;
  InteropModeRequest mode = InteropModeRequest::Auto;  ///< which mode the import may use
  /// What the VkSemaphore sees when the baton semaphore fails.
  VulkanFailurePolicy failurePolicy = VulkanFailurePolicy::Hold;
  const char* debugName = nullptr;  ///< copied; names the baton semaphore in messages
};

/// Imports a Vulkan timeline semaphore as a baton semaphore of `instance`, with the Vulkan
/// semaphore's current value as its initial value. The debug callback receives which mode was
/// chosen and why. Ownership: the caller owns *semaphore and destroys it with
/// Semaphore::destroy (or UniqueSemaphore) before destroying the VkSemaphore; destroying it with
/// baton work pending fails it (see Semaphore::destroy) and applies the failure policy. A
/// VkSemaphore can be imported only once at a time. Thread safe.
/// Returns Success; ErrorInvalidArgument (null handles or output, semaphoreType not stated, an fd
/// that is not open, unknown enum values); ErrorNotSupported (a binary semaphore, a Vulkan device
/// without timeline semaphores, mode Native impossible: the message lists every reason);
/// ErrorDeviceMismatch (mode Native with a baton device whose UUID differs from the Vulkan
/// physical device's, or a device of another instance); ErrorInvalidState (the VkSemaphore is
/// already imported); ErrorInvalidHandle; ErrorDriver (a Vulkan call failed: the VkResult is
/// named); ErrorOutOfHostMemory.
[[nodiscard]] BATON_API Result importVulkanSemaphore(Instance instance,
                                                     const VulkanSemaphoreImportInfo& info,
                                                     Semaphore* semaphore) noexcept;

/// What createVulkanTimeline needs. Read during the call only.
struct VulkanTimelineCreateInfo {
  VulkanDevice vulkan;        ///< the Vulkan device to create the VkSemaphore on
  uint64_t initialValue = 0;  ///< the value the timeline starts at, on both sides
  Device device;              ///< as VulkanSemaphoreImportInfo::device
  InteropModeRequest mode = InteropModeRequest::Auto;  ///< as VulkanSemaphoreImportInfo::mode
  /// As VulkanSemaphoreImportInfo::failurePolicy.
  VulkanFailurePolicy failurePolicy = VulkanFailurePolicy::Hold;
  const char* debugName = nullptr;  ///< copied; names the baton semaphore in messages
};

/// A Vulkan timeline semaphore and the baton semaphore that shares its timeline.
struct VulkanTimeline {
  VkSemaphore vulkan = VK_NULL_HANDLE;      ///< the Vulkan side
  Semaphore baton;                          ///< the baton side
  InteropMode mode = InteropMode::Bridged;  ///< how the import carries the timeline
};

/// Creates a timeline VkSemaphore on info.vulkan.device — exportable as OPAQUE_FD when the Vulkan
/// device can export timelines that way — and imports it (importVulkanSemaphore). Ownership: the
/// caller owns both and releases them with destroyVulkanTimeline. Thread safe. Returns what
/// importVulkanSemaphore returns; on any error nothing is left behind.
[[nodiscard]] BATON_API Result createVulkanTimeline(Instance instance,
                                                    const VulkanTimelineCreateInfo& info,
                                                    VulkanTimeline* timeline) noexcept;

/// Destroys timeline.baton (Semaphore::destroy), then timeline.vulkan (vkDestroySemaphore). The
/// caller makes sure no Vulkan work still uses the VkSemaphore, as vkDestroySemaphore requires.
/// Returns what Semaphore::destroy returns (Success, ErrorObjectInUse, ErrorInvalidHandle);
/// the VkSemaphore is destroyed in every case except ErrorInvalidArgument (null vulkan.device).
[[nodiscard]] BATON_API Result destroyVulkanTimeline(const VulkanDevice& vulkan,
                                                     const VulkanTimeline& timeline) noexcept;

/// What importVulkanSemaphoreFd needs. Read during the call only (the fd excepted: see fd).
struct VulkanSemaphoreFdImportInfo {
  /// An OPAQUE_FD exported (vkGetSemaphoreFdKHR) from a Vulkan timeline semaphore, typically by
  /// another process that passed it over a Unix socket or by inheritance. Ownership: after a
  /// successful import baton owns it (it is closed when the semaphore is released); after a
  /// failed import the caller still owns it, unchanged. Anything but an open descriptor is
  /// ErrorInvalidArgument.
  int fd = -1;
  /// A value the Vulkan timeline is known to have reached (the exporter sends it with the fd; 0
  /// is always safe). baton never reads the Vulkan counter: see importVulkanSemaphoreFd.
  uint64_t initialValue = 0;
  const char* debugName = nullptr;  ///< copied; names the baton semaphore in messages
};

/// Imports a Vulkan timeline semaphore that baton knows only by its OPAQUE_FD (no VkDevice: the
/// Vulkan side may live in another process) into `device`, as a baton semaphore of the device's
/// instance. Needs a device whose backend imports timeline fds natively
/// (kCapabilityExternalSemaphoreTimelineFd: the CUDA backend). The semaphore is an ordinary baton
/// semaphore, usable by every queue of the instance and by the host, with these differences:
///   - `device`'s queues wait for it and signal it GPU-side, in stream order (as native mode).
///   - Values baton reaches elsewhere (Semaphore::signal, host queues, other devices) are passed
///     to Vulkan by a signal that the device enqueues on a stream of the import's own: the
///     Vulkan value follows shortly after the call returns, not before.
///   - Values Vulkan signals are learnt when something in baton waits for them (a host wait, a
///     submission of another device): the device watches for the value GPU-side and a baton
///     thread ("baton-vkfd") reaches it in baton. Neither the driver nor baton can read a Vulkan
///     counter, so Semaphore::getValue returns the highest value baton knows was reached (by its
///     own signals, or by a wait that returned): a lower bound of the Vulkan value.
///   - Failure: a failed baton semaphore stops forwarding, and Vulkan work waiting for values
///     baton would have signalled stays blocked (VulkanFailurePolicy::Hold; a release signal
///     would need the VkDevice's maxTimelineSemaphoreValueDifference). A process that dies does
///     not fail the import: Vulkan has no failure to report, so pair the hand-over with a shared
///     baton semaphore (Semaphore::exportFd) where that matters.
///   - Import each Vulkan timeline once per process: two imports forward every value twice.
/// The rules of the top of this header hold across processes: the values of the timeline rise in
/// the order they are signalled, on both sides. Destroying the semaphore while a wait for a value
/// Vulkan never signals is pending keeps the driver's import (and its descriptor) until the
/// value comes or the process ends: the driver forbids destroying a semaphore it waits on.
/// Ownership: the caller owns *semaphore (Semaphore::destroy). Thread safe.
/// Returns Success; ErrorInvalidArgument (null output, an fd that is not open, a descriptor the
/// driver refused: not a Vulkan timeline semaphore's OPAQUE_FD, or one of another GPU);
/// ErrorNotSupported (the device cannot import Vulkan timelines: the message says why, for example
/// the host backend or HIP 5.2); ErrorDriver (another driver error); ErrorInvalidHandle;
/// ErrorOutOfHostMemory.
[[nodiscard]] BATON_API Result importVulkanSemaphoreFd(Device device,
                                                       const VulkanSemaphoreFdImportInfo& info,
                                                       Semaphore* semaphore) noexcept;

/// What an import is and how it is carried.
struct VulkanInteropInfo {
  InteropMode mode = InteropMode::Bridged;  ///< how the import is carried
  VkDevice device = VK_NULL_HANDLE;         ///< the Vulkan device of the import
  VkSemaphore semaphore = VK_NULL_HANDLE;   ///< semaphores
  VkDeviceMemory memory = VK_NULL_HANDLE;   ///< buffers
  VulkanFailurePolicy failurePolicy = VulkanFailurePolicy::Hold;  ///< semaphores
  char reason[512] = {};           ///< why this mode (the text the debug callback received)
  VkImage image = VK_NULL_HANDLE;  ///< images
};

/// Describes how `semaphore` shares its timeline with Vulkan. A semaphore of
/// importVulkanSemaphoreFd reports mode Native, no VkDevice or VkSemaphore, and policy Hold.
/// Thread safe. Returns Success,
/// ErrorInvalidArgument (null output; a semaphore not imported from Vulkan), ErrorInvalidHandle.
[[nodiscard]] BATON_API Result getVulkanSemaphoreInterop(Semaphore semaphore,
                                                         VulkanInteropInfo* info) noexcept;

// ---- memory -----------------------------------------------------------------------------------

/// What importVulkanMemory needs. Read during the call only (the fd excepted: see fd).
struct VulkanMemoryImportInfo {
  VulkanDevice vulkan;  ///< the Vulkan device the memory was allocated on
  /// The allocation and the range of it the baton buffer covers. Borrowed: keep the memory (and
  /// the VkDevice) alive until the baton buffer is destroyed and the last baton submission that
  /// uses it has finished.
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize allocationSize = 0;  ///< VkMemoryAllocateInfo::allocationSize
  VkDeviceSize offset = 0;          ///< where the range starts in the allocation, in bytes
  VkDeviceSize size = 0;            ///< > 0, offset + size <= allocationSize
  /// VkMemoryAllocateInfo::memoryTypeIndex: Vulkan cannot be asked which type an allocation has.
  /// Bridged mode needs HOST_VISIBLE | HOST_COHERENT (shared by mapping, with no flushes to order).
  uint32_t memoryTypeIndex = UINT32_MAX;
  /// Bridged: where the range is already mapped by you (vkMapMemory pointer + offset), or null to
  /// let baton vkMapMemory it (then baton unmaps it when the buffer is released: do not map the
  /// memory yourself meanwhile, Vulkan allows one mapping per allocation; use Buffer::map).
  void* hostPointer = nullptr;
  /// Native: an OPAQUE_FD exported from the allocation (vkGetMemoryFdKHR), or -1 to let baton
  /// export one. Ownership as VulkanSemaphoreImportInfo::fd.
  int fd = -1;
  /// Native: the allocation is a dedicated one (VkMemoryDedicatedAllocateInfo chained to
  /// VkMemoryAllocateInfo). CUDA must be told (CUDA_EXTERNAL_MEMORY_DEDICATED); a wrong value
  /// makes the import fail or map the wrong memory. Ignored in bridged mode.
  bool dedicated = false;
  InteropModeRequest mode = InteropModeRequest::Auto;  ///< which mode the import may use
};

/// Imports a range of Vulkan memory as a baton Buffer of `device` (MemoryKind::HostPinned in
/// bridged mode), usable by its command buffers and, through Buffer::map and
/// Buffer::getDeviceAddress, by native callbacks. Bridged mode shares the mapping: the host
/// backend reads and writes the Vulkan memory directly; order accesses with semaphores (the
/// memory is coherent, so a semaphore signal after a write is all Vulkan needs). Ownership: the
/// caller owns *buffer (Buffer::destroy); the memory stays the caller's. Thread safe.
/// Returns Success; ErrorInvalidArgument (null handles or output, size 0, a range outside the
/// allocation, memoryTypeIndex unknown or out of range, an fd that is not open); ErrorNotSupported
/// (bridged: memory not HOST_VISIBLE|HOST_COHERENT, or a device whose backend cannot use a host
/// mapping; Native impossible: the message lists why); ErrorDeviceMismatch (Native with different
/// device UUIDs); ErrorInvalidHandle; ErrorDriver (vkMapMemory failed: the VkResult is named);
/// ErrorOutOfHostMemory.
[[nodiscard]] BATON_API Result importVulkanMemory(Device device, const VulkanMemoryImportInfo& info,
                                                  Buffer* buffer) noexcept;

// ---- images -----------------------------------------------------------------------------------

/// What importVulkanImage needs. Read during the call only (the fd excepted: see fd). Vulkan
/// cannot be asked how an image was created: state what its VkImageCreateInfo said.
struct VulkanImageImportInfo {
  VulkanDevice vulkan;  ///< the Vulkan device the image was created on
  /// The image. Borrowed: keep it (and the VkDevice) alive until the baton image is destroyed
  /// and the last baton submission that uses it has finished.
  VkImage image = VK_NULL_HANDLE;
  /// The memory bound to the image (vkBindImageMemory). Borrowed as the image is.
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize allocationSize = 0;        ///< VkMemoryAllocateInfo::allocationSize
  VkDeviceSize memoryOffset = 0;          ///< vkBindImageMemory's memoryOffset
  uint32_t memoryTypeIndex = UINT32_MAX;  ///< VkMemoryAllocateInfo::memoryTypeIndex
  /// A VkFormat of the table in docs/guide.md ('Vulkan images'): the colour formats of
  /// ImageFormat. Anything else is ErrorNotSupported, naming the format.
  VkFormat format = VK_FORMAT_UNDEFINED;
  uint32_t width = 0;        ///< VkImageCreateInfo::extent.width, > 0
  uint32_t height = 0;       ///< extent.height, > 0 (a 2D image: extent.depth 1)
  uint32_t mipLevels = 1;    ///< >= 1, at most the levels the extent has
  uint32_t arrayLayers = 1;  ///< >= 1
  /// VK_IMAGE_TILING_LINEAR or VK_IMAGE_TILING_OPTIMAL; the default (MAX_ENUM, "not stated") is
  /// ErrorInvalidArgument.
  VkImageTiling tiling = VK_IMAGE_TILING_MAX_ENUM;
  VkImageUsageFlags usage = 0;  ///< VkImageCreateInfo::usage
  /// Bridged: the allocation already mapped by you at memoryOffset (vkMapMemory's pointer +
  /// memoryOffset), or null to let baton map it (as VulkanMemoryImportInfo::hostPointer).
  void* hostPointer = nullptr;
  /// Native: an OPAQUE_FD of the memory (vkGetMemoryFdKHR), or -1. Ownership as
  /// VulkanSemaphoreImportInfo::fd.
  int fd = -1;
  /// Native: the allocation is dedicated to the image (VkMemoryDedicatedAllocateInfo).
  bool dedicated = false;
  InteropModeRequest mode = InteropModeRequest::Auto;  ///< which mode the import may use
  const char* debugName = nullptr;                     ///< copied; names the image in messages
};

/// Imports a Vulkan image as a baton Image of `device`, sharing its memory: command buffers of
/// the device copy between it and buffers (CommandBuffer::copyBufferToImage, copyImageToBuffer),
/// native callbacks use its native handles (Image::getNative), in queue order. What each mode
/// shares (docs/guide.md, 'Vulkan images'):
///   - **Native** (CUDA): an OPTIMAL image in memory exported as OPAQUE_FD (dedicated or not) on
///     the Vulkan device's GPU (equal UUIDs), mapped as a CUDA mipmapped array, with a surface
///     per level and a texture over all. The image belongs to VK_QUEUE_FAMILY_EXTERNAL, in
///     VK_IMAGE_LAYOUT_GENERAL, while CUDA works on it (release it to the external family after
///     Vulkan's work, acquire it back before Vulkan's next, ordered with a shared timeline).
///     Refused with the reason: LINEAR images (the driver does not map them as arrays), images
///     with several levels and several layers (the driver's layout of the layers past the first
///     differed from Vulkan's on the H100), HIP (ROCm 5.2 maps no external memory as arrays).
///   - **Bridged** (the host backend): a LINEAR image in HOST_VISIBLE | HOST_COHERENT memory,
///     shared by mapping; baton reads each level's and layer's layout with
///     vkGetImageSubresourceLayout. Keep the image in VK_IMAGE_LAYOUT_GENERAL and order baton's
///     copies and Vulkan's use with semaphores.
/// InteropModeRequest::Auto imports natively when every condition holds, and bridged on the host
/// backend otherwise; a GPU device that cannot import natively refuses (the message lists why).
/// Ownership: the caller owns *image (Image::destroy); the VkImage and its memory stay the
/// caller's; `fd`, when given, is baton's after a successful import (closed; the driver keeps a
/// duplicate) and untouched after a failed one. Thread safe.
/// Returns Success; ErrorInvalidArgument (null handles or output, a size, level or layer count of
/// 0 or beyond the extent, tiling not stated, memoryTypeIndex unknown, a range outside the
/// allocation, an fd that is not open or that the driver refused, an unknown mode);
/// ErrorNotSupported (a format outside the table; no mode possible: the message says why);
/// ErrorDeviceMismatch (native on a GPU that is not the Vulkan device); ErrorDriver (a Vulkan or
/// driver call failed: named); ErrorInvalidHandle; ErrorOutOfHostMemory; ErrorOutOfDeviceMemory.
[[nodiscard]] BATON_API Result importVulkanImage(Device device, const VulkanImageImportInfo& info,
                                                 Image* image) noexcept;

/// Describes how `image` shares Vulkan memory (VulkanInteropInfo::image and memory set). Thread
/// safe. Returns Success, ErrorInvalidArgument (null output; an image not imported from Vulkan),
/// ErrorInvalidHandle.
[[nodiscard]] BATON_API Result getVulkanImageInterop(Image image, VulkanInteropInfo* info) noexcept;

/// The ImageFormat of a VkFormat, or ImageFormat::Undefined when baton has no such format. Thread
/// safe.
BATON_API ImageFormat imageFormatFromVulkan(VkFormat format) noexcept;

/// Describes how `buffer` shares Vulkan memory. Thread safe. Returns Success,
/// ErrorInvalidArgument (null output; a buffer not imported from Vulkan), ErrorInvalidHandle.
[[nodiscard]] BATON_API Result getVulkanMemoryInterop(Buffer buffer,
                                                      VulkanInteropInfo* info) noexcept;

// ---- devices ----------------------------------------------------------------------------------

/// Finds the baton physical device of `instance` whose UUID equals the Vulkan physical device's
/// VkPhysicalDeviceIDProperties::deviceUUID (CUDA: cuDeviceGetUuid). Only vulkan.instance,
/// vulkan.physicalDevice and vulkan.getInstanceProcAddr are used. Thread safe.
/// Returns Success; ErrorNotSupported (no baton device matches: the message names the UUID and
/// the Vulkan device; the host backend never matches, use bridged mode with it);
/// ErrorInvalidArgument; ErrorInvalidHandle.
[[nodiscard]] BATON_API Result matchVulkanPhysicalDevice(Instance instance,
                                                         const VulkanDevice& vulkan,
                                                         PhysicalDevice* physicalDevice) noexcept;

/// What each side supports, and what an Auto import would use.
struct VulkanInteropSupport {
  bool timelineSemaphores = false;  ///< the Vulkan physical device supports timeline semaphores
  /// Handle types Vulkan can export timeline semaphores as.
  VkExternalSemaphoreHandleTypeFlags vulkanSemaphoreExportTypes = 0;
  /// Handle types Vulkan can export buffer memory as.
  VkExternalMemoryHandleTypeFlags vulkanMemoryExportTypes = 0;
  /// The Vulkan physical device offers the device extension VK_KHR_external_semaphore_fd (for
  /// fd export).
  bool vulkanExternalSemaphoreFd = false;
  /// The Vulkan physical device offers the device extension VK_KHR_external_memory_fd (for fd
  /// export).
  bool vulkanExternalMemoryFd = false;
  /// Semaphore handle types the baton device can import natively (none for the host backend).
  VkExternalSemaphoreHandleTypeFlags batonSemaphoreImportTypes = 0;
  /// Memory handle types the baton device can import natively (none for the host backend).
  VkExternalMemoryHandleTypeFlags batonMemoryImportTypes = 0;
  bool uuidMatches = false;  ///< the baton device is the Vulkan device's GPU
  /// The mode importVulkanSemaphore with InteropModeRequest::Auto would use for an exportable
  /// semaphore (semaphoreReason says why).
  InteropMode semaphoreMode = InteropMode::Bridged;
  /// The mode importVulkanMemory with InteropModeRequest::Auto would use for exportable memory
  /// (memoryReason says why).
  InteropMode memoryMode = InteropMode::Bridged;
  char semaphoreReason[512] = {};  ///< why semaphoreMode
  char memoryReason[512] = {};     ///< why memoryMode
};

/// Reports what `vulkan` and `device` (may be null: then only the Vulkan side and the bridged
/// verdict) support. vulkan.device may be null (then function availability on the device is not
/// checked). Thread safe. Returns Success, ErrorInvalidArgument, ErrorInvalidHandle.
[[nodiscard]] BATON_API Result queryVulkanInterop(const VulkanDevice& vulkan, Device device,
                                                  VulkanInteropSupport* support) noexcept;

}  // namespace baton
