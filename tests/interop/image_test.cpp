// Vulkan images imported into baton (importVulkanImage; docs/guide.md, 'Vulkan images'): on the
// Vulkan device present (Mesa's lavapipe in CI) with the host backend, which shares LINEAR images
// in HOST_VISIBLE | HOST_COHERENT memory by mapping. Texels pass Vulkan -> baton -> Vulkan for
// every format the device has as a linear transfer image, with every texel checked; sub-rectangles
// with buffer row lengths and image heights; a Vulkan submission made first waits for baton's copy
// through a shared timeline; bad input; 1,000 import/destroy cycles with nothing left behind.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "baton/baton.h"
#include "baton/baton_vulkan.h"
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

constexpr uint64_t kWaitNs = 20'000'000'000ull;

class ImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!vk_.ok()) GTEST_SKIP() << vk_.skip;
    ASSERT_OK(createInstance(sink_.instanceInfo(backendBit(BackendKind::Host)), instance_.put()));
    uint32_t count = 1;
    PhysicalDevice physical;
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, &physical));
    ASSERT_OK(instance_->createDevice(physical, DeviceCreateInfo(), device_.put()));
    ASSERT_OK(device_->getQueue(0, &queue_));
  }
  void TearDown() override {
    for (VulkanImage& i : images_) vk_.destroy(i);
    for (VulkanBuffer& b : buffers_) vk_.destroy(b);
  }

  // Whether the device has `format` as a LINEAR 2D transfer image of that size; *why if not.
  bool linearSupported(VkFormat format, uint32_t width, uint32_t height, std::string* why) {
    VkImageFormatProperties props{};
    VkResult r = vkGetPhysicalDeviceImageFormatProperties(
        vk_.physical, format, VK_IMAGE_TYPE_2D, VK_IMAGE_TILING_LINEAR,
        VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT, 0, &props);
    if (r != VK_SUCCESS || props.maxExtent.width < width || props.maxExtent.height < height) {
      *why = vk_.name + " has no LINEAR transfer image of VkFormat " +
             std::to_string(static_cast<int>(format));
      return false;
    }
    return true;
  }

  // A LINEAR transfer image in HOST_VISIBLE | HOST_COHERENT memory, moved to GENERAL (an empty
  // image is left for the caller to skip on).
  VulkanImage& createImage(VkFormat format, uint32_t width, uint32_t height) {
    images_.push_back(vk_.createImage(
        format, VK_IMAGE_TILING_LINEAR,
        VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT, width, height));
    VulkanImage& li = images_.back();
    if (!li.image) return li;
    VkCommandBuffer cmd = vk_.record([&](VkCommandBuffer c) { barrier(c, li, true); });
    EXPECT_EQ(vk_.submit({}, cmd, {}), VK_SUCCESS);
    EXPECT_EQ(vkQueueWaitIdle(vk_.queue), VK_SUCCESS);
    return li;
  }

  // UNDEFINED -> GENERAL (first), or GENERAL -> GENERAL making transfers and host access visible.
  static void barrier(VkCommandBuffer c, const VulkanImage& li, bool first) {
    auto b = baton::test::vkStruct<VkImageMemoryBarrier>(VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER);
    b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                      VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
    b.oldLayout = first ? VK_IMAGE_LAYOUT_UNDEFINED : VK_IMAGE_LAYOUT_GENERAL;
    b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = li.image;
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 0,
                         nullptr, 0, nullptr, 1, &b);
  }

  VulkanImageImportInfo importInfo(const VulkanImage& li) const {
    VulkanImageImportInfo info = vk_.importInfo(li);
    info.debugName = "frame";
    return info;
  }

  VulkanBuffer& hostBuffer(VkDeviceSize size) {
    buffers_.push_back(vk_.createHostBuffer(size));
    return buffers_.back();
  }
  void* map(const VulkanBuffer& b) {
    void* p = nullptr;
    EXPECT_EQ(vkMapMemory(vk_.device, b.memory, 0, VK_WHOLE_SIZE, 0, &p), VK_SUCCESS);
    return p;
  }

  // Vulkan: buffer -> the whole image (waiting for nothing), then the queue drains.
  void vulkanUpload(const VulkanImage& li, const VulkanBuffer& src) {
    VkCommandBuffer cmd = vk_.record([&](VkCommandBuffer c) {
      VkBufferImageCopy r{};
      r.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
      r.imageExtent = {li.width, li.height, 1};
      vkCmdCopyBufferToImage(c, src.buffer, li.image, VK_IMAGE_LAYOUT_GENERAL, 1, &r);
      barrier(c, li, false);
    });
    ASSERT_EQ(vk_.submit({}, cmd, {}), VK_SUCCESS);
    ASSERT_EQ(vkQueueWaitIdle(vk_.queue), VK_SUCCESS);
  }

  // Vulkan: the whole image -> dst, after `wait` (a timeline value) when given.
  VkResult vulkanDownload(const VulkanImage& li, const VulkanBuffer& dst,
                          std::vector<VulkanContext::Timepoint> waits = {}) {
    VkCommandBuffer cmd = vk_.record([&](VkCommandBuffer c) {
      barrier(c, li, false);
      VkBufferImageCopy r{};
      r.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
      r.imageExtent = {li.width, li.height, 1};
      vkCmdCopyImageToBuffer(c, li.image, VK_IMAGE_LAYOUT_GENERAL, dst.buffer, 1, &r);
    });
    return vk_.submit(waits, cmd, {});
  }

  // baton: a host queue submission of one copy command, waited for.
  template <class Record>
  void batonCopy(Record&& record, std::vector<SemaphoreValue> signals = {}) {
    UniqueCommandBuffer cb;
    ASSERT_OK(device_->createCommandBuffer(cb.put()));
    ASSERT_OK(cb->begin());
    ASSERT_OK(record(*cb));
    ASSERT_OK(cb->end());
    CommandBuffer cbs[] = {*cb};
    SubmitInfo submit;
    submit.commandBuffers = cbs;
    submit.signals = signals;
    ASSERT_OK(queue_.submit(submit));
    ASSERT_OK(queue_.waitIdle());
  }

  UniqueBuffer batonBuffer(uint64_t size) {
    UniqueBuffer b;
    BufferCreateInfo info;
    info.size = size;
    EXPECT_OK(device_->createBuffer(info, b.put()));
    return b;
  }

  VulkanContext vk_;
  MessageSink sink_;
  UniqueInstance instance_;
  UniqueDevice device_;
  Queue queue_;
  std::deque<VulkanImage> images_;
  std::deque<VulkanBuffer> buffers_;
};

