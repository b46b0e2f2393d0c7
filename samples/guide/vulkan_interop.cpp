// The guide's "Vulkan interop" (docs/guide.md): a timeline shared by Vulkan and baton, each side
// waiting for the other's values, and a renderer's own timeline semaphore and memory imported
// into baton. Uses the first Vulkan 1.2 device with timeline semaphores
// (BATON_VULKAN_DEVICE=<name substring> picks one): lavapipe in CI, bridged; on a GPU whose CUDA
// device is the Vulkan device, the import can also be native. Exits 77 (a skip) without a Vulkan
// device. Built and run by meson test (suite guide); the regions between the [name] lines are
// the guide's code blocks (tests/docs/check_examples.py).
#include <unistd.h>
#include <vulkan/vulkan.h>

#include <baton/baton.hpp>
#include <baton/vulkan.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.hpp"
// BATON_VULKAN_VALIDATION=1: under the Khronos validation layer (tests/interop/).
#include "vulkan_validation.hpp"

namespace {

using guide::expect;
using guide::ok;

// A Vulkan 1.2 device with timeline semaphores enabled, and the fd-export extensions where the
// driver offers them (native imports need them). What an engine already has.
struct Vulkan {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  bool externalSemaphoreFd = false;  // VK_KHR_external_semaphore_fd enabled
  bool externalMemoryFd = false;     // VK_KHR_external_memory_fd enabled

  // The first memory type of `bits` with `flags`, or UINT32_MAX.
  uint32_t memoryType(uint32_t bits, VkMemoryPropertyFlags flags) const {
    VkPhysicalDeviceMemoryProperties props;
    vkGetPhysicalDeviceMemoryProperties(physical, &props);
    for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (props.memoryTypes[i].propertyFlags & flags) == flags) return i;
    return UINT32_MAX;
  }
  const char* skip = nullptr;

  bool create() {
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    info.pApplicationInfo = &app;
    std::string why;
    if (!baton::test::processValidation().prepare(info, &why)) {
      std::fprintf(stderr, "%s\n", why.c_str());
      std::exit(1);
    }
    if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) {
      instance = VK_NULL_HANDLE;
      skip = "no Vulkan driver";
      return false;
    }
    baton::test::processValidation().attach(instance);
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance, &count, devices.data());
    const char* want = std::getenv("BATON_VULKAN_DEVICE");
    for (VkPhysicalDevice pd : devices) {
      VkPhysicalDeviceProperties props;
      vkGetPhysicalDeviceProperties(pd, &props);
      if (props.apiVersion < VK_API_VERSION_1_2) continue;
      if (want != nullptr && std::strstr(props.deviceName, want) == nullptr) continue;
      VkPhysicalDeviceTimelineSemaphoreFeatures timeline{};
      timeline.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
      VkPhysicalDeviceFeatures2 features{};
      features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
      features.pNext = &timeline;
      vkGetPhysicalDeviceFeatures2(pd, &features);
      if (timeline.timelineSemaphore) {
        physical = pd;
        std::printf("Vulkan device: %s\n", props.deviceName);
        break;
      }
    }
    if (physical == VK_NULL_HANDLE) {
      skip = "no Vulkan 1.2 device with timeline semaphores";
      return false;
    }
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
    VkDeviceQueueCreateInfo queueInfo{};
    queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    queueInfo.queueFamilyIndex = 0;
    queueInfo.queueCount = 1;
    queueInfo.pQueuePriorities = &priority;
    VkPhysicalDeviceVulkan12Features features12{};
    features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    features12.timelineSemaphore = VK_TRUE;
    VkDeviceCreateInfo deviceInfo{};
    deviceInfo.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    deviceInfo.pNext = &features12;
    deviceInfo.queueCreateInfoCount = 1;
    deviceInfo.pQueueCreateInfos = &queueInfo;
    deviceInfo.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    deviceInfo.ppEnabledExtensionNames = extensions.data();
    if (vkCreateDevice(physical, &deviceInfo, nullptr, &device) != VK_SUCCESS) {
      device = VK_NULL_HANDLE;
      skip = "vkCreateDevice failed";
      return false;
    }
    return true;
  }
  ~Vulkan() {
    if (device != VK_NULL_HANDLE) vkDestroyDevice(device, nullptr);
    baton::test::processValidation().detach();
    if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
  }
};

