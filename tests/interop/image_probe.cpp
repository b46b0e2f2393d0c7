// A probe of the driver, not a test: Vulkan images exported as OPAQUE_FD and imported into CUDA as
// mipmapped arrays (cuExternalMemoryGetMappedMipmappedArray), per format, tiling, size, mip levels
// and array layers: whether the import works, whether every level of every layer round-trips both
// ways with cuMemcpy3D on the CUDA side and vkCmdCopyImageToBuffer / vkCmdCopyBufferToImage on the
// Vulkan side (with queue family ownership transfers to and from VK_QUEUE_FAMILY_EXTERNAL), and
// whether surface and texture objects can be made; what a pipe's descriptor gets. It links the
// CUDA driver and the Vulkan loader directly and needs a GPU that both see: the GPU test machine
// builds and runs it (tests/cuda/gpu_run.sh, step imageprobe). What it found is the ground for the
// Vulkan image import (docs/testing.md, 'GPU runs').
#include <cuda.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CU(x) cuResult(#x, (x))
static CUresult cuResult(const char* what, CUresult r) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::printf("    %s -> %s\n", what, name ? name : "?");
  }
  return r;
}

struct Fmt {
  VkFormat vk;
  const char* name;
  CUarray_format cu;
  unsigned channels;
  unsigned bytes;  // per texel
};
static const Fmt kFormats[] = {
    {VK_FORMAT_R8_UNORM, "R8_UNORM", CU_AD_FORMAT_UNSIGNED_INT8, 1, 1},
    {VK_FORMAT_R8G8_UNORM, "R8G8_UNORM", CU_AD_FORMAT_UNSIGNED_INT8, 2, 2},
    {VK_FORMAT_R8G8B8A8_UNORM, "R8G8B8A8_UNORM", CU_AD_FORMAT_UNSIGNED_INT8, 4, 4},
    {VK_FORMAT_R8G8B8A8_SRGB, "R8G8B8A8_SRGB", CU_AD_FORMAT_UNSIGNED_INT8, 4, 4},
    {VK_FORMAT_B8G8R8A8_UNORM, "B8G8R8A8_UNORM", CU_AD_FORMAT_UNSIGNED_INT8, 4, 4},
    {VK_FORMAT_B8G8R8A8_SRGB, "B8G8R8A8_SRGB", CU_AD_FORMAT_UNSIGNED_INT8, 4, 4},
    {VK_FORMAT_R8G8B8A8_UINT, "R8G8B8A8_UINT", CU_AD_FORMAT_UNSIGNED_INT8, 4, 4},
    {VK_FORMAT_R8G8B8A8_SNORM, "R8G8B8A8_SNORM", CU_AD_FORMAT_SIGNED_INT8, 4, 4},
    {VK_FORMAT_R16_SFLOAT, "R16_SFLOAT", CU_AD_FORMAT_HALF, 1, 2},
    {VK_FORMAT_R16G16_SFLOAT, "R16G16_SFLOAT", CU_AD_FORMAT_HALF, 2, 4},
    {VK_FORMAT_R16G16B16A16_SFLOAT, "R16G16B16A16_SFLOAT", CU_AD_FORMAT_HALF, 4, 8},
    {VK_FORMAT_R16G16B16A16_UNORM, "R16G16B16A16_UNORM", CU_AD_FORMAT_UNSIGNED_INT16, 4, 8},
    {VK_FORMAT_R16G16B16A16_UINT, "R16G16B16A16_UINT", CU_AD_FORMAT_UNSIGNED_INT16, 4, 8},
    {VK_FORMAT_R32_SFLOAT, "R32_SFLOAT", CU_AD_FORMAT_FLOAT, 1, 4},
    {VK_FORMAT_R32G32_SFLOAT, "R32G32_SFLOAT", CU_AD_FORMAT_FLOAT, 2, 8},
    {VK_FORMAT_R32G32B32A32_SFLOAT, "R32G32B32A32_SFLOAT", CU_AD_FORMAT_FLOAT, 4, 16},
    {VK_FORMAT_R32G32B32A32_UINT, "R32G32B32A32_UINT", CU_AD_FORMAT_UNSIGNED_INT32, 4, 16},
    {VK_FORMAT_R32_UINT, "R32_UINT", CU_AD_FORMAT_UNSIGNED_INT32, 1, 4},
    {VK_FORMAT_A2B10G10R10_UNORM_PACK32, "A2B10G10R10_UNORM_PACK32", CU_AD_FORMAT_UNSIGNED_INT32, 1,
     4},
    {VK_FORMAT_B10G11R11_UFLOAT_PACK32, "B10G11R11_UFLOAT_PACK32", CU_AD_FORMAT_UNSIGNED_INT32, 1,
     4},
};

