// baton-image-bench: a 4K RGBA16F frame post-processed by CUDA after Vulkan, three ways, in one run
// (docs/performance.md, 'baton-image-bench'):
//
//   baton image    the frame image imported into baton (importVulkanImage, native: a CUDA
//                  mipmapped array); a baton CUDA queue waits for Vulkan's value, runs the tone
//                  map kernel on the image's surface in a native callback and signals back; the
//                  timeline is native (GPU-side waits both ways). Also with Auto (bridged)
//                  timeline.
//   raw import     the same with raw driver calls: cuImportExternalMemory +
//                  cuExternalMemoryGetMappedMipmappedArray + cuSurfObjectCreate, a raw stream,
//                  cuWaitExternalSemaphoresAsync / the kernel / cuSignalExternalSemaphoresAsync on
//                  a timeline imported with cuImportExternalSemaphore.
//   buffer flow    no image import: Vulkan copies the image into an exported buffer, a baton CUDA
//                  queue runs the tone map on the buffer (importVulkanMemory), Vulkan copies it
//                  back into the image; native timeline.
//
// Per frame: a Vulkan submission (it takes the image back from CUDA, hands it over again, and in
// the buffer flow copies it out and in) and a CUDA one, alternating on one timeline; every frame
// of a repeat is submitted up front, then the host waits once. The figure is the time per frame
// (wall time / frames), median over repeats; the variants alternate within each repeat. Raw CUDA
// goes through baton's own symbol table (no libcuda link), the kernels are PTX (below). Needs a
// CUDA device that is the Vulkan device with the fd extensions; prints "skipped: <reason>"
// elsewhere.
//
//   baton-image-bench [--frames N] [--repeats N] [--width W] [--height H]
#include <cuda.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/baton.hpp"
#include "baton/vulkan.hpp"
#include "bench_util.hpp"
#include "cuda_symbols.hpp"

