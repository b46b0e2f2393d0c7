/** \file
 * baton/baton_vulkan.h — the C API of Vulkan interop (baton/vulkan.hpp), C11 and C++.
 *
 * Present when libbaton was built with Vulkan interop (libvulkan-dev found; BATON_HAVE_VULKAN in
 * baton's build); needs <vulkan/vulkan.h>. The conventions of baton/baton.h apply: each function
 * calls the C++ function named in its comment, whose comment in baton/vulkan.hpp has the full
 * semantics (native and bridged modes, what Vulkan sees on failure, the rules for the borrowed
 * Vulkan objects); a null pointer to an input struct means that struct's C++ defaults.
 *
 * Beware zero-initialised import infos: their fd field is then 0, which is an open descriptor
 * (stdin) that a successful import takes ownership of. Use the BATON_*_INIT macros (fd -1).
 */
#ifndef BATON_BATON_VULKAN_H_
#define BATON_BATON_VULKAN_H_

#include <vulkan/vulkan.h>

#include "baton/baton.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How an import shares its object between Vulkan and baton. */
typedef enum baton_interop_mode {
  BATON_INTEROP_MODE_NATIVE = 0, /**< the backend imported the OS handle: GPU-side waits/signals */
  /** baton forwards signals on the host; memory shared by mapping */
  BATON_INTEROP_MODE_BRIDGED = 1,
  BATON_INTEROP_MODE_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide; not a mode */
} baton_interop_mode;

/** Which mode an import may use. */
typedef enum baton_interop_mode_request {
  BATON_INTEROP_MODE_REQUEST_AUTO = 0,    /**< semaphores bridged; memory native when possible */
  BATON_INTEROP_MODE_REQUEST_NATIVE = 1,  /**< native or an error saying why not */
  BATON_INTEROP_MODE_REQUEST_BRIDGED = 2, /**< bridged even where native is possible */
  BATON_INTEROP_MODE_REQUEST_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide */
} baton_interop_mode_request;

/** What the VkSemaphore sees when its baton semaphore fails (see VulkanFailurePolicy). */
typedef enum baton_vulkan_failure_policy {
  BATON_VULKAN_FAILURE_POLICY_HOLD = 0,    /**< stop forwarding; Vulkan waiters stay blocked */
  BATON_VULKAN_FAILURE_POLICY_RELEASE = 1, /**< signal the largest value Vulkan accepts */
  BATON_VULKAN_FAILURE_POLICY_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide */
} baton_vulkan_failure_policy;

/** "native" or "bridged". Never null; static storage. Thread safe. (baton::interopModeName) */
BATON_API const char* baton_interop_mode_name(baton_interop_mode mode);

/** The Vulkan device an import belongs to. Borrowed: baton never destroys these objects; keep them
 * alive while any import made with them is alive. */
typedef struct baton_vulkan_device {
  VkInstance instance;              /**< the instance of physical_device */
  VkPhysicalDevice physical_device; /**< the physical device of device */
  /** Created with the timelineSemaphore feature; for native imports also with
   * VK_KHR_external_semaphore_fd / VK_KHR_external_memory_fd. */
  VkDevice device;
  /** Null: the vkGetInstanceProcAddr of the Vulkan loader baton is linked with. */
  PFN_vkGetInstanceProcAddr get_instance_proc_addr;
} baton_vulkan_device;
/** All null: to be filled in. */
#define BATON_VULKAN_DEVICE_INIT \
  { VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE, NULL }

/* ---- semaphores ------------------------------------------------------------------------------ */

/** What baton_import_vulkan_semaphore needs (baton::VulkanSemaphoreImportInfo). */
typedef struct baton_vulkan_semaphore_import_info {
  baton_vulkan_device vulkan; /**< the Vulkan device the semaphore was created on */
  /** Borrowed: keep it alive until the baton semaphore is destroyed. */
  VkSemaphore semaphore;
  /** The type it was created with: only VK_SEMAPHORE_TYPE_TIMELINE is accepted; the default
   * (VK_SEMAPHORE_TYPE_MAX_ENUM, "not stated") is BATON_ERROR_INVALID_ARGUMENT. */
  VkSemaphoreType semaphore_type;
  /** VkExportSemaphoreCreateInfo::handleTypes it was created with (0: not exportable). */
  VkExternalSemaphoreHandleTypeFlags export_handle_types;
  /** An OPAQUE_FD exported from it, or -1 to let baton export one. Ownership: baton's after a
   * successful import (in every mode), still the caller's after a failed one. */
  int fd;
  /** The baton device that should import natively; null: bridged. */
  baton_device device;
  baton_interop_mode_request mode;            /**< which mode the import may use */
  baton_vulkan_failure_policy failure_policy; /**< what the VkSemaphore sees on failure */
  const char* debug_name;                     /**< may be null; copied */
} baton_vulkan_semaphore_import_info;
/** The C++ defaults: semaphore_type not stated, fd -1, AUTO mode, HOLD policy; the Vulkan
 * objects to be filled in. */