TEST_F(ImageTest, EveryFormatRoundTripsVulkanBatonVulkanWithEveryTexelChecked) {
  constexpr uint32_t kW = 37, kH = 19;
  int ran = 0;
  std::string skipped;
  for (const baton::test::ImageFormatCase& f : kImageFormats) {
    SCOPED_TRACE(imageFormatName(f.format));
    std::string why;
    if (!linearSupported(f.vk, kW, kH, &why)) {
      skipped += std::string(" ") + imageFormatName(f.format);
      continue;
    }
    EXPECT_EQ(imageFormatFromVulkan(f.vk), f.format);
    VulkanImage& li = createImage(f.vk, kW, kH);
    ASSERT_TRUE(li.image);
    const uint32_t texel = imageFormatTexelBytes(f.format);
    const size_t bytes = size_t(kW) * kH * texel;
    // Vulkan writes pattern 1.
    VulkanBuffer& up = hostBuffer(bytes);
    auto* upBytes = static_cast<uint8_t*>(map(up));
    for (size_t i = 0; i < bytes; ++i) upBytes[i] = patternByte(i, 1);
    vulkanUpload(li, up);
    UniqueImage image;
    ASSERT_OK(importVulkanImage(*device_, importInfo(li), image.put())) << sink_.dump();
    ImageInfo ii;
    ASSERT_OK(image->getInfo(&ii));
    EXPECT_EQ(ii.format, f.format);
    EXPECT_EQ(ii.width, kW);
    // baton reads it: every texel.
    UniqueBuffer out = batonBuffer(bytes);
    BufferImageCopy whole;
    whole.width = kW;
    whole.height = kH;
    batonCopy([&](CommandBuffer cb) { return cb.copyImageToBuffer(*image, *out, whole); });
    void* outBytes = nullptr;
    ASSERT_OK(out->map(&outBytes));
    ASSERT_EQ(std::memcmp(outBytes, upBytes, bytes), 0) << "Vulkan -> baton";
    // baton writes pattern 2; Vulkan reads it: every texel.
    UniqueBuffer in = batonBuffer(bytes);
    void* inBytes = nullptr;
    ASSERT_OK(in->map(&inBytes));
    for (size_t i = 0; i < bytes; ++i) static_cast<uint8_t*>(inBytes)[i] = patternByte(i, 2);
    batonCopy([&](CommandBuffer cb) { return cb.copyBufferToImage(*in, *image, whole); });
    VulkanBuffer& down = hostBuffer(bytes);
    ASSERT_EQ(vulkanDownload(li, down), VK_SUCCESS);
    ASSERT_EQ(vkQueueWaitIdle(vk_.queue), VK_SUCCESS);
    ASSERT_EQ(std::memcmp(map(down), inBytes, bytes), 0) << "baton -> Vulkan";
    vkUnmapMemory(vk_.device, down.memory);
    vkUnmapMemory(vk_.device, up.memory);
    ++ran;
  }
  std::printf("%d formats round-tripped; not LINEAR transfer images on %s:%s\n", ran,
              vk_.name.c_str(), skipped.empty() ? " none" : skipped.c_str());
  EXPECT_GE(ran, 10) << "too few formats to call this a test";
}

