// A minimal Vulkan 1.2 setup for the interop tests and benchmarks: an instance, the first
// physical device with timeline semaphores (BATON_VULKAN_DEVICE=<substring> picks by name), a
// device with one compute queue (and VK_KHR_external_{semaphore,memory}_fd where offered), and
// helpers for timeline semaphores, host-visible and exportable device-local buffers, fd export,
// command recording, submissions and one compute pipeline. On a machine without a usable Vulkan
// device, `skip` says why (VK_DRIVER_FILES can point the loader at Mesa's lavapipe; CI needs
// not: the loader finds it).
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <vulkan/vulkan.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "vulkan_validation.hpp"
#ifndef BATON_VULKAN_CONTEXT_NO_BATON  // the layer's reproducers use this without baton
#include "baton/vulkan.hpp"
#endif
#ifdef BATON_VULKAN_VALIDATION_GTEST  // gtest programs: a validation error fails the test
#include <gtest/gtest.h>
#endif

namespace baton::test {

template <class T>
T vkStruct(VkStructureType type, const void* next = nullptr) {
  T value{};
  value.sType = type;
  value.pNext = const_cast<void*>(next);
  return value;
}

struct VulkanBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;            // requested
  VkDeviceSize allocationSize = 0;  // allocated
  uint32_t memoryType = 0;
  bool dedicated = false;  // allocated with VkMemoryDedicatedAllocateInfo
};

// An image with memory of its own: OPTIMAL in DEVICE_LOCAL memory exportable as OPAQUE_FD and
// dedicated to it (what CUDA imports), or LINEAR in HOST_VISIBLE | HOST_COHERENT memory (what the
// host backend maps).
struct VulkanImage {
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize allocationSize = 0;
  uint32_t memoryType = 0;
  VkFormat format = VK_FORMAT_UNDEFINED;
  VkImageTiling tiling = VK_IMAGE_TILING_OPTIMAL;
  VkImageUsageFlags usage = 0;
  uint32_t width = 0, height = 0, levels = 1, layers = 1;
};

class VulkanContext {
 public:
  VulkanContext() { init(); }
  ~VulkanContext() { shutdown(); }
  VulkanContext(const VulkanContext&) = delete;
  VulkanContext& operator=(const VulkanContext&) = delete;

  bool ok() const { return device != VK_NULL_HANDLE; }

#ifndef BATON_VULKAN_CONTEXT_NO_BATON
  VulkanDevice view() const {
    VulkanDevice v;
    v.instance = instance;
    v.physicalDevice = physical;
    v.device = device;
    // Under validation, baton's timeline calls pass through the harness, which notes what they
    // observed (the validation filter's evidence, vulkan_validation.hpp); otherwise (the
    // benchmarks) they are the loader's.
    if (validation.on()) v.getInstanceProcAddr = &TimelineObserver::getInstanceProcAddr;
    return v;
  }
#endif