namespace baton::bench {
namespace {

using test::vkStruct;
using test::VulkanContext;

const cuda::Symbols* cu = nullptr;
constexpr uint64_t kTimeoutNs = 60'000'000'000ull;

// The tone map, on RGBA16F texels (8 bytes): each colour channel f becomes 1.6f / (1 + 0.6f);
// alpha is kept. On a surface (x in bytes) or on pitched memory.
constexpr const char kPtx[] = R"PTX(
.version 7.0
.target sm_75
.address_size 64

.visible .entry baton_tonemap_surface(.param .u64 surf, .param .u32 width, .param .u32 height)
{
  .reg .pred %p<3>;
  .reg .b16 %h<4>;
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<1>;
  ld.param.u64 %rd0, [surf];
  ld.param.u32 %r0, [width];
  ld.param.u32 %r1, [height];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  mov.u32 %r2, %ctaid.y;
  mov.u32 %r3, %ntid.y;
  mov.u32 %r4, %tid.y;
  mad.lo.u32 %r6, %r2, %r3, %r4;
  setp.ge.u32 %p0, %r5, %r0;
  setp.ge.u32 %p1, %r6, %r1;
  or.pred %p2, %p0, %p1;
  @%p2 bra DONE;
  shl.b32 %r7, %r5, 3;
  suld.b.2d.v4.b16.trap {%h0, %h1, %h2, %h3}, [%rd0, {%r7, %r6}];
  cvt.f32.f16 %f0, %h0;
  mul.f32 %f1, %f0, 0f3FCCCCCD;
  fma.rn.f32 %f2, %f0, 0f3F19999A, 0f3F800000;
  div.approx.f32 %f3, %f1, %f2;
  cvt.rn.f16.f32 %h0, %f3;
  cvt.f32.f16 %f0, %h1;
  mul.f32 %f1, %f0, 0f3FCCCCCD;
  fma.rn.f32 %f2, %f0, 0f3F19999A, 0f3F800000;
  div.approx.f32 %f3, %f1, %f2;
  cvt.rn.f16.f32 %h1, %f3;
  cvt.f32.f16 %f0, %h2;
  mul.f32 %f1, %f0, 0f3FCCCCCD;
  fma.rn.f32 %f2, %f0, 0f3F19999A, 0f3F800000;
  div.approx.f32 %f3, %f1, %f2;
  cvt.rn.f16.f32 %h2, %f3;
  sust.b.2d.v4.b16.trap [%rd0, {%r7, %r6}], {%h0, %h1, %h2, %h3};
DONE:
  ret;
}

.visible .entry baton_tonemap_buffer(.param .u64 base, .param .u32 width, .param .u32 height,
                                     .param .u64 pitch)
{
  .reg .pred %p<3>;
  .reg .b16 %h<4>;
  .reg .b32 %r<7>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd0, [base];
  ld.param.u32 %r0, [width];
  ld.param.u32 %r1, [height];
  ld.param.u64 %rd1, [pitch];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  mov.u32 %r2, %ctaid.y;
  mov.u32 %r3, %ntid.y;
  mov.u32 %r4, %tid.y;
  mad.lo.u32 %r6, %r2, %r3, %r4;
  setp.ge.u32 %p0, %r5, %r0;
  setp.ge.u32 %p1, %r6, %r1;
  or.pred %p2, %p0, %p1;
  @%p2 bra DONE;
  cvt.u64.u32 %rd2, %r6;
  mul.lo.u64 %rd3, %rd2, %rd1;
  cvt.u64.u32 %rd4, %r5;
  shl.b64 %rd4, %rd4, 3;
  add.u64 %rd5, %rd3, %rd4;
  add.u64 %rd5, %rd5, %rd0;
  ld.global.v4.b16 {%h0, %h1, %h2, %h3}, [%rd5];
  cvt.f32.f16 %f0, %h0;
  mul.f32 %f1, %f0, 0f3FCCCCCD;
  fma.rn.f32 %f2, %f0, 0f3F19999A, 0f3F800000;
  div.approx.f32 %f3, %f1, %f2;
  cvt.rn.f16.f32 %h0, %f3;
  cvt.f32.f16 %f0, %h1;
  mul.f32 %f1, %f0, 0f3FCCCCCD;
  fma.rn.f32 %f2, %f0, 0f3F19999A, 0f3F800000;
  div.approx.f32 %f3, %f1, %f2;
  cvt.rn.f16.f32 %h1, %f3;
  cvt.f32.f16 %f0, %h2;
  mul.f32 %f1, %f0, 0f3FCCCCCD;
  fma.rn.f32 %f2, %f0, 0f3F19999A, 0f3F800000;
  div.approx.f32 %f3, %f1, %f2;
  cvt.rn.f16.f32 %h2, %f3;
  st.global.v4.b16 [%rd5], {%h0, %h1, %h2, %h3};
DONE:
  ret;
}
)PTX";

[[noreturn]] void die(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "baton-image-bench: %s\n", what.c_str());
  std::_Exit(1);
}
void cuOk(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (cu->cuGetErrorName) cu->cuGetErrorName(r, &name);
  die(std::string(what) + ": " + (name ? name : std::to_string(r)));
}
void vkOk(VkResult r, const char* what) {
  if (r != VK_SUCCESS) die(std::string(what) + ": VkResult " + std::to_string(r));
}
void batonOk(Result r, const char* what) {
  if (r != Result::Success) die(std::string(what) + ": " + lastErrorMessage());
}

struct ImageOptions {
  uint32_t frames = 200, repeats = 5, width = 3840, height = 2160;
};

struct Env {
  VulkanContext* vk = nullptr;
  Instance instance;
  Device device;
  Queue queue;
  CUdevice cuDevice = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction surfaceKernel = nullptr, bufferKernel = nullptr;
  uint32_t width = 0, height = 0;
  // The frame: an OPTIMAL RGBA16F image in exportable, dedicated device memory; and the buffer
  // flow's exportable buffer.
  test::VulkanImage frame;
  test::VulkanBuffer buffer;
};