#define BATON_VULKAN_SEMAPHORE_IMPORT_INFO_INIT                                                    \
  {                                                                                                \
    BATON_VULKAN_DEVICE_INIT, VK_NULL_HANDLE, VK_SEMAPHORE_TYPE_MAX_ENUM, 0, -1,                   \
        BATON_NULL_HANDLE, BATON_INTEROP_MODE_REQUEST_AUTO, BATON_VULKAN_FAILURE_POLICY_HOLD, NULL \
  }

/** Imports a Vulkan timeline semaphore as a baton semaphore of `instance`, with its current value.
 * Ownership: the caller owns *semaphore and destroys it (baton_semaphore_destroy) before the
 * VkSemaphore. A VkSemaphore can be imported only once at a time. Thread safe.
 * Returns BATON_SUCCESS; BATON_ERROR_INVALID_ARGUMENT (null handles or output, semaphore_type not
 * stated, an fd that is not open, unknown enum values); BATON_ERROR_NOT_SUPPORTED (a binary
 * semaphore, no timeline semaphores, native impossible: the message lists why);
 * BATON_ERROR_DEVICE_MISMATCH; BATON_ERROR_INVALID_STATE (already imported);
 * BATON_ERROR_INVALID_HANDLE; BATON_ERROR_DRIVER (a Vulkan call failed);
 * BATON_ERROR_OUT_OF_HOST_MEMORY. (baton::importVulkanSemaphore) */
BATON_API baton_result baton_import_vulkan_semaphore(baton_instance instance,
                                                     const baton_vulkan_semaphore_import_info* info,
                                                     baton_semaphore* semaphore);

/** What baton_import_vulkan_semaphore_fd needs (baton::VulkanSemaphoreFdImportInfo). */
typedef struct baton_vulkan_semaphore_fd_import_info {
  /** An OPAQUE_FD exported from a Vulkan timeline semaphore, in any process. Ownership: baton's
   * after a successful import, still the caller's (unchanged) after a failed one. */
  int fd;
  uint64_t initial_value; /**< a value the timeline is known to have reached (0 is safe) */
  const char* debug_name; /**< may be null; copied */
} baton_vulkan_semaphore_fd_import_info;
/** The C++ defaults: fd -1 (to be filled in), initial value 0, no name. */
#define BATON_VULKAN_SEMAPHORE_FD_IMPORT_INFO_INIT \
  { -1, 0, NULL }

/** Imports a Vulkan timeline semaphore known only by its OPAQUE_FD (its VkDevice may be in
 * another process) into `device`, whose backend must import timeline fds natively (CUDA). The
 * device's queues wait for it and signal it GPU-side; other values are passed on and observed
 * through the device; baton's value is a lower bound of the Vulkan one (the full contract:
 * baton::importVulkanSemaphoreFd). Ownership: the caller owns *semaphore
 * (baton_semaphore_destroy). Thread safe.
 * Returns BATON_SUCCESS; BATON_ERROR_INVALID_ARGUMENT (null info or output, an fd that is not
 * open, a descriptor the driver refused); BATON_ERROR_NOT_SUPPORTED (the device cannot import
 * Vulkan timelines: the message says why); BATON_ERROR_DRIVER (another driver error);
 * BATON_ERROR_INVALID_HANDLE; BATON_ERROR_OUT_OF_HOST_MEMORY. (baton::importVulkanSemaphoreFd) */
BATON_API baton_result baton_import_vulkan_semaphore_fd(
    baton_device device, const baton_vulkan_semaphore_fd_import_info* info,
    baton_semaphore* semaphore);

