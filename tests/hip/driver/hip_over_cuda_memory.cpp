// The memory calls of the HIP-over-CUDA translation library (hip_over_cuda.cpp says what the
// library is for): device and pinned host memory, host registration, IPC memory handles, copies
// and fills, the device's default stream-ordered pool, and memory imported from Vulkan
// (OPAQUE_FD).
#include <cstring>

#include "hip_over_cuda.hpp"

namespace {

using hip_over_cuda::cu;
using hip_over_cuda::Cuda;
using hip_over_cuda::cuExternal;
using hip_over_cuda::dptr;
using hip_over_cuda::ensureContext;
using hip_over_cuda::fromCuda;
using hip_over_cuda::pointer;
using hip_over_cuda::validOrdinal;

}  // namespace

extern "C" {

// ---- memory -----------------------------------------------------------------------------------

// A size of 0 allocates nothing and returns nullptr with hipSuccess (HIP's contract; CUDA would
// refuse it).
hipError_t hipMalloc(void** ptr, size_t size) {
  if (!ptr) return hipErrorInvalidValue;
  *ptr = nullptr;
  HIP_OVER_CUDA_DRIVER(c);
  if (size == 0) return hipSuccess;
  if (hipError_t e = ensureContext(*c)) return e;
  CUdeviceptr d = 0;
  if (CUresult r = c->cuMemAlloc(&d, size)) return fromCuda(r);
  *ptr = pointer(d);
  return hipSuccess;
}

// HIP documents hipFree and hipHostFree as an implicit hipDeviceSynchronize; the current device is
// synchronised first, then the memory freed (even when the synchronisation reports an earlier
// error, which is returned). A null pointer is hipSuccess.
hipError_t hipFree(void* ptr) {
  HIP_OVER_CUDA_DRIVER(c);
  if (!ptr) return hipSuccess;
  if (hipError_t e = ensureContext(*c)) return e;
  CUresult sync = c->cuCtxSynchronize ? c->cuCtxSynchronize() : CUDA_SUCCESS;
  CUresult r = c->cuMemFree(dptr(ptr));
  return fromCuda(sync != CUDA_SUCCESS ? sync : r);
}

// Portable, Mapped and WriteCombined are CUDA's flags under the same meaning. NumaUser, Coherent
// and NonCoherent steer AMD's allocator; CUDA's pinned memory is always coherent, so they are
// accepted and change nothing (Coherent with NonCoherent is refused, as AMD's runtime does).
hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags) {
  constexpr unsigned kKnown = hipHostMallocPortable | hipHostMallocMapped |
                              hipHostMallocWriteCombined | hipHostMallocNumaUser |
                              hipHostMallocCoherent | hipHostMallocNonCoherent;
  if (!ptr || (flags & ~kKnown)) return hipErrorInvalidValue;
  if ((flags & hipHostMallocCoherent) && (flags & hipHostMallocNonCoherent))
    return hipErrorInvalidValue;
  *ptr = nullptr;
  HIP_OVER_CUDA_DRIVER(c);
  if (size == 0) return hipSuccess;
  if (hipError_t e = ensureContext(*c)) return e;
  unsigned cuFlags = 0;
  if (flags & hipHostMallocPortable) cuFlags |= CU_MEMHOSTALLOC_PORTABLE;
  if (flags & hipHostMallocMapped) cuFlags |= CU_MEMHOSTALLOC_DEVICEMAP;
  if (flags & hipHostMallocWriteCombined) cuFlags |= CU_MEMHOSTALLOC_WRITECOMBINED;
  return fromCuda(c->cuMemHostAlloc(ptr, size, cuFlags));
}

hipError_t hipHostFree(void* ptr) {
  HIP_OVER_CUDA_DRIVER(c);
  if (!ptr) return hipSuccess;
  if (hipError_t e = ensureContext(*c)) return e;
  CUresult sync = c->cuCtxSynchronize ? c->cuCtxSynchronize() : CUDA_SUCCESS;
  CUresult r = c->cuMemFreeHost(ptr);
  return fromCuda(sync != CUDA_SUCCESS ? sync : r);
}

hipError_t hipHostGetDevicePointer(void** devPtr, void* hstPtr, unsigned int flags) {
  if (!devPtr || !hstPtr) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContext(*c)) return e;
  CUdeviceptr d = 0;
  if (CUresult r = c->cuMemHostGetDevicePointer(&d, hstPtr, flags)) return fromCuda(r);
  *devPtr = pointer(d);
  return hipSuccess;
}

