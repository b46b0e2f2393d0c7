// Vulkan images imported into CUDA (importVulkanImage, native mode; docs/guide.md, 'Vulkan
// images'): OPTIMAL images exported as OPAQUE_FD, mapped as CUDA mipmapped arrays. Every format
// round-trips Vulkan -> CUDA -> Vulkan through every level with every texel checked; layers; a
// Vulkan submission made first waits for CUDA's copy through a shared timeline; graph command
// buffers; the native handles; refusals; 1,000 import/destroy cycles. Needs a CUDA device that is
// the Vulkan device (equal UUIDs) and VK_KHR_external_memory_fd: the GPU test machine, with
// BATON_VULKAN_DEVICE naming the NVIDIA device. Elsewhere (CI) every test skips with the reason.
//
// Ownership and layouts, as the guide states them: the image is in VK_IMAGE_LAYOUT_GENERAL while
// CUDA uses it, released to VK_QUEUE_FAMILY_EXTERNAL after Vulkan's work and acquired back before
// Vulkan's next; the validation layer watches the Vulkan side.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "image_formats_test.hpp"
#include "process_counts.hpp"
#include "test_support.hpp"
#include "vulkan_context.hpp"

namespace {

using namespace baton;
using namespace baton_test;
using baton::test::kImageFormats;
using baton::test::patternByte;
using baton::test::VulkanBuffer;
using baton::test::VulkanContext;
using baton::test::VulkanImage;

constexpr uint64_t kLongNs = 20'000'000'000ull;

class NativeImage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { vk = new VulkanContext; }
  static void TearDownTestSuite() {
    delete vk;
    vk = nullptr;
  }

  void SetUp() override {
    if (!vk->ok()) GTEST_SKIP() << "no usable Vulkan device: " << vk->skip;
    if (!vk->externalMemoryFd)
      GTEST_SKIP() << vk->name << " has no VK_KHR_external_memory_fd: no image to export";
    ASSERT_OK(createInstance(sink.instanceInfo(kAllBackends), instance.put()));
    PhysicalDevice physical;
    if (matchVulkanPhysicalDevice(*instance, vk->view(), &physical) != Result::Success)
      GTEST_SKIP() << "no baton device is the Vulkan device " << vk->name << ": " << lastError();
    ASSERT_OK(instance->createDevice(physical, DeviceCreateInfo{}, cuda.put()));
    ASSERT_OK(cuda->getQueue(0, &queue));
  }

  void TearDown() override {
    if (!vk || !vk->ok()) return;
    if (cuda) {
      EXPECT_OK(cuda->waitIdle(kLongNs));
    }
    vkDeviceWaitIdle(vk->device);
    for (VulkanImage& i : images) vk->destroy(i);
    for (VulkanBuffer& b : buffers) vk->destroy(b);
  }