/** What baton_create_vulkan_timeline needs (baton::VulkanTimelineCreateInfo). */
typedef struct baton_vulkan_timeline_create_info {
  baton_vulkan_device vulkan;      /**< the Vulkan device to create the VkSemaphore on */
  uint64_t initial_value;          /**< the value the timeline starts at, on both sides */
  baton_device device;             /**< as baton_vulkan_semaphore_import_info::device */
  baton_interop_mode_request mode; /**< as for an import */
  baton_vulkan_failure_policy failure_policy; /**< as for an import */
  const char* debug_name;                     /**< may be null; copied */
} baton_vulkan_timeline_create_info;
/** The C++ defaults: initial value 0, no baton device, AUTO mode, HOLD policy, no name; the
 * Vulkan device to be filled in. */
#define BATON_VULKAN_TIMELINE_CREATE_INFO_INIT                                       \
  {                                                                                  \
    BATON_VULKAN_DEVICE_INIT, 0, BATON_NULL_HANDLE, BATON_INTEROP_MODE_REQUEST_AUTO, \
        BATON_VULKAN_FAILURE_POLICY_HOLD, NULL                                       \
  }

/** A Vulkan timeline semaphore and the baton semaphore that shares its timeline. */
typedef struct baton_vulkan_timeline {
  VkSemaphore vulkan;      /**< the Vulkan side */
  baton_semaphore baton;   /**< the baton side */
  baton_interop_mode mode; /**< how the import carries the timeline */
} baton_vulkan_timeline;

/** Creates a timeline VkSemaphore on info->vulkan.device (exportable as OPAQUE_FD where possible)
 * and imports it. Ownership: the caller owns both (release with baton_destroy_vulkan_timeline).
 * *timeline is written on success only. Returns what baton_import_vulkan_semaphore returns; on
 * an error nothing is left behind. (baton::createVulkanTimeline) */
BATON_API baton_result baton_create_vulkan_timeline(baton_instance instance,
                                                    const baton_vulkan_timeline_create_info* info,
                                                    baton_vulkan_timeline* timeline);

/** Destroys timeline->baton, then timeline->vulkan (no Vulkan work may still use it); null
 * members are skipped, so a null or zeroed timeline is BATON_SUCCESS. Returns BATON_SUCCESS,
 * BATON_ERROR_OBJECT_IN_USE, BATON_ERROR_INVALID_HANDLE (what baton_semaphore_destroy returns;
 * the VkSemaphore is destroyed in each case) or BATON_ERROR_INVALID_ARGUMENT (a VkSemaphore with
 * a null vulkan->device: it is left alone). (baton::destroyVulkanTimeline) */
BATON_API baton_result baton_destroy_vulkan_timeline(const baton_vulkan_device* vulkan,
                                                     const baton_vulkan_timeline* timeline);

/** How an import shares its object with Vulkan. */
typedef struct baton_vulkan_interop_info {
  baton_interop_mode mode;                    /**< how the import is carried */
  VkDevice device;                            /**< the Vulkan device of the import */
  VkSemaphore semaphore;                      /**< semaphores */
  VkDeviceMemory memory;                      /**< buffers */
  baton_vulkan_failure_policy failure_policy; /**< semaphores */
  char reason[512]; /**< why this mode (the text the debug callback received) */
  VkImage image;    /**< images */
} baton_vulkan_interop_info;

/** Describes how `semaphore` shares its timeline with Vulkan, into *info (caller-owned; written
 * on success only). Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null info; a semaphore
 * not imported from Vulkan), BATON_ERROR_INVALID_HANDLE. (baton::getVulkanSemaphoreInterop) */
BATON_API baton_result baton_get_vulkan_semaphore_interop(baton_semaphore semaphore,
                                                          baton_vulkan_interop_info* info);

/* ---- images ---------------------------------------------------------------------------------- */

/** What baton_import_vulkan_image needs (baton::VulkanImageImportInfo): what the image's
 * VkImageCreateInfo and allocation said, which Vulkan cannot be asked. */