TEST_F(ImageTest, RegionsWithRowLengthsAndOffsetsTouchOnlyTheirTexels) {
  constexpr uint32_t kW = 40, kH = 24, kTexel = 4;
  VulkanImage& li = createImage(VK_FORMAT_R8G8B8A8_UNORM, kW, kH);
  ASSERT_TRUE(li.image);
  UniqueImage image;
  ASSERT_OK(importVulkanImage(*device_, importInfo(li), image.put())) << sink_.dump();
  // Zero the whole image, then write two rectangles from a buffer with row length 16 and image
  // height 9, at an offset.
  UniqueBuffer zeros = batonBuffer(kW * kH * kTexel);
  BufferImageCopy whole;
  whole.width = kW;
  whole.height = kH;
  UniqueBuffer src = batonBuffer(4096);
  void* s = nullptr;
  ASSERT_OK(src->map(&s));
  auto* sw = static_cast<uint32_t*>(s);
  for (uint32_t i = 0; i < 1024; ++i) sw[i] = 0x01000000u + i;
  BufferImageCopy regions[2];
  regions[0].bufferOffset = 64;
  regions[0].bufferRowLength = 16;
  regions[0].bufferImageHeight = 9;
  regions[0].x = 5;
  regions[0].y = 3;
  regions[0].width = 10;
  regions[0].height = 7;
  regions[1].bufferOffset = 1024;
  regions[1].x = kW - 3;
  regions[1].y = kH - 2;
  regions[1].width = 3;
  regions[1].height = 2;
  batonCopy([&](CommandBuffer cb) {
    Result r = cb.fillBuffer(*zeros, 0, kW * kH * kTexel, 0);
    if (r == Result::Success) r = cb.copyBufferToImage(*zeros, *image, whole);
    if (r == Result::Success) r = cb.copyBufferToImage(*src, *image, regions);
    return r;
  });
  VulkanBuffer& down = hostBuffer(kW * kH * kTexel);
  ASSERT_EQ(vulkanDownload(li, down), VK_SUCCESS);
  ASSERT_EQ(vkQueueWaitIdle(vk_.queue), VK_SUCCESS);
  auto* got = static_cast<const uint32_t*>(map(down));
  for (uint32_t y = 0; y < kH; ++y)
    for (uint32_t x = 0; x < kW; ++x) {
      uint32_t want = 0;
      if (x >= 5 && x < 15 && y >= 3 && y < 10) want = sw[64 / 4 + (y - 3) * 16 + (x - 5)];
      if (x >= kW - 3 && y >= kH - 2) want = sw[1024 / 4 + (y - (kH - 2)) * 3 + (x - (kW - 3))];
      ASSERT_EQ(got[y * kW + x], want) << "texel (" << x << ", " << y << ")";
    }
  vkUnmapMemory(vk_.device, down.memory);
  // And back: the first rectangle into a buffer laid out with row length 12.
  UniqueBuffer back = batonBuffer(12 * 7 * kTexel);
  BufferImageCopy r;
  r.bufferRowLength = 12;
  r.x = 5;
  r.y = 3;
  r.width = 10;
  r.height = 7;
  batonCopy([&](CommandBuffer cb) { return cb.copyImageToBuffer(*image, *back, r); });
  void* b = nullptr;
  ASSERT_OK(back->map(&b));
  for (uint32_t y = 0; y < 7; ++y)
    for (uint32_t x = 0; x < 10; ++x)
      ASSERT_EQ(static_cast<uint32_t*>(b)[y * 12 + x], sw[64 / 4 + y * 16 + x]);
}