struct Vk {
  VkInstance instance;
  VkPhysicalDevice phys;
  VkDevice dev;
  VkQueue queue;
  uint32_t family;
  VkCommandPool pool;
  PFN_vkGetMemoryFdKHR getMemoryFd;
  VkPhysicalDeviceMemoryProperties mem;
  uint8_t uuid[VK_UUID_SIZE];
};

static uint32_t memType(const Vk& v, uint32_t bits, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < v.mem.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (v.mem.memoryTypes[i].propertyFlags & want) == want) return i;
  return UINT32_MAX;
}

static bool initVk(Vk& v) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pApplicationInfo = &app;
  if (vkCreateInstance(&ii, nullptr, &v.instance) != VK_SUCCESS) return false;
  uint32_t n = 8;
  VkPhysicalDevice pds[8];
  vkEnumeratePhysicalDevices(v.instance, &n, pds);
  v.phys = VK_NULL_HANDLE;
  for (uint32_t i = 0; i < n; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pds[i], &p);
    if (std::strstr(p.deviceName, "NVIDIA") || std::strstr(p.deviceName, "H100")) {
      v.phys = pds[i];
      std::printf("vulkan device: %s, driver %u\n", p.deviceName, p.driverVersion);
    }
  }
  if (!v.phys) return false;
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &id};
  vkGetPhysicalDeviceProperties2(v.phys, &p2);
  std::memcpy(v.uuid, id.deviceUUID, VK_UUID_SIZE);
  vkGetPhysicalDeviceMemoryProperties(v.phys, &v.mem);
  uint32_t qn = 16;
  VkQueueFamilyProperties qf[16];
  vkGetPhysicalDeviceQueueFamilyProperties(v.phys, &qn, qf);
  v.family = 0;
  for (uint32_t i = 0; i < qn; ++i)
    if (qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) {
      v.family = i;
      break;
    }
  float prio = 1;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = v.family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  const char* ext[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
                       VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME};
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = 2;
  di.ppEnabledExtensionNames = ext;
  if (vkCreateDevice(v.phys, &di, nullptr, &v.dev) != VK_SUCCESS) return false;
  vkGetDeviceQueue(v.dev, v.family, 0, &v.queue);
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.queueFamilyIndex = v.family;
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  vkCreateCommandPool(v.dev, &pi, nullptr, &v.pool);
  v.getMemoryFd = (PFN_vkGetMemoryFdKHR)vkGetDeviceProcAddr(v.dev, "vkGetMemoryFdKHR");
  return true;
}

struct Buf {
  VkBuffer b;
  VkDeviceMemory m;
  void* p;
};
static Buf hostBuffer(Vk& v, VkDeviceSize size) {
  Buf r{};
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  vkCreateBuffer(v.dev, &bi, nullptr, &r.b);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(v.dev, r.b, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex =
      memType(v, req.memoryTypeBits,
              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  vkAllocateMemory(v.dev, &ai, nullptr, &r.m);
  vkBindBufferMemory(v.dev, r.b, r.m, 0);
  vkMapMemory(v.dev, r.m, 0, VK_WHOLE_SIZE, 0, &r.p);
  return r;
}

template <class F>
static void oneShot(Vk& v, F record) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = v.pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  vkAllocateCommandBuffers(v.dev, &ai, &cb);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vkBeginCommandBuffer(cb, &bi);
  record(cb);
  vkEndCommandBuffer(cb);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  vkQueueSubmit(v.queue, 1, &si, VK_NULL_HANDLE);
  vkQueueWaitIdle(v.queue);
  vkFreeCommandBuffers(v.dev, v.pool, 1, &cb);
}

static void barrier(VkCommandBuffer cb, VkImage img, VkImageLayout from, VkImageLayout to,
                    uint32_t srcFamily, uint32_t dstFamily, uint32_t levels, uint32_t layers) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  b.oldLayout = from;
  b.newLayout = to;
  b.srcQueueFamilyIndex = srcFamily;
  b.dstQueueFamilyIndex = dstFamily;
  b.image = img;
  b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, levels, 0, layers};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       0, 0, nullptr, 0, nullptr, 1, &b);
}