// What a renderer already has, made with its own Vulkan calls (Renderer::create below): a timeline
// semaphore and the memory of a buffer, and what it created them with.
struct RendererObjects {
  VkSemaphore frameDone = VK_NULL_HANDLE;  // VkSemaphoreTypeCreateInfo: VK_SEMAPHORE_TYPE_TIMELINE
  VkExternalSemaphoreHandleTypeFlags frameDoneExportTypes = 0;  // VkExportSemaphoreCreateInfo
  VkDeviceMemory particles = VK_NULL_HANDLE;
  VkDeviceSize particlesSize = 0;    // VkMemoryAllocateInfo::allocationSize
  uint32_t particlesMemoryType = 0;  // VkMemoryAllocateInfo::memoryTypeIndex
  bool particlesDedicated = false;   // VkMemoryDedicatedAllocateInfo chained to the allocation
};

// [import]
// The renderer's own timeline semaphore and memory, imported into baton. Vulkan cannot be asked a
// semaphore's type or an allocation's memory type, so the infos state what they were created with.
baton::Result importRenderer(baton::Instance instance, baton::Device device,
                             const baton::VulkanDevice& vulkan, const RendererObjects& renderer,
                             baton::UniqueSemaphore& frameDone, baton::UniqueBuffer& particles) {
  baton::VulkanSemaphoreImportInfo semaphore;
  semaphore.vulkan = vulkan;
  semaphore.semaphore = renderer.frameDone;              // borrowed: keep it until baton's is gone
  semaphore.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;  // required: a binary one is refused
  semaphore.exportHandleTypes = renderer.frameDoneExportTypes;  // 0: not exportable, bridged only
  semaphore.device = device;  // the device that would import it natively (Native requested)
  semaphore.debugName = "frame done";
  baton::Result r = baton::importVulkanSemaphore(instance, semaphore, frameDone.put());

  baton::VulkanMemoryImportInfo memory;
  memory.vulkan = vulkan;
  memory.memory = renderer.particles;                     // borrowed: keep it until baton's is gone
  memory.allocationSize = renderer.particlesSize;         // required: as allocated
  memory.offset = 0;                                      // the range baton's buffer covers:
  memory.size = renderer.particlesSize;                   // here the whole allocation
  memory.memoryTypeIndex = renderer.particlesMemoryType;  // required: as allocated
  memory.dedicated = renderer.particlesDedicated;         // native: CUDA and HIP must be told
  if (ok(r)) r = baton::importVulkanMemory(device, memory, particles.put());
  // Auto: the semaphore bridged; the memory imported natively where the device can (exportable
  // memory of its GPU), else shared by mapping (HOST_VISIBLE | HOST_COHERENT memory, host backend).
  return r;
}
// [import]

// Makes a renderer's objects as an engine would: for a GPU device, memory exportable as OPAQUE_FD
// (a dedicated allocation of a buffer), which it imports natively; for the host backend,
// HOST_VISIBLE | HOST_COHERENT memory, which baton maps.
struct Renderer {
  const Vulkan& vk;
  RendererObjects objects;
  VkBuffer buffer = VK_NULL_HANDLE;

  uint32_t memoryType(uint32_t bits, VkMemoryPropertyFlags flags) const {
    return vk.memoryType(bits, flags);
  }