typedef struct baton_vulkan_image_import_info {
  baton_vulkan_device vulkan;      /**< the Vulkan device the image was created on */
  VkImage image;                   /**< borrowed: keep it alive until the baton image is gone */
  VkDeviceMemory memory;           /**< the memory bound to it; borrowed likewise */
  VkDeviceSize allocation_size;    /**< VkMemoryAllocateInfo::allocationSize */
  VkDeviceSize memory_offset;      /**< vkBindImageMemory's memoryOffset */
  uint32_t memory_type_index;      /**< VkMemoryAllocateInfo::memoryTypeIndex */
  VkFormat format;                 /**< one of baton_image_format's formats */
  uint32_t width;                  /**< extent.width, > 0 */
  uint32_t height;                 /**< extent.height, > 0 */
  uint32_t mip_levels;             /**< >= 1 */
  uint32_t array_layers;           /**< >= 1 */
  VkImageTiling tiling;            /**< LINEAR or OPTIMAL; MAX_ENUM (not stated) is refused */
  VkImageUsageFlags usage;         /**< VkImageCreateInfo::usage */
  void* host_pointer;              /**< bridged: the mapping at memory_offset, or NULL */
  int fd;                          /**< native: an OPAQUE_FD of the memory, or -1 */
  int dedicated;                   /**< native: nonzero for a dedicated allocation */
  baton_interop_mode_request mode; /**< which mode the import may use */
  const char* debug_name;          /**< may be null; copied */
} baton_vulkan_image_import_info;
/** The C++ defaults: nothing stated, one level and layer, fd -1, AUTO mode. */
#define BATON_VULKAN_IMAGE_IMPORT_INFO_INIT                                        \
  {                                                                                \
    BATON_VULKAN_DEVICE_INIT, VK_NULL_HANDLE, VK_NULL_HANDLE, 0, 0, UINT32_MAX,    \
        VK_FORMAT_UNDEFINED, 0, 0, 1, 1, VK_IMAGE_TILING_MAX_ENUM, 0, NULL, -1, 0, \
        BATON_INTEROP_MODE_REQUEST_AUTO, NULL                                      \
  }

/** Imports a Vulkan image as a baton image of `device`, sharing its memory (native on CUDA: an
 * OPTIMAL image mapped as a mipmapped array; bridged on the host backend: a LINEAR image in
 * HOST_VISIBLE | HOST_COHERENT memory, mapped). Ownership: the caller owns *image
 * (baton_image_destroy); the VkImage and its memory stay the caller's. Returns BATON_SUCCESS,
 * BATON_ERROR_INVALID_ARGUMENT, BATON_ERROR_NOT_SUPPORTED (the message says why),
 * BATON_ERROR_DEVICE_MISMATCH, BATON_ERROR_DRIVER, BATON_ERROR_INVALID_HANDLE,
 * BATON_ERROR_OUT_OF_HOST_MEMORY. (baton::importVulkanImage) */
BATON_API baton_result baton_import_vulkan_image(baton_device device,
                                                 const baton_vulkan_image_import_info* info,
                                                 baton_image* image);

/** Describes how `image` shares Vulkan memory. Returns BATON_SUCCESS,
 * BATON_ERROR_INVALID_ARGUMENT (null info; an image not imported from Vulkan),
 * BATON_ERROR_INVALID_HANDLE. (baton::getVulkanImageInterop) */
BATON_API baton_result baton_get_vulkan_image_interop(baton_image image,
                                                      baton_vulkan_interop_info* info);

/** The baton_image_format of a VkFormat, or BATON_IMAGE_FORMAT_UNDEFINED.
 * (baton::imageFormatFromVulkan) */
BATON_API baton_image_format baton_image_format_from_vulkan(VkFormat format);

/* ---- memory ---------------------------------------------------------------------------------- */

/** What baton_import_vulkan_memory needs (baton::VulkanMemoryImportInfo). */
typedef struct baton_vulkan_memory_import_info {
  baton_vulkan_device vulkan; /**< the Vulkan device the memory was allocated on */
  /** Borrowed: keep it alive until the baton buffer is destroyed and its last submission done. */
  VkDeviceMemory memory;
  VkDeviceSize allocation_size; /**< VkMemoryAllocateInfo::allocationSize */
  VkDeviceSize offset;          /**< where the range starts in the allocation, in bytes */
  VkDeviceSize size;            /**< > 0, offset + size <= allocation_size */
  uint32_t memory_type_index;   /**< VkMemoryAllocateInfo::memoryTypeIndex; default UINT32_MAX */
  /** Bridged: where the range is already mapped by you, or null to let baton map it. */
  void* host_pointer;
  /** Native: an OPAQUE_FD exported from the allocation, or -1; ownership as for semaphores. */
  int fd;
  bool dedicated;                  /**< native: a dedicated allocation */
  baton_interop_mode_request mode; /**< which mode the import may use */
} baton_vulkan_memory_import_info;
/** The C++ defaults: memory_type_index UINT32_MAX (not stated), fd -1, AUTO mode; the Vulkan
 * objects and the range to be filled in. */