  // Whether the device exports `format` as an OPTIMAL image with `usage`; *why if not.
  bool exportable(VkFormat format, VkImageUsageFlags usage, uint32_t levels, uint32_t layers,
                  std::string* why) {
    auto ext = baton::test::vkStruct<VkPhysicalDeviceExternalImageFormatInfo>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO);
    ext.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    auto info = baton::test::vkStruct<VkPhysicalDeviceImageFormatInfo2>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2, &ext);
    info.format = format;
    info.type = VK_IMAGE_TYPE_2D;
    info.tiling = VK_IMAGE_TILING_OPTIMAL;
    info.usage = usage;
    auto ep = baton::test::vkStruct<VkExternalImageFormatProperties>(
        VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES);
    auto props = baton::test::vkStruct<VkImageFormatProperties2>(
        VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2, &ep);
    VkResult r = vkGetPhysicalDeviceImageFormatProperties2(vk->physical, &info, &props);
    if (r != VK_SUCCESS ||
        !(ep.externalMemoryProperties.externalMemoryFeatures &
          VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) ||
        props.imageFormatProperties.maxMipLevels < levels ||
        props.imageFormatProperties.maxArrayLayers < layers) {
      *why = "VkFormat " + std::to_string(static_cast<int>(format)) +
             " is not an exportable OPTIMAL image on " + vk->name;
      return false;
    }
    return true;
  }

  // An OPTIMAL image in exportable, dedicated DEVICE_LOCAL memory (VulkanContext::createImage).
  VulkanImage& createImage(VkFormat format, VkImageUsageFlags usage, uint32_t width,
                           uint32_t height, uint32_t levels, uint32_t layers) {
    images.push_back(
        vk->createImage(format, VK_IMAGE_TILING_OPTIMAL, usage, width, height, levels, layers));
    return images.back();
  }

  VulkanImageImportInfo importInfo(const VulkanImage& e) const {
    VulkanImageImportInfo info = vk->importInfo(e);
    info.mode = InteropModeRequest::Native;
    info.debugName = "rendered";
    return info;
  }

  // Ownership transfer to (release) or from (acquire) VK_QUEUE_FAMILY_EXTERNAL, in GENERAL; the
  // first acquire comes from UNDEFINED.
  void transfer(VkCommandBuffer c, const VulkanImage& e, bool acquire, bool first) {
    auto b = baton::test::vkStruct<VkImageMemoryBarrier>(VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER);
    b.srcAccessMask = acquire ? 0 : VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = acquire ? VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT : 0;
    b.oldLayout = first ? VK_IMAGE_LAYOUT_UNDEFINED : VK_IMAGE_LAYOUT_GENERAL;
    b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    b.srcQueueFamilyIndex = first     ? VK_QUEUE_FAMILY_IGNORED
                            : acquire ? VK_QUEUE_FAMILY_EXTERNAL
                                      : vk->family;
    b.dstQueueFamilyIndex = first     ? VK_QUEUE_FAMILY_IGNORED
                            : acquire ? vk->family
                                      : VK_QUEUE_FAMILY_EXTERNAL;
    b.image = e.image;
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, e.levels, 0, e.layers};
    vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 0, nullptr, 0, nullptr, 1, &b);
  }

  // The bytes of every level and layer, tightly, level after level (layers inside a level).
  static std::vector<VkBufferImageCopy> vkRegions(const VulkanImage& e, uint32_t texel,
                                                  size_t* total) {
    std::vector<VkBufferImageCopy> out;
    size_t at = 0;
    for (uint32_t l = 0; l < e.levels; ++l) {
      uint32_t w = std::max(1u, e.width >> l), h = std::max(1u, e.height >> l);
      VkBufferImageCopy r{};
      r.bufferOffset = at;
      r.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, l, 0, e.layers};
      r.imageExtent = {w, h, 1};
      out.push_back(r);
      at += size_t(w) * h * texel * e.layers;
    }
    *total = at;
    return out;
  }
  static std::vector<BufferImageCopy> batonRegions(const std::vector<VkBufferImageCopy>& vkr) {
    std::vector<BufferImageCopy> out;
    for (const VkBufferImageCopy& v : vkr) {
      BufferImageCopy r;
      r.bufferOffset = v.bufferOffset;
      r.mipLevel = v.imageSubresource.mipLevel;
      r.layerCount = v.imageSubresource.layerCount;
      r.width = v.imageExtent.width;
      r.height = v.imageExtent.height;
      out.push_back(r);
    }
    return out;
  }

  // Vulkan: host buffer -> every level and layer, then released to CUDA.
  void vulkanUpload(const VulkanImage& e, const VulkanBuffer& src,
                    const std::vector<VkBufferImageCopy>& regions, bool first) {
    VkCommandBuffer cmd = vk->record([&](VkCommandBuffer c) {
      if (first) transfer(c, e, true, true);
      vkCmdCopyBufferToImage(c, src.buffer, e.image, VK_IMAGE_LAYOUT_GENERAL,
                             static_cast<uint32_t>(regions.size()), regions.data());
      transfer(c, e, false, false);
    });
    ASSERT_EQ(vk->submit({}, cmd, {}), VK_SUCCESS);
    ASSERT_EQ(vkQueueWaitIdle(vk->queue), VK_SUCCESS);
  }
  // Vulkan: acquired from CUDA, every level and layer -> host buffer, after `waits`.
  VkResult vulkanDownload(const VulkanImage& e, const VulkanBuffer& dst,
                          const std::vector<VkBufferImageCopy>& regions,
                          std::vector<VulkanContext::Timepoint> waits = {}) {
    VkCommandBuffer cmd = vk->record([&](VkCommandBuffer c) {
      transfer(c, e, true, false);
      vkCmdCopyImageToBuffer(c, e.image, VK_IMAGE_LAYOUT_GENERAL, dst.buffer,
                             static_cast<uint32_t>(regions.size()), regions.data());
      transfer(c, e, false, false);
    });
    return vk->submit(waits, cmd, {});
  }

  UniqueBuffer pinned(uint64_t size) {
    UniqueBuffer b;
    BufferCreateInfo info;
    info.size = size;
    info.memory = MemoryKind::HostPinned;
    EXPECT_OK(cuda->createBuffer(info, b.put()));
    return b;
  }
  VulkanBuffer& hostBuffer(VkDeviceSize size) {
    buffers.push_back(vk->createHostBuffer(size));
    return buffers.back();
  }
  void* map(const VulkanBuffer& b) {
    void* p = nullptr;
    EXPECT_EQ(vkMapMemory(vk->device, b.memory, 0, VK_WHOLE_SIZE, 0, &p), VK_SUCCESS);
    return p;
  }

  // baton: one submission of `commands` on the CUDA queue, then waits for it.
  template <class Record>
  void batonRun(Record&& record, CommandBufferUsage usage = CommandBufferUsage::Replay,
                std::vector<SemaphoreValue> signals = {}) {
    UniqueCommandBuffer cb;
    CommandBufferCreateInfo info;
    info.usage = usage;
    ASSERT_OK(cuda->createCommandBuffer(info, cb.put()));
    ASSERT_OK(cb->begin());
    ASSERT_OK(record(*cb));
    ASSERT_OK(cb->end());
    CommandBuffer cbs[] = {*cb};
    SubmitInfo submit;
    submit.commandBuffers = cbs;
    submit.signals = signals;
    ASSERT_OK(queue.submit(submit));
    ASSERT_OK(queue.waitIdle(kLongNs));
  }

  // The whole round trip for one image: Vulkan writes, CUDA reads (every texel), CUDA writes,
  // Vulkan reads (every texel).
  void roundTrip(VulkanImage& e, CommandBufferUsage usage) {
    const uint32_t texel = imageFormatTexelBytes(imageFormatFromVulkan(e.format));
    size_t bytes = 0;
    std::vector<VkBufferImageCopy> vkr = vkRegions(e, texel, &bytes);
    std::vector<BufferImageCopy> regions = batonRegions(vkr);
    VulkanBuffer& up = hostBuffer(bytes);
    auto* upBytes = static_cast<uint8_t*>(map(up));
    for (size_t i = 0; i < bytes; ++i) upBytes[i] = patternByte(i, 1);
    vulkanUpload(e, up, vkr, true);
    UniqueImage image;
    ASSERT_OK(importVulkanImage(*cuda, importInfo(e), image.put())) << sink.dump();
    UniqueBuffer out = pinned(bytes);
    batonRun([&](CommandBuffer cb) { return cb.copyImageToBuffer(*image, *out, regions); }, usage);
    void* outBytes = nullptr;
    ASSERT_OK(out->map(&outBytes));
    ASSERT_EQ(std::memcmp(outBytes, upBytes, bytes), 0) << "Vulkan -> CUDA";
    UniqueBuffer in = pinned(bytes);
    void* inBytes = nullptr;
    ASSERT_OK(in->map(&inBytes));
    for (size_t i = 0; i < bytes; ++i) static_cast<uint8_t*>(inBytes)[i] = patternByte(i, 2);
    batonRun([&](CommandBuffer cb) { return cb.copyBufferToImage(*in, *image, regions); }, usage);
    VulkanBuffer& down = hostBuffer(bytes);
    ASSERT_EQ(vulkanDownload(e, down, vkr), VK_SUCCESS);
    ASSERT_EQ(vkQueueWaitIdle(vk->queue), VK_SUCCESS);
    ASSERT_EQ(std::memcmp(map(down), inBytes, bytes), 0) << "CUDA -> Vulkan";
    vkUnmapMemory(vk->device, down.memory);
    vkUnmapMemory(vk->device, up.memory);
  }

  static VulkanContext* vk;
  MessageSink sink;
  UniqueInstance instance;
  UniqueDevice cuda;
  Queue queue;
  std::deque<VulkanImage> images;
  std::deque<VulkanBuffer> buffers;
};
VulkanContext* NativeImage::vk = nullptr;