static uint32_t gW = 67, gH = 33, gM = 3, gL = 2;
static void probe(Vk& v, const Fmt& f, VkImageTiling tiling, bool dedicated) {
  const uint32_t W = gW, H = gH, L = tiling == VK_IMAGE_TILING_LINEAR ? 1 : gL,
                 M = tiling == VK_IMAGE_TILING_LINEAR ? 1 : gM;
  std::printf("%ux%u m%u l%u ", W, H, M, L);
  std::printf("%-26s %-7s %-13s ", f.name, tiling == VK_IMAGE_TILING_OPTIMAL ? "optimal" : "linear",
              dedicated ? "dedicated" : "not-dedicated");
  VkImageUsageFlags usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                            VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_STORAGE_BIT;
  // Vulkan: can it be exported?
  VkPhysicalDeviceExternalImageFormatInfo ext{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO};
  ext.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkPhysicalDeviceImageFormatInfo2 fi{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2, &ext};
  fi.format = f.vk;
  fi.type = VK_IMAGE_TYPE_2D;
  fi.tiling = tiling;
  fi.usage = usage;
  VkExternalImageFormatProperties ep{VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES};
  VkImageFormatProperties2 fp{VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2, &ep};
  VkResult vr = vkGetPhysicalDeviceImageFormatProperties2(v.phys, &fi, &fp);
  if (vr != VK_SUCCESS) {
    // Without STORAGE (sRGB formats have no storage on most drivers)
    usage &= ~VK_IMAGE_USAGE_STORAGE_BIT;
    fi.usage = usage;
    vr = vkGetPhysicalDeviceImageFormatProperties2(v.phys, &fi, &fp);
    if (vr != VK_SUCCESS) {
      std::printf("vulkan: not exportable (%d)\n", vr);
      return;
    }
    std::printf("[no storage] ");
  }
  auto feat = ep.externalMemoryProperties.externalMemoryFeatures;
  bool needsDedicated = feat & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT;
  if (needsDedicated && !dedicated) {
    std::printf("vulkan: dedicated only\n");
    return;
  }
  if (fp.imageFormatProperties.maxMipLevels < M || fp.imageFormatProperties.maxArrayLayers < L) {
    std::printf("vulkan: limits mips %u layers %u\n", fp.imageFormatProperties.maxMipLevels,
                fp.imageFormatProperties.maxArrayLayers);
    return;
  }
  VkExternalMemoryImageCreateInfo emi{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO};
  emi.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkImageCreateInfo ici{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, &emi};
  ici.imageType = VK_IMAGE_TYPE_2D;
  ici.format = f.vk;
  ici.extent = {W, H, 1};
  ici.mipLevels = M;
  ici.arrayLayers = L;
  ici.samples = VK_SAMPLE_COUNT_1_BIT;
  ici.tiling = tiling;
  ici.usage = usage;
  ici.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImage img;
  if ((vr = vkCreateImage(v.dev, &ici, nullptr, &img)) != VK_SUCCESS) {
    std::printf("vkCreateImage %d\n", vr);
    return;
  }
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(v.dev, img, &req);
  VkMemoryDedicatedAllocateInfo ded{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
  ded.image = img;
  VkExportMemoryAllocateInfo ex{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                dedicated ? &ded : nullptr};
  ex.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &ex};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memType(v, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  VkDeviceMemory mem;
  vkAllocateMemory(v.dev, &ai, nullptr, &mem);
  vkBindImageMemory(v.dev, img, mem, 0);
  VkMemoryGetFdInfoKHR gi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
  gi.memory = mem;
  gi.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  int fd = -1;
  v.getMemoryFd(v.dev, &gi, &fd);

  auto t0 = std::chrono::steady_clock::now();
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC hd{};
  hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  hd.handle.fd = fd;
  hd.size = req.size;
  hd.flags = dedicated ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
  CUexternalMemory em = nullptr;
  CUresult r = CU(cuImportExternalMemory(&em, &hd));
  if (r) {
    close(fd);
    vkDestroyImage(v.dev, img, nullptr);
    vkFreeMemory(v.dev, mem, nullptr);
    std::printf("\n");
    return;
  }
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC md{};
  md.offset = 0;
  md.arrayDesc.Width = W;
  md.arrayDesc.Height = H;
  md.arrayDesc.Depth = L > 1 ? L : 0;
  md.arrayDesc.Format = f.cu;
  md.arrayDesc.NumChannels = f.channels;
  md.arrayDesc.Flags = (L > 1 ? CUDA_ARRAY3D_LAYERED : 0) | CUDA_ARRAY3D_SURFACE_LDST;
  md.numLevels = M;
  CUmipmappedArray mm = nullptr;
  r = CU(cuExternalMemoryGetMappedMipmappedArray(&mm, em, &md));
  if (r) {
    md.arrayDesc.Flags = L > 1 ? CUDA_ARRAY3D_LAYERED : 0;  // without surface
    r = CU(cuExternalMemoryGetMappedMipmappedArray(&mm, em, &md));
    if (!r) std::printf("[no SURFACE_LDST] ");
  }
  double importUs =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (r) {
    cuDestroyExternalMemory(em);
    vkDestroyImage(v.dev, img, nullptr);
    vkFreeMemory(v.dev, mem, nullptr);
    std::printf("\n");
    return;
  }
  // Round trips: level 0 layer 0, and last level, last layer.
  bool ok = true;
  std::string how;
  VkImageLayout layout = VK_IMAGE_LAYOUT_UNDEFINED;
  for (uint32_t pass = 0; pass < M * L && ok; ++pass) {
    uint32_t level = pass / L, layer = pass % L;
    uint32_t w = std::max(1u, W >> level), h = std::max(1u, H >> level);
    size_t bytes = size_t(w) * h * f.bytes;
    CUarray arr;
    if (CU(cuMipmappedArrayGetLevel(&arr, mm, level))) {
      ok = false;
      break;
    }
    std::vector<uint8_t> pattern(bytes), back(bytes);
    for (size_t i = 0; i < bytes; ++i)
      pattern[i] = uint8_t((i * 7 + 13 + pass * 31) & 0x7f);  // safe for floats
    // CUDA writes (host -> array layer), Vulkan reads.
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = pattern.data();
    c.srcPitch = size_t(w) * f.bytes;
    c.srcHeight = h;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = arr;
    c.dstZ = layer;
    c.WidthInBytes = size_t(w) * f.bytes;
    c.Height = h;
    c.Depth = 1;
    if (CU(cuMemcpy3D(&c))) {
      ok = false;
      break;
    }
    CU(cuCtxSynchronize());
    Buf hb = hostBuffer(v, bytes);
    oneShot(v, [&](VkCommandBuffer cb) {
      barrier(cb, img, layout, VK_IMAGE_LAYOUT_GENERAL, VK_QUEUE_FAMILY_EXTERNAL, v.family, M, L);
      VkBufferImageCopy bc{};
      bc.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, level, layer, 1};
      bc.imageExtent = {w, h, 1};
      vkCmdCopyImageToBuffer(cb, img, VK_IMAGE_LAYOUT_GENERAL, hb.b, 1, &bc);
    });
    layout = VK_IMAGE_LAYOUT_GENERAL;
    if (std::memcmp(hb.p, pattern.data(), bytes) != 0) {
      ok = false;
      size_t first = 0;
      while (first < bytes && static_cast<uint8_t*>(hb.p)[first] == pattern[first]) ++first;
      how = "cuda->vulkan differs (level " + std::to_string(level) + " layer " +
            std::to_string(layer) + ", " + std::to_string(w) + "x" + std::to_string(h) +
            ", first byte " + std::to_string(first) + ") ";
    }
    // Vulkan writes, CUDA reads.
    for (size_t i = 0; i < bytes; ++i) static_cast<uint8_t*>(hb.p)[i] = uint8_t((i * 3 + 5) & 0x7f);
    oneShot(v, [&](VkCommandBuffer cb) {
      VkBufferImageCopy bc{};
      bc.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, level, layer, 1};
      bc.imageExtent = {w, h, 1};
      vkCmdCopyBufferToImage(cb, hb.b, img, VK_IMAGE_LAYOUT_GENERAL, 1, &bc);
      barrier(cb, img, VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_GENERAL, v.family,
              VK_QUEUE_FAMILY_EXTERNAL, M, L);
    });
    CUDA_MEMCPY3D d{};
    d.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    d.srcArray = arr;
    d.srcZ = layer;
    d.dstMemoryType = CU_MEMORYTYPE_HOST;
    d.dstHost = back.data();
    d.dstPitch = size_t(w) * f.bytes;
    d.dstHeight = h;
    d.WidthInBytes = size_t(w) * f.bytes;
    d.Height = h;
    d.Depth = 1;
    if (CU(cuMemcpy3D(&d))) {
      ok = false;
      break;
    }
    if (ok && std::memcmp(back.data(), hb.p, bytes) != 0) {
      ok = false;
      how = "vulkan->cuda differs (level " + std::to_string(level) + " layer " +
            std::to_string(layer) + ") ";
    }
    vkDestroyBuffer(v.dev, hb.b, nullptr);
    vkFreeMemory(v.dev, hb.m, nullptr);
  }
  // Surface and texture objects on level 0.
  CUarray a0;
  cuMipmappedArrayGetLevel(&a0, mm, 0);
  CUDA_RESOURCE_DESC rd{};
  rd.resType = CU_RESOURCE_TYPE_ARRAY;
  rd.res.array.hArray = a0;
  CUsurfObject so = 0;
  bool surf = md.arrayDesc.Flags & CUDA_ARRAY3D_SURFACE_LDST;
  if (surf) surf = cuSurfObjectCreate(&so, &rd) == CUDA_SUCCESS;
  CUDA_RESOURCE_DESC rdm{};
  rdm.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  rdm.res.mipmap.hMipmappedArray = mm;
  CUDA_TEXTURE_DESC td{};
  td.filterMode = CU_TR_FILTER_MODE_POINT;
  td.flags = (std::strstr(f.name, "SRGB") ? CU_TRSF_SRGB : 0);
  td.maxMipmapLevelClamp = float(M - 1);
  CUtexObject to = 0;
  CUresult tr = cuTexObjectCreate(&to, &rdm, &td, nullptr);
  std::printf("import %.0f us, %s%s surf=%s tex=%s\n", importUs, ok ? "round trips OK" : "FAILED ",
              how.c_str(), surf ? "yes" : "no", tr == CUDA_SUCCESS ? "yes" : "no");
  if (so) cuSurfObjectDestroy(so);
  if (to) cuTexObjectDestroy(to);
  cuMipmappedArrayDestroy(mm);
  cuDestroyExternalMemory(em);
  vkDestroyImage(v.dev, img, nullptr);
  vkFreeMemory(v.dev, mem, nullptr);
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  Vk v{};
  if (!initVk(v)) {
    std::printf("no vulkan device\n");
    return 1;
  }
  cuInit(0);
  CUdevice d;
  cuDeviceGet(&d, 0);
  CUuuid u;
  cuDeviceGetUuid(&u, d);
  std::printf("uuid match: %s\n", std::memcmp(u.bytes, v.uuid, 16) == 0 ? "yes" : "no");
  CUcontext ctx;
  cuDevicePrimaryCtxRetain(&ctx, d);
  cuCtxSetCurrent(ctx);
  probe(v, kFormats[2], VK_IMAGE_TILING_OPTIMAL, true);  // 67x33 m3 l2
  for (uint32_t cfg = 0; cfg < 4; ++cfg) {
    gW = 256;
    gH = 256;
    gM = cfg & 1 ? 3 : 1;
    gL = cfg & 2 ? 2 : 1;
    probe(v, kFormats[2], VK_IMAGE_TILING_OPTIMAL, true);
    probe(v, kFormats[10], VK_IMAGE_TILING_OPTIMAL, true);
  }
  gW = 1920;
  gH = 1080;
  gM = 1;
  gL = 1;
  probe(v, kFormats[10], VK_IMAGE_TILING_OPTIMAL, true);
  gM = 4;
  probe(v, kFormats[10], VK_IMAGE_TILING_OPTIMAL, true);
  gW = 67;
  gH = 33;
  gM = 3;
  gL = 1;
  for (const Fmt& f : kFormats) probe(v, f, VK_IMAGE_TILING_OPTIMAL, true);
  // Bad input: a non-exported fd (a pipe) and a wrong size
  int p[2];
  if (pipe(p) != 0) return 1;
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC hd{};
  hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  hd.handle.fd = p[0];
  hd.size = 1 << 20;
  CUexternalMemory em;
  std::printf("pipe fd import: ");
  CU(cuImportExternalMemory(&em, &hd));
  std::printf("\ndone\n");
  return 0;
}
