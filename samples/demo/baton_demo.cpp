// baton-demo: a particle simulation stepped by baton and drawn by Vulkan, with several frames in
// flight pipelined through ONE timeline semaphore shared by both, and no host synchronisation
// per frame. The last frame is written as a PNG.
//
//   baton-demo [--frames N] [--out path.png] [--particles N] [--size PIXELS] [--trace path.json]
//
// It also writes baton's timeline trace of the run (InstanceCreateInfo::tracePath) next to the
// PNG, as <out>-trace.json (--trace names another file, --trace "" writes none): open it in the
// Perfetto UI or draw it with tools/baton-trace-render (scripts/demo.sh does, as
// <out>-trace.svg).
//
// Exit status: 0 done, 1 an error (printed), 77 no usable Vulkan device (a skip for meson test).
//
// Per frame k (1-based) on the shared timeline T, with F frames in flight:
//
//   baton queue   A_k  waits T >= 2(k-F)   steps the simulation: reads particle slot (k-1)%F,
//                                          writes slot k%F (the slot frame k-F drew from)
//                 B_k  waits T >= 2(k-1)   notes when frame k-1 was finished; signals T = 2k-1
//   Vulkan queue  V_k  waits T >= 2k-1     clears, splats the particles, tone-maps, copies the
//                                          frame out; signals T = 2k
//
// A timeline's values must be signalled in increasing order, so the step's signal has its own
// submission (B_k) behind Vulkan's previous frame, while the step itself (A_k) only waits for
// its slot to be free: stepping frame k overlaps drawing frame k-1. Everything is submitted up
// front; the main thread waits once, for the last value.
//
// The simulation runs in a baton native() callback. On the host backend it runs on the queue's
// worker thread, writing the particles straight into host-visible Vulkan memory imported with
// importVulkanMemory (bridged: shared by mapping, the timeline forwarded on the host). On CUDA
// (a build with the step kernel, step.cu, and a CUDA device that is the Vulkan GPU and imports
// its memory natively) the ring is device-local Vulkan memory exported as an fd and imported by
// CUDA, and the same callback launches the step kernel on the stream it is given; the timeline
// is then waited and signalled GPU-side on both sides.
#include <png.h>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/baton.hpp"
#include "baton/vulkan.hpp"
#include "particles.hpp"
// BATON_VULKAN_VALIDATION=1 runs the demo under the Khronos validation layer (the test harness's
// messenger: tests/interop/vulkan_validation.hpp); any error fails the exit status.
#include "vulkan_validation.hpp"

namespace {

const uint32_t kSplatSpv[] =
#include "splat.spv.h"
    ;
const uint32_t kResolveSpv[] =
#include "resolve.spv.h"
    ;

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr uint32_t kFramesInFlight = 3;
constexpr float kDt = 0.004f;      // simulation time per substep
constexpr uint32_t kSubsteps = 2;  // per frame

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "baton-demo: %s\n", what.c_str());
  std::exit(1);
}

// No Vulkan device to run on: exit status 77, which meson's test runner reports as a skip.
[[noreturn]] void noVulkan(const std::string& why) {
  std::fprintf(stderr, "baton-demo: %s\n", why.c_str());
  std::exit(77);
}

void check(baton::Result r, const char* what) {
  if (baton::isError(r)) die(std::string(what) + ": " + baton::lastErrorMessage());
}

void vkCheck(VkResult r, const char* what) {
  if (r != VK_SUCCESS) die(std::string(what) + " returned VkResult " + std::to_string(r));
}

template <class T>
T vkStruct(VkStructureType type, const void* next = nullptr) {
  T value{};
  value.sType = type;
  value.pNext = const_cast<void*>(next);
  return value;
}

// ---- the simulation ---------------------------------------------------------------------------

// The physics (particles, attractors, one substep) is in particles.hpp, shared with step.cu.
using baton_demo::Attractor;
using baton_demo::Particle;

void stepCpu(const Particle* in, Particle* out, uint32_t count, float t0) {
  std::copy(in, in + count, out);
  for (uint32_t s = 0; s < kSubsteps; ++s) {
    Attractor a[3];
    baton_demo::attractorsAt(baton_demo::substepTime(t0, s, kDt), a);
    for (uint32_t i = 0; i < count; ++i) baton_demo::advance(out[i], a, kDt);
  }
}

// A disc in near-circular orbit around the core, slightly perturbed.
void initialState(Particle* p, uint32_t count) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  auto rnd = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return static_cast<float>(seed >> 40) / static_cast<float>(1ull << 24);
  };
  for (uint32_t i = 0; i < count; ++i) {
    float r = 0.08f + 0.82f * std::sqrt(rnd());
    float a = 6.2831853f * rnd();
    float v = std::sqrt(0.55f / r) * (0.92f + 0.12f * rnd());
    p[i] = {r * std::cos(a), r * std::sin(a), -v * std::sin(a), v * std::cos(a)};
  }
}

// What the native step callback needs; one per run (the queue executes steps in order).
struct Simulation {
  // kFramesInFlight slots of `count` particles: a host address on the host backend, a
  // CUdeviceptr on CUDA (only offset here, never dereferenced).
  uint8_t* ring = nullptr;
  uint64_t slotBytes = 0;
  uint32_t count = 0;
  uint32_t stepped = 0;   // frames stepped so far
  uint32_t finished = 0;  // frames whose completion B_k noted
  Clock::time_point start;
  // Host time of each frame's step callback: the step itself on the host backend; on CUDA only
  // the kernel launch (the kernel runs later on the stream and is not timed here).
  std::vector<double> stepMs, finishedAtMs;
};

// CUDA hook. A build that compiles a step kernel (nvcc) defines BATON_DEMO_CUDA_STEP and
// provides this launcher; it must enqueue on `stream` only (baton's native() contract).
#if defined(BATON_DEMO_CUDA_STEP)
extern "C" int batonDemoStepCuda(void* stream, uint64_t in, uint64_t out, uint32_t count, float t0,
                                 float dt, uint32_t substeps);
extern "C" int batonDemoToneMapCuda(void* stream, uint64_t surface, uint32_t size);
constexpr bool kHaveCudaStep = true;
#else
constexpr bool kHaveCudaStep = false;
#endif