constexpr VkImageUsageFlags kUsage =
    VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_SAMPLED_BIT;

TEST_F(NativeImage, EveryFormatRoundTripsThroughEveryLevelWithEveryTexelChecked) {
  int ran = 0;
  std::string skipped;
  for (const baton::test::ImageFormatCase& c : kImageFormats) {
    const VkFormat f = c.vk;
    SCOPED_TRACE("VkFormat " + std::to_string(static_cast<int>(f)));
    std::string why;
    if (!exportable(f, kUsage, 3, 1, &why)) {
      skipped += " " + std::to_string(static_cast<int>(f));
      continue;
    }
    VulkanImage& e = createImage(f, kUsage, 67, 33, 3, 1);
    ASSERT_TRUE(e.memory);
    roundTrip(e, CommandBufferUsage::Replay);
    if (HasFatalFailure()) return;
    ++ran;
  }
  std::printf("%d formats round-tripped through 3 levels; not exportable:%s\n", ran,
              skipped.empty() ? " none" : skipped.c_str());
  EXPECT_EQ(ran, 20);
}

TEST_F(NativeImage, LayersRoundTripAndGraphCommandBuffersCopyToo) {
  std::string why;
  if (!exportable(VK_FORMAT_R16G16B16A16_SFLOAT, kUsage, 1, 3, &why)) GTEST_SKIP() << why;
  VulkanImage& layered = createImage(VK_FORMAT_R16G16B16A16_SFLOAT, kUsage, 64, 40, 1, 3);
  ASSERT_TRUE(layered.memory);
  roundTrip(layered, CommandBufferUsage::Replay);
  VulkanImage& levels = createImage(VK_FORMAT_R8G8B8A8_UNORM, kUsage, 100, 60, 4, 1);
  ASSERT_TRUE(levels.memory);
  roundTrip(levels, CommandBufferUsage::Graph);
}