TEST_F(ImageTest, AVulkanSubmissionMadeFirstWaitsForBatonsCopy) {
  constexpr uint32_t kW = 16, kH = 16;
  VulkanImage& li = createImage(VK_FORMAT_R32_UINT, kW, kH);
  ASSERT_TRUE(li.image);
  UniqueImage image;
  ASSERT_OK(importVulkanImage(*device_, importInfo(li), image.put()));
  VulkanTimelineCreateInfo tinfo;
  tinfo.vulkan = vk_.view();
  tinfo.debugName = "copied";
  VulkanTimeline timeline;
  ASSERT_OK(createVulkanTimeline(*instance_, tinfo, &timeline));
  // Vulkan first: its copy waits for the timeline's 1, which baton signals after its copy.
  VulkanBuffer& down = hostBuffer(kW * kH * 4);
  ASSERT_EQ(vulkanDownload(li, down, {{timeline.vulkan, 1}}), VK_SUCCESS);
  UniqueBuffer src = batonBuffer(kW * kH * 4);
  void* s = nullptr;
  ASSERT_OK(src->map(&s));
  for (uint32_t i = 0; i < kW * kH; ++i) static_cast<uint32_t*>(s)[i] = 0xC0FFEE00u + i;
  BufferImageCopy whole;
  whole.width = kW;
  whole.height = kH;
  batonCopy([&](CommandBuffer cb) { return cb.copyBufferToImage(*src, *image, whole); },
            {{timeline.baton, 1}});
  ASSERT_EQ(vkQueueWaitIdle(vk_.queue), VK_SUCCESS);
  EXPECT_EQ(std::memcmp(map(down), s, kW * kH * 4), 0);
  vkUnmapMemory(vk_.device, down.memory);
  EXPECT_OK(destroyVulkanTimeline(vk_.view(), timeline));
}