baton::Result stepOnCuda(const baton::NativeQueue& queue, Simulation& sim, const Particle* in,
                         Particle* out, float t0) {
#if defined(BATON_DEMO_CUDA_STEP)
  // On CUDA the ring is imported natively: these addresses are CUdeviceptrs.
  int error = batonDemoStepCuda(queue.stream, reinterpret_cast<uint64_t>(in),
                                reinterpret_cast<uint64_t>(out), sim.count, t0, kDt, kSubsteps);
  if (error == 0) return baton::Result::Success;
  // baton's failure reason names only its own code: say which CUDA error it was.
  std::fprintf(stderr, "baton-demo: launching the step kernel failed: cudaError_t %d\n", error);
  return baton::Result::ErrorHostCallFailed;
#else
  (void)queue, (void)sim, (void)in, (void)out, (void)t0;
  return baton::Result::ErrorNotSupported;
#endif
}

baton::Result stepParticles(const baton::NativeQueue& queue, void* user) {
  auto& sim = *static_cast<Simulation*>(user);
  uint32_t k = ++sim.stepped;  // frame k: slot (k-1)%F -> slot k%F
  auto* in =
      reinterpret_cast<const Particle*>(sim.ring + ((k - 1) % kFramesInFlight) * sim.slotBytes);
  auto* out = reinterpret_cast<Particle*>(sim.ring + (k % kFramesInFlight) * sim.slotBytes);
  float t0 = static_cast<float>(k - 1) * kSubsteps * kDt;
  Clock::time_point t = Clock::now();
  if (queue.backend == baton::BackendKind::Cuda) {
    baton::Result r = stepOnCuda(queue, sim, in, out, t0);
    sim.stepMs[k] = msSince(t);
    return r;
  }
  stepCpu(in, out, sim.count, t0);
  sim.stepMs[k] = msSince(t);
  return baton::Result::Success;
}

// The post-process of one slot's frame (CUDA only): the tone map kernel on the surface of the
// frame image baton imported from Vulkan.
struct PostProcess {
  uint64_t surface = 0;  // NativeImageLevel::surfaceObject of the slot's frame image
  uint32_t size = 0;
};

baton::Result toneMap(const baton::NativeQueue& queue, void* user) {
#if defined(BATON_DEMO_CUDA_STEP)
  const auto& post = *static_cast<const PostProcess*>(user);
  int error = batonDemoToneMapCuda(queue.stream, post.surface, post.size);
  if (error == 0) return baton::Result::Success;
  std::fprintf(stderr, "baton-demo: launching the tone map kernel failed: cudaError_t %d\n", error);
  return baton::Result::ErrorHostCallFailed;
#else
  (void)queue, (void)user;
  return baton::Result::ErrorNotSupported;
#endif
}

baton::Result noteFinished(void* user) {
  auto& sim = *static_cast<Simulation*>(user);
  sim.finishedAtMs[++sim.finished] = msSince(sim.start);
  return baton::Result::Success;
}

// ---- Vulkan -----------------------------------------------------------------------------------

struct Gpu {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  bool timestamps = false;

  baton::VulkanDevice view() const {
    baton::VulkanDevice v;
    v.instance = instance;
    v.physicalDevice = physical;
    v.device = device;
    // Under validation, baton's timeline calls are observed for the filter of the layer's known
    // false positive (vulkan_validation.hpp).
    if (baton::test::processValidation().on())
      v.getInstanceProcAddr = &baton::test::TimelineObserver::getInstanceProcAddr;
    return v;
  }

  uint32_t memoryType(uint32_t bits, VkMemoryPropertyFlags flags) const {
    VkPhysicalDeviceMemoryProperties props;
    vkGetPhysicalDeviceMemoryProperties(physical, &props);
    for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (props.memoryTypes[i].propertyFlags & flags) == flags) return i;
    die("no Vulkan memory type with the flags needed");
  }
};

// The first Vulkan 1.2 device with timeline semaphores and a compute queue, preferring a GPU
// (BATON_VULKAN_DEVICE=<name substring> picks one).
Gpu openVulkan() {
  Gpu g;
  auto app = vkStruct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "baton-demo";
  app.apiVersion = VK_API_VERSION_1_2;
  auto info = vkStruct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  info.pApplicationInfo = &app;
  std::string why;
  if (!baton::test::processValidation().prepare(info, &why)) die(why);
  if (vkCreateInstance(&info, nullptr, &g.instance) != VK_SUCCESS)
    noVulkan(
        "no Vulkan driver (install mesa-vulkan-drivers for lavapipe, or point VK_DRIVER_FILES "
        "at an ICD json)");
  baton::test::processValidation().attach(g.instance);
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(g.instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(g.instance, &count, devices.data());
  const char* want = std::getenv("BATON_VULKAN_DEVICE");
  int bestScore = -1;
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
      int score = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 2
                  : props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU        ? 0
                                                                           : 1;
      if (score > bestScore) {
        bestScore = score;
        g.physical = pd;
        g.family = f;
        g.properties = props;
        g.timestamps = fams[f].timestampValidBits > 0;
      }
      break;
    }
  }
  if (!g.physical) noVulkan("no Vulkan 1.2 device with timeline semaphores and a compute queue");

  // fd export where offered, so that a CUDA device can import natively.
  std::vector<const char*> extensions;
  uint32_t extCount = 0;
  vkEnumerateDeviceExtensionProperties(g.physical, nullptr, &extCount, nullptr);
  std::vector<VkExtensionProperties> exts(extCount);
  vkEnumerateDeviceExtensionProperties(g.physical, nullptr, &extCount, exts.data());
  for (const VkExtensionProperties& e : exts)
    for (const char* name :
         {VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME})
      if (!std::strcmp(e.extensionName, name)) extensions.push_back(name);
  float priority = 1.0f;
  auto queueInfo = vkStruct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queueInfo.queueFamilyIndex = g.family;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  auto features12 = vkStruct<VkPhysicalDeviceVulkan12Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  features12.timelineSemaphore = VK_TRUE;
  auto deviceInfo = vkStruct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features12);
  deviceInfo.queueCreateInfoCount = 1;
  deviceInfo.pQueueCreateInfos = &queueInfo;
  deviceInfo.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  deviceInfo.ppEnabledExtensionNames = extensions.data();
  vkCheck(vkCreateDevice(g.physical, &deviceInfo, nullptr, &g.device), "vkCreateDevice");
  vkGetDeviceQueue(g.device, g.family, 0, &g.queue);
  auto poolInfo = vkStruct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  poolInfo.queueFamilyIndex = g.family;
  vkCheck(vkCreateCommandPool(g.device, &poolInfo, nullptr, &g.pool), "vkCreateCommandPool");
  return g;
}

struct Memory {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  uint32_t type = 0;
};

