// The CUDA backend: device enumeration, the driver table the shared stream machinery runs on
// (impl/stream), and createCudaBackend() for the registry. Everything stream-related lives in
// impl/stream, written once for CUDA and HIP (docs/architecture.md, 'Layers and files').
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "baton/device.hpp"
#include "cuda_symbols.hpp"
#include "stream_backend.hpp"

namespace baton::core {
std::unique_ptr<Backend> createCudaBackend();
}

namespace baton::cuda {
namespace {

using core::Status;

CUdeviceptr ptr(uint64_t address) { return static_cast<CUdeviceptr>(address); }

// ---- the driver table ---------------------------------------------------------------------

Status getCurrent(void** context) {
  CUcontext c = nullptr;
  CUresult r = BATON_CU(cuCtxGetCurrent, &c);
  *context = c;
  return toStatus(r, "cuCtxGetCurrent");
}
Status setCurrent(void* context) {
  return BATON_CU_STATUS(cuCtxSetCurrent, static_cast<CUcontext>(context));
}
Status streamCreate(void** stream) {
  // Non-blocking: baton's streams never synchronise with the legacy default stream, which
  // runtime-API code in the same process may use.
  CUstream s = nullptr;
  Status st = BATON_CU_STATUS(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  *stream = s;
  return st;
}
Status streamDestroy(void* stream) {
  return BATON_CU_STATUS(cuStreamDestroy, static_cast<CUstream>(stream));
}
Status streamSynchronize(void* stream) {
  return BATON_CU_STATUS(cuStreamSynchronize, static_cast<CUstream>(stream));
}
Status streamWaitEvent(void* stream, void* event) {
  return BATON_CU_STATUS(cuStreamWaitEvent, static_cast<CUstream>(stream),
                         static_cast<CUevent>(event), 0u);
}
Status eventCreate(void** event, bool blockingSync) {
  CUevent e = nullptr;
  unsigned flags = CU_EVENT_DISABLE_TIMING;
  if (blockingSync) flags |= CU_EVENT_BLOCKING_SYNC;
  Status st = BATON_CU_STATUS(cuEventCreate, &e, flags);
  *event = e;
  return st;
}
Status eventDestroy(void* event) {
  return BATON_CU_STATUS(cuEventDestroy, static_cast<CUevent>(event));
}
Status eventRecord(void* event, void* stream) {
  return BATON_CU_STATUS(cuEventRecord, static_cast<CUevent>(event), static_cast<CUstream>(stream));
}
Status eventQuery(void* event) {
  CUresult r = BATON_CU(cuEventQuery, static_cast<CUevent>(event));
  if (r == CUDA_SUCCESS) return Status();
  if (r == CUDA_ERROR_NOT_READY) return Status(Result::NotReady);
  return toStatus(r, "cuEventQuery");
}
Status eventSynchronize(void* event) {
  return BATON_CU_STATUS(cuEventSynchronize, static_cast<CUevent>(event));
}
Status launchHostFunc(void* stream, stream::HostFunction function, void* userData) {
  return BATON_CU_STATUS(cuLaunchHostFunc, static_cast<CUstream>(stream), function, userData);
}
Status memcpyAsync(uint64_t dst, uint64_t src, uint64_t size, void* stream) {
  // Unified addressing (every 64-bit platform CUDA supports) lets the driver infer the direction
  // from the addresses, so device and mapped pinned host buffers copy the same way.
  return BATON_CU_STATUS(cuMemcpyAsync, ptr(dst), ptr(src), static_cast<size_t>(size),
                         static_cast<CUstream>(stream));
}
Status memcpyHtoDAsync(uint64_t dst, const void* src, uint64_t size, void* stream) {
  return BATON_CU_STATUS(cuMemcpyHtoDAsync, ptr(dst), src, static_cast<size_t>(size),
                         static_cast<CUstream>(stream));
}
Status memsetD32Async(uint64_t dst, uint32_t value, uint64_t count, void* stream) {
  return BATON_CU_STATUS(cuMemsetD32Async, ptr(dst), value, static_cast<size_t>(count),
                         static_cast<CUstream>(stream));
}
Status memAllocAsync(uint64_t* address, uint64_t size, void* pool, void* stream) {
  if (!symbols().cuMemAllocFromPoolAsync)
    return Status(Result::ErrorNotSupported, "the CUDA driver has no cuMemAllocFromPoolAsync");
  CUdeviceptr p = 0;
  Status st = BATON_CU_STATUS(cuMemAllocFromPoolAsync, &p, static_cast<size_t>(size),
                              static_cast<CUmemoryPool>(pool), static_cast<CUstream>(stream));
  *address = p;
  return st;
}
Status memFreeAsync(uint64_t address, void* stream) {
  if (!symbols().cuMemFreeAsync)
    return Status(Result::ErrorNotSupported, "the CUDA driver has no cuMemFreeAsync");
  return BATON_CU_STATUS(cuMemFreeAsync, ptr(address), static_cast<CUstream>(stream));
}
Status memAlloc(uint64_t* address, uint64_t size) {
  CUdeviceptr p = 0;
  Status st = BATON_CU_STATUS(cuMemAlloc, &p, static_cast<size_t>(size));
  *address = p;
  return st;
}
Status memFree(uint64_t address) { return BATON_CU_STATUS(cuMemFree, ptr(address)); }
Status hostAlloc(void** host, uint64_t* deviceAddress, uint64_t size) {
  // PORTABLE: pinned for every context, so the memory serves queues of several devices;
  // DEVICEMAP: mapped into the device address space, which HostPinned buffers promise.
  void* p = nullptr;
  CUresult r = BATON_CU(cuMemHostAlloc, &p, static_cast<size_t>(size),
                        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  if (r != CUDA_SUCCESS) {
    Status st = toStatus(r, "cuMemHostAlloc");
    if (st.code() == Result::ErrorOutOfDeviceMemory)
      return Status(Result::ErrorOutOfHostMemory, st.message());
    return st;
  }
  CUdeviceptr d = 0;
  r = BATON_CU(cuMemHostGetDevicePointer, &d, p, 0u);
  if (r != CUDA_SUCCESS) {
    (void)BATON_CU(cuMemFreeHost, p);
    return toStatus(r, "cuMemHostGetDevicePointer");
  }
  *host = p;
  *deviceAddress = d;
  return Status();
}
Status hostFree(void* host) { return BATON_CU_STATUS(cuMemFreeHost, host); }

// The result of an import of a descriptor (`call`). One that is not what the import takes (a
// pipe, another file, another kind of object) is answered with CUDA_ERROR_UNKNOWN on the H100
// (driver 580), which otherwise means a sticky fault: here it is the caller's argument, and the
// message says the descriptor is not `what`.
Status descriptorImport(CUresult r, const char* call, const char* what) {
  Status st = toStatus(r, call);
  if (r == CUDA_ERROR_UNKNOWN || r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_HANDLE)
    return Status(Result::ErrorInvalidArgument, st.message() + ": the descriptor is not " + what);
  return st;
}

Status importTimelineFd(int fd, void** semaphore) {
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
  desc.handle.fd = fd;
  CUexternalSemaphore s = nullptr;
  CUresult r = BATON_CU(cuImportExternalSemaphore, &s, &desc);
  *semaphore = s;
  return descriptorImport(r, "cuImportExternalSemaphore",
                          "an OPAQUE_FD of a timeline semaphore this device can import");
}
Status destroyExternalSemaphore(void* semaphore) {
  return BATON_CU_STATUS(cuDestroyExternalSemaphore, static_cast<CUexternalSemaphore>(semaphore));
}
Status signalExternal(void* semaphore, uint64_t value, void* stream) {
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS params{};
  params.params.fence.value = value;
  auto s = static_cast<CUexternalSemaphore>(semaphore);
  return BATON_CU_STATUS(cuSignalExternalSemaphoresAsync, &s, &params, 1u,
                         static_cast<CUstream>(stream));
}
// Shared host memory for cross-process timelines. PORTABLE: every context sees the registration;
// DEVICEMAP: it has a device address (the same as the host one with unified addressing, asked
// all the same).
Status hostRegister(void* host, uint64_t size, uint64_t* deviceAddress) {
  BATON_TRY(BATON_CU_STATUS(cuMemHostRegister, host, static_cast<size_t>(size),
                            CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
  CUdeviceptr d = 0;
  Status st = BATON_CU_STATUS(cuMemHostGetDevicePointer, &d, host, 0u);
  if (!st.ok()) {
    (void)BATON_CU(cuMemHostUnregister, host);
    return st;
  }
  *deviceAddress = d;
  return Status();
}
Status hostUnregister(void* host) { return BATON_CU_STATUS(cuMemHostUnregister, host); }
// GEQ is a cyclic comparison: satisfied once (int64_t)(*address - value) >= 0.
Status streamWaitValue64(void* stream, uint64_t address, uint64_t value) {
  return BATON_CU_STATUS(cuStreamWaitValue64, static_cast<CUstream>(stream),
                         static_cast<CUdeviceptr>(address), static_cast<cuuint64_t>(value),
                         static_cast<unsigned>(CU_STREAM_WAIT_VALUE_GEQ));
}
// DEFAULT: after the stream's earlier work, with a memory barrier, so a peer that sees the value
// sees that work's writes.
Status streamWriteValue64(void* stream, uint64_t address, uint64_t value) {
  return BATON_CU_STATUS(cuStreamWriteValue64, static_cast<CUstream>(stream),
                         static_cast<CUdeviceptr>(address), static_cast<cuuint64_t>(value),
                         static_cast<unsigned>(CU_STREAM_WRITE_VALUE_DEFAULT));
}
Status waitExternal(void* semaphore, uint64_t value, void* stream) {
  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS params{};
  params.params.fence.value = value;
  auto s = static_cast<CUexternalSemaphore>(semaphore);
  return BATON_CU_STATUS(cuWaitExternalSemaphoresAsync, &s, &params, 1u,
                         static_cast<CUstream>(stream));
}
Status importMemoryFd(int fd, uint64_t size, bool dedicated, void** memory) {
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = fd;
  desc.size = size;
  desc.flags = dedicated ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0u;
  CUexternalMemory m = nullptr;
  CUresult r = BATON_CU(cuImportExternalMemory, &m, &desc);
  *memory = m;
  return descriptorImport(r, "cuImportExternalMemory",
                          "an OPAQUE_FD of memory this device can import");
}
// Images: how each ImageFormat is laid out as a CUDA array, and how its texture reads it.
struct ArrayFormat {
  CUarray_format format;
  unsigned channels;
  enum Read { Normalized, Float, Integer, None } read;  // None: CUDA cannot sample it
};
bool arrayFormat(ImageFormat f, ArrayFormat* out) {
  switch (f) {
    case ImageFormat::R8Unorm:
      *out = {CU_AD_FORMAT_UNSIGNED_INT8, 1, ArrayFormat::Normalized};
      return true;
    case ImageFormat::R8G8Unorm:
      *out = {CU_AD_FORMAT_UNSIGNED_INT8, 2, ArrayFormat::Normalized};
      return true;
    case ImageFormat::R8G8B8A8Unorm:
    case ImageFormat::R8G8B8A8Srgb:
    case ImageFormat::B8G8R8A8Unorm:
    case ImageFormat::B8G8R8A8Srgb:
      *out = {CU_AD_FORMAT_UNSIGNED_INT8, 4, ArrayFormat::Normalized};
      return true;
    case ImageFormat::R8G8B8A8Uint:
      *out = {CU_AD_FORMAT_UNSIGNED_INT8, 4, ArrayFormat::Integer};
      return true;
    case ImageFormat::R8G8B8A8Snorm:
      *out = {CU_AD_FORMAT_SIGNED_INT8, 4, ArrayFormat::Normalized};
      return true;
    case ImageFormat::R16Sfloat: *out = {CU_AD_FORMAT_HALF, 1, ArrayFormat::Float}; return true;
    case ImageFormat::R16G16Sfloat: *out = {CU_AD_FORMAT_HALF, 2, ArrayFormat::Float}; return true;
    case ImageFormat::R16G16B16A16Sfloat:
      *out = {CU_AD_FORMAT_HALF, 4, ArrayFormat::Float};
      return true;
    case ImageFormat::R16G16B16A16Unorm:
      *out = {CU_AD_FORMAT_UNSIGNED_INT16, 4, ArrayFormat::Normalized};
      return true;
    case ImageFormat::R16G16B16A16Uint:
      *out = {CU_AD_FORMAT_UNSIGNED_INT16, 4, ArrayFormat::Integer};
      return true;
    case ImageFormat::R32Sfloat: *out = {CU_AD_FORMAT_FLOAT, 1, ArrayFormat::Float}; return true;
    case ImageFormat::R32Uint:
      *out = {CU_AD_FORMAT_UNSIGNED_INT32, 1, ArrayFormat::Integer};
      return true;
    case ImageFormat::R32G32Sfloat: *out = {CU_AD_FORMAT_FLOAT, 2, ArrayFormat::Float}; return true;
    case ImageFormat::R32G32B32A32Sfloat:
      *out = {CU_AD_FORMAT_FLOAT, 4, ArrayFormat::Float};
      return true;
    case ImageFormat::R32G32B32A32Uint:
      *out = {CU_AD_FORMAT_UNSIGNED_INT32, 4, ArrayFormat::Integer};
      return true;
    // Packed formats: one 32-bit word per texel, which CUDA cannot decode when sampling.
    case ImageFormat::A2B10G10R10UnormPack32:
    case ImageFormat::B10G11R11UfloatPack32:
      *out = {CU_AD_FORMAT_UNSIGNED_INT32, 1, ArrayFormat::None};
      return true;
    case ImageFormat::Undefined: break;
  }
  return false;
}

void releaseImage(stream::ImageObjects& o) {
  if (o.texture) (void)BATON_CU(cuTexObjectDestroy, static_cast<CUtexObject>(o.texture));
  for (uint64_t surface : o.surfaces)
    if (surface) (void)BATON_CU(cuSurfObjectDestroy, static_cast<CUsurfObject>(surface));
  if (o.mipmap) (void)BATON_CU(cuMipmappedArrayDestroy, static_cast<CUmipmappedArray>(o.mipmap));
  if (o.memory) (void)BATON_CU(cuDestroyExternalMemory, static_cast<CUexternalMemory>(o.memory));
  o = stream::ImageObjects();
}

// The memory imported, mapped as a mipmapped array (layered with layers; surface load/store so
// that kernels may write it), its levels, a surface per level and a texture over all of them.
Status importImage(const stream::ImageImport& in, stream::ImageObjects* out) {
  ArrayFormat af{};
  if (!arrayFormat(in.format, &af))
    return Status(Result::ErrorNotSupported, "no CUDA array format for this image format");
  stream::ImageObjects o;
  BATON_TRY(importMemoryFd(in.fd, in.allocationSize, in.dedicated, &o.memory));
  auto memory = static_cast<CUexternalMemory>(o.memory);  // the driver owns the fd from here on
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC m{};
  m.offset = in.offset;
  m.arrayDesc.Width = in.width;
  m.arrayDesc.Height = in.height;
  m.arrayDesc.Depth = in.layers > 1 ? in.layers : 0;
  m.arrayDesc.Format = af.format;
  m.arrayDesc.NumChannels = af.channels;
  m.arrayDesc.Flags = (in.layers > 1 ? CUDA_ARRAY3D_LAYERED : 0) | CUDA_ARRAY3D_SURFACE_LDST |
                      (in.colorAttachment ? CUDA_ARRAY3D_COLOR_ATTACHMENT : 0);
  m.numLevels = in.levels;
  CUmipmappedArray mipmap = nullptr;
  CUresult r = BATON_CU(cuExternalMemoryGetMappedMipmappedArray, &mipmap, memory, &m);
  Status st = toStatus(r, "cuExternalMemoryGetMappedMipmappedArray");
  // An extent, level count or allocation size that does not fit: CUDA_ERROR_INVALID_VALUE on the
  // H100 (driver 580). The caller's description is wrong, not the driver.
  if (r == CUDA_ERROR_INVALID_VALUE)
    st = Status(Result::ErrorInvalidArgument,
                st.message() +
                    ": the format, extent, levels and layers stated do not fit the "
                    "memory imported (its allocation size and offset)");
  o.mipmap = mipmap;
  for (uint32_t level = 0; st.ok() && level < in.levels; ++level) {
    CUarray array = nullptr;
    st = BATON_CU_STATUS(cuMipmappedArrayGetLevel, &array, mipmap, level);
    if (!st.ok()) break;
    o.arrays.push_back(array);
    CUDA_RESOURCE_DESC rd{};
    rd.resType = CU_RESOURCE_TYPE_ARRAY;
    rd.res.array.hArray = array;
    CUsurfObject surface = 0;
    st = BATON_CU_STATUS(cuSurfObjectCreate, &surface, &rd);
    o.surfaces.push_back(surface);
  }
  if (st.ok() && af.read != ArrayFormat::None) {
    CUDA_RESOURCE_DESC rd{};
    rd.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    rd.res.mipmap.hMipmappedArray = mipmap;
    CUDA_TEXTURE_DESC td{};
    for (CUaddress_mode& a : td.addressMode) a = CU_TR_ADDRESS_MODE_CLAMP;
    const bool filtered = af.read != ArrayFormat::Integer;
    td.filterMode = filtered ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
    td.mipmapFilterMode = td.filterMode;
    td.maxMipmapLevelClamp = static_cast<float>(in.levels - 1);
    td.flags = CU_TRSF_NORMALIZED_COORDINATES |
               (af.read == ArrayFormat::Integer ? CU_TRSF_READ_AS_INTEGER : 0) |
               (in.format == ImageFormat::R8G8B8A8Srgb || in.format == ImageFormat::B8G8R8A8Srgb
                    ? CU_TRSF_SRGB
                    : 0);
    CUtexObject texture = 0;
    st = BATON_CU_STATUS(cuTexObjectCreate, &texture, &rd, &td, nullptr);
    o.texture = texture;
  }
  if (!st.ok()) {
    releaseImage(o);
    return st;
  }
  *out = std::move(o);
  return Status();
}

void fillImageCopy(const stream::ImageCopy& c, CUDA_MEMCPY3D* p) {
  CUDA_MEMCPY3D m{};
  if (c.toImage) {
    m.srcMemoryType = CU_MEMORYTYPE_UNIFIED;  // device or page-locked host: the driver infers it
    m.srcDevice = ptr(c.buffer);
    m.srcPitch = static_cast<size_t>(c.bufferPitch);
    m.srcHeight = static_cast<size_t>(c.bufferRows);
    m.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    m.dstArray = static_cast<CUarray>(c.array);
    m.dstXInBytes = static_cast<size_t>(c.xBytes);
    m.dstY = c.y;
    m.dstZ = c.z;
  } else {
    m.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    m.srcArray = static_cast<CUarray>(c.array);
    m.srcXInBytes = static_cast<size_t>(c.xBytes);
    m.srcY = c.y;
    m.srcZ = c.z;
    m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    m.dstDevice = ptr(c.buffer);
    m.dstPitch = static_cast<size_t>(c.bufferPitch);
    m.dstHeight = static_cast<size_t>(c.bufferRows);
  }
  m.WidthInBytes = static_cast<size_t>(c.widthBytes);
  m.Height = c.height;
  m.Depth = c.depth;
  *p = m;
}

Status memcpyImageAsync(const stream::ImageCopy& c, void* stream) {
  CUDA_MEMCPY3D p;
  fillImageCopy(c, &p);
  return BATON_CU_STATUS(cuMemcpy3DAsync, &p, static_cast<CUstream>(stream));
}

Status mapExternalMemory(void* memory, uint64_t offset, uint64_t size, uint64_t* address) {
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC desc{};
  desc.offset = offset;
  desc.size = size;
  CUdeviceptr p = 0;
  Status st = BATON_CU_STATUS(cuExternalMemoryGetMappedBuffer, &p,
                              static_cast<CUexternalMemory>(memory), &desc);
  *address = p;
  return st;
}
Status destroyExternalMemory(void* memory) {
  return BATON_CU_STATUS(cuDestroyExternalMemory, static_cast<CUexternalMemory>(memory));
}

// Memory shared with other processes: virtual memory management, pinned device memory exportable
// as a POSIX descriptor (the only handle type Linux offers besides fabric handles).
CUmemAllocationProp shareableProp(int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}
Status vmmGranularity(int ordinal, uint64_t* granularity) {
  const CUmemAllocationProp prop = shareableProp(ordinal);
  size_t g = 0;
  Status st =
      BATON_CU_STATUS(cuMemGetAllocationGranularity, &g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  *granularity = g;
  return st;
}
Status vmmCreate(int ordinal, uint64_t size, uint64_t* handle) {
  const CUmemAllocationProp prop = shareableProp(ordinal);
  CUmemGenericAllocationHandle h = 0;
  Status st = BATON_CU_STATUS(cuMemCreate, &h, static_cast<size_t>(size), &prop, 0ull);
  *handle = h;
  return st;
}
Status vmmExport(uint64_t handle, int* fd) {
  int out = -1;
  Status st = BATON_CU_STATUS(cuMemExportToShareableHandle, &out,
                              static_cast<CUmemGenericAllocationHandle>(handle),
                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0ull);
  *fd = out;
  return st;
}
// The descriptor travels as the pointer's value, as the driver documents for POSIX descriptors.
// One that is not an allocation's: descriptorImport.
Status vmmImport(int fd, uint64_t* handle) {
  CUmemGenericAllocationHandle h = 0;
  CUresult r = BATON_CU(cuMemImportFromShareableHandle, &h,
                        reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  *handle = h;
  if (r == CUDA_ERROR_NOT_SUPPORTED)
    return Status(Result::ErrorInvalidArgument,
                  toStatus(r, "cuMemImportFromShareableHandle").message());
  return descriptorImport(r, "cuMemImportFromShareableHandle",
                          "a shareable allocation's descriptor this device can import");
}
Status vmmDevice(uint64_t handle, int* ordinal) {
  CUmemAllocationProp prop{};
  BATON_TRY(BATON_CU_STATUS(cuMemGetAllocationPropertiesFromHandle, &prop,
                            static_cast<CUmemGenericAllocationHandle>(handle)));
  *ordinal = prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop.location.id : -1;
  return Status();
}
Status vmmRelease(uint64_t handle) {
  return BATON_CU_STATUS(cuMemRelease, static_cast<CUmemGenericAllocationHandle>(handle));
}
Status vmmMap(int ordinal, uint64_t handle, uint64_t size, uint64_t* address) {
  CUdeviceptr p = 0;
  BATON_TRY(BATON_CU_STATUS(cuMemAddressReserve, &p, static_cast<size_t>(size), 0u, 0ull, 0ull));
  // cuMemMap refuses a size beyond the allocation (CUDA_ERROR_INVALID_VALUE).
  Status st = BATON_CU_STATUS(cuMemMap, p, static_cast<size_t>(size), 0u,
                              static_cast<CUmemGenericAllocationHandle>(handle), 0ull);
  if (st.ok()) {
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = ordinal;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    st = BATON_CU_STATUS(cuMemSetAccess, p, static_cast<size_t>(size), &access, 1u);
    if (!st.ok()) (void)BATON_CU(cuMemUnmap, p, static_cast<size_t>(size));
  }
  if (!st.ok()) {
    (void)BATON_CU(cuMemAddressFree, p, static_cast<size_t>(size));
    return st;
  }
  *address = p;
  return Status();
}
Status vmmUnmap(uint64_t address, uint64_t size) {
  Status st = BATON_CU_STATUS(cuMemUnmap, ptr(address), static_cast<size_t>(size));
  Status freed = BATON_CU_STATUS(cuMemAddressFree, ptr(address), static_cast<size_t>(size));
  return st.ok() ? freed : st;
}

// Graphs (graph command buffers): one-dimensional nodes in a chain.
CUgraphNode* depOf(void*& dep) { return reinterpret_cast<CUgraphNode*>(&dep); }
size_t depCount(void* dep) { return dep ? 1u : 0u; }
Status graphCreate(void** graph) {
  CUgraph g = nullptr;
  Status st = BATON_CU_STATUS(cuGraphCreate, &g, 0u);
  *graph = g;
  return st;
}
Status graphDestroy(void* graph) {
  return BATON_CU_STATUS(cuGraphDestroy, static_cast<CUgraph>(graph));
}
Status graphAddMemcpyImage(void* graph, void* dep, const stream::ImageCopy& copy, void* context,
                           void** node) {
  CUDA_MEMCPY3D p;
  fillImageCopy(copy, &p);
  CUgraphNode n = nullptr;
  Status st = BATON_CU_STATUS(cuGraphAddMemcpyNode, &n, static_cast<CUgraph>(graph), depOf(dep),
                              depCount(dep), &p, static_cast<CUcontext>(context));
  *node = n;
  return st;
}

Status graphAddMemcpy(void* graph, void* dep, uint64_t dst, uint64_t src, uint64_t size,
                      void* context, void** node) {
  CUDA_MEMCPY3D p{};
  p.srcMemoryType = CU_MEMORYTYPE_UNIFIED;  // the driver infers where each address lives
  p.srcDevice = ptr(src);
  p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.dstDevice = ptr(dst);
  p.WidthInBytes = static_cast<size_t>(size);
  p.Height = 1;
  p.Depth = 1;
  CUgraphNode n = nullptr;
  Status st = BATON_CU_STATUS(cuGraphAddMemcpyNode, &n, static_cast<CUgraph>(graph), depOf(dep),
                              depCount(dep), &p, static_cast<CUcontext>(context));
  *node = n;
  return st;
}
Status graphAddMemset32(void* graph, void* dep, uint64_t dst, uint32_t value, uint64_t count,
                        void* context, void** node) {
  CUDA_MEMSET_NODE_PARAMS p{};
  p.dst = ptr(dst);
  p.value = value;
  p.elementSize = 4;
  p.width = static_cast<size_t>(count);
  p.height = 1;
  CUgraphNode n = nullptr;
  Status st = BATON_CU_STATUS(cuGraphAddMemsetNode, &n, static_cast<CUgraph>(graph), depOf(dep),
                              depCount(dep), &p, static_cast<CUcontext>(context));
  *node = n;
  return st;
}
Status graphAddHost(void* graph, void* dep, stream::HostFunction function, void* userData,
                    void** node) {
  CUDA_HOST_NODE_PARAMS p{};
  p.fn = function;
  p.userData = userData;
  CUgraphNode n = nullptr;
  Status st = BATON_CU_STATUS(cuGraphAddHostNode, &n, static_cast<CUgraph>(graph), depOf(dep),
                              depCount(dep), &p);
  *node = n;
  return st;
}
Status graphAddChild(void* graph, void* dep, void* child, void** node) {
  CUgraphNode n = nullptr;
  Status st = BATON_CU_STATUS(cuGraphAddChildGraphNode, &n, static_cast<CUgraph>(graph), depOf(dep),
                              depCount(dep), static_cast<CUgraph>(child));
  *node = n;
  return st;
}
Status graphInstantiate(void** exec, void* graph) {
  CUgraphExec e = nullptr;
  Status st = BATON_CU_STATUS(cuGraphInstantiate, &e, static_cast<CUgraph>(graph), 0ull);
  *exec = e;
  return st;
}
Status graphExecUpdate(void* exec, void* graph, bool* updated) {
  CUgraphExecUpdateResultInfo info{};
  CUresult r = BATON_CU(cuGraphExecUpdate, static_cast<CUgraphExec>(exec),
                        static_cast<CUgraph>(graph), &info);
  *updated = r == CUDA_SUCCESS;
  if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) return Status();  // refused: instantiate anew
  return toStatus(r, "cuGraphExecUpdate");
}
Status graphExecDestroy(void* exec) {
  return BATON_CU_STATUS(cuGraphExecDestroy, static_cast<CUgraphExec>(exec));
}
Status graphLaunch(void* exec, void* stream) {
  return BATON_CU_STATUS(cuGraphLaunch, static_cast<CUgraphExec>(exec),
                         static_cast<CUstream>(stream));
}
Status streamBeginCapture(void* stream) {
  return BATON_CU_STATUS(cuStreamBeginCapture, static_cast<CUstream>(stream),
                         CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}
Status streamEndCapture(void* stream, void** graph) {
  CUgraph g = nullptr;
  Status st = BATON_CU_STATUS(cuStreamEndCapture, static_cast<CUstream>(stream), &g);
  *graph = g;
  return st;
}

bool hasVmm(const Symbols& s) {
  return s.cuMemGetAllocationGranularity && s.cuMemCreate && s.cuMemRelease &&
         s.cuMemExportToShareableHandle && s.cuMemImportFromShareableHandle &&
         s.cuMemGetAllocationPropertiesFromHandle && s.cuMemAddressReserve && s.cuMemAddressFree &&
         s.cuMemMap && s.cuMemUnmap && s.cuMemSetAccess;
}

// The driver table, with the interop entries only where the driver exports them.
stream::DriverTable makeTable() {
  stream::DriverTable t = {
      BackendKind::Cuda,
      "CUDA",
      getCurrent,
      setCurrent,
      streamCreate,
      streamDestroy,
      streamSynchronize,
      streamWaitEvent,
      eventCreate,
      eventDestroy,
      eventRecord,
      eventQuery,
      eventSynchronize,
      launchHostFunc,
      memcpyAsync,
      memcpyHtoDAsync,
      memsetD32Async,
      memAllocAsync,
      memFreeAsync,
      memAlloc,
      memFree,
      hostAlloc,
      hostFree,
      // Interop: set below where the driver has it.
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      // Graphs: set below where the driver has them.
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      // Host registration and stream memory operations (shared timelines), virtual memory
      // management and IPC memory handles (shared buffers): set below where the driver has them.
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      // Images: set below where the driver maps external memory as arrays.
      nullptr,
      nullptr,
      nullptr,
      nullptr,
  };
  const Symbols& s = symbols();
  if (s.cuGraphCreate && s.cuGraphDestroy && s.cuGraphAddMemcpyNode && s.cuGraphAddMemsetNode &&
      s.cuGraphAddHostNode && s.cuGraphAddChildGraphNode && s.cuGraphInstantiate &&
      s.cuGraphExecUpdate && s.cuGraphExecDestroy && s.cuGraphLaunch && s.cuStreamBeginCapture &&
      s.cuStreamEndCapture) {
    t.graphCreate = graphCreate;
    t.graphDestroy = graphDestroy;
    t.graphAddMemcpy = graphAddMemcpy;
    t.graphAddMemset32 = graphAddMemset32;
    t.graphAddHost = graphAddHost;
    t.graphAddChild = graphAddChild;
    t.graphInstantiate = graphInstantiate;
    t.graphExecUpdate = graphExecUpdate;
    t.graphExecDestroy = graphExecDestroy;
    t.graphLaunch = graphLaunch;
    t.streamBeginCapture = streamBeginCapture;
    t.streamEndCapture = streamEndCapture;
  }
  if (s.cuImportExternalMemory && s.cuDestroyExternalMemory &&
      s.cuExternalMemoryGetMappedMipmappedArray && s.cuMipmappedArrayGetLevel &&
      s.cuMipmappedArrayDestroy && s.cuSurfObjectCreate && s.cuSurfObjectDestroy &&
      s.cuTexObjectCreate && s.cuTexObjectDestroy && s.cuMemcpy3DAsync) {
    t.importImage = importImage;
    t.releaseImage = releaseImage;
    t.memcpyImageAsync = memcpyImageAsync;
    if (t.graphCreate) t.graphAddMemcpyImage = graphAddMemcpyImage;
  }
  if (s.cuImportExternalSemaphore && s.cuDestroyExternalSemaphore &&
      s.cuSignalExternalSemaphoresAsync && s.cuWaitExternalSemaphoresAsync) {
    t.importTimelineFd = importTimelineFd;
    t.destroyExternalSemaphore = destroyExternalSemaphore;
    t.signalExternal = signalExternal;
    t.waitExternal = waitExternal;
  }
  if (s.cuMemHostRegister && s.cuMemHostUnregister && s.cuStreamWaitValue64 &&
      s.cuStreamWriteValue64) {
    t.hostRegister = hostRegister;
    t.hostUnregister = hostUnregister;
    t.streamWaitValue64 = streamWaitValue64;
    t.streamWriteValue64 = streamWriteValue64;
  }
  if (hasVmm(s)) {
    t.vmmGranularity = vmmGranularity;
    t.vmmCreate = vmmCreate;
    t.vmmExport = vmmExport;
    t.vmmImport = vmmImport;
    t.vmmDevice = vmmDevice;
    t.vmmRelease = vmmRelease;
    t.vmmMap = vmmMap;
    t.vmmUnmap = vmmUnmap;
  }
  if (s.cuImportExternalMemory && s.cuExternalMemoryGetMappedBuffer && s.cuDestroyExternalMemory) {
    t.importMemoryFd = importMemoryFd;
    t.mapExternalMemory = mapExternalMemory;
    t.destroyExternalMemory = destroyExternalMemory;
  }
  return t;
}

// Built once, after the driver loaded (symbols() must be valid); never destroyed before the
// devices that point at it (a trivially destructible static).
const stream::DriverTable& table() {
  static const stream::DriverTable t = makeTable();
  return t;
}

// ---- devices --------------------------------------------------------------------------------

struct DeviceInfo {
  CUdevice device = 0;
  PhysicalDeviceProperties properties;
  bool memoryPools = false;
};

// A device attribute, named in the message when the query fails
// ("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) failed: ...").
#define BATON_CU_ATTRIBUTE(out, dev, name) \
  queryAttribute(out, dev, CU_DEVICE_ATTRIBUTE_##name, "cuDeviceGetAttribute(" #name ")")
Status queryAttribute(int* value, CUdevice dev, CUdevice_attribute a, const char* call) {
  *value = 0;
  return toStatus(BATON_CU(cuDeviceGetAttribute, value, a, dev), call);
}

// A failed query fails the description, and with it the backend's enumeration: load() returns
// ErrorBackendUnavailable, whose reason (Instance::enumerateBackends) names the call and the
// driver's error, as for the device's name, UUID and memory. It does not drop the capability the
// query decides: capabilities are what an engine chooses its code paths by, so a transient driver
// error would silently give the same GPU another feature set, and the call and error that caused
// it would never be seen (a later call could only say "has no pinned host memory"). A failure
// here cannot mean "this driver does not know the attribute": every driver baton loads on knows
// those it queries (the required cuDeviceGetUuid_v2 came with CUDA 11.4, the pool and
// timeline-interop attributes with 11.2), except CAN_USE_64_BIT_STREAM_MEM_OPS, which is queried
// only where the driver exports the _v2 stream memory operations that came with it; optional
// attributes are queried only where the entry points they gate exist.
Status describe(int ordinal, DeviceInfo* out) {
  const Symbols& s = symbols();
  CUdevice dev = 0;
  BATON_TRY(BATON_CU_STATUS(cuDeviceGet, &dev, ordinal));
  PhysicalDeviceProperties& p = out->properties;
  p.backend = BackendKind::Cuda;
  p.ordinal = static_cast<uint32_t>(ordinal);
  BATON_TRY(BATON_CU_STATUS(cuDeviceGetName, p.name, static_cast<int>(sizeof p.name), dev));
  CUuuid uuid{};
  BATON_TRY(BATON_CU_STATUS(cuDeviceGetUuid, &uuid, dev));
  static_assert(sizeof uuid.bytes == sizeof p.uuid);
  std::memcpy(p.uuid, uuid.bytes, sizeof p.uuid);
  size_t total = 0;
  BATON_TRY(BATON_CU_STATUS(cuDeviceTotalMem, &total, dev));
  p.totalMemory = total;
  int major = 0, minor = 0;
  BATON_TRY(BATON_CU_ATTRIBUTE(&major, dev, COMPUTE_CAPABILITY_MAJOR));
  BATON_TRY(BATON_CU_ATTRIBUTE(&minor, dev, COMPUTE_CAPABILITY_MINOR));
  p.computeMajor = static_cast<uint32_t>(major);
  p.computeMinor = static_cast<uint32_t>(minor);
  std::snprintf(p.arch, sizeof p.arch, "sm_%u%u", p.computeMajor, p.computeMinor);
  p.maxQueues = kMaxQueues;

  uint64_t caps = kCapabilityDeviceMemory | kCapabilityNativeTimepointWaits;
  int mapHost = 0, unified = 0;
  BATON_TRY(BATON_CU_ATTRIBUTE(&mapHost, dev, CAN_MAP_HOST_MEMORY));
  BATON_TRY(BATON_CU_ATTRIBUTE(&unified, dev, UNIFIED_ADDRESSING));
  if (mapHost && unified) caps |= kCapabilityHostPinnedMemory;
  if (s.cuMemPoolCreate && s.cuMemPoolDestroy && s.cuMemPoolSetAttribute &&
      s.cuMemAllocFromPoolAsync && s.cuMemFreeAsync) {
    int pools = 0;
    BATON_TRY(BATON_CU_ATTRIBUTE(&pools, dev, MEMORY_POOLS_SUPPORTED));
    out->memoryPools = pools != 0;
  }
  if (out->memoryPools) caps |= kCapabilityStreamOrderedAlloc;
  if (s.cuStreamWaitValue64 && s.cuStreamWriteValue64) {
    int memOps = 0;
    BATON_TRY(BATON_CU_ATTRIBUTE(&memOps, dev, CAN_USE_64_BIT_STREAM_MEM_OPS));
    if (memOps) caps |= kCapabilityStreamMemOps64;
  }
  if (s.cuImportExternalSemaphore && s.cuSignalExternalSemaphoresAsync &&
      s.cuWaitExternalSemaphoresAsync && s.cuDestroyExternalSemaphore) {
    int timeline = 0;
    BATON_TRY(BATON_CU_ATTRIBUTE(&timeline, dev, TIMELINE_SEMAPHORE_INTEROP_SUPPORTED));
    if (timeline) caps |= kCapabilityExternalSemaphoreTimelineFd;
  }
  // OPAQUE_FD memory import has no device attribute: it is part of every Linux driver that
  // exports the external-memory entry points (CUDA 10+).
  if (s.cuImportExternalMemory && s.cuExternalMemoryGetMappedBuffer && s.cuDestroyExternalMemory)
    caps |= kCapabilityExternalMemoryOpaqueFd;
  if (table().graphCreate) caps |= kCapabilityGraphCommandBuffers;
  if (table().vmmCreate) {
    int vmm = 0, posixFd = 0;
    BATON_TRY(BATON_CU_ATTRIBUTE(&vmm, dev, VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED));
    BATON_TRY(BATON_CU_ATTRIBUTE(&posixFd, dev, HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED));
    if (vmm && posixFd) caps |= kCapabilityShareableMemory;
  }
  p.capabilities = caps;
  out->device = dev;
  return Status();
}

class CudaBackend final : public stream::StreamBackend {
 public:
  BackendKind kind() const override { return BackendKind::Cuda; }

  Status load() override {
    const Driver& d = loadDriver();
    if (!d.loadStatus.ok()) return d.loadStatus;
    int count = 0;
    Status st = BATON_CU_STATUS(cuDeviceGetCount, &count);
    if (!st.ok()) return Status(Result::ErrorBackendUnavailable, st.message());
    devices_.clear();
    for (int i = 0; i < count; ++i) {
      DeviceInfo info;
      st = describe(i, &info);
      if (!st.ok())
        return Status(Result::ErrorBackendUnavailable,
                      core::format("describing CUDA device %d: %s", i, st.message().c_str()));
      devices_.push_back(info);
    }
    return Status();
  }

  uint32_t deviceCount() const override { return static_cast<uint32_t>(devices_.size()); }

  PhysicalDeviceProperties properties(uint32_t ordinal) const override {
    return devices_.at(ordinal).properties;
  }

  Status createDevice(uint32_t ordinal, core::Device& device,
                      std::unique_ptr<core::DeviceImpl>* out) override {
    const DeviceInfo& info = devices_.at(ordinal);
    // The primary context: the one the runtime API uses, so that kernels launched with <<<>>>
    // and libraries (cuBLAS) inside native callbacks run in the context of baton's streams.
    CUcontext ctx = nullptr;
    BATON_TRY(BATON_CU_STATUS(cuDevicePrimaryCtxRetain, &ctx, info.device)
                  .context(core::format("creating CUDA device %u", ordinal)));
    CUdevice cuDevice = info.device;
    CUmemoryPool pool = nullptr;
    if (info.memoryPools) {
      // The device advertises stream-ordered allocation (its physical device's capabilities),
      // so a pool that cannot be made fails the creation, naming the call and error, rather
      // than giving a device whose allocas fail later with "has no memory pool" (the same
      // reasoning as for failed queries, see describe).
      Status st = createPool(ctx, ordinal, &pool);
      if (!st.ok()) {
        (void)BATON_CU(cuDevicePrimaryCtxRelease, cuDevice);
        return st.context(core::format("creating CUDA device %u", ordinal));
      }
    }
    stream::DeviceConfig config;
    config.driver = &table();
    config.context = ctx;
    config.ordinal = static_cast<int32_t>(ordinal);
    config.memoryPool = pool;
    config.blockingSyncEvents = blockingSyncEvents();
    config.release = [ctx, cuDevice, pool] {
      if (pool) {
        stream::ContextScope scope(table(), ctx, stream::ContextScope::kRelease,
                                   "destroying the device's memory pool");
        // Returns at once; the pool goes away when its last allocation is freed.
        (void)BATON_CU(cuMemPoolDestroy, pool);
      }
      (void)BATON_CU(cuDevicePrimaryCtxRelease, cuDevice);
    };
    *out = stream::createDevice(device, std::move(config));
    return Status();
  }

 private:
  // baton's own pool, not the device's default one: its release threshold is ours to set without
  // changing how runtime-API code in the same process behaves. The threshold keeps freed memory
  // cached in the pool instead of returning it to the driver at every synchronisation (the
  // default, 0), which made each alloca a fresh 8-12 µs allocation.
  static Status createPool(CUcontext ctx, uint32_t ordinal, CUmemoryPool* out) {
    stream::ContextScope scope(table(), ctx);
    BATON_TRY(scope.status());
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = static_cast<int>(ordinal);
    CUmemoryPool pool = nullptr;
    BATON_TRY(BATON_CU_STATUS(cuMemPoolCreate, &pool, &props));
    cuuint64_t threshold = UINT64_MAX;
    Status st =
        BATON_CU_STATUS(cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
    if (!st.ok()) {
      (void)BATON_CU(cuMemPoolDestroy, pool);  // no allocation yet: destroyed at once
      return st;
    }
    *out = pool;
    return Status();
  }

  // Pooled events are plain (timing disabled) unless BATON_CUDA_BLOCKING_SYNC_EVENTS=1 (for
  // measurements): recording a blocking-sync event cost 17.4 µs on the H100 against 0.57 µs for
  // a plain one (bench/cuda), so the completion thread sleeps on a blocking-sync helper event
  // instead, only while someone waits (stream_backend.cpp).
  static bool blockingSyncEvents() {
    const char* v = std::getenv("BATON_CUDA_BLOCKING_SYNC_EVENTS");
    return v && v[0] == '1';
  }

  std::vector<DeviceInfo> devices_;
};

}  // namespace
}  // namespace baton::cuda

namespace baton::core {
std::unique_ptr<Backend> createCudaBackend() { return std::make_unique<cuda::CudaBackend>(); }
}  // namespace baton::core