// HIP's flags mapped by name. hipHostRegisterDefault (0) means "mapped and portable" in HIP, so it
// asks CUDA for both; Portable, Mapped and IoMemory are CUDA's flags of the same meaning.
// hipExtHostRegisterCoarseGrained steers AMD's cache coherence and has no CUDA meaning: accepted,
// with no effect (it must not reach CUDA, where 0x8 is CU_MEMHOSTREGISTER_READ_ONLY).
hipError_t hipHostRegister(void* hostPtr, size_t sizeBytes, unsigned int flags) {
  constexpr unsigned kKnown = hipHostRegisterPortable | hipHostRegisterMapped |
                              hipHostRegisterIoMemory | hipExtHostRegisterCoarseGrained;
  if (!hostPtr || sizeBytes == 0 || (flags & ~kKnown)) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuMemHostRegister);
  if (hipError_t e = ensureContext(*c)) return e;
  unsigned cuFlags = 0;
  if ((flags & (hipHostRegisterPortable | hipHostRegisterMapped)) == 0)
    cuFlags |= CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP;
  if (flags & hipHostRegisterPortable) cuFlags |= CU_MEMHOSTREGISTER_PORTABLE;
  if (flags & hipHostRegisterMapped) cuFlags |= CU_MEMHOSTREGISTER_DEVICEMAP;
  if (flags & hipHostRegisterIoMemory) cuFlags |= CU_MEMHOSTREGISTER_IOMEMORY;
  return fromCuda(c->cuMemHostRegister(hostPtr, sizeBytes, cuFlags));
}

hipError_t hipHostUnregister(void* hostPtr) {
  if (!hostPtr) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuMemHostUnregister);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuMemHostUnregister(hostPtr));
}

// ---- IPC memory handles ---------------------------------------------------------------------

// The 64 bytes of CUDA's handle, unchanged (both are 64 bytes by definition).
hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t* handle, void* devPtr) {
  if (!handle || !devPtr) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuIpcGetMemHandle);
  if (hipError_t e = ensureContext(*c)) return e;
  static_assert(sizeof(hipIpcMemHandle_t) == sizeof(CUipcMemHandle));
  CUipcMemHandle h{};
  if (CUresult r = c->cuIpcGetMemHandle(&h, dptr(devPtr))) return fromCuda(r);
  std::memcpy(handle, &h, sizeof h);
  return hipSuccess;
}

// HIP's only flag, hipIpcMemLazyEnablePeerAccess, is 0; CUDA's CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
// (1) is what the CUDA runtime always passes, and the driver asks for it.
hipError_t hipIpcOpenMemHandle(void** devPtr, hipIpcMemHandle_t handle, unsigned int flags) {
  if (!devPtr || flags != hipIpcMemLazyEnablePeerAccess) return hipErrorInvalidValue;
  *devPtr = nullptr;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuIpcOpenMemHandle);
  if (hipError_t e = ensureContext(*c)) return e;
  CUipcMemHandle h{};
  std::memcpy(&h, &handle, sizeof h);
  CUdeviceptr d = 0;
  if (CUresult r = c->cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return fromCuda(r);
  *devPtr = pointer(d);
  return hipSuccess;
}

hipError_t hipIpcCloseMemHandle(void* devPtr) {
  if (!devPtr) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuIpcCloseMemHandle);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuIpcCloseMemHandle(dptr(devPtr)));
}

// Every kind copies by address (unified addressing: CUDA infers the direction, as HIP does for
// hipMemcpyDefault); a kind outside the enum is hipErrorInvalidMemcpyDirection.
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind,
                          hipStream_t stream) {
  if (kind < hipMemcpyHostToHost || kind > hipMemcpyDefault) return hipErrorInvalidMemcpyDirection;
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuMemcpyAsync(dptr(dst), dptr(src), sizeBytes, cu(stream)));
}

hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void* src, size_t sizeBytes, hipStream_t stream) {
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuMemcpyHtoDAsync(dptr(dst), src, sizeBytes, cu(stream)));
}

hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t stream) {
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(
      c->cuMemsetD32Async(dptr(dst), static_cast<unsigned int>(value), count, cu(stream)));
}

hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t sizeBytes) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuMemcpyHtoD);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuMemcpyHtoD(dptr(dst), src, sizeBytes));
}

hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t sizeBytes) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuMemcpyDtoH);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuMemcpyDtoH(dst, dptr(src), sizeBytes));
}

hipError_t hipMemGetInfo(size_t* free, size_t* total) {
  if (!free || !total) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuMemGetInfo);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuMemGetInfo(free, total));
}

hipError_t hipDeviceSynchronize(void) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuCtxSynchronize);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuCtxSynchronize());
}

// ---- stream-ordered allocation ----------------------------------------------------------------

hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t* mem_pool, int device) {
  if (!mem_pool) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuDeviceGetDefaultMemPool);
  if (!validOrdinal(*c, device)) return hipErrorInvalidDevice;
  CUmemoryPool pool = nullptr;
  if (CUresult r = c->cuDeviceGetDefaultMemPool(&pool, c->devices[device])) return fromCuda(r);
  *mem_pool = reinterpret_cast<hipMemPool_t>(pool);
  return hipSuccess;
}