Memory allocate(const Gpu& g, VkMemoryRequirements req, VkMemoryPropertyFlags flags) {
  Memory m;
  m.type = g.memoryType(req.memoryTypeBits, flags);
  m.size = req.size;
  auto info = vkStruct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  info.allocationSize = req.size;
  info.memoryTypeIndex = m.type;
  vkCheck(vkAllocateMemory(g.device, &info, nullptr, &m.memory), "vkAllocateMemory");
  return m;
}

VkBuffer createBuffer(const Gpu& g, VkDeviceSize size, VkBufferUsageFlags usage,
                      VkMemoryPropertyFlags flags, Memory* memory) {
  auto info = vkStruct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  info.size = size;
  info.usage = usage;
  VkBuffer buffer;
  vkCheck(vkCreateBuffer(g.device, &info, nullptr, &buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(g.device, buffer, &req);
  *memory = allocate(g, req, flags);
  vkCheck(vkBindBufferMemory(g.device, buffer, memory->memory, 0), "vkBindBufferMemory");
  return buffer;
}

// A buffer in device-local memory that CUDA can import: the buffer and its allocation are both
// declared exportable as OPAQUE_FD (Vulkan requires the buffer's handle types to include the
// memory's), and the allocation is dedicated to the buffer (VkMemoryDedicatedAllocateInfo, valid
// for any buffer), so that it is exactly the buffer's memory; CUDA must be told that it is
// dedicated, through VulkanMemoryImportInfo::dedicated.
VkBuffer createExportableBuffer(const Gpu& g, VkDeviceSize size, VkBufferUsageFlags usage,
                                Memory* memory) {
  auto external = vkStruct<VkExternalMemoryBufferCreateInfo>(
      VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO);
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  auto info = vkStruct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, &external);
  info.size = size;
  info.usage = usage;
  VkBuffer buffer;
  vkCheck(vkCreateBuffer(g.device, &info, nullptr, &buffer), "vkCreateBuffer (exportable)");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(g.device, buffer, &req);
  auto dedicated =
      vkStruct<VkMemoryDedicatedAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO);
  dedicated.buffer = buffer;
  auto exportInfo = vkStruct<VkExportMemoryAllocateInfo>(
      VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, &dedicated);
  exportInfo.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  memory->type = g.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  memory->size = req.size;
  auto alloc = vkStruct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &exportInfo);
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = memory->type;
  vkCheck(vkAllocateMemory(g.device, &alloc, nullptr, &memory->memory),
          "vkAllocateMemory (exportable)");
  vkCheck(vkBindBufferMemory(g.device, buffer, memory->memory, 0), "vkBindBufferMemory");
  return buffer;
}

// An image with its memory and view. `exportable`: its memory is exportable as OPAQUE_FD and
// dedicated to it (device-local), as CUDA's import of the frame image needs.
VkImage createImage(const Gpu& g, VkFormat format, uint32_t size, uint32_t layers,
                    VkImageUsageFlags usage, Memory* memory, VkImageView* view,
                    bool exportable = false) {
  auto external = vkStruct<VkExternalMemoryImageCreateInfo>(
      VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO);
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  auto info = vkStruct<VkImageCreateInfo>(VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                                          exportable ? &external : nullptr);
  info.imageType = VK_IMAGE_TYPE_2D;
  info.format = format;
  info.extent = {size, size, 1};
  info.mipLevels = 1;
  info.arrayLayers = layers;
  info.samples = VK_SAMPLE_COUNT_1_BIT;
  info.tiling = VK_IMAGE_TILING_OPTIMAL;
  info.usage = usage;
  info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImage image;
  vkCheck(vkCreateImage(g.device, &info, nullptr, &image), "vkCreateImage");
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(g.device, image, &req);
  if (exportable) {
    auto dedicated =
        vkStruct<VkMemoryDedicatedAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO);
    dedicated.image = image;
    auto exportInfo = vkStruct<VkExportMemoryAllocateInfo>(
        VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, &dedicated);
    exportInfo.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    memory->type = g.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    memory->size = req.size;
    auto alloc =
        vkStruct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &exportInfo);
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = memory->type;
    vkCheck(vkAllocateMemory(g.device, &alloc, nullptr, &memory->memory),
            "vkAllocateMemory (exportable image)");
  } else {
    *memory = allocate(g, req, 0);
  }
  vkCheck(vkBindImageMemory(g.device, image, memory->memory, 0), "vkBindImageMemory");
  auto viewInfo = vkStruct<VkImageViewCreateInfo>(VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO);
  viewInfo.image = image;
  viewInfo.viewType = layers > 1 ? VK_IMAGE_VIEW_TYPE_2D_ARRAY : VK_IMAGE_VIEW_TYPE_2D;
  viewInfo.format = format;
  viewInfo.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, layers};
  vkCheck(vkCreateImageView(g.device, &viewInfo, nullptr, view), "vkCreateImageView");
  return image;
}