// Vulkan's part of a frame: take the image back from CUDA (after the first frame), in the buffer
// flow copy it into the buffer and (from the second frame) the buffer's processed texels back in,
// hand the image to CUDA. GENERAL throughout.
VkCommandBuffer recordVulkanFrame(Env& e, bool first, bool bufferFlow) {
  VulkanContext& vk = *e.vk;
  return vk.record([&](VkCommandBuffer c) {
    auto b = vkStruct<VkImageMemoryBarrier>(VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER);
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    b.image = e.frame.image;
    b.oldLayout = first ? VK_IMAGE_LAYOUT_UNDEFINED : VK_IMAGE_LAYOUT_GENERAL;
    b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    b.srcQueueFamilyIndex =
        first || bufferFlow ? VK_QUEUE_FAMILY_IGNORED : VK_QUEUE_FAMILY_EXTERNAL;
    b.dstQueueFamilyIndex = first || bufferFlow ? VK_QUEUE_FAMILY_IGNORED : vk.family;
    b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 0, nullptr, 0, nullptr, 1, &b);
    if (bufferFlow) {
      VkBufferImageCopy r{};
      r.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
      r.imageExtent = {e.width, e.height, 1};
      if (!first) {  // the previous frame's processed texels back into the image
        vkCmdCopyBufferToImage(c, e.buffer.buffer, e.frame.image, VK_IMAGE_LAYOUT_GENERAL, 1, &r);
        auto t = vkStruct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
        t.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        t.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                             1, &t, 0, nullptr, 0, nullptr);
      }
      vkCmdCopyImageToBuffer(c, e.frame.image, VK_IMAGE_LAYOUT_GENERAL, e.buffer.buffer, 1, &r);
      auto t = vkStruct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
      t.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                           0, 1, &t, 0, nullptr, 0, nullptr);
    } else {
      auto r = b;
      r.oldLayout = r.newLayout = VK_IMAGE_LAYOUT_GENERAL;
      r.srcQueueFamilyIndex = vk.family;
      r.dstQueueFamilyIndex = VK_QUEUE_FAMILY_EXTERNAL;
      r.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      r.dstAccessMask = 0;
      vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                           VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, nullptr, 0, nullptr, 1, &r);
    }
  });
}

VkResult vulkanSubmit(VulkanContext& vk, VkSemaphore t, VkCommandBuffer cmd, uint64_t wait,
                      uint64_t signal) {
  std::vector<VulkanContext::Timepoint> waits;
  if (wait) waits.push_back({t, wait});
  return vk.submit(waits, cmd, {{t, signal}});
}

struct KernelArgs {
  Env* env;
  uint64_t target;  // surface object, or buffer address
  bool surface;
};

Result launchToneMap(const NativeQueue& q, void* user) {
  auto* a = static_cast<KernelArgs*>(user);
  Env& e = *a->env;
  uint32_t w = e.width, h = e.height;
  uint64_t target = a->target, pitch = uint64_t(w) * 8;
  void* surfaceParams[] = {&target, &w, &h};
  void* bufferParams[] = {&target, &w, &h, &pitch};
  CUresult r = cu->cuLaunchKernel(a->surface ? e.surfaceKernel : e.bufferKernel, (w + 15) / 16,
                                  (h + 15) / 16, 1, 16, 16, 1, 0, static_cast<CUstream>(q.stream),
                                  a->surface ? surfaceParams : bufferParams, nullptr);
  return r == CUDA_SUCCESS ? Result::Success : Result::ErrorHostCallFailed;
}

