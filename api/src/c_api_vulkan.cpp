// The C API of Vulkan interop (baton/baton_vulkan.h) over baton/vulkan.hpp, as c_api.cpp does
// for the rest: each function converts its arguments and calls the C++ function. Compiled into
// every build (api/src/meson.build) and empty unless interop is (BATON_HAVE_VULKAN, set by
// interop/meson.build for the whole library).
#ifdef BATON_HAVE_VULKAN

#include <cstring>

#include "baton/baton_vulkan.h"
#include "baton/vulkan.hpp"
#include "c_api_handles.hpp"

namespace {

using baton::InteropMode;
using baton::InteropModeRequest;
using baton::Result;
using baton::VulkanFailurePolicy;

static_assert(BATON_INTEROP_MODE_NATIVE == static_cast<int>(InteropMode::Native));
static_assert(BATON_INTEROP_MODE_BRIDGED == static_cast<int>(InteropMode::Bridged));
static_assert(BATON_INTEROP_MODE_REQUEST_AUTO == static_cast<int>(InteropModeRequest::Auto));
static_assert(BATON_INTEROP_MODE_REQUEST_NATIVE == static_cast<int>(InteropModeRequest::Native));
static_assert(BATON_INTEROP_MODE_REQUEST_BRIDGED == static_cast<int>(InteropModeRequest::Bridged));
static_assert(BATON_VULKAN_FAILURE_POLICY_HOLD == static_cast<int>(VulkanFailurePolicy::Hold));
static_assert(BATON_VULKAN_FAILURE_POLICY_RELEASE ==
              static_cast<int>(VulkanFailurePolicy::Release));
static_assert(sizeof(baton_interop_mode) == sizeof(InteropMode));

using baton::c_api::rawHandle;
using baton::c_api::toC;
using baton::c_api::toCHandle;

template <size_t N, size_t M>
void copyText(char (&dst)[N], const char (&src)[M]) noexcept {
  static_assert(N == M);
  std::memcpy(dst, src, N);
}

baton::VulkanDevice toCpp(const baton_vulkan_device* in) noexcept {
  baton::VulkanDevice out;
  if (in) {
    out.instance = in->instance;
    out.physicalDevice = in->physical_device;
    out.device = in->device;
    out.getInstanceProcAddr = in->get_instance_proc_addr;
  }
  return out;
}

// Unknown enum values pass through unchanged, for C++'s validation to report them.
baton::VulkanSemaphoreImportInfo toCpp(const baton_vulkan_semaphore_import_info* in) noexcept {
  baton::VulkanSemaphoreImportInfo out;
  if (in) {
    out.vulkan = toCpp(&in->vulkan);
    out.semaphore = in->semaphore;
    out.semaphoreType = in->semaphore_type;
    out.exportHandleTypes = in->export_handle_types;
    out.fd = in->fd;
    out.device = baton::Device(rawHandle(in->device));
    out.mode = static_cast<InteropModeRequest>(in->mode);
    out.failurePolicy = static_cast<VulkanFailurePolicy>(in->failure_policy);
    out.debugName = in->debug_name;
  }
  return out;
}

baton::VulkanTimelineCreateInfo toCpp(const baton_vulkan_timeline_create_info* in) noexcept {
  baton::VulkanTimelineCreateInfo out;
  if (in) {
    out.vulkan = toCpp(&in->vulkan);
    out.initialValue = in->initial_value;
    out.device = baton::Device(rawHandle(in->device));
    out.mode = static_cast<InteropModeRequest>(in->mode);
    out.failurePolicy = static_cast<VulkanFailurePolicy>(in->failure_policy);
    out.debugName = in->debug_name;
  }
  return out;
}

baton::VulkanTimeline toCpp(const baton_vulkan_timeline* in) noexcept {
  baton::VulkanTimeline out;
  if (in) {
    out.vulkan = in->vulkan;
    out.baton = baton::Semaphore(rawHandle(in->baton));
    out.mode = static_cast<InteropMode>(in->mode);
  }
  return out;
}

baton::VulkanMemoryImportInfo toCpp(const baton_vulkan_memory_import_info* in) noexcept {
  baton::VulkanMemoryImportInfo out;
  if (in) {
    out.vulkan = toCpp(&in->vulkan);
    out.memory = in->memory;
    out.allocationSize = in->allocation_size;
    out.offset = in->offset;
    out.size = in->size;
    out.memoryTypeIndex = in->memory_type_index;
    out.hostPointer = in->host_pointer;
    out.fd = in->fd;
    out.dedicated = in->dedicated;
    out.mode = static_cast<InteropModeRequest>(in->mode);
  }
  return out;
}

void toC(const baton::VulkanInteropInfo& in, baton_vulkan_interop_info* out) noexcept {
  out->mode = static_cast<baton_interop_mode>(in.mode);
  out->device = in.device;
  out->semaphore = in.semaphore;
  out->memory = in.memory;
  out->failure_policy = static_cast<baton_vulkan_failure_policy>(in.failurePolicy);
  copyText(out->reason, in.reason);
  out->image = in.image;
}

void toC(const baton::VulkanInteropSupport& in, baton_vulkan_interop_support* out) noexcept {
  out->timeline_semaphores = in.timelineSemaphores;
  out->vulkan_semaphore_export_types = in.vulkanSemaphoreExportTypes;
  out->vulkan_memory_export_types = in.vulkanMemoryExportTypes;
  out->vulkan_external_semaphore_fd = in.vulkanExternalSemaphoreFd;
  out->vulkan_external_memory_fd = in.vulkanExternalMemoryFd;
  out->baton_semaphore_import_types = in.batonSemaphoreImportTypes;
  out->baton_memory_import_types = in.batonMemoryImportTypes;
  out->uuid_matches = in.uuidMatches;
  out->semaphore_mode = static_cast<baton_interop_mode>(in.semaphoreMode);
  out->memory_mode = static_cast<baton_interop_mode>(in.memoryMode);
  copyText(out->semaphore_reason, in.semaphoreReason);
  copyText(out->memory_reason, in.memoryReason);
}

}  // namespace