TEST_F(NativeImage, LevelsAndLayersTogetherAreRefusedWithTheReason) {
  VulkanImage& e = createImage(VK_FORMAT_R8G8B8A8_UNORM, kUsage, 64, 64, 3, 2);
  ASSERT_TRUE(e.memory);
  UniqueImage image;
  EXPECT_EQ(importVulkanImage(*cuda, importInfo(e), image.put()), Result::ErrorNotSupported);
  EXPECT_TRUE(containsText(lastError(), "several levels and several layers")) << lastError();
}

TEST_F(NativeImage, AVulkanSubmissionMadeFirstWaitsForCudasCopy) {
  VulkanImage& e = createImage(VK_FORMAT_R32_UINT, kUsage, 32, 32, 1, 1);
  ASSERT_TRUE(e.memory);
  size_t bytes = 0;
  std::vector<VkBufferImageCopy> vkr = vkRegions(e, 4, &bytes);
  // Into GENERAL and released to CUDA, empty.
  VkCommandBuffer cmd = vk->record([&](VkCommandBuffer c) {
    transfer(c, e, true, true);
    transfer(c, e, false, false);
  });
  ASSERT_EQ(vk->submit({}, cmd, {}), VK_SUCCESS);
  ASSERT_EQ(vkQueueWaitIdle(vk->queue), VK_SUCCESS);
  UniqueImage image;
  ASSERT_OK(importVulkanImage(*cuda, importInfo(e), image.put()));
  VulkanTimelineCreateInfo tinfo;
  tinfo.vulkan = vk->view();
  tinfo.device = *cuda;
  tinfo.debugName = "copied";
  VulkanTimeline timeline;
  ASSERT_OK(createVulkanTimeline(*instance, tinfo, &timeline));
  VulkanBuffer& down = hostBuffer(bytes);
  ASSERT_EQ(vulkanDownload(e, down, vkr, {{timeline.vulkan, 1}}), VK_SUCCESS);  // first
  UniqueBuffer src = pinned(bytes);
  void* s = nullptr;
  ASSERT_OK(src->map(&s));
  for (uint32_t i = 0; i < 32 * 32; ++i) static_cast<uint32_t*>(s)[i] = 0xC0DE0000u + i;
  batonRun([&](CommandBuffer cb) { return cb.copyBufferToImage(*src, *image, batonRegions(vkr)); },
           CommandBufferUsage::Replay, {{timeline.baton, 1}});
  ASSERT_EQ(vkQueueWaitIdle(vk->queue), VK_SUCCESS);
  EXPECT_EQ(std::memcmp(map(down), s, bytes), 0);
  vkUnmapMemory(vk->device, down.memory);
  EXPECT_OK(destroyVulkanTimeline(vk->view(), timeline));
}