hipError_t hipMallocFromPoolAsync(void** dev_ptr, size_t size, hipMemPool_t mem_pool,
                                  hipStream_t stream) {
  if (!dev_ptr || !mem_pool) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuMemAllocFromPoolAsync);
  if (hipError_t e = ensureContext(*c)) return e;
  CUdeviceptr d = 0;
  if (CUresult r = c->cuMemAllocFromPoolAsync(&d, size, cu(mem_pool), cu(stream)))
    return fromCuda(r);
  *dev_ptr = pointer(d);
  return hipSuccess;
}

hipError_t hipFreeAsync(void* dev_ptr, hipStream_t stream) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuMemFreeAsync);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuMemFreeAsync(dptr(dev_ptr), cu(stream)));
}

// The attributes carry the same value types on both sides (int for the reuse policies, a 64-bit
// integer for the byte counts); they are mapped by name, not by number.
hipError_t hipMemPoolSetAttribute(hipMemPool_t mem_pool, hipMemPoolAttr attr, void* value) {
  if (!mem_pool || !value) return hipErrorInvalidValue;
  CUmemPool_attribute a;
  switch (attr) {
    case hipMemPoolReuseFollowEventDependencies:
      a = CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES;
      break;
    case hipMemPoolReuseAllowOpportunistic: a = CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC; break;
    case hipMemPoolReuseAllowInternalDependencies:
      a = CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
      break;
    case hipMemPoolAttrReleaseThreshold: a = CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; break;
    case hipMemPoolAttrReservedMemCurrent: a = CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT; break;
    case hipMemPoolAttrReservedMemHigh: a = CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH; break;
    case hipMemPoolAttrUsedMemCurrent: a = CU_MEMPOOL_ATTR_USED_MEM_CURRENT; break;
    case hipMemPoolAttrUsedMemHigh: a = CU_MEMPOOL_ATTR_USED_MEM_HIGH; break;
    default: return hipErrorInvalidValue;
  }
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuMemPoolSetAttribute);
  return fromCuda(c->cuMemPoolSetAttribute(cu(mem_pool), a, value));
}

// ---- external memory --------------------------------------------------------------------------

#ifndef HIP_OVER_CUDA_NO_EXTERNAL_MEMORY

// OPAQUE_FD only (the Vulkan export baton imports on Linux); the Win32 and D3D kinds are
// hipErrorNotSupported. flags 0x1 is the dedicated-allocation flag (hipExternalMemoryDedicated
// in later headers, CUDA_EXTERNAL_MEMORY_DEDICATED). On success CUDA owns the fd.
hipError_t hipImportExternalMemory(hipExternalMemory_t* extMem_out,
                                   const hipExternalMemoryHandleDesc* memHandleDesc) {
  if (!extMem_out || !memHandleDesc) return hipErrorInvalidValue;
  if (memHandleDesc->type != hipExternalMemoryHandleTypeOpaqueFd) return hipErrorNotSupported;
  if (memHandleDesc->flags & ~CUDA_EXTERNAL_MEMORY_DEDICATED) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuImportExternalMemory);
  if (hipError_t e = ensureContext(*c)) return e;
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = memHandleDesc->handle.fd;
  desc.size = memHandleDesc->size;
  desc.flags = memHandleDesc->flags;
  CUexternalMemory m = nullptr;
  if (CUresult r = c->cuImportExternalMemory(&m, &desc)) return fromCuda(r);
  *extMem_out = m;
  return hipSuccess;
}

hipError_t hipExternalMemoryGetMappedBuffer(void** devPtr, hipExternalMemory_t extMem,
                                            const hipExternalMemoryBufferDesc* bufferDesc) {
  if (!devPtr || !extMem || !bufferDesc) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuExternalMemoryGetMappedBuffer);
  if (hipError_t e = ensureContext(*c)) return e;
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC desc{};
  desc.offset = bufferDesc->offset;
  desc.size = bufferDesc->size;
  desc.flags = bufferDesc->flags;
  CUdeviceptr d = 0;
  if (CUresult r = c->cuExternalMemoryGetMappedBuffer(&d, cuExternal(extMem), &desc))
    return fromCuda(r);
  *devPtr = pointer(d);
  return hipSuccess;
}

hipError_t hipDestroyExternalMemory(hipExternalMemory_t extMem) {
  if (!extMem) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuDestroyExternalMemory);
  return fromCuda(c->cuDestroyExternalMemory(cuExternal(extMem)));
}

#endif  // HIP_OVER_CUDA_NO_EXTERNAL_MEMORY

}  // extern "C"