  bool create(bool gpu, VkDeviceSize size) {
    VkExportSemaphoreCreateInfo exportSemaphore{};
    exportSemaphore.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO;
    exportSemaphore.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
    VkSemaphoreTypeCreateInfo type{};
    type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
    type.pNext = vk.externalSemaphoreFd ? &exportSemaphore : nullptr;
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo semaphoreInfo{};
    semaphoreInfo.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
    semaphoreInfo.pNext = &type;
    if (vkCreateSemaphore(vk.device, &semaphoreInfo, nullptr, &objects.frameDone) != VK_SUCCESS)
      return false;
    if (vk.externalSemaphoreFd) objects.frameDoneExportTypes = exportSemaphore.handleTypes;

    gpu = gpu && vk.externalMemoryFd;
    VkExternalMemoryBufferCreateInfo external{};
    external.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
    external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    VkBufferCreateInfo bufferInfo{};
    bufferInfo.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bufferInfo.pNext = gpu ? &external : nullptr;
    bufferInfo.size = size;
    bufferInfo.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (vkCreateBuffer(vk.device, &bufferInfo, nullptr, &buffer) != VK_SUCCESS) return false;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk.device, buffer, &req);
    VkMemoryDedicatedAllocateInfo dedicated{};
    dedicated.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO;
    dedicated.buffer = buffer;
    VkExportMemoryAllocateInfo exportMemory{};
    exportMemory.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO;
    exportMemory.pNext = &dedicated;
    exportMemory.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    VkMemoryAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    alloc.pNext = gpu ? &exportMemory : nullptr;
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex =
        memoryType(req.memoryTypeBits, gpu ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                           : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                 VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (alloc.memoryTypeIndex == UINT32_MAX ||
        vkAllocateMemory(vk.device, &alloc, nullptr, &objects.particles) != VK_SUCCESS)
      return false;
    objects.particlesSize = req.size;
    objects.particlesMemoryType = alloc.memoryTypeIndex;
    objects.particlesDedicated = gpu;
    return vkBindBufferMemory(vk.device, buffer, objects.particles, 0) == VK_SUCCESS;
  }

  ~Renderer() {
    if (buffer != VK_NULL_HANDLE) vkDestroyBuffer(vk.device, buffer, nullptr);
    if (objects.particles != VK_NULL_HANDLE) vkFreeMemory(vk.device, objects.particles, nullptr);
    if (objects.frameDone != VK_NULL_HANDLE) {
      vkDestroySemaphore(vk.device, objects.frameDone, nullptr);
      baton::test::TimelineObserver::get().forget(objects.frameDone);
    }
  }
};