struct ComputePass {
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

ComputePass createPass(const Gpu& g, const uint32_t* code, size_t bytes,
                       std::vector<VkDescriptorType> bindings, uint32_t pushBytes) {
  ComputePass p;
  std::vector<VkDescriptorSetLayoutBinding> b(bindings.size());
  for (uint32_t i = 0; i < bindings.size(); ++i)
    b[i] = {i, bindings[i], 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  auto setInfo = vkStruct<VkDescriptorSetLayoutCreateInfo>(
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  setInfo.bindingCount = static_cast<uint32_t>(b.size());
  setInfo.pBindings = b.data();
  vkCheck(vkCreateDescriptorSetLayout(g.device, &setInfo, nullptr, &p.setLayout),
          "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes};
  auto layoutInfo =
      vkStruct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &p.setLayout;
  layoutInfo.pushConstantRangeCount = 1;
  layoutInfo.pPushConstantRanges = &range;
  vkCheck(vkCreatePipelineLayout(g.device, &layoutInfo, nullptr, &p.layout),
          "vkCreatePipelineLayout");
  auto moduleInfo = vkStruct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  moduleInfo.codeSize = bytes;
  moduleInfo.pCode = code;
  VkShaderModule module;
  vkCheck(vkCreateShaderModule(g.device, &moduleInfo, nullptr, &module), "vkCreateShaderModule");
  auto pipeInfo =
      vkStruct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  pipeInfo.stage = vkStruct<VkPipelineShaderStageCreateInfo>(
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  pipeInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeInfo.stage.module = module;
  pipeInfo.stage.pName = "main";
  pipeInfo.layout = p.layout;
  vkCheck(vkCreateComputePipelines(g.device, VK_NULL_HANDLE, 1, &pipeInfo, nullptr, &p.pipeline),
          "vkCreateComputePipelines");
  vkDestroyShaderModule(g.device, module, nullptr);
  return p;
}

void destroyPass(const Gpu& g, ComputePass& p) {
  vkDestroyPipeline(g.device, p.pipeline, nullptr);
  vkDestroyPipelineLayout(g.device, p.layout, nullptr);
  vkDestroyDescriptorSetLayout(g.device, p.setLayout, nullptr);
}

void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
             VkPipelineStageFlags dst, VkAccessFlags dstAccess) {
  auto b = vkStruct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

bool writePng(const char* path, const uint8_t* rgba, uint32_t size) {
  FILE* f = std::fopen(path, "wb");
  if (!f) return false;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, size, size, 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (uint32_t y = 0; y < size; ++y) png_write_row(png, rgba + static_cast<size_t>(y) * size * 4);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return std::fclose(f) == 0;
}

struct Options {
  uint32_t frames = 120;
  uint32_t particles = 1u << 18;
  uint32_t size = 512;
  std::string out = "baton-demo.png";
  std::string trace;  // "": <out without .png>-trace.json
  bool traceSet = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die("missing value after " + a);
      return argv[++i];
    };
    auto number = [&](uint32_t lo, uint32_t hi) {
      const char* text = value();
      char* end = nullptr;
      unsigned long v = std::strtoul(text, &end, 10);
      if (!end || *end || v < lo || v > hi)
        die(a + " wants a number in " + std::to_string(lo) + ".." + std::to_string(hi));
      return static_cast<uint32_t>(v);
    };
    if (a == "--frames") {
      o.frames = number(1, 100000);
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--particles") {
      o.particles = number(256, 1u << 24);
    } else if (a == "--size") {
      o.size = number(16, 8192);
    } else if (a == "--trace") {
      o.trace = value();
      o.traceSet = true;
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: baton-demo [--frames N] [--out path.png] [--particles N] "
          "[--size PIXELS] [--trace path.json]\n");
      std::exit(0);
    } else {
      die("unknown argument '" + a + "' (try --help)");
    }
  }
  if (!o.traceSet) {
    const size_t dot = o.out.size() >= 4 && o.out.compare(o.out.size() - 4, 4, ".png") == 0
                           ? o.out.size() - 4
                           : o.out.size();
    o.trace = o.out.substr(0, dot) + "-trace.json";
  }
  return o;
}

void printMessage(baton::MessageSeverity severity, const char* message, void*) {
  // Which backends loaded, which interop mode and why: the information the demo is about.
  if (severity != baton::MessageSeverity::Info || std::strstr(message, "imported"))
    std::printf("  baton: %s\n", message);
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  const uint32_t F = kFramesInFlight;
  Clock::time_point setupStart = Clock::now();

  Gpu gpu = openVulkan();
  std::printf("Vulkan: %s\n", gpu.properties.deviceName);

  // ---- baton: the best backend for the simulation -----------------------------------------
  baton::InstanceCreateInfo ii;
  ii.debugCallback = &printMessage;
  // The timeline trace of the whole run, written when the instance is destroyed (a few hundred
  // records per frame: cheap next to a frame).
  ii.tracePath = opt.trace.empty() ? nullptr : opt.trace.c_str();
  baton::UniqueInstance instance;
  check(baton::createInstance(ii, instance.put()), "createInstance");
  baton::PhysicalDevice hostPd, cudaPd;
  std::string cudaWhy;
  {
    uint32_t count = 0;
    check(instance->enumeratePhysicalDevices(&count, nullptr), "enumeratePhysicalDevices");
    std::vector<baton::PhysicalDevice> pds(count);
    check(instance->enumeratePhysicalDevices(&count, pds.data()), "enumeratePhysicalDevices");
    for (baton::PhysicalDevice pd : pds) {
      baton::PhysicalDeviceProperties p;
      check(pd.getProperties(&p), "getProperties");
      if (p.backend == baton::BackendKind::Host && !hostPd) hostPd = pd;
    }
    baton::BackendInfo infos[baton::kBackendKindCount];
    uint32_t n = baton::kBackendKindCount;
    check(instance->enumerateBackends(&n, infos), "enumerateBackends");
    const baton::BackendInfo& cuda = infos[static_cast<uint32_t>(baton::BackendKind::Cuda)];
    baton::PhysicalDevice match;
    if (!cuda.available) {
      cudaWhy = std::string("the CUDA backend is unavailable: ") + cuda.reason;
    } else if (baton::matchVulkanPhysicalDevice(*instance, gpu.view(), &match) !=
               baton::Result::Success) {
      cudaWhy = "no CUDA device is the Vulkan device";
    } else if (!kHaveCudaStep) {
      cudaWhy = "this build has no CUDA step kernel (BATON_DEMO_CUDA_STEP)";
    } else {
      cudaPd = match;
    }
  }
  // A CUDA device is used only if it imports the particle memory natively; checked below.
  baton::UniqueDevice device;
  baton::DeviceCreateInfo di;
  di.queueCount = 2;  // the step, and the post-process
  check(instance->createDevice(cudaPd ? cudaPd : hostPd, di, device.put()), "createDevice");
  if (cudaPd) {
    baton::VulkanInteropSupport support;
    check(baton::queryVulkanInterop(gpu.view(), *device, &support), "queryVulkanInterop");
    if (support.memoryMode != baton::InteropMode::Native) {
      cudaWhy =
          std::string("CUDA cannot import the Vulkan memory natively: ") + support.memoryReason;
      cudaPd = baton::PhysicalDevice();
      check(instance->createDevice(hostPd, di, device.put()), "createDevice");
    }
  }
  baton::PhysicalDevice usedPd;
  baton::PhysicalDeviceProperties used;
  check(device->getPhysicalDevice(&usedPd), "getPhysicalDevice");
  check(usedPd.getProperties(&used), "getProperties");
  std::printf(
      "simulation: %s backend, %s%s%s\n", baton::backendName(used.backend), used.name,
      cudaWhy.empty() ? "" : " (not CUDA: ", cudaWhy.empty() ? "" : (cudaWhy + ")").c_str());
  baton::Queue queue, postQueue;  // the step and the notes; the post-process
  check(device->getQueue(0, &queue), "getQueue");
  check(device->getQueue(1, &postQueue), "getQueue");

  // ---- shared objects: the timeline and the particle ring --------------------------------
  baton::VulkanTimelineCreateInfo ti;
  ti.vulkan = gpu.view();
  ti.device = *device;
  ti.failurePolicy = baton::VulkanFailurePolicy::Release;  // never hang Vulkan on a failed step
  ti.debugName = "frames";
  baton::VulkanTimeline timeline;
  check(baton::createVulkanTimeline(*instance, ti, &timeline), "createVulkanTimeline");
  const VkSemaphore T = timeline.vulkan;

  // The particle ring. Host backend: host-visible memory that baton maps (bridged). CUDA:
  // device-local memory that CUDA imports (native), so the step kernel and the splat pass use
  // the same GPU memory with no copy; queryVulkanInterop said above that the import can work.
  const bool onCuda = used.backend == baton::BackendKind::Cuda;
  const uint64_t slotBytes = static_cast<uint64_t>(opt.particles) * sizeof(Particle);
  Memory ringMemory;
  VkBuffer ring =
      onCuda
          ? createExportableBuffer(
                gpu, slotBytes * F,
                VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, &ringMemory)
          : createBuffer(gpu, slotBytes * F, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                         &ringMemory);
  baton::VulkanMemoryImportInfo mi;
  mi.vulkan = gpu.view();
  mi.memory = ringMemory.memory;
  mi.allocationSize = ringMemory.size;
  mi.size = slotBytes * F;
  mi.memoryTypeIndex = ringMemory.type;
  if (onCuda) {
    // Native or fail: a bridged fallback cannot share device-local memory. fd -1: baton exports
    // it (vkGetMemoryFdKHR) and hands it to CUDA.
    mi.mode = baton::InteropModeRequest::Native;
    mi.fd = -1;
    mi.dedicated = true;
  }
  baton::UniqueBuffer ringBuffer;
  check(baton::importVulkanMemory(*device, mi, ringBuffer.put()), "importVulkanMemory");
  baton::VulkanInteropInfo ringInfo, timelineInfo;
  check(baton::getVulkanMemoryInterop(*ringBuffer, &ringInfo), "getVulkanMemoryInterop");
  check(baton::getVulkanSemaphoreInterop(timeline.baton, &timelineInfo),
        "getVulkanSemaphoreInterop");
  std::printf("shared timeline: %s\nparticle memory: %s (%s)\n",
              baton::interopModeName(timelineInfo.mode), baton::interopModeName(ringInfo.mode),
              onCuda ? "device-local Vulkan memory, dedicated, imported by CUDA as an OPAQUE_FD"
                     : "host-visible Vulkan memory, mapped");

  Simulation sim;
  uint64_t address = 0;
  // A host address on the host backend, a CUdeviceptr on CUDA (native device memory has no
  // host mapping: Buffer::map would fail).
  check(ringBuffer->getDeviceAddress(&address), "getDeviceAddress");
  sim.ring = reinterpret_cast<uint8_t*>(address);
  sim.slotBytes = slotBytes;
  sim.count = opt.particles;
  sim.stepMs.assign(opt.frames + 2, 0.0);
  sim.finishedAtMs.assign(opt.frames + 2, 0.0);
  // The initial state is slot 0 (frame 0). On CUDA the ring cannot be written from the host: the
  // state goes into a host-visible staging buffer that the setup submission below copies into
  // slot 0 before the host waits for Vulkan to be idle, so the first CUDA step (submitted after
  // that wait) reads the finished copy.
  Memory stagingMemory;
  VkBuffer staging = VK_NULL_HANDLE;
  if (onCuda) {
    staging = createBuffer(
        gpu, slotBytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &stagingMemory);
    void* mapped = nullptr;
    vkCheck(vkMapMemory(gpu.device, stagingMemory.memory, 0, VK_WHOLE_SIZE, 0, &mapped),
            "vkMapMemory (staging)");
    initialState(static_cast<Particle*>(mapped), opt.particles);
    vkUnmapMemory(gpu.device, stagingMemory.memory);
  } else {
    initialState(reinterpret_cast<Particle*>(sim.ring), opt.particles);
  }

  // ---- Vulkan per-slot resources and one command buffer per frame ------------------------
  const uint32_t S = opt.size;
  Memory accumMemory[F], frameMemory[F], readbackMemory;
  VkImage accum[F], frameImage[F];
  VkImageView accumView[F], frameView[F];
  for (uint32_t s = 0; s < F; ++s) {
    accum[s] = createImage(gpu, VK_FORMAT_R32_UINT, S, 3,
                           VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                           &accumMemory[s], &accumView[s]);
    frameImage[s] = createImage(gpu, VK_FORMAT_R8G8B8A8_UNORM, S, 1,
                                VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                                &frameMemory[s], &frameView[s], onCuda);
  }
  // The post-process (CUDA): each frame image imported into baton as an Image, which CUDA maps as
  // a mipmapped array; the tone map kernel reads and writes it through its surface, between
  // Vulkan's draw and Vulkan's copy of the frame, ordered by the timeline. The host backend has
  // no post-process: the frame images are OPTIMAL, which only a GPU can share.
  baton::UniqueImage frames[F];
  PostProcess post[F];
  baton::UniqueCommandBuffer postCbs[F];
  std::string postWhy = onCuda ? "" : "the host backend shares no OPTIMAL image";
  for (uint32_t s = 0; s < F && onCuda; ++s) {
    baton::VulkanImageImportInfo ii;
    ii.vulkan = gpu.view();
    ii.image = frameImage[s];
    ii.memory = frameMemory[s].memory;
    ii.allocationSize = frameMemory[s].size;
    ii.memoryTypeIndex = frameMemory[s].type;
    ii.dedicated = true;
    ii.format = VK_FORMAT_R8G8B8A8_UNORM;
    ii.width = ii.height = S;
    ii.tiling = VK_IMAGE_TILING_OPTIMAL;
    ii.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    ii.mode = baton::InteropModeRequest::Native;
    ii.debugName = "frame";
    check(baton::importVulkanImage(*device, ii, frames[s].put()), "importVulkanImage");
    baton::NativeImageLevel level;
    check(frames[s]->getNativeLevel(0, &level), "getNativeLevel");
    post[s].surface = level.surfaceObject;
    post[s].size = S;
    check(device->createCommandBuffer(postCbs[s].put()), "createCommandBuffer");
    check(postCbs[s]->begin(), "begin");
    check(postCbs[s]->native(&toneMap, &post[s]), "native");
    check(postCbs[s]->end(), "end");
  }
  std::printf("post-process: %s\n",
              onCuda ? "a CUDA tone map on each frame image, imported natively (no copy)"
                     : ("none (" + postWhy + ")").c_str());
  const VkDeviceSize frameBytes = static_cast<VkDeviceSize>(S) * S * 4;
  VkBuffer readback = createBuffer(
      gpu, frameBytes * F, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &readbackMemory);
  ComputePass splat =
      createPass(gpu, kSplatSpv, sizeof kSplatSpv,
                 {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE}, 4);
  ComputePass resolve =
      createPass(gpu, kResolveSpv, sizeof kResolveSpv,
                 {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE}, 4);
  VkDescriptorPoolSize poolSizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, F},
                                      {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 3 * F}};
  auto dpInfo = vkStruct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  dpInfo.maxSets = 2 * F;
  dpInfo.poolSizeCount = 2;
  dpInfo.pPoolSizes = poolSizes;
  VkDescriptorPool descriptorPool;
  vkCheck(vkCreateDescriptorPool(gpu.device, &dpInfo, nullptr, &descriptorPool),
          "vkCreateDescriptorPool");
  VkDescriptorSet splatSet[F], resolveSet[F];
  for (uint32_t s = 0; s < F; ++s) {
    VkDescriptorSetLayout layouts[] = {splat.setLayout, resolve.setLayout};
    VkDescriptorSet sets[2];
    auto alloc =
        vkStruct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    alloc.descriptorPool = descriptorPool;
    alloc.descriptorSetCount = 2;
    alloc.pSetLayouts = layouts;
    vkCheck(vkAllocateDescriptorSets(gpu.device, &alloc, sets), "vkAllocateDescriptorSets");
    splatSet[s] = sets[0];
    resolveSet[s] = sets[1];
    VkDescriptorBufferInfo particles{ring, s * slotBytes, slotBytes};
    VkDescriptorImageInfo accumInfo{VK_NULL_HANDLE, accumView[s], VK_IMAGE_LAYOUT_GENERAL};
    VkDescriptorImageInfo frameInfo{VK_NULL_HANDLE, frameView[s], VK_IMAGE_LAYOUT_GENERAL};
    VkWriteDescriptorSet writes[4];
    for (auto& w : writes) {
      w = vkStruct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      w.descriptorCount = 1;
    }
    writes[0].dstSet = splatSet[s], writes[0].dstBinding = 0;
    writes[0].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
    writes[0].pBufferInfo = &particles;
    writes[1].dstSet = splatSet[s], writes[1].dstBinding = 1;
    writes[1].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, writes[1].pImageInfo = &accumInfo;
    writes[2].dstSet = resolveSet[s], writes[2].dstBinding = 0;
    writes[2].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, writes[2].pImageInfo = &accumInfo;
    writes[3].dstSet = resolveSet[s], writes[3].dstBinding = 1;
    writes[3].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, writes[3].pImageInfo = &frameInfo;
    vkUpdateDescriptorSets(gpu.device, 4, writes, 0, nullptr);
  }
  VkQueryPool queries = VK_NULL_HANDLE;
  if (gpu.timestamps) {
    auto qi = vkStruct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2 * opt.frames;
    vkCheck(vkCreateQueryPool(gpu.device, &qi, nullptr, &queries), "vkCreateQueryPool");
  }