#define BATON_VULKAN_MEMORY_IMPORT_INFO_INIT                                        \
  {                                                                                 \
    BATON_VULKAN_DEVICE_INIT, VK_NULL_HANDLE, 0, 0, 0, UINT32_MAX, NULL, -1, false, \
        BATON_INTEROP_MODE_REQUEST_AUTO                                             \
  }

/** Imports a range of Vulkan memory as a baton buffer of `device`. Ownership: the caller owns
 * *buffer (baton_buffer_destroy); the memory stays the caller's. Thread safe.
 * Returns BATON_SUCCESS; BATON_ERROR_INVALID_ARGUMENT (null handles or output, size 0, a range
 * outside the allocation, an unknown memory type, an fd that is not open);
 * BATON_ERROR_NOT_SUPPORTED (bridged: memory not HOST_VISIBLE|HOST_COHERENT, or a backend that
 * cannot use a host mapping; native impossible); BATON_ERROR_DEVICE_MISMATCH;
 * BATON_ERROR_INVALID_HANDLE; BATON_ERROR_DRIVER (vkMapMemory failed);
 * BATON_ERROR_OUT_OF_HOST_MEMORY. (baton::importVulkanMemory) */
BATON_API baton_result baton_import_vulkan_memory(baton_device device,
                                                  const baton_vulkan_memory_import_info* info,
                                                  baton_buffer* buffer);

/** Describes how `buffer` shares Vulkan memory, into *info (written on success only).
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null info; a buffer not imported from
 * Vulkan), BATON_ERROR_INVALID_HANDLE. (baton::getVulkanMemoryInterop) */
BATON_API baton_result baton_get_vulkan_memory_interop(baton_buffer buffer,
                                                       baton_vulkan_interop_info* info);

/* ---- devices --------------------------------------------------------------------------------- */

/** Finds the baton physical device whose UUID is the Vulkan physical device's (only instance,
 * physical_device and get_instance_proc_addr of *vulkan are used). The handle is owned by the
 * instance. Returns BATON_SUCCESS; BATON_ERROR_NOT_SUPPORTED (none matches; the host backend
 * never does); BATON_ERROR_INVALID_ARGUMENT; BATON_ERROR_INVALID_HANDLE.
 * (baton::matchVulkanPhysicalDevice) */
BATON_API baton_result baton_match_vulkan_physical_device(baton_instance instance,
                                                          const baton_vulkan_device* vulkan,
                                                          baton_physical_device* physical_device);

/** What each side supports, and what an AUTO import would use. */
typedef struct baton_vulkan_interop_support {
  bool timeline_semaphores; /**< the Vulkan physical device supports timeline semaphores */
  /** Handle types Vulkan can export timeline semaphores as. */
  VkExternalSemaphoreHandleTypeFlags vulkan_semaphore_export_types;
  /** Handle types Vulkan can export buffer memory as. */
  VkExternalMemoryHandleTypeFlags vulkan_memory_export_types;
  bool vulkan_external_semaphore_fd; /**< VK_KHR_external_semaphore_fd */
  bool vulkan_external_memory_fd;    /**< VK_KHR_external_memory_fd */
  /** Semaphore handle types the baton device can import natively (none for the host backend). */
  VkExternalSemaphoreHandleTypeFlags baton_semaphore_import_types;
  /** Memory handle types the baton device can import natively (none for the host backend). */
  VkExternalMemoryHandleTypeFlags baton_memory_import_types;
  bool uuid_matches;                 /**< the baton device is the Vulkan device's GPU */
  baton_interop_mode semaphore_mode; /**< what an AUTO import of an exportable semaphore uses */
  baton_interop_mode memory_mode;    /**< what an AUTO import of exportable memory uses */
  char semaphore_reason[512];        /**< why semaphore_mode */
  char memory_reason[512];           /**< why memory_mode */
} baton_vulkan_interop_support;

/** Reports what *vulkan and `device` (may be null) support, into *support (written on success
 * only). Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT, BATON_ERROR_INVALID_HANDLE.
 * (baton::queryVulkanInterop) */
BATON_API baton_result baton_query_vulkan_interop(const baton_vulkan_device* vulkan,
                                                  baton_device device,
                                                  baton_vulkan_interop_support* support);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif /* BATON_BATON_VULKAN_H_ */