  VkSemaphore createTimeline(uint64_t initial = 0) {
    auto type = vkStruct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    type.initialValue = initial;
    auto info = vkStruct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type);
    VkSemaphore s = VK_NULL_HANDLE;
    if (vkCreateSemaphore(device, &info, nullptr, &s) == VK_SUCCESS)
      TimelineObserver::get().reached(s, initial);
    return s;
  }
  VkSemaphore createBinary() {
    auto info = vkStruct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
    VkSemaphore s = VK_NULL_HANDLE;
    vkCreateSemaphore(device, &info, nullptr, &s);
    return s;
  }
  void destroy(VkSemaphore s) {
    TimelineObserver::get().forget(s);
    vkDestroySemaphore(device, s, nullptr);
  }

  // The timeline helpers call the loader's exports: in the programs that link
  // vulkan_validation_hooks.cpp, TimelineObserver's versions of them.
  uint64_t value(VkSemaphore s) {
    uint64_t v = 0;
    vkGetSemaphoreCounterValue(device, s, &v);
    return v;
  }
  VkResult signal(VkSemaphore s, uint64_t v) {
    auto info = vkStruct<VkSemaphoreSignalInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO);
    info.semaphore = s;
    info.value = v;
    return vkSignalSemaphore(device, &info);
  }
  VkResult wait(VkSemaphore s, uint64_t v, uint64_t timeoutNs) {
    auto info = vkStruct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
    info.semaphoreCount = 1;
    info.pSemaphores = &s;
    info.pValues = &v;
    return vkWaitSemaphores(device, &info, timeoutNs);
  }

  struct Timepoint {
    VkSemaphore semaphore;
    uint64_t value;
  };
  // One vkQueueSubmit: waits (compute stage), an optional command buffer, signals.
  VkResult submit(const std::vector<Timepoint>& waits, VkCommandBuffer cmd,
                  const std::vector<Timepoint>& signals) {
    std::vector<VkSemaphore> ws, ss;
    std::vector<uint64_t> wv, sv;
    std::vector<VkPipelineStageFlags> stages;
    for (const Timepoint& t : waits) {
      ws.push_back(t.semaphore);
      wv.push_back(t.value);
      stages.push_back(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    }
    for (const Timepoint& t : signals) {
      ss.push_back(t.semaphore);
      sv.push_back(t.value);
    }
    auto timeline =
        vkStruct<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
    timeline.waitSemaphoreValueCount = static_cast<uint32_t>(wv.size());
    timeline.pWaitSemaphoreValues = wv.data();
    timeline.signalSemaphoreValueCount = static_cast<uint32_t>(sv.size());
    timeline.pSignalSemaphoreValues = sv.data();
    auto info = vkStruct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO, &timeline);
    info.waitSemaphoreCount = static_cast<uint32_t>(ws.size());
    info.pWaitSemaphores = ws.data();
    info.pWaitDstStageMask = stages.data();
    info.commandBufferCount = cmd ? 1 : 0;
    info.pCommandBuffers = &cmd;
    info.signalSemaphoreCount = static_cast<uint32_t>(ss.size());
    info.pSignalSemaphores = ss.data();
    return vkQueueSubmit(queue, 1, &info, VK_NULL_HANDLE);
  }

  // A storage/transfer buffer in HOST_VISIBLE | HOST_COHERENT memory of its own.
  VulkanBuffer createHostBuffer(VkDeviceSize size) {
    VulkanBuffer b;
    b.size = size;
    auto info = vkStruct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    info.size = size;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (vkCreateBuffer(device, &info, nullptr, &b.buffer) != VK_SUCCESS) return VulkanBuffer{};
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, b.buffer, &req);
    b.memoryType = findMemoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    auto alloc = vkStruct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = b.memoryType;
    b.allocationSize = req.size;
    vkAllocateMemory(device, &alloc, nullptr, &b.memory);
    vkBindBufferMemory(device, b.buffer, b.memory, 0);
    return b;
  }
  void destroy(VulkanBuffer& b) {
    if (b.buffer) vkDestroyBuffer(device, b.buffer, nullptr);
    if (b.memory) vkFreeMemory(device, b.memory, nullptr);
    b = VulkanBuffer{};
  }
#ifndef BATON_VULKAN_CONTEXT_NO_BATON
  // The import info for the whole of `b`.
  VulkanMemoryImportInfo importInfo(const VulkanBuffer& b) const {
    VulkanMemoryImportInfo info;
    info.vulkan = view();
    info.memory = b.memory;
    info.allocationSize = b.allocationSize;
    info.size = b.size;
    info.memoryTypeIndex = b.memoryType;
    info.dedicated = b.dedicated;
    return info;
  }