  // Per frame: cmds[i] draws, readCmds[i] copies the (post-processed) frame out; cmds[frames] is
  // the setup.
  std::vector<VkCommandBuffer> cmds(opt.frames + 1), readCmds(opt.frames);
  auto cbInfo =
      vkStruct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  cbInfo.commandPool = gpu.pool;
  cbInfo.commandBufferCount = opt.frames + 1;
  vkCheck(vkAllocateCommandBuffers(gpu.device, &cbInfo, cmds.data()), "vkAllocateCommandBuffers");
  cbInfo.commandBufferCount = opt.frames;
  vkCheck(vkAllocateCommandBuffers(gpu.device, &cbInfo, readCmds.data()),
          "vkAllocateCommandBuffers");
  // CUDA's post-process works on the frame image between the draw and the copy: the image goes to
  // the external queue family after the draw (release) and comes back before the copy (acquire),
  // in GENERAL both ways (docs/guide.md, 'Vulkan images').
  auto ownership = [&](VkCommandBuffer cmd, VkImage image, bool release) {
    auto b = vkStruct<VkImageMemoryBarrier>(VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER);
    b.srcAccessMask = release ? VK_ACCESS_SHADER_WRITE_BIT : 0;
    b.dstAccessMask = release ? 0 : VK_ACCESS_TRANSFER_READ_BIT;
    b.oldLayout = b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    b.srcQueueFamilyIndex = release ? gpu.family : VK_QUEUE_FAMILY_EXTERNAL;
    b.dstQueueFamilyIndex = release ? VK_QUEUE_FAMILY_EXTERNAL : gpu.family;
    b.image = image;
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdPipelineBarrier(
        cmd, release ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT : VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
        release ? VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT : VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0,
        nullptr, 0, nullptr, 1, &b);
  };
  auto begin = vkStruct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  {
    // Setup: images to GENERAL once, then idle (before the frame loop; not per frame).
    VkCommandBuffer cmd = cmds[opt.frames];
    vkBeginCommandBuffer(cmd, &begin);
    std::vector<VkImageMemoryBarrier> toGeneral;
    for (uint32_t s = 0; s < F; ++s) {
      for (VkImage img : {accum[s], frameImage[s]}) {
        auto b = vkStruct<VkImageMemoryBarrier>(VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER);
        b.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        b.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
        b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
        b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        b.image = img;
        b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, img == accum[s] ? 3u : 1u};
        toGeneral.push_back(b);
      }
    }
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         0, nullptr, 0, nullptr, static_cast<uint32_t>(toGeneral.size()),
                         toGeneral.data());
    if (queries) vkCmdResetQueryPool(cmd, queries, 0, 2 * opt.frames);
    if (staging) {
      VkBufferCopy region{0, 0, slotBytes};
      vkCmdCopyBuffer(cmd, staging, ring, 1, &region);
    }
    vkEndCommandBuffer(cmd);
    auto si = vkStruct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    vkCheck(vkQueueSubmit(gpu.queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit (setup)");
    vkCheck(vkQueueWaitIdle(gpu.queue), "vkQueueWaitIdle (setup)");
    if (staging) {
      vkDestroyBuffer(gpu.device, staging, nullptr);
      vkFreeMemory(gpu.device, stagingMemory.memory, nullptr);
    }
  }
  const float exposure =
      4.0e4f / static_cast<float>(opt.particles) * (static_cast<float>(S) * S / (512.0f * 512.0f));
  for (uint32_t i = 0; i < opt.frames; ++i) {
    const uint32_t s = (i + 1) % F;  // frame k = i+1 draws slot k%F
    VkCommandBuffer cmd = cmds[i];
    vkCheck(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    if (queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 2 * i);
    // Host backend: the particles were written by the host (baton's host queue) after this
    // submission was made, so vkQueueSubmit's implicit host-write domain operation does not cover
    // them: a HOST_WRITE barrier does (Vulkan 1.2 §7.9, host write ordering). CUDA: the kernel's
    // writes are ordered by the timeline wait (signalled after them on the stream, GPU-side when
    // the timeline is native). The slot's previous use by frame k-F is ordered by the timeline; the
    // barrier also covers its memory, and the setup copy on CUDA.
    barrier(cmd,
            VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    VkClearColorValue zero{};
    VkImageSubresourceRange layers3{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 3};
    vkCmdClearColorImage(cmd, accum[s], VK_IMAGE_LAYOUT_GENERAL, &zero, 1, &layers3);
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, splat.pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, splat.layout, 0, 1, &splatSet[s],
                            0, nullptr);
    vkCmdPushConstants(cmd, splat.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &opt.particles);
    vkCmdDispatch(cmd, (opt.particles + 255) / 256, 1, 1);
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, resolve.pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, resolve.layout, 0, 1,
                            &resolveSet[s], 0, nullptr);
    vkCmdPushConstants(cmd, resolve.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &exposure);
    vkCmdDispatch(cmd, (S + 15) / 16, (S + 15) / 16, 1);
    if (queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 2 * i + 1);
    if (onCuda) ownership(cmd, frameImage[s], true);
    vkCheck(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");

    cmd = readCmds[i];
    vkCheck(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    if (onCuda) ownership(cmd, frameImage[s], false);
    // The frame image goes to TRANSFER_SRC_OPTIMAL for the copy and back to GENERAL for the next
    // resolve into it (copying from GENERAL draws a performance warning from the validation
    // layer).
    auto toCopy = vkStruct<VkImageMemoryBarrier>(VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER);
    toCopy.srcAccessMask = onCuda ? 0 : VK_ACCESS_SHADER_WRITE_BIT;
    toCopy.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    toCopy.oldLayout = VK_IMAGE_LAYOUT_GENERAL;
    toCopy.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    toCopy.srcQueueFamilyIndex = toCopy.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    toCopy.image = frameImage[s];
    toCopy.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         0, 0, nullptr, 0, nullptr, 1, &toCopy);
    VkBufferImageCopy region{};
    region.bufferOffset = s * frameBytes;
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {S, S, 1};
    vkCmdCopyImageToBuffer(cmd, frameImage[s], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback, 1,
                           &region);
    auto back = toCopy;
    back.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    back.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    back.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    back.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         0, 0, nullptr, 0, nullptr, 1, &back);
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    vkCheck(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  }

  baton::UniqueCommandBuffer step, note;
  check(device->createCommandBuffer(step.put()), "createCommandBuffer");
  check(step->begin(), "begin");
  check(step->native(&stepParticles, &sim), "native");
  check(step->end(), "end");
  check(device->createCommandBuffer(note.put()), "createCommandBuffer");
  check(note->begin(), "begin");
  check(note->hostCall(&noteFinished, &sim), "hostCall");
  check(note->end(), "end");
  const baton::CommandBuffer stepCbs[] = {*step}, noteCbs[] = {*note};
  const double setupMs = msSince(setupStart);

  // ---- the frame loop: submit everything, wait once ---------------------------------------
  sim.start = Clock::now();
  double batonSubmitMs = 0, vulkanSubmitMs = 0;  // host time in each API's submit calls
  // Four values per frame k on the one timeline, each stage waiting for the one before:
  //   4k-3  stepped (baton, queue 0; the step itself waits only for its slot to be free)
  //   4k-2  drawn (Vulkan)
  //   4k-1  post-processed (baton, queue 1: the tone map on CUDA, nothing on the host backend)
  //   4k    copied out (Vulkan)
  // so the values rise in the order they are signalled, and frame k+1's step (queue 0) overlaps
  // frame k's draw, post-process and copy.
  auto vulkanSubmit = [&](VkCommandBuffer cmd, uint64_t waitValue, uint64_t signalValue) {
    auto timelineSubmit =
        vkStruct<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
    timelineSubmit.waitSemaphoreValueCount = 1;
    timelineSubmit.pWaitSemaphoreValues = &waitValue;
    timelineSubmit.signalSemaphoreValueCount = 1;
    timelineSubmit.pSignalSemaphoreValues = &signalValue;
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    auto si = vkStruct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO, &timelineSubmit);
    si.waitSemaphoreCount = 1;
    si.pWaitSemaphores = &T;
    si.pWaitDstStageMask = &stage;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &T;
    auto t0 = Clock::now();
    vkCheck(vkQueueSubmit(gpu.queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
    vulkanSubmitMs += msSince(t0);
  };
  for (uint32_t k = 1; k <= opt.frames; ++k) {
    const uint32_t s = k % F;
    baton::SemaphoreValue slotFree{timeline.baton, 4ull * (k > F ? k - F : 0)};
    baton::SubmitInfo a;
    if (k > F) a.waits = baton::Span<const baton::SemaphoreValue>(&slotFree, 1);
    a.commandBuffers = stepCbs;
    baton::SemaphoreValue previousDone{timeline.baton, 4ull * (k - 1)};
    baton::SemaphoreValue stepped{timeline.baton, 4ull * k - 3};
    baton::SubmitInfo b;
    if (k > 1) {
      b.waits = baton::Span<const baton::SemaphoreValue>(&previousDone, 1);
      b.commandBuffers = noteCbs;
    }
    b.signals = baton::Span<const baton::SemaphoreValue>(&stepped, 1);
    baton::SubmitInfo batch[] = {a, b};
    auto t0 = Clock::now();
    check(queue.submit(batch), "Queue::submit");
    baton::SemaphoreValue drawn{timeline.baton, 4ull * k - 2};
    baton::SemaphoreValue postProcessed{timeline.baton, 4ull * k - 1};
    baton::SubmitInfo c;
    c.waits = baton::Span<const baton::SemaphoreValue>(&drawn, 1);
    baton::CommandBuffer postCommands[] = {onCuda ? *postCbs[s] : baton::CommandBuffer()};
    if (onCuda) c.commandBuffers = postCommands;
    c.signals = baton::Span<const baton::SemaphoreValue>(&postProcessed, 1);
    check(postQueue.submit(c), "Queue::submit (post-process)");
    batonSubmitMs += msSince(t0);

    vulkanSubmit(cmds[k - 1], 4ull * k - 3, 4ull * k - 2);
    vulkanSubmit(readCmds[k - 1], 4ull * k - 1, 4ull * k);
  }
  // The last frame's completion is noted like the others, then the host waits, once.
  baton::SemaphoreValue lastDone{timeline.baton, 4ull * opt.frames};
  baton::SemaphoreValue noted{timeline.baton, 4ull * opt.frames + 1};
  baton::SubmitInfo last;
  last.waits = baton::Span<const baton::SemaphoreValue>(&lastDone, 1);
  last.commandBuffers = noteCbs;
  last.signals = baton::Span<const baton::SemaphoreValue>(&noted, 1);
  check(queue.submit(last), "Queue::submit");
  const double submittedMs = msSince(sim.start);
  check(timeline.baton.wait(4ull * opt.frames + 1, baton::kWaitForever), "Semaphore::wait");
  const double totalMs = msSince(sim.start);

  // ---- report ------------------------------------------------------------------------------
  std::vector<uint64_t> stamps(2 * opt.frames, 0);
  if (queries)
    vkCheck(vkGetQueryPoolResults(gpu.device, queries, 0, 2 * opt.frames, stamps.size() * 8,
                                  stamps.data(), 8, VK_QUERY_RESULT_64_BIT),
            "vkGetQueryPoolResults");
  const double tick = gpu.properties.limits.timestampPeriod * 1e-6;  // ms per tick
  std::printf("\n%u frames, %u particles, %ux%u, %u frames in flight on one timeline\n", opt.frames,
              opt.particles, S, S, F);
  // On CUDA the step callback only launches the kernel: its host time is the launch cost, and the
  // kernel's own time is not measured (it shows in the deltas between finished frames).
  std::printf("%6s %12s %12s %14s %10s\n", "frame", onCuda ? "launch ms" : "step ms", "draw ms",
              "finished ms", "delta");
  std::vector<double> draws;
  for (uint32_t k = 1; k <= opt.frames; ++k) {
    double draw = queries ? (stamps[2 * (k - 1) + 1] - stamps[2 * (k - 1)]) * tick : 0.0;
    draws.push_back(draw);
    double delta = sim.finishedAtMs[k] - sim.finishedAtMs[k - 1];
    std::printf("%6u %12.2f %12.2f %14.2f %10.2f\n", k, sim.stepMs[k], draw, sim.finishedAtMs[k],
                k > 1 ? delta : sim.finishedAtMs[k]);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  std::vector<double> steps(sim.stepMs.begin() + 1, sim.stepMs.begin() + 1 + opt.frames);
  std::printf("\nbackend: %s (%s); Vulkan: %s; timeline: %s; particle memory: %s\n",
              baton::backendName(used.backend), used.name, gpu.properties.deviceName,
              baton::interopModeName(timelineInfo.mode), baton::interopModeName(ringInfo.mode));
  std::printf("median %s %.2f ms%s, median draw %.2f ms; %u frames in %.1f ms = %.1f frames/s\n",
              onCuda ? "step launch" : "step", median(steps),
              onCuda ? " (the kernel itself is not timed)" : "", median(draws), opt.frames, totalMs,
              opt.frames * 1000.0 / totalMs);
  std::printf(
      "host: setup %.1f ms; all %u frames submitted in %.2f ms (baton Queue::submit %.2f ms, "
      "vkQueueSubmit %.2f ms), then one wait (no per-frame host synchronisation)\n",
      setupMs, opt.frames, submittedMs, batonSubmitMs, vulkanSubmitMs);

  // The last frame: frame N drew slot N%F.
  void* mapped = nullptr;
  vkCheck(vkMapMemory(gpu.device, readbackMemory.memory, 0, VK_WHOLE_SIZE, 0, &mapped),
          "vkMapMemory");
  const uint8_t* pixels = static_cast<const uint8_t*>(mapped) + (opt.frames % F) * frameBytes;
  if (!writePng(opt.out.c_str(), pixels, S)) die("could not write " + opt.out);
  std::printf("wrote %s (frame %u)\n", opt.out.c_str(), opt.frames);
  vkUnmapMemory(gpu.device, readbackMemory.memory);

  // ---- teardown: baton imports first, then Vulkan ------------------------------------------
  ringBuffer.reset();
  for (uint32_t s = 0; s < F; ++s) {
    postCbs[s].reset();
    frames[s].reset();
  }
  step.reset();
  note.reset();
  check(baton::destroyVulkanTimeline(gpu.view(), timeline), "destroyVulkanTimeline");
  device.reset();
  instance.reset();  // the last instance: baton writes the trace
  if (!opt.trace.empty()) std::printf("wrote timeline trace %s\n", opt.trace.c_str());
  vkDeviceWaitIdle(gpu.device);
  if (queries) vkDestroyQueryPool(gpu.device, queries, nullptr);
  vkDestroyDescriptorPool(gpu.device, descriptorPool, nullptr);
  destroyPass(gpu, splat);
  destroyPass(gpu, resolve);
  vkDestroyBuffer(gpu.device, readback, nullptr);
  vkFreeMemory(gpu.device, readbackMemory.memory, nullptr);
  for (uint32_t s = 0; s < F; ++s) {
    vkDestroyImageView(gpu.device, accumView[s], nullptr);
    vkDestroyImageView(gpu.device, frameView[s], nullptr);
    vkDestroyImage(gpu.device, accum[s], nullptr);
    vkDestroyImage(gpu.device, frameImage[s], nullptr);
    vkFreeMemory(gpu.device, accumMemory[s].memory, nullptr);
    vkFreeMemory(gpu.device, frameMemory[s].memory, nullptr);
  }
  vkDestroyBuffer(gpu.device, ring, nullptr);
  vkFreeMemory(gpu.device, ringMemory.memory, nullptr);
  vkDestroyCommandPool(gpu.device, gpu.pool, nullptr);
  vkDestroyDevice(gpu.device, nullptr);
  baton::test::processValidation().detach();
  vkDestroyInstance(gpu.instance, nullptr);
  return baton::test::validationExitStatus(0);
}