TEST_F(ImageTest, NativeHandlesDescribeTheMapping) {
  VulkanImage& li = createImage(VK_FORMAT_R16G16B16A16_SFLOAT, 33, 17);
  ASSERT_TRUE(li.image);
  UniqueImage image;
  ASSERT_OK(importVulkanImage(*device_, importInfo(li), image.put()));
  NativeImage native;
  ASSERT_OK(image->getNative(&native));
  EXPECT_EQ(native.backend, BackendKind::Host);
  EXPECT_EQ(native.mipmappedArray, nullptr);
  NativeImageLevel level;
  ASSERT_OK(image->getNativeLevel(0, &level));
  VkImageSubresource sub{VK_IMAGE_ASPECT_COLOR_BIT, 0, 0};
  VkSubresourceLayout layout{};
  vkGetImageSubresourceLayout(vk_.device, li.image, &sub, &layout);
  EXPECT_EQ(level.rowPitch, layout.rowPitch);
  EXPECT_EQ(level.width, 33u);
  EXPECT_EQ(level.height, 17u);
  EXPECT_NE(level.hostPointer, nullptr);
  EXPECT_EQ(image->getNativeLevel(1, &level), Result::ErrorInvalidArgument);
  VulkanInteropInfo interop;
  ASSERT_OK(getVulkanImageInterop(*image, &interop));
  EXPECT_EQ(interop.mode, InteropMode::Bridged);
  EXPECT_EQ(interop.image, li.image);
  EXPECT_EQ(interop.memory, li.memory);
  EXPECT_TRUE(containsText(interop.reason, "LINEAR")) << interop.reason;
}

TEST_F(ImageTest, BadInputGetsClearResults) {
  VulkanImage& li = createImage(VK_FORMAT_R8G8B8A8_UNORM, 8, 8);
  ASSERT_TRUE(li.image);
  UniqueImage image;
  auto refused = [&](VulkanImageImportInfo info, Result want, const char* text) {
    Result r = importVulkanImage(*device_, info, image.put());
    EXPECT_EQ(r, want) << lastError();
    EXPECT_TRUE(containsText(lastError(), text)) << lastError();
    EXPECT_FALSE(image);
  };
  VulkanImageImportInfo info = importInfo(li);
  info.format = VK_FORMAT_D32_SFLOAT;
  refused(info, Result::ErrorNotSupported, "D32Sfloat");
  info = importInfo(li);
  info.width = 0;
  refused(info, Result::ErrorInvalidArgument, "extent");
  info = importInfo(li);
  info.mipLevels = 5;  // 8x8 has 4
  refused(info, Result::ErrorInvalidArgument, "mipLevels 5");
  info = importInfo(li);
  info.tiling = VK_IMAGE_TILING_MAX_ENUM;
  refused(info, Result::ErrorInvalidArgument, "tiling");
  info = importInfo(li);
  info.tiling = VK_IMAGE_TILING_OPTIMAL;
  refused(info, Result::ErrorNotSupported, "LINEAR");
  info = importInfo(li);
  info.width = 4096;  // more than was bound
  info.height = 4096;
  refused(info, Result::ErrorInvalidArgument, "does not fit");
  info = importInfo(li);
  info.image = VK_NULL_HANDLE;
  refused(info, Result::ErrorInvalidArgument, "image is null");
  info = importInfo(li);
  info.memoryTypeIndex = 1000;
  refused(info, Result::ErrorInvalidArgument, "memoryTypeIndex");
  info = importInfo(li);
  info.mode = InteropModeRequest::Native;
  refused(info, Result::ErrorNotSupported, "native image import is impossible");
  EXPECT_EQ(importVulkanImage(*device_, importInfo(li), nullptr), Result::ErrorInvalidArgument);
  EXPECT_EQ(importVulkanImage(Device(), importInfo(li), image.put()), Result::ErrorInvalidHandle);
  // After the refusals the memory is not left mapped: the import that works maps it.
  ASSERT_OK(importVulkanImage(*device_, importInfo(li), image.put()));

  // Recording: regions outside the image or the buffer, bad offsets, a destroyed image.
  UniqueBuffer buffer = batonBuffer(8 * 8 * 4);
  UniqueCommandBuffer cb;
  ASSERT_OK(device_->createCommandBuffer(cb.put()));
  ASSERT_OK(cb->begin());
  auto bad = [&](BufferImageCopy r, const char* text) {
    EXPECT_EQ(cb->copyBufferToImage(*buffer, *image, r), Result::ErrorInvalidArgument);
    EXPECT_TRUE(containsText(lastError(), text)) << lastError();
    EXPECT_EQ(cb->copyImageToBuffer(*image, *buffer, r), Result::ErrorInvalidArgument);
  };
  BufferImageCopy r;
  r.width = 8;
  r.height = 8;
  EXPECT_OK(cb->copyBufferToImage(*buffer, *image, r));
  BufferImageCopy b = r;
  b.x = 1;
  bad(b, "outside level 0");
  b = r;
  b.width = 0;
  bad(b, "outside level 0");
  b = r;
  b.mipLevel = 1;
  bad(b, "mip level 1");
  b = r;
  b.layerCount = 2;
  bad(b, "layers");
  b = r;
  b.bufferOffset = 2;
  bad(b, "multiple of the texel size");
  b = r;
  b.bufferOffset = 4;
  bad(b, "outside the buffer");
  b = r;
  b.bufferRowLength = 4;
  bad(b, "bufferRowLength 4");
  EXPECT_EQ(cb->copyBufferToImage(*buffer, *image, Span<const BufferImageCopy>()),
            Result::ErrorInvalidArgument);
  Image gone = image.release();
  ASSERT_OK(gone.destroy());
  EXPECT_EQ(cb->copyBufferToImage(*buffer, gone, r), Result::ErrorInvalidHandle);
  EXPECT_EQ(gone.getInfo(nullptr), Result::ErrorInvalidHandle);
  ASSERT_OK(cb->end());
}