// A renderer's timeline exported as OPAQUE_FD and imported with importVulkanSemaphoreFd (no
// VkDevice on baton's side: the descriptor could have come over a socket). Where the Vulkan
// driver cannot export (lavapipe) there is nothing to import; where the baton device cannot import
// (the host backend, HIP) the refusal says why.
void fdImport(const Vulkan& vk, baton::Device device, baton::Queue queue) {
  auto getFd = reinterpret_cast<PFN_vkGetSemaphoreFdKHR>(
      vkGetDeviceProcAddr(vk.device, "vkGetSemaphoreFdKHR"));
  if (!vk.externalSemaphoreFd || !getFd) {
    std::printf("no descriptor import: the Vulkan device exports no OPAQUE_FD\n");
    return;
  }
  VkExportSemaphoreCreateInfo exportable{};
  exportable.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO;
  exportable.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkSemaphoreTypeCreateInfo type{};
  type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  type.pNext = &exportable;
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo create{};
  create.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  create.pNext = &type;
  VkSemaphore vkRendered = VK_NULL_HANDLE;
  expect(vkCreateSemaphore(vk.device, &create, nullptr, &vkRendered) == VK_SUCCESS,
         "an exportable timeline");
  baton::test::TimelineObserver::get().reached(vkRendered, 0);
  VkSemaphoreGetFdInfoKHR get{};
  get.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR;
  get.semaphore = vkRendered;
  get.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  int fd = -1;
  expect(getFd(vk.device, &get, &fd) == VK_SUCCESS, "vkGetSemaphoreFdKHR");

  // [fd-import]
  // `fd`: a descriptor of a renderer's timeline semaphore, from this process or another one.
  baton::VulkanSemaphoreFdImportInfo info;
  info.fd = fd;  // baton's once the import succeeded
  info.debugName = "rendered";
  baton::UniqueSemaphore rendered;
  baton::Result r = baton::importVulkanSemaphoreFd(device, info, rendered.put());
  if (r == baton::Result::ErrorNotSupported) {  // the host backend, HIP: the message says why
    std::printf("no descriptor import here: %s\n", baton::lastErrorMessage());
    close(fd);
  } else if (ok(r)) {
    // The device's queue waits for the renderer's 1 GPU-side, then signals 2 for it.
    baton::SemaphoreValue drawn{*rendered, 1}, post{*rendered, 2};
    r = queue.submit(baton::SubmitInfo{drawn, {}, post});
  }
  // [fd-import]
  expect(ok(r) || r == baton::Result::ErrorNotSupported, "importVulkanSemaphoreFd");
  if (ok(r)) {
    VkSemaphoreSignalInfo signal{};
    signal.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
    signal.semaphore = vkRendered;
    signal.value = 1;
    expect(vkSignalSemaphore(vk.device, &signal) == VK_SUCCESS, "vkSignalSemaphore(1)");
    uint64_t two = 2;
    VkSemaphoreWaitInfo wait{};
    wait.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    wait.semaphoreCount = 1;
    wait.pSemaphores = &vkRendered;
    wait.pValues = &two;
    expect(vkWaitSemaphores(vk.device, &wait, 5'000'000'000) == VK_SUCCESS,
           "Vulkan sees the 2 a CUDA queue signalled");
    expect(ok(queue.waitIdle()), "waitIdle");
    std::printf("a timeline imported from its descriptor: handed over both ways\n");
  }
  rendered.reset();
  vkDestroySemaphore(vk.device, vkRendered, nullptr);
  baton::test::TimelineObserver::get().forget(vkRendered);
}

// A renderer's frame imported as a baton Image, copied into a buffer on the baton device's queue.
// On a CUDA device that is the Vulkan device: an OPTIMAL image in exportable memory, mapped as a
// CUDA mipmapped array; on the host backend (lavapipe in CI): a LINEAR image in host-visible
// memory, shared by mapping.
void imageImport(const Vulkan& vk, const baton::VulkanDevice& vulkan, baton::Device device,
                 baton::Queue queue, baton::BackendKind backend) {
  const bool native = backend != baton::BackendKind::Host;
  if (native && !vk.externalMemoryFd) {
    std::printf("no image import: the Vulkan device exports no memory\n");
    return;
  }
  constexpr uint32_t kWidth = 64, kHeight = 32;
  VkExternalMemoryImageCreateInfo external{};
  external.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO;
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkImageCreateInfo create{};
  create.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO;
  create.pNext = native ? &external : nullptr;
  create.imageType = VK_IMAGE_TYPE_2D;
  create.format = VK_FORMAT_R16G16B16A16_SFLOAT;
  create.extent = {kWidth, kHeight, 1};
  create.mipLevels = 1;
  create.arrayLayers = 1;
  create.samples = VK_SAMPLE_COUNT_1_BIT;
  create.tiling = native ? VK_IMAGE_TILING_OPTIMAL : VK_IMAGE_TILING_LINEAR;
  create.usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  VkImage frame = VK_NULL_HANDLE;
  expect(vkCreateImage(vk.device, &create, nullptr, &frame) == VK_SUCCESS, "vkCreateImage");
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(vk.device, frame, &req);
  VkMemoryDedicatedAllocateInfo dedicated{};
  dedicated.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO;
  dedicated.image = frame;
  VkExportMemoryAllocateInfo exportable{};
  exportable.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO;
  exportable.pNext = &dedicated;
  exportable.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.pNext = native ? &exportable : nullptr;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex =
      vk.memoryType(req.memoryTypeBits, native ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                               : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  VkDeviceMemory memory = VK_NULL_HANDLE;
  expect(alloc.memoryTypeIndex != UINT32_MAX &&
             vkAllocateMemory(vk.device, &alloc, nullptr, &memory) == VK_SUCCESS &&
             vkBindImageMemory(vk.device, frame, memory, 0) == VK_SUCCESS,
         "the frame's memory");

  // [image]
  // What the frame's VkImageCreateInfo and allocation said: Vulkan cannot be asked.
  baton::VulkanImageImportInfo info;
  info.vulkan = vulkan;
  info.image = frame;
  info.memory = memory;
  info.allocationSize = alloc.allocationSize;
  info.memoryTypeIndex = alloc.memoryTypeIndex;
  info.dedicated = native;
  info.format = create.format;
  info.width = kWidth;
  info.height = kHeight;
  info.tiling = create.tiling;
  info.usage = create.usage;
  info.debugName = "frame";
  baton::UniqueImage image;
  baton::Result r = baton::importVulkanImage(device, info, image.put());
  // The whole of level 0 into a buffer, in the queue's order: a post-processing pass would run a
  // native callback on the image's CUarray or surface here (Image::getNativeLevel).
  baton::UniqueBuffer texels;
  if (ok(r)) r = device.createBuffer({kWidth * kHeight * 8}, texels.put());
  baton::BufferImageCopy whole;
  whole.width = kWidth;
  whole.height = kHeight;
  baton::UniqueCommandBuffer readBack;
  if (ok(r)) r = device.createCommandBuffer(readBack.put());
  if (ok(r)) r = readBack->begin();
  if (ok(r)) r = readBack->copyImageToBuffer(*image, *texels, whole);
  if (ok(r)) r = readBack->end();
  baton::CommandBuffer commands = *readBack;
  if (ok(r)) r = queue.submit(baton::SubmitInfo{{}, commands, {}});
  // [image]
  if (ok(r)) r = queue.waitIdle();
  expect(ok(r), "import a frame and copy it into a buffer");
  baton::VulkanInteropInfo interop;
  expect(ok(baton::getVulkanImageInterop(*image, &interop)), "getVulkanImageInterop");
  std::printf("the frame was imported %s\n", baton::interopModeName(interop.mode));
  readBack.reset();
  image.reset();
  vkDestroyImage(vk.device, frame, nullptr);
  vkFreeMemory(vk.device, memory, nullptr);
}

int run() {
  Vulkan vk;
  if (!vk.create()) {
    std::printf("vulkan_interop: skipped: %s\n", vk.skip);
    return 77;
  }
  baton::UniqueInstance instance;
  expect(ok(baton::createInstance({}, instance.put())), "createInstance");

  // [choose]
  baton::VulkanDevice vulkan;
  vulkan.instance = vk.instance;
  vulkan.physicalDevice = vk.physical;
  vulkan.device = vk.device;
  // The baton device that is the Vulkan device's GPU (equal UUIDs), if there is one; otherwise
  // any device, here the host backend's. ErrorNotSupported (no match) is an answer, not a fault.
  baton::PhysicalDevice physical;
  if (baton::matchVulkanPhysicalDevice(*instance, vulkan, &physical) != baton::Result::Success) {
    uint32_t count = 1;
    (void)instance->enumeratePhysicalDevices(&count, &physical);
  }
  baton::UniqueDevice device;
  baton::Result r = instance->createDevice(physical, {1, "compute"}, device.put());
  // What each side supports, and what Auto would pick, with the reason.
  baton::VulkanInteropSupport support;
  if (ok(r)) r = baton::queryVulkanInterop(vulkan, *device, &support);
  if (ok(r))
    std::printf("Auto: semaphores %s: %s\n", baton::interopModeName(support.semaphoreMode),
                support.semaphoreReason);
  // [choose]
  expect(ok(r), "match, createDevice, queryVulkanInterop");
  // Under the validation layer, baton's timeline calls go through the harness, which observes
  // and serializes them (tests/interop/vulkan_validation.hpp).
  if (baton::test::processValidation().on())
    vulkan.getInstanceProcAddr = &baton::test::TimelineObserver::getInstanceProcAddr;

  // [shared-timeline]
  // A timeline VkSemaphore and the baton semaphore that shares its value.
  baton::VulkanTimelineCreateInfo info;
  info.vulkan = vulkan;
  info.device = *device;                        // the device that would import natively
  info.mode = baton::InteropModeRequest::Auto;  // bridged semaphores (see "What Auto picks")
  info.debugName = "frame";
  baton::VulkanTimeline timeline;
  if (ok(r)) r = baton::createVulkanTimeline(*instance, info, &timeline);

  // baton waits for what Vulkan signals (here a host signal; a vkQueueSubmit2 signal works the
  // same), then signals the next value for Vulkan. Values rise in signal order across both sides.
  baton::Queue queue;
  if (ok(r)) r = device->getQueue(0, &queue);
  baton::SemaphoreValue drawn{timeline.baton, 1}, simulated{timeline.baton, 2};
  if (ok(r)) r = queue.submit(baton::SubmitInfo{drawn, {}, simulated});  // before Vulkan's signal
  VkSemaphoreSignalInfo signal{};
  signal.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
  signal.semaphore = timeline.vulkan;
  signal.value = 1;
  if (ok(r) && vkSignalSemaphore(vk.device, &signal) != VK_SUCCESS) r = baton::Result::ErrorDriver;
  // Vulkan sees baton's 2 (a Vulkan queue would wait for it in its VkSubmitInfo2).
  uint64_t two = 2;
  VkSemaphoreWaitInfo wait{};
  wait.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
  wait.semaphoreCount = 1;
  wait.pSemaphores = &timeline.vulkan;
  wait.pValues = &two;
  if (ok(r) && vkWaitSemaphores(vk.device, &wait, 5'000'000'000) != VK_SUCCESS)
    r = baton::Result::ErrorDriver;
  if (ok(r)) r = queue.waitIdle();
  // Destroys the baton semaphore, then the VkSemaphore (no Vulkan work may still use it).
  if (timeline.baton) (void)baton::destroyVulkanTimeline(vulkan, timeline);
  // [shared-timeline]
  expect(ok(r), "a shared timeline, both ways");
  std::printf("the timeline was %s\n", baton::interopModeName(timeline.mode));

  // A renderer's own semaphore and memory: baton fills the memory and signals the semaphore, and
  // Vulkan sees both.
  baton::PhysicalDeviceProperties properties;
  expect(ok(physical.getProperties(&properties)), "getProperties");
  Renderer renderer{vk, {}};
  expect(renderer.create(properties.backend != baton::BackendKind::Host, 4096),
         "the renderer's timeline semaphore and memory");
  baton::UniqueSemaphore frameDone;
  baton::UniqueBuffer particles;
  r = importRenderer(*instance, *device, vulkan, renderer.objects, frameDone, particles);
  baton::UniqueCommandBuffer fill;
  if (ok(r)) r = device->createCommandBuffer(fill.put());
  if (ok(r)) r = fill->begin();
  if (ok(r)) r = fill->fillBuffer(*particles, 0, 4096, 0x3f800000u);  // 1.0f
  if (ok(r)) r = fill->end();
  baton::SemaphoreValue filled{*frameDone, 1};
  baton::CommandBuffer fillCommands = *fill;
  if (ok(r)) r = queue.submit(baton::SubmitInfo{{}, fillCommands, filled});
  uint64_t one = 1;
  wait.pSemaphores = &renderer.objects.frameDone;
  wait.pValues = &one;
  if (ok(r) && vkWaitSemaphores(vk.device, &wait, 5'000'000'000) != VK_SUCCESS)
    r = baton::Result::ErrorDriver;
  if (ok(r)) r = queue.waitIdle();
  baton::VulkanInteropInfo memoryInterop;
  if (ok(r)) r = baton::getVulkanMemoryInterop(*particles, &memoryInterop);
  if (ok(r) && memoryInterop.mode == baton::InteropMode::Bridged) {  // shared by mapping
    void* mapped = nullptr;
    r = particles->map(&mapped);
    expect(ok(r) && static_cast<const uint32_t*>(mapped)[1023] == 0x3f800000u,
           "Vulkan's memory holds what baton wrote");
  }
  expect(ok(r), "import a renderer's semaphore and memory, fill, signal");
  std::printf("the renderer's memory was imported %s\n",
              baton::interopModeName(memoryInterop.mode));
  // baton lets go of them first; then the renderer may destroy its objects.
  fill.reset();
  if (particles) expect(ok(particles.release().destroy()), "Buffer::destroy");
  if (frameDone) expect(ok(frameDone.release().destroy()), "Semaphore::destroy");

  // A timeline known by its descriptor alone, as a renderer in another process would send it.
  fdImport(vk, *device, queue);

  // An image: read back by baton after the renderer's work.
  imageImport(vk, vulkan, *device, queue, properties.backend);

  return guide::finish("vulkan_interop");
}

}  // namespace

// The verdict of the validation layer, when it runs, comes after the Vulkan device is gone.
int main() { return baton::test::validationExitStatus(run()); }