extern "C" {

const char* baton_interop_mode_name(baton_interop_mode mode) {
  return baton::interopModeName(static_cast<InteropMode>(mode));
}

baton_result baton_import_vulkan_semaphore(baton_instance instance,
                                           const baton_vulkan_semaphore_import_info* info,
                                           baton_semaphore* semaphore) {
  // The output handle is written in place, as in c_api.cpp (same layout, checked there).
  return toC(baton::importVulkanSemaphore(baton::Instance(rawHandle(instance)), toCpp(info),
                                          reinterpret_cast<baton::Semaphore*>(semaphore)));
}

baton_result baton_import_vulkan_semaphore_fd(baton_device device,
                                              const baton_vulkan_semaphore_fd_import_info* info,
                                              baton_semaphore* semaphore) {
  baton::VulkanSemaphoreFdImportInfo cpp;
  if (info) {
    cpp.fd = info->fd;
    cpp.initialValue = info->initial_value;
    cpp.debugName = info->debug_name;
  }
  return toC(baton::importVulkanSemaphoreFd(baton::Device(rawHandle(device)), cpp,
                                            reinterpret_cast<baton::Semaphore*>(semaphore)));
}

baton_result baton_create_vulkan_timeline(baton_instance instance,
                                          const baton_vulkan_timeline_create_info* info,
                                          baton_vulkan_timeline* timeline) {
  baton::VulkanTimeline cpp;
  Result r = baton::createVulkanTimeline(baton::Instance(rawHandle(instance)), toCpp(info),
                                         timeline ? &cpp : nullptr);
  if (!baton::isError(r)) {
    timeline->vulkan = cpp.vulkan;
    timeline->baton = toCHandle<baton_semaphore>(cpp.baton.raw());
    timeline->mode = static_cast<baton_interop_mode>(cpp.mode);
  }
  return toC(r);
}

baton_result baton_destroy_vulkan_timeline(const baton_vulkan_device* vulkan,
                                           const baton_vulkan_timeline* timeline) {
  return toC(baton::destroyVulkanTimeline(toCpp(vulkan), toCpp(timeline)));
}

baton_result baton_get_vulkan_semaphore_interop(baton_semaphore semaphore,
                                                baton_vulkan_interop_info* info) {
  baton::VulkanInteropInfo cpp;
  Result r = baton::getVulkanSemaphoreInterop(baton::Semaphore(rawHandle(semaphore)),
                                              info ? &cpp : nullptr);
  if (!baton::isError(r)) toC(cpp, info);
  return toC(r);
}

baton_result baton_import_vulkan_image(baton_device device,
                                       const baton_vulkan_image_import_info* info,
                                       baton_image* image) {
  baton::VulkanImageImportInfo cpp;
  if (info) {
    cpp.vulkan = toCpp(&info->vulkan);
    cpp.image = info->image;
    cpp.memory = info->memory;
    cpp.allocationSize = info->allocation_size;
    cpp.memoryOffset = info->memory_offset;
    cpp.memoryTypeIndex = info->memory_type_index;
    cpp.format = info->format;
    cpp.width = info->width;
    cpp.height = info->height;
    cpp.mipLevels = info->mip_levels;
    cpp.arrayLayers = info->array_layers;
    cpp.tiling = info->tiling;
    cpp.usage = info->usage;
    cpp.hostPointer = info->host_pointer;
    cpp.fd = info->fd;
    cpp.dedicated = info->dedicated != 0;
    cpp.mode = static_cast<InteropModeRequest>(info->mode);
    cpp.debugName = info->debug_name;
  }
  return toC(baton::importVulkanImage(baton::Device(rawHandle(device)), cpp,
                                      reinterpret_cast<baton::Image*>(image)));
}

baton_result baton_get_vulkan_image_interop(baton_image image, baton_vulkan_interop_info* info) {
  baton::VulkanInteropInfo cpp;
  Result r = baton::getVulkanImageInterop(baton::Image(rawHandle(image)), info ? &cpp : nullptr);
  if (!baton::isError(r)) toC(cpp, info);
  return toC(r);
}

baton_image_format baton_image_format_from_vulkan(VkFormat format) {
  return static_cast<baton_image_format>(baton::imageFormatFromVulkan(format));
}

baton_result baton_import_vulkan_memory(baton_device device,
                                        const baton_vulkan_memory_import_info* info,
                                        baton_buffer* buffer) {
  return toC(baton::importVulkanMemory(baton::Device(rawHandle(device)), toCpp(info),
                                       reinterpret_cast<baton::Buffer*>(buffer)));
}

baton_result baton_get_vulkan_memory_interop(baton_buffer buffer, baton_vulkan_interop_info* info) {
  baton::VulkanInteropInfo cpp;
  Result r = baton::getVulkanMemoryInterop(baton::Buffer(rawHandle(buffer)), info ? &cpp : nullptr);
  if (!baton::isError(r)) toC(cpp, info);
  return toC(r);
}

baton_result baton_match_vulkan_physical_device(baton_instance instance,
                                                const baton_vulkan_device* vulkan,
                                                baton_physical_device* physical_device) {
  return toC(
      baton::matchVulkanPhysicalDevice(baton::Instance(rawHandle(instance)), toCpp(vulkan),
                                       reinterpret_cast<baton::PhysicalDevice*>(physical_device)));
}

baton_result baton_query_vulkan_interop(const baton_vulkan_device* vulkan, baton_device device,
                                        baton_vulkan_interop_support* support) {
  baton::VulkanInteropSupport cpp;
  Result r = baton::queryVulkanInterop(toCpp(vulkan), baton::Device(rawHandle(device)),
                                       support ? &cpp : nullptr);
  if (!baton::isError(r)) toC(cpp, support);
  return toC(r);
}

}  // extern "C"

#endif  // BATON_HAVE_VULKAN