TEST_F(ImageTest, GpuDevicesThatCannotImportSayWhy) {
  // Every GPU device present (in CI the fake driver's CUDA and HIP devices: registration
  // interop-image-fake-gpus): a LINEAR image of the host's Vulkan device is refused with the
  // reasons native import is impossible there, and the one bridged import would need.
  VulkanImage& li = createImage(VK_FORMAT_R8G8B8A8_UNORM, 8, 8);
  ASSERT_TRUE(li.image);
  UniqueInstance all;
  ASSERT_OK(createInstance(sink_.instanceInfo(kAllBackends), all.put()));
  uint32_t count = 0;
  ASSERT_OK(all->enumeratePhysicalDevices(&count, nullptr));
  std::vector<PhysicalDevice> physicals(count);
  ASSERT_OK(all->enumeratePhysicalDevices(&count, physicals.data()));
  int gpus = 0;
  for (PhysicalDevice p : physicals) {
    PhysicalDeviceProperties props;
    ASSERT_OK(p.getProperties(&props));
    if (props.backend == BackendKind::Host) continue;
    ++gpus;
    UniqueDevice gpu;
    ASSERT_OK(all->createDevice(p, DeviceCreateInfo(), gpu.put()));
    UniqueImage image;
    Result r = importVulkanImage(*gpu, importInfo(li), image.put());
    EXPECT_TRUE(r == Result::ErrorNotSupported || r == Result::ErrorDeviceMismatch)
        << resultName(r);
    std::string text = lastError();
    EXPECT_TRUE(containsText(text, "native import is impossible")) << text;
    if (props.backend == BackendKind::Hip) {
      EXPECT_TRUE(containsText(text, "ROCm 5.2")) << text;
    }
    std::printf("%s: %s\n", backendName(props.backend), text.c_str());
  }
  if (gpus == 0) GTEST_SKIP() << "no GPU device in this instance";
}

TEST_F(ImageTest, ImportAndDestroy1000TimesLeavesNothingBehind) {
  VulkanImage& li = createImage(VK_FORMAT_R8G8B8A8_UNORM, 64, 64);
  ASSERT_TRUE(li.image);
  const size_t fds = baton::test::openFds();
  for (int i = 0; i < 1000; ++i) {
    UniqueImage image;
    ASSERT_OK(importVulkanImage(*device_, importInfo(li), image.put())) << "cycle " << i;
  }
  EXPECT_EQ(baton::test::openFds(), fds);
  // baton unmapped the memory each time: mapping it here works.
  void* p = nullptr;
  EXPECT_EQ(vkMapMemory(vk_.device, li.memory, 0, VK_WHOLE_SIZE, 0, &p), VK_SUCCESS);
  vkUnmapMemory(vk_.device, li.memory);
}