// One repeat of a baton flow: `frames` frames on `timeline`, all submitted, one host wait.
// Returns µs per frame.
double runBaton(Env& e, const VulkanTimeline& timeline, uint64_t* base, CommandBuffer cuda,
                const std::vector<VkCommandBuffer>& vkFrames, uint32_t frames) {
  VulkanContext& vk = *e.vk;
  const uint64_t b = *base;
  auto start = Clock::now();
  for (uint32_t k = 1; k <= frames; ++k) {
    const uint64_t v = b + 2ull * k;
    SemaphoreValue wait{timeline.baton, v - 1}, signal{timeline.baton, v};
    CommandBuffer cbs[] = {cuda};
    batonOk(e.queue.submit(SubmitInfo{wait, cbs, signal}), "Queue::submit");
    vkOk(vulkanSubmit(vk, timeline.vulkan, vkFrames[k == 1 && b == 0 ? 0 : 1], v - 2, v - 1),
         "vkQueueSubmit");
  }
  batonOk(timeline.baton.wait(b + 2ull * frames, kTimeoutNs), "Semaphore::wait");
  double us = usBetween(start, Clock::now()) / frames;
  *base = b + 2ull * frames;
  return us;
}

std::string run(const ImageOptions& o) {
  VulkanContext vk;
  if (!vk.ok()) return "no usable Vulkan device: " + vk.skip;
  if (!vk.externalMemoryFd || !vk.externalSemaphoreFd)
    return vk.name + " lacks VK_KHR_external_memory_fd or VK_KHR_external_semaphore_fd";
  Env e;
  e.vk = &vk;
  e.width = o.width;
  e.height = o.height;
  batonOk(createInstance(InstanceCreateInfo{}, &e.instance), "createInstance");
  PhysicalDevice physical;
  if (matchVulkanPhysicalDevice(e.instance, vk.view(), &physical) != Result::Success)
    return "no CUDA device is the Vulkan device: " + std::string(lastErrorMessage());
  PhysicalDeviceProperties props;
  batonOk(physical.getProperties(&props), "getProperties");
  batonOk(e.instance.createDevice(physical, DeviceCreateInfo{}, &e.device), "createDevice");
  batonOk(e.device.getQueue(0, &e.queue), "getQueue");
  cu = &cuda::symbols();
  if (!cu->cuExternalMemoryGetMappedMipmappedArray || !cu->cuSurfObjectCreate ||
      !cu->cuImportExternalSemaphore || !cu->cuModuleLoadData || !cu->cuLaunchKernel)
    return "the CUDA driver lacks the entry points of the raw flow";
  cuOk(cu->cuDeviceGet(&e.cuDevice, static_cast<int>(props.ordinal)), "cuDeviceGet");
  cuOk(cu->cuDevicePrimaryCtxRetain(&e.ctx, e.cuDevice), "cuDevicePrimaryCtxRetain");
  cuOk(cu->cuCtxSetCurrent(e.ctx), "cuCtxSetCurrent");
  cuOk(cu->cuModuleLoadData(&e.module, kPtx), "cuModuleLoadData");
  cuOk(cu->cuModuleGetFunction(&e.surfaceKernel, e.module, "baton_tonemap_surface"),
       "cuModuleGetFunction");
  cuOk(cu->cuModuleGetFunction(&e.bufferKernel, e.module, "baton_tonemap_buffer"),
       "cuModuleGetFunction");
  e.frame = vk.createImage(VK_FORMAT_R16G16B16A16_SFLOAT, VK_IMAGE_TILING_OPTIMAL,
                           VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
                               VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_SAMPLED_BIT,
                           o.width, o.height);
  if (!e.frame.image) return "could not make an exportable RGBA16F image";
  std::string why;
  e.buffer = vk.createExportableBuffer(uint64_t(o.width) * o.height * 8, true, &why);
  if (!e.buffer.buffer) return "the buffer flow's exportable buffer: " + why;

  // ---- baton: the image and the buffer imported, timelines native and Auto
  VulkanImageImportInfo ii = vk.importInfo(e.frame);
  ii.mode = InteropModeRequest::Native;
  Image image;
  batonOk(importVulkanImage(e.device, ii, &image), "importVulkanImage");
  NativeImageLevel level;
  batonOk(image.getNativeLevel(0, &level), "getNativeLevel");
  Buffer buffer;
  VulkanMemoryImportInfo mi = vk.importInfo(e.buffer);
  mi.mode = InteropModeRequest::Native;
  batonOk(importVulkanMemory(e.device, mi, &buffer), "importVulkanMemory");
  uint64_t bufferAddress = 0;
  batonOk(buffer.getDeviceAddress(&bufferAddress), "getDeviceAddress");
  KernelArgs onImage{&e, level.surfaceObject, true}, onBuffer{&e, bufferAddress, false};
  CommandBuffer imageCb, bufferCb;
  batonOk(e.device.createCommandBuffer(&imageCb), "createCommandBuffer");
  batonOk(imageCb.begin(), "begin");
  batonOk(imageCb.native(launchToneMap, &onImage), "native");
  batonOk(imageCb.end(), "end");
  batonOk(e.device.createCommandBuffer(&bufferCb), "createCommandBuffer");
  batonOk(bufferCb.begin(), "begin");
  batonOk(bufferCb.native(launchToneMap, &onBuffer), "native");
  batonOk(bufferCb.end(), "end");
  VulkanTimeline nativeT, autoT, bufferT;
  VulkanTimelineCreateInfo ti;
  ti.vulkan = vk.view();
  ti.device = e.device;
  ti.mode = InteropModeRequest::Native;
  batonOk(createVulkanTimeline(e.instance, ti, &nativeT), "createVulkanTimeline (native)");
  batonOk(createVulkanTimeline(e.instance, ti, &bufferT), "createVulkanTimeline (buffer)");
  ti.mode = InteropModeRequest::Auto;
  batonOk(createVulkanTimeline(e.instance, ti, &autoT), "createVulkanTimeline (Auto)");

  // ---- raw: the same import with driver calls, a raw stream, a raw timeline
  auto getMemoryFd =
      reinterpret_cast<PFN_vkGetMemoryFdKHR>(vkGetDeviceProcAddr(vk.device, "vkGetMemoryFdKHR"));
  auto getSemaphoreFd = reinterpret_cast<PFN_vkGetSemaphoreFdKHR>(
      vkGetDeviceProcAddr(vk.device, "vkGetSemaphoreFdKHR"));
  auto memFdInfo = vkStruct<VkMemoryGetFdInfoKHR>(VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR);
  memFdInfo.memory = e.frame.memory;
  memFdInfo.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  int memFd = -1;
  vkOk(getMemoryFd(vk.device, &memFdInfo, &memFd), "vkGetMemoryFdKHR");
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC md{};
  md.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  md.handle.fd = memFd;
  md.size = e.frame.allocationSize;
  md.flags = CUDA_EXTERNAL_MEMORY_DEDICATED;
  CUexternalMemory rawMemory = nullptr;
  cuOk(cu->cuImportExternalMemory(&rawMemory, &md), "cuImportExternalMemory");
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC ad{};
  ad.arrayDesc.Width = o.width;
  ad.arrayDesc.Height = o.height;
  ad.arrayDesc.Format = CU_AD_FORMAT_HALF;
  ad.arrayDesc.NumChannels = 4;
  ad.arrayDesc.Flags = CUDA_ARRAY3D_SURFACE_LDST;
  ad.numLevels = 1;
  CUmipmappedArray rawMipmap = nullptr;
  cuOk(cu->cuExternalMemoryGetMappedMipmappedArray(&rawMipmap, rawMemory, &ad),
       "cuExternalMemoryGetMappedMipmappedArray");
  CUarray rawArray = nullptr;
  cuOk(cu->cuMipmappedArrayGetLevel(&rawArray, rawMipmap, 0), "cuMipmappedArrayGetLevel");
  CUDA_RESOURCE_DESC rd{};
  rd.resType = CU_RESOURCE_TYPE_ARRAY;
  rd.res.array.hArray = rawArray;
  CUsurfObject rawSurface = 0;
  cuOk(cu->cuSurfObjectCreate(&rawSurface, &rd), "cuSurfObjectCreate");
  auto exportSem =
      vkStruct<VkExportSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO);
  exportSem.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  auto type =
      vkStruct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, &exportSem);
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  auto si = vkStruct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type);
  VkSemaphore rawT = VK_NULL_HANDLE;
  vkOk(vkCreateSemaphore(vk.device, &si, nullptr, &rawT), "vkCreateSemaphore");
  auto semFdInfo = vkStruct<VkSemaphoreGetFdInfoKHR>(VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR);
  semFdInfo.semaphore = rawT;
  semFdInfo.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  int semFd = -1;
  vkOk(getSemaphoreFd(vk.device, &semFdInfo, &semFd), "vkGetSemaphoreFdKHR");
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC sd{};
  sd.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
  sd.handle.fd = semFd;
  CUexternalSemaphore rawSem = nullptr;
  cuOk(cu->cuImportExternalSemaphore(&rawSem, &sd), "cuImportExternalSemaphore");
  CUstream rawStream = nullptr;
  cuOk(cu->cuStreamCreate(&rawStream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  uint64_t rawBase = 0;
  auto runRaw = [&](const std::vector<VkCommandBuffer>& vkFrames, uint32_t frames) {
    const uint64_t b = rawBase;
    uint32_t w = e.width, h = e.height;
    uint64_t surface = rawSurface;
    void* params[] = {&surface, &w, &h};
    auto start = Clock::now();
    for (uint32_t k = 1; k <= frames; ++k) {
      const uint64_t v = b + 2ull * k;
      CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wp{};
      wp.params.fence.value = v - 1;
      cuOk(cu->cuWaitExternalSemaphoresAsync(&rawSem, &wp, 1, rawStream),
           "cuWaitExternalSemaphoresAsync");
      cuOk(cu->cuLaunchKernel(e.surfaceKernel, (w + 15) / 16, (h + 15) / 16, 1, 16, 16, 1, 0,
                              rawStream, params, nullptr),
           "cuLaunchKernel");
      CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS sp{};
      sp.params.fence.value = v;
      cuOk(cu->cuSignalExternalSemaphoresAsync(&rawSem, &sp, 1, rawStream),
           "cuSignalExternalSemaphoresAsync");
      vkOk(vulkanSubmit(vk, rawT, vkFrames[k == 1 && b == 0 ? 0 : 1], v - 2, v - 1),
           "vkQueueSubmit");
    }
    vkOk(vk.wait(rawT, b + 2ull * frames, kTimeoutNs), "vkWaitSemaphores");
    double us = usBetween(start, Clock::now()) / frames;
    rawBase = b + 2ull * frames;
    return us;
  };

  // Vulkan's recordings: [0] the first frame's (from UNDEFINED), [1] every later one.
  std::vector<VkCommandBuffer> imageFrames = {recordVulkanFrame(e, true, false),
                                              recordVulkanFrame(e, false, false)};
  std::vector<VkCommandBuffer> bufferFrames = {recordVulkanFrame(e, true, true),
                                               recordVulkanFrame(e, false, true)};

  std::printf(
      "baton-image-bench: %ux%u RGBA16F frame (%.1f MiB), %u frames per repeat, %u "
      "repeats, %s\n",
      o.width, o.height, o.width * double(o.height) * 8 / (1 << 20), o.frames, o.repeats,
      vk.name.c_str());
  // The first frame of each flow takes the image from UNDEFINED: a warm-up repeat of each, then
  // the measured ones.
  uint64_t nativeBase = 0, autoBase = 0, bufferBase = 0;
  std::vector<double> batonImage, batonAuto, raw, bufferFlow;
  for (uint32_t r = 0; r <= o.repeats; ++r) {
    double a = runBaton(e, nativeT, &nativeBase, imageCb, imageFrames, o.frames);
    double b = runRaw(imageFrames, o.frames);
    double c = runBaton(e, autoT, &autoBase, imageCb, imageFrames, o.frames);
    double d = runBaton(e, bufferT, &bufferBase, bufferCb, bufferFrames, o.frames);
    if (r == 0) continue;  // warm-up
    batonImage.push_back(a);
    raw.push_back(b);
    batonAuto.push_back(c);
    bufferFlow.push_back(d);
  }
  const double rawMedian = median(raw);
  auto row = [&](const char* name, const std::vector<double>& v, const char* note) {
    std::printf("  %-44s %9.1f us per frame  %5.2fx raw  %s\n", name, median(v),
                median(v) / rawMedian, note);
  };
  row("baton image, native timeline", batonImage, "(target <= 1.05x raw)");
  row("raw import (driver calls, raw stream)", raw, "");
  row("baton image, Auto timeline (bridged)", batonAuto, "");
  row("buffer flow (copy out, process, copy in)", bufferFlow, "(baton image should be faster)");
  std::printf("  baton image / buffer flow: %.2fx\n", median(batonImage) / median(bufferFlow));

  // teardown: every side idle first
  batonOk(e.device.waitIdle(kTimeoutNs), "Device::waitIdle");
  vkDeviceWaitIdle(vk.device);
  cuOk(cu->cuStreamSynchronize(rawStream), "cuStreamSynchronize");
  (void)cu->cuStreamDestroy(rawStream);
  (void)cu->cuDestroyExternalSemaphore(rawSem);
  (void)cu->cuSurfObjectDestroy(rawSurface);
  (void)cu->cuMipmappedArrayDestroy(rawMipmap);
  (void)cu->cuDestroyExternalMemory(rawMemory);
  vkDestroySemaphore(vk.device, rawT, nullptr);
  (void)imageCb.destroy();
  (void)bufferCb.destroy();
  (void)image.destroy();
  (void)buffer.destroy();
  (void)destroyVulkanTimeline(vk.view(), nativeT);
  (void)destroyVulkanTimeline(vk.view(), autoT);
  (void)destroyVulkanTimeline(vk.view(), bufferT);
  (void)e.device.destroy();
  (void)e.instance.destroy();
  (void)cu->cuModuleUnload(e.module);
  (void)cu->cuDevicePrimaryCtxRelease(e.cuDevice);
  vk.destroy(e.frame);
  vk.destroy(e.buffer);
  return "";
}

std::string runImageBench(const ImageOptions& o) { return run(o); }

}  // namespace
}  // namespace baton::bench

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  baton::bench::ImageOptions o;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? static_cast<uint32_t>(std::atoi(argv[++i])) : 0u; };
    if (!std::strcmp(argv[i], "--frames"))
      o.frames = next();
    else if (!std::strcmp(argv[i], "--repeats"))
      o.repeats = next();
    else if (!std::strcmp(argv[i], "--width"))
      o.width = next();
    else if (!std::strcmp(argv[i], "--height"))
      o.height = next();
    else {
      std::fprintf(stderr,
                   "usage: baton-image-bench [--frames N] [--repeats N] [--width W] "
                   "[--height H]\n");
      return 2;
    }
  }
  if (o.frames == 0 || o.repeats == 0 || o.width == 0 || o.height == 0) {
    std::fprintf(stderr, "baton-image-bench: counts and sizes must be > 0\n");
    return 2;
  }
  std::string why = baton::bench::runImageBench(o);
  if (!why.empty()) std::printf("baton-image-bench: skipped: %s\n", why.c_str());
  return 0;
}