TEST_F(NativeImage, NativeHandlesAreTheDriversObjects) {
  VulkanImage& e = createImage(VK_FORMAT_R16G16B16A16_SFLOAT, kUsage, 64, 32, 2, 1);
  ASSERT_TRUE(e.memory);
  UniqueImage image;
  ASSERT_OK(importVulkanImage(*cuda, importInfo(e), image.put()));
  baton::NativeImage native;
  ASSERT_OK(image->getNative(&native));
  EXPECT_EQ(native.backend, BackendKind::Cuda);
  EXPECT_NE(native.mipmappedArray, nullptr);
  EXPECT_NE(native.textureObject, 0u);
  for (uint32_t l = 0; l < 2; ++l) {
    NativeImageLevel level;
    ASSERT_OK(image->getNativeLevel(l, &level));
    EXPECT_NE(level.array, nullptr);
    EXPECT_NE(level.surfaceObject, 0u);
    EXPECT_EQ(level.width, 64u >> l);
    EXPECT_EQ(level.hostPointer, nullptr);
  }
  VulkanInteropInfo interop;
  ASSERT_OK(getVulkanImageInterop(*image, &interop));
  EXPECT_EQ(interop.mode, InteropMode::Native);
  EXPECT_EQ(interop.image, e.image);
  // A packed format has no texture: CUDA cannot decode it when sampling.
  std::string why;
  if (exportable(VK_FORMAT_A2B10G10R10_UNORM_PACK32, kUsage, 1, 1, &why)) {
    VulkanImage& packed = createImage(VK_FORMAT_A2B10G10R10_UNORM_PACK32, kUsage, 16, 16, 1, 1);
    UniqueImage p;
    ASSERT_OK(importVulkanImage(*cuda, importInfo(packed), p.put()));
    ASSERT_OK(p->getNative(&native));
    EXPECT_EQ(native.textureObject, 0u);
  }
}