TEST_F(ImageTest, TheCApiImportsAndCopies) {
  VulkanImage& li = createImage(VK_FORMAT_R8_UNORM, 16, 4);
  ASSERT_TRUE(li.image);
  VulkanImageImportInfo cpp = importInfo(li);
  baton_vulkan_image_import_info info = BATON_VULKAN_IMAGE_IMPORT_INFO_INIT;
  info.vulkan.instance = cpp.vulkan.instance;
  info.vulkan.physical_device = cpp.vulkan.physicalDevice;
  info.vulkan.device = cpp.vulkan.device;
  info.vulkan.get_instance_proc_addr = cpp.vulkan.getInstanceProcAddr;
  info.image = li.image;
  info.memory = li.memory;
  info.allocation_size = li.allocationSize;
  info.memory_type_index = li.memoryType;
  info.format = VK_FORMAT_R8_UNORM;
  info.width = 16;
  info.height = 4;
  info.tiling = VK_IMAGE_TILING_LINEAR;
  baton_image image = BATON_NULL_HANDLE;
  auto cDevice = reinterpret_cast<baton_device>(static_cast<uintptr_t>(device_->raw()));
  ASSERT_EQ(baton_import_vulkan_image(cDevice, &info, &image), BATON_SUCCESS) << lastError();
  baton_image_info ii;
  ASSERT_EQ(baton_image_get_info(image, &ii), BATON_SUCCESS);
  EXPECT_EQ(ii.format, BATON_IMAGE_FORMAT_R8_UNORM);
  EXPECT_STREQ(baton_image_format_name(ii.format), "R8_UNORM");
  EXPECT_EQ(baton_image_format_texel_bytes(BATON_IMAGE_FORMAT_R32G32B32A32_SFLOAT), 16u);
  EXPECT_EQ(baton_image_format_from_vulkan(VK_FORMAT_B8G8R8A8_SRGB),
            BATON_IMAGE_FORMAT_B8G8R8A8_SRGB);
  baton_vulkan_interop_info interop;
  ASSERT_EQ(baton_get_vulkan_image_interop(image, &interop), BATON_SUCCESS);
  EXPECT_EQ(interop.image, li.image);
  UniqueBuffer buffer = batonBuffer(64);
  void* p = nullptr;
  ASSERT_OK(buffer->map(&p));
  for (int i = 0; i < 64; ++i) static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(i * 3);
  baton_buffer_image_copy region = BATON_BUFFER_IMAGE_COPY_INIT;
  region.width = 16;
  region.height = 4;
  UniqueCommandBuffer cb;
  ASSERT_OK(device_->createCommandBuffer(cb.put()));
  ASSERT_OK(cb->begin());
  auto cCb = reinterpret_cast<baton_command_buffer>(static_cast<uintptr_t>(cb->raw()));
  auto cBuffer = reinterpret_cast<baton_buffer>(static_cast<uintptr_t>(buffer->raw()));
  ASSERT_EQ(baton_command_buffer_copy_buffer_to_image(cCb, cBuffer, image, &region, 1),
            BATON_SUCCESS);
  EXPECT_EQ(baton_command_buffer_copy_image_to_buffer(cCb, image, cBuffer, nullptr, 0),
            BATON_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(cb->end());
  CommandBuffer cbs[] = {*cb};
  SubmitInfo submit;
  submit.commandBuffers = cbs;
  ASSERT_OK(queue_.submit(submit));
  ASSERT_OK(queue_.waitIdle());
  VulkanBuffer& down = hostBuffer(64);
  ASSERT_EQ(vulkanDownload(li, down), VK_SUCCESS);
  ASSERT_EQ(vkQueueWaitIdle(vk_.queue), VK_SUCCESS);
  EXPECT_EQ(std::memcmp(map(down), p, 64), 0);
  vkUnmapMemory(vk_.device, down.memory);
  EXPECT_EQ(baton_image_destroy(image), BATON_SUCCESS);
  EXPECT_EQ(baton_image_destroy(image), BATON_ERROR_INVALID_HANDLE);
}

}  // namespace