#endif

  // A timeline semaphore created exportable as OPAQUE_FD (VkExportSemaphoreCreateInfo), as
  // native import needs; null when the device cannot export timelines that way.
  VkSemaphore createExportableTimeline(uint64_t initial = 0) {
    if (!externalSemaphoreFd) return VK_NULL_HANDLE;
    auto exportInfo =
        vkStruct<VkExportSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO);
    exportInfo.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
    auto type = vkStruct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                                    &exportInfo);
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    type.initialValue = initial;
    auto info = vkStruct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type);
    VkSemaphore s = VK_NULL_HANDLE;
    if (vkCreateSemaphore(device, &info, nullptr, &s) != VK_SUCCESS) return VK_NULL_HANDLE;
    TimelineObserver::get().reached(s, initial);
    return s;
  }

  // A new OPAQUE_FD for an exportable semaphore / allocation (the caller owns it), or -1.
  int exportFd(VkSemaphore s) {
    auto get = reinterpret_cast<PFN_vkGetSemaphoreFdKHR>(
        vkGetDeviceProcAddr(device, "vkGetSemaphoreFdKHR"));
    if (!get) return -1;
    auto info = vkStruct<VkSemaphoreGetFdInfoKHR>(VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR);
    info.semaphore = s;
    info.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
    int fd = -1;
    return get(device, &info, &fd) == VK_SUCCESS ? fd : -1;
  }
  int exportFd(VkDeviceMemory memory) {
    auto get =
        reinterpret_cast<PFN_vkGetMemoryFdKHR>(vkGetDeviceProcAddr(device, "vkGetMemoryFdKHR"));
    if (!get) return -1;
    auto info = vkStruct<VkMemoryGetFdInfoKHR>(VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR);
    info.memory = memory;
    info.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    int fd = -1;
    return get(device, &info, &fd) == VK_SUCCESS ? fd : -1;
  }

  // A storage/transfer buffer in DEVICE_LOCAL memory exportable as OPAQUE_FD (the memory native
  // import shares with CUDA), optionally a dedicated allocation. On failure returns an empty
  // buffer and says why in *why (e.g. the driver allows only dedicated exportable allocations).
  VulkanBuffer createExportableBuffer(VkDeviceSize size, bool dedicated, std::string* why) {
    const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    const auto handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    if (!externalMemoryFd) {
      *why = "VK_KHR_external_memory_fd is not enabled on " + name;
      return VulkanBuffer{};
    }
    auto query = vkStruct<VkPhysicalDeviceExternalBufferInfo>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO);
    query.usage = usage;
    query.handleType = handleType;
    auto props = vkStruct<VkExternalBufferProperties>(VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES);
    vkGetPhysicalDeviceExternalBufferProperties(physical, &query, &props);
    const VkExternalMemoryFeatureFlags features =
        props.externalMemoryProperties.externalMemoryFeatures;
    if (!(features & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT)) {
      *why = name + " cannot export storage buffer memory as OPAQUE_FD";
      return VulkanBuffer{};
    }
    if (!dedicated && (features & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT)) {
      *why = name + " exports OPAQUE_FD buffer memory only from dedicated allocations";
      return VulkanBuffer{};
    }

    VulkanBuffer b;
    b.size = size;
    b.dedicated = dedicated;
    auto external = vkStruct<VkExternalMemoryBufferCreateInfo>(
        VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO);
    external.handleTypes = handleType;
    auto info = vkStruct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, &external);
    info.size = size;
    info.usage = usage;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (VkResult r = vkCreateBuffer(device, &info, nullptr, &b.buffer); r != VK_SUCCESS) {
      *why = "vkCreateBuffer (exportable) failed: " + std::to_string(r);
      return VulkanBuffer{};
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, b.buffer, &req);
    b.memoryType = findMemoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    b.allocationSize = req.size;
    auto dedicatedInfo =
        vkStruct<VkMemoryDedicatedAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO);
    dedicatedInfo.buffer = b.buffer;
    auto exportInfo = vkStruct<VkExportMemoryAllocateInfo>(
        VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, dedicated ? &dedicatedInfo : nullptr);
    exportInfo.handleTypes = handleType;
    auto alloc =
        vkStruct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &exportInfo);
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = b.memoryType;
    VkResult r = b.memoryType == UINT32_MAX ? VK_ERROR_FEATURE_NOT_PRESENT
                                            : vkAllocateMemory(device, &alloc, nullptr, &b.memory);
    if (r == VK_SUCCESS) r = vkBindBufferMemory(device, b.buffer, b.memory, 0);
    if (r != VK_SUCCESS) {
      *why = "allocating exportable DEVICE_LOCAL memory failed: " + std::to_string(r);
      destroy(b);
    }
    return b;
  }

  // A VulkanImage (see there) in UNDEFINED layout: OPTIMAL tiling gets exportable dedicated
  // DEVICE_LOCAL memory, LINEAR host-visible coherent memory. `image` is null when it failed.
  VulkanImage createImage(VkFormat format, VkImageTiling tiling, VkImageUsageFlags usage,
                          uint32_t width, uint32_t height, uint32_t levels = 1,
                          uint32_t layers = 1) {
    VulkanImage im;
    const bool exportable = tiling == VK_IMAGE_TILING_OPTIMAL;
    auto external = vkStruct<VkExternalMemoryImageCreateInfo>(
        VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO);
    external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    auto info = vkStruct<VkImageCreateInfo>(VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                                            exportable ? &external : nullptr);
    info.imageType = VK_IMAGE_TYPE_2D;
    info.format = format;
    info.extent = {width, height, 1};
    info.mipLevels = levels;
    info.arrayLayers = layers;
    info.samples = VK_SAMPLE_COUNT_1_BIT;
    info.tiling = tiling;
    info.usage = usage;
    info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    if (vkCreateImage(device, &info, nullptr, &im.image) != VK_SUCCESS) return VulkanImage{};
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(device, im.image, &req);
    auto dedicated =
        vkStruct<VkMemoryDedicatedAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO);
    dedicated.image = im.image;
    auto exportInfo = vkStruct<VkExportMemoryAllocateInfo>(
        VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, &dedicated);
    exportInfo.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    auto alloc = vkStruct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                                exportable ? &exportInfo : nullptr);
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex =
        findMemoryType(req.memoryTypeBits, exportable ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                                      : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                            VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (alloc.memoryTypeIndex == UINT32_MAX ||
        vkAllocateMemory(device, &alloc, nullptr, &im.memory) != VK_SUCCESS ||
        vkBindImageMemory(device, im.image, im.memory, 0) != VK_SUCCESS) {
      destroy(im);
      return VulkanImage{};
    }
    im.allocationSize = req.size;
    im.memoryType = alloc.memoryTypeIndex;
    im.format = format;
    im.tiling = tiling;
    im.usage = usage;
    im.width = width;
    im.height = height;
    im.levels = levels;
    im.layers = layers;
    return im;
  }
  void destroy(VulkanImage& im) {
    if (im.image) vkDestroyImage(device, im.image, nullptr);
    if (im.memory) vkFreeMemory(device, im.memory, nullptr);
    im = VulkanImage{};
  }