TEST_F(NativeImage, RefusalsSayWhy) {
  VulkanImage& e = createImage(VK_FORMAT_R8G8B8A8_UNORM, kUsage, 16, 16, 1, 1);
  ASSERT_TRUE(e.memory);
  UniqueImage image;
  // A descriptor that is not memory's: the caller keeps it.
  int pipeFds[2];
  ASSERT_EQ(pipe2(pipeFds, O_CLOEXEC), 0);
  VulkanImageImportInfo info = importInfo(e);
  info.fd = pipeFds[0];
  EXPECT_EQ(importVulkanImage(*cuda, info, image.put()), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "not an OPAQUE_FD of memory")) << lastError();
  EXPECT_NE(fcntl(pipeFds[0], F_GETFD), -1);
  close(pipeFds[0]);
  close(pipeFds[1]);
  // LINEAR: CUDA maps only OPTIMAL images.
  info = importInfo(e);
  info.tiling = VK_IMAGE_TILING_LINEAR;
  EXPECT_EQ(importVulkanImage(*cuda, info, image.put()), Result::ErrorNotSupported);
  EXPECT_TRUE(containsText(lastError(), "OPTIMAL")) << lastError();
  // A size the memory cannot hold: an extent 64 times the image's, and an allocation size below
  // the image's.
  info = importInfo(e);
  info.width = e.width * 64;
  info.height = e.height * 64;
  Result r = importVulkanImage(*cuda, info, image.put());
  EXPECT_EQ(r, Result::ErrorInvalidArgument) << lastError();
  EXPECT_TRUE(containsText(lastError(), "do not fit the memory")) << lastError();
  info = importInfo(e);
  info.allocationSize = e.allocationSize / 4;
  r = importVulkanImage(*cuda, info, image.put());
  EXPECT_EQ(r, Result::ErrorInvalidArgument) << lastError();
  EXPECT_FALSE(image);
  // The device still works after the refusals.
  ASSERT_OK(importVulkanImage(*cuda, importInfo(e), image.put()));
}

// The GPU's free memory, read through the driver baton loaded (cuMemGetInfo in the device's
// primary context), or 0 when it cannot be read.
uint64_t freeDeviceMemory(int ordinal) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return 0;
  using Get = int (*)(int*, int);
  using Retain = int (*)(void**, int);
  using SetCurrent = int (*)(void*);
  using MemInfo = int (*)(size_t*, size_t*);
  auto get = reinterpret_cast<Get>(dlsym(lib, "cuDeviceGet"));
  auto retain = reinterpret_cast<Retain>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
  auto release = reinterpret_cast<int (*)(int)>(dlsym(lib, "cuDevicePrimaryCtxRelease"));
  auto setCurrent = reinterpret_cast<SetCurrent>(dlsym(lib, "cuCtxSetCurrent"));
  auto memInfo = reinterpret_cast<MemInfo>(dlsym(lib, "cuMemGetInfo_v2"));
  size_t freeBytes = 0, total = 0;
  int device = 0;
  void* ctx = nullptr;
  if (get && retain && release && setCurrent && memInfo && get(&device, ordinal) == 0 &&
      retain(&ctx, device) == 0) {
    if (setCurrent(ctx) != 0 || memInfo(&freeBytes, &total) != 0) freeBytes = 0;
    (void)setCurrent(nullptr);
    (void)release(device);
  }
  dlclose(lib);
  return freeBytes;
}

TEST_F(NativeImage, ImportAndDestroy1000TimesLeavesNothingBehind) {
  VulkanImage& e = createImage(VK_FORMAT_R8G8B8A8_UNORM, kUsage, 256, 256, 1, 1);
  ASSERT_TRUE(e.memory);
  {
    UniqueImage warm;
    ASSERT_OK(importVulkanImage(*cuda, importInfo(e), warm.put()));
  }
  PhysicalDevice physical;
  ASSERT_OK(cuda->getPhysicalDevice(&physical));
  PhysicalDeviceProperties props;
  ASSERT_OK(physical.getProperties(&props));
  const size_t fds = baton::test::openFds();
  const uint64_t freeBefore = freeDeviceMemory(static_cast<int>(props.ordinal));
  for (int i = 0; i < 1000; ++i) {
    UniqueImage image;
    ASSERT_OK(importVulkanImage(*cuda, importInfo(e), image.put())) << "cycle " << i;
  }
  EXPECT_EQ(baton::test::openFds(), fds);
  const uint64_t freeAfter = freeDeviceMemory(static_cast<int>(props.ordinal));
  std::printf("device memory free before and after 1,000 cycles: %llu, %llu bytes\n",
              static_cast<unsigned long long>(freeBefore),
              static_cast<unsigned long long>(freeAfter));
  if (freeBefore && freeAfter) {
    // 1,000 leaked mappings of a 256 KiB image would be 256 MiB; allow the driver's own slack.
    EXPECT_GE(freeAfter + (8ull << 20), freeBefore) << "device memory went down";
  }
}

}  // namespace