#ifndef BATON_VULKAN_CONTEXT_NO_BATON
  // The import info for all of `im` (dedicated when exportable); mode Auto.
  VulkanImageImportInfo importInfo(const VulkanImage& im) const {
    VulkanImageImportInfo info;
    info.vulkan = view();
    info.image = im.image;
    info.memory = im.memory;
    info.allocationSize = im.allocationSize;
    info.memoryTypeIndex = im.memoryType;
    info.format = im.format;
    info.width = im.width;
    info.height = im.height;
    info.mipLevels = im.levels;
    info.arrayLayers = im.layers;
    info.tiling = im.tiling;
    info.usage = im.usage;
    info.dedicated = im.tiling == VK_IMAGE_TILING_OPTIMAL;
    return info;
  }
#endif

  uint32_t findMemoryType(uint32_t bits, VkMemoryPropertyFlags flags) const {
    VkPhysicalDeviceMemoryProperties props;
    vkGetPhysicalDeviceMemoryProperties(physical, &props);
    for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (props.memoryTypes[i].propertyFlags & flags) == flags) return i;
    return UINT32_MAX;
  }

  VkCommandBuffer allocateCommandBuffer() {
    auto info =
        vkStruct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    info.commandPool = pool;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vkAllocateCommandBuffers(device, &info, &cmd);
    return cmd;
  }

  // A compute pipeline with one storage buffer (binding 0) and a 4-byte push constant.
  struct Pipeline {
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
  };
  Pipeline createPipeline(const uint32_t* code, size_t codeBytes) {
    Pipeline p;
    VkDescriptorSetLayoutBinding binding{};
    binding.binding = 0;
    binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    binding.descriptorCount = 1;
    binding.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    auto setInfo = vkStruct<VkDescriptorSetLayoutCreateInfo>(
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    setInfo.bindingCount = 1;
    setInfo.pBindings = &binding;
    vkCreateDescriptorSetLayout(device, &setInfo, nullptr, &p.setLayout);
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 4};
    auto layoutInfo =
        vkStruct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    layoutInfo.setLayoutCount = 1;
    layoutInfo.pSetLayouts = &p.setLayout;
    layoutInfo.pushConstantRangeCount = 1;
    layoutInfo.pPushConstantRanges = &range;
    vkCreatePipelineLayout(device, &layoutInfo, nullptr, &p.layout);
    auto moduleInfo =
        vkStruct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    moduleInfo.codeSize = codeBytes;
    moduleInfo.pCode = code;
    VkShaderModule module = VK_NULL_HANDLE;
    vkCreateShaderModule(device, &moduleInfo, nullptr, &module);
    auto pipeInfo =
        vkStruct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    pipeInfo.stage = vkStruct<VkPipelineShaderStageCreateInfo>(
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
    pipeInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeInfo.stage.module = module;
    pipeInfo.stage.pName = "main";
    pipeInfo.layout = p.layout;
    vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeInfo, nullptr, &p.pipeline);
    vkDestroyShaderModule(device, module, nullptr);
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 16};
    auto poolInfo =
        vkStruct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    poolInfo.maxSets = 16;
    poolInfo.poolSizeCount = 1;
    poolInfo.pPoolSizes = &size;
    vkCreateDescriptorPool(device, &poolInfo, nullptr, &p.pool);
    return p;
  }
  void destroy(Pipeline& p) {
    vkDestroyDescriptorPool(device, p.pool, nullptr);
    vkDestroyPipeline(device, p.pipeline, nullptr);
    vkDestroyPipelineLayout(device, p.layout, nullptr);
    vkDestroyDescriptorSetLayout(device, p.setLayout, nullptr);
    p = Pipeline{};
  }
  // Records one dispatch of `p` over `count` uints of `b` (64 per workgroup) with `push`, into
  // a command buffer being recorded. Allocates a descriptor set from p.pool (16 at most).
  void cmdDispatch(VkCommandBuffer cmd, const Pipeline& p, const VulkanBuffer& b, uint32_t count,
                   uint32_t push) {
    auto setAlloc =
        vkStruct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    setAlloc.descriptorPool = p.pool;
    setAlloc.descriptorSetCount = 1;
    setAlloc.pSetLayouts = &p.setLayout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vkAllocateDescriptorSets(device, &setAlloc, &set);
    VkDescriptorBufferInfo bufferInfo{b.buffer, 0, b.size};
    auto write = vkStruct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    write.dstSet = set;
    write.descriptorCount = 1;
    write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write.pBufferInfo = &bufferInfo;
    vkUpdateDescriptorSets(device, 1, &write, 0, nullptr);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &push);
    vkCmdDispatch(cmd, (count + 63) / 64, 1, 1);
  }

  // Allocates a command buffer, records `commands(cmd)` into it (simultaneous use, so that one
  // recording may be submitted several times) and ends it.
  template <class Commands>
  VkCommandBuffer record(Commands&& commands) {
    VkCommandBuffer cmd = allocateCommandBuffer();
    auto begin = vkStruct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    vkBeginCommandBuffer(cmd, &begin);
    std::forward<Commands>(commands)(cmd);
    vkEndCommandBuffer(cmd);
    return cmd;
  }

  // Memory shared with another API changes hands through queue family ownership transfers
  // to and from VK_QUEUE_FAMILY_EXTERNAL (Vulkan 1.2 §7.7.4): acquire before this queue uses
  // the buffer, release after, so that what CUDA wrote is visible here and the other way round.
  void cmdAcquireFromExternal(VkCommandBuffer cmd, const VulkanBuffer& b) {
    auto barrier = vkStruct<VkBufferMemoryBarrier>(VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER);
    barrier.srcAccessMask = 0;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.srcQueueFamilyIndex = VK_QUEUE_FAMILY_EXTERNAL;
    barrier.dstQueueFamilyIndex = family;
    barrier.buffer = b.buffer;
    barrier.size = VK_WHOLE_SIZE;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 0, nullptr, 1, &barrier, 0, nullptr);
  }
  void cmdReleaseToExternal(VkCommandBuffer cmd, const VulkanBuffer& b) {
    auto barrier = vkStruct<VkBufferMemoryBarrier>(VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = 0;
    barrier.srcQueueFamilyIndex = family;
    barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_EXTERNAL;
    barrier.buffer = b.buffer;
    barrier.size = VK_WHOLE_SIZE;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, nullptr, 1, &barrier, 0,
                         nullptr);
  }
  // Makes transfer and shader writes visible to host reads ordered after the submission's
  // signal.
  void cmdHostReadBarrier(VkCommandBuffer cmd) {
    auto barrier = vkStruct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &barrier, 0, nullptr, 0, nullptr);
  }

  // Records one dispatch of `p` over `count` uints of host-visible `b` (64 per workgroup) with
  // `push`, with the host barriers a buffer that the host writes and reads needs.
  VkCommandBuffer recordDispatch(const Pipeline& p, const VulkanBuffer& b, uint32_t count,
                                 uint32_t push) {
    return record([&](VkCommandBuffer cmd) {
      // The host (a baton host queue) may write the buffer after this submission was made,
      // which vkQueueSubmit's implicit host-write domain operation does not cover: a HOST_WRITE
      // barrier does (Vulkan 1.2 §7.9). The barrier after the dispatch makes its writes visible
      // to host reads ordered after the signal.
      auto hostWrites = vkStruct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
      hostWrites.srcAccessMask = VK_ACCESS_HOST_WRITE_BIT;
      hostWrites.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                           1, &hostWrites, 0, nullptr, 0, nullptr);
      cmdDispatch(cmd, p, b, count, push);
      cmdHostReadBarrier(cmd);
    });
  }

  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkCommandPool pool = VK_NULL_HANDLE;
  std::string name;
  std::string skip;  // why there is no device
  // The fd extensions offered by the device, and so enabled on it (native interop needs them).
  bool externalSemaphoreFd = false;
  bool externalMemoryFd = false;
  // The validation layer and its messenger, when BATON_VULKAN_VALIDATION asks for them.
  VulkanValidation validation;

 private:
  // Keeps every library loaded so far (the Vulkan drivers the loader just opened) mapped until the
  // process exits. The loader unloads its drivers at vkDestroyInstance; lavapipe keeps buffers
  // in its globals, which LeakSanitizer then reports as leaked from an "<unknown module>"
  // (seen with Debian's mesa-vulkan-drivers 22.3.6-1+deb12u2). Pinned, they stay reachable.
  static void pinLoadedLibraries() {
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void*) {
          if (info->dlpi_name && info->dlpi_name[0]) {
            // NOLOAD: takes a reference to an object already loaded, never loads one.
            if (void* h = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
              (void)h;  // the reference is kept on purpose
          }
          return 0;
        },
        nullptr);
  }

  void init() {
    auto app = vkStruct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "baton-interop";
    app.apiVersion = VK_API_VERSION_1_2;
    auto info = vkStruct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    info.pApplicationInfo = &app;
#ifdef BATON_VULKAN_VALIDATION_GTEST
    validation.onError = [](const ValidationMessage& m) {
      ADD_FAILURE() << "Vulkan validation error " << m.id << ": " << m.text;
    };
#endif
    if (!validation.prepare(info, &skip)) {
#ifdef BATON_VULKAN_VALIDATION_GTEST
      ADD_FAILURE() << skip;
#endif
      std::fprintf(stderr, "%s\n", skip.c_str());
      return;
    }
    VkResult r = vkCreateInstance(&info, nullptr, &instance);
    if (r != VK_SUCCESS) {
      instance = VK_NULL_HANDLE;
      skip = "vkCreateInstance failed (" + std::to_string(r) +
             "): no Vulkan driver (install mesa-vulkan-drivers for lavapipe, or set "
             "VK_DRIVER_FILES to its lvp_icd json)";
      return;
    }
    validation.attach(instance);
    pinLoadedLibraries();
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance, &count, devices.data());
    const char* want = std::getenv("BATON_VULKAN_DEVICE");
    for (VkPhysicalDevice pd : devices) {
      VkPhysicalDeviceProperties props;
      vkGetPhysicalDeviceProperties(pd, &props);
      if (props.apiVersion < VK_API_VERSION_1_2) continue;
      if (want && !std::strstr(props.deviceName, want)) continue;
      auto timeline = vkStruct<VkPhysicalDeviceTimelineSemaphoreFeatures>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES);
      auto features = vkStruct<VkPhysicalDeviceFeatures2>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &timeline);
      vkGetPhysicalDeviceFeatures2(pd, &features);
      if (!timeline.timelineSemaphore) continue;
      uint32_t families = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, nullptr);
      std::vector<VkQueueFamilyProperties> fams(families);
      vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, fams.data());
      for (uint32_t f = 0; f < families; ++f) {
        if (!(fams[f].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        physical = pd;
        family = f;
        name = props.deviceName;
        break;
      }
      if (physical) break;
    }
    if (!physical) {
      skip = "no Vulkan 1.2 device with timeline semaphores and a compute queue";
      if (want) skip += std::string(" named like BATON_VULKAN_DEVICE='") + want + "'";
      return;
    }
    // Enable fd export where offered, so that native mode is possible on GPUs.
    std::vector<const char*> extensions;
    uint32_t extCount = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &extCount, nullptr);
    std::vector<VkExtensionProperties> exts(extCount);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &extCount, exts.data());
    for (const VkExtensionProperties& e : exts) {
      if (!std::strcmp(e.extensionName, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
        externalSemaphoreFd = true;
      }
      if (!std::strcmp(e.extensionName, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
        externalMemoryFd = true;
      }
    }
    float priority = 1.0f;
    auto queueInfo = vkStruct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    queueInfo.queueFamilyIndex = family;
    queueInfo.queueCount = 1;
    queueInfo.pQueuePriorities = &priority;
    auto features12 = vkStruct<VkPhysicalDeviceVulkan12Features>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    features12.timelineSemaphore = VK_TRUE;
    auto deviceInfo =
        vkStruct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features12);
    deviceInfo.queueCreateInfoCount = 1;
    deviceInfo.pQueueCreateInfos = &queueInfo;
    deviceInfo.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    deviceInfo.ppEnabledExtensionNames = extensions.data();
    r = vkCreateDevice(physical, &deviceInfo, nullptr, &device);
    if (r != VK_SUCCESS) {
      device = VK_NULL_HANDLE;
      skip = "vkCreateDevice failed (" + std::to_string(r) + ") on " + name;
      return;
    }
    vkGetDeviceQueue(device, family, 0, &queue);
    auto poolInfo = vkStruct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    poolInfo.queueFamilyIndex = family;
    poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    vkCreateCommandPool(device, &poolInfo, nullptr, &pool);
  }

  void shutdown() {
    if (device) {
      vkDeviceWaitIdle(device);
      vkDestroyCommandPool(device, pool, nullptr);
      vkDestroyDevice(device, nullptr);
    }
    validation.detach();
    if (instance) vkDestroyInstance(instance, nullptr);
    if (validation.on()) std::fprintf(stderr, "%s\n", validation.summary().c_str());
  }
};

}  // namespace baton::test
