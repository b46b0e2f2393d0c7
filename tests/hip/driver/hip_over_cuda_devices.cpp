// The device queries of the HIP-over-CUDA translation library (hip_over_cuda.cpp says what the
// library is for; it holds the current-device model): device handles, names, memory, the UUID,
// attributes and properties, answered from CUDA's device attributes.
#include <cstdio>
#include <cstring>

#include "hip_over_cuda.hpp"

namespace {

using hip_over_cuda::Cuda;
using hip_over_cuda::fromCuda;
using hip_over_cuda::validOrdinal;

// HIP's attribute -> CUDA's, for every attribute with a CUDA meaning; false for the rest
// (AMD-only ones such as hipDeviceAttributeGcnArch, and the name, UUID and total memory, which
// are not ints).
bool cudaAttribute(hipDeviceAttribute_t a, CUdevice_attribute* out) {
  switch (a) {
#define HIP_OVER_CUDA_ATTR(hip, cuda) \
  case hipDeviceAttribute##hip: *out = CU_DEVICE_ATTRIBUTE_##cuda; return true;
    HIP_OVER_CUDA_ATTR(EccEnabled, ECC_ENABLED)
    HIP_OVER_CUDA_ATTR(AccessPolicyMaxWindowSize, MAX_ACCESS_POLICY_WINDOW_SIZE)
    HIP_OVER_CUDA_ATTR(AsyncEngineCount, ASYNC_ENGINE_COUNT)
    HIP_OVER_CUDA_ATTR(CanMapHostMemory, CAN_MAP_HOST_MEMORY)
    HIP_OVER_CUDA_ATTR(CanUseHostPointerForRegisteredMem, CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)
    HIP_OVER_CUDA_ATTR(ClockRate, CLOCK_RATE)
    HIP_OVER_CUDA_ATTR(ComputeMode, COMPUTE_MODE)
    HIP_OVER_CUDA_ATTR(ComputePreemptionSupported, COMPUTE_PREEMPTION_SUPPORTED)
    HIP_OVER_CUDA_ATTR(ConcurrentKernels, CONCURRENT_KERNELS)
    HIP_OVER_CUDA_ATTR(ConcurrentManagedAccess, CONCURRENT_MANAGED_ACCESS)
    HIP_OVER_CUDA_ATTR(CooperativeLaunch, COOPERATIVE_LAUNCH)
    HIP_OVER_CUDA_ATTR(CooperativeMultiDeviceLaunch, COOPERATIVE_MULTI_DEVICE_LAUNCH)
    HIP_OVER_CUDA_ATTR(DeviceOverlap, GPU_OVERLAP)
    HIP_OVER_CUDA_ATTR(DirectManagedMemAccessFromHost, DIRECT_MANAGED_MEM_ACCESS_FROM_HOST)
    HIP_OVER_CUDA_ATTR(GlobalL1CacheSupported, GLOBAL_L1_CACHE_SUPPORTED)
    HIP_OVER_CUDA_ATTR(HostNativeAtomicSupported, HOST_NATIVE_ATOMIC_SUPPORTED)
    HIP_OVER_CUDA_ATTR(Integrated, INTEGRATED)
    HIP_OVER_CUDA_ATTR(IsMultiGpuBoard, MULTI_GPU_BOARD)
    HIP_OVER_CUDA_ATTR(KernelExecTimeout, KERNEL_EXEC_TIMEOUT)
    HIP_OVER_CUDA_ATTR(L2CacheSize, L2_CACHE_SIZE)
    HIP_OVER_CUDA_ATTR(LocalL1CacheSupported, LOCAL_L1_CACHE_SUPPORTED)
    HIP_OVER_CUDA_ATTR(ComputeCapabilityMajor, COMPUTE_CAPABILITY_MAJOR)
    HIP_OVER_CUDA_ATTR(ManagedMemory, MANAGED_MEMORY)
    HIP_OVER_CUDA_ATTR(MaxBlocksPerMultiProcessor, MAX_BLOCKS_PER_MULTIPROCESSOR)
    HIP_OVER_CUDA_ATTR(MaxBlockDimX, MAX_BLOCK_DIM_X)
    HIP_OVER_CUDA_ATTR(MaxBlockDimY, MAX_BLOCK_DIM_Y)
    HIP_OVER_CUDA_ATTR(MaxBlockDimZ, MAX_BLOCK_DIM_Z)
    HIP_OVER_CUDA_ATTR(MaxGridDimX, MAX_GRID_DIM_X)
    HIP_OVER_CUDA_ATTR(MaxGridDimY, MAX_GRID_DIM_Y)
    HIP_OVER_CUDA_ATTR(MaxGridDimZ, MAX_GRID_DIM_Z)
    HIP_OVER_CUDA_ATTR(MaxSurface1D, MAXIMUM_SURFACE1D_WIDTH)
    HIP_OVER_CUDA_ATTR(MaxTexture1DWidth, MAXIMUM_TEXTURE1D_WIDTH)
    HIP_OVER_CUDA_ATTR(MaxTexture1DLinear, MAXIMUM_TEXTURE1D_LINEAR_WIDTH)
    HIP_OVER_CUDA_ATTR(MaxTexture2DWidth, MAXIMUM_TEXTURE2D_WIDTH)
    HIP_OVER_CUDA_ATTR(MaxTexture2DHeight, MAXIMUM_TEXTURE2D_HEIGHT)
    HIP_OVER_CUDA_ATTR(MaxTexture3DWidth, MAXIMUM_TEXTURE3D_WIDTH)
    HIP_OVER_CUDA_ATTR(MaxTexture3DHeight, MAXIMUM_TEXTURE3D_HEIGHT)
    HIP_OVER_CUDA_ATTR(MaxTexture3DDepth, MAXIMUM_TEXTURE3D_DEPTH)
    HIP_OVER_CUDA_ATTR(MaxThreadsPerBlock, MAX_THREADS_PER_BLOCK)
    HIP_OVER_CUDA_ATTR(MaxThreadsPerMultiProcessor, MAX_THREADS_PER_MULTIPROCESSOR)
    HIP_OVER_CUDA_ATTR(MaxPitch, MAX_PITCH)
    HIP_OVER_CUDA_ATTR(MemoryBusWidth, GLOBAL_MEMORY_BUS_WIDTH)
    HIP_OVER_CUDA_ATTR(MemoryClockRate, MEMORY_CLOCK_RATE)
    HIP_OVER_CUDA_ATTR(ComputeCapabilityMinor, COMPUTE_CAPABILITY_MINOR)
    HIP_OVER_CUDA_ATTR(MultiGpuBoardGroupID, MULTI_GPU_BOARD_GROUP_ID)
    HIP_OVER_CUDA_ATTR(MultiprocessorCount, MULTIPROCESSOR_COUNT)
    HIP_OVER_CUDA_ATTR(PageableMemoryAccess, PAGEABLE_MEMORY_ACCESS)
    HIP_OVER_CUDA_ATTR(PageableMemoryAccessUsesHostPageTables,
                       PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)
    HIP_OVER_CUDA_ATTR(PciBusId, PCI_BUS_ID)
    HIP_OVER_CUDA_ATTR(PciDeviceId, PCI_DEVICE_ID)
    HIP_OVER_CUDA_ATTR(PciDomainID, PCI_DOMAIN_ID)
    HIP_OVER_CUDA_ATTR(PersistingL2CacheMaxSize, MAX_PERSISTING_L2_CACHE_SIZE)
    HIP_OVER_CUDA_ATTR(MaxRegistersPerBlock, MAX_REGISTERS_PER_BLOCK)
    HIP_OVER_CUDA_ATTR(MaxRegistersPerMultiprocessor, MAX_REGISTERS_PER_MULTIPROCESSOR)
    HIP_OVER_CUDA_ATTR(ReservedSharedMemPerBlock, RESERVED_SHARED_MEMORY_PER_BLOCK)
    HIP_OVER_CUDA_ATTR(MaxSharedMemoryPerBlock, MAX_SHARED_MEMORY_PER_BLOCK)
    HIP_OVER_CUDA_ATTR(SharedMemPerBlockOptin, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    HIP_OVER_CUDA_ATTR(SharedMemPerMultiprocessor, MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    HIP_OVER_CUDA_ATTR(SingleToDoublePrecisionPerfRatio, SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO)
    HIP_OVER_CUDA_ATTR(StreamPrioritiesSupported, STREAM_PRIORITIES_SUPPORTED)
    HIP_OVER_CUDA_ATTR(SurfaceAlignment, SURFACE_ALIGNMENT)
    HIP_OVER_CUDA_ATTR(TccDriver, TCC_DRIVER)
    HIP_OVER_CUDA_ATTR(TextureAlignment, TEXTURE_ALIGNMENT)
    HIP_OVER_CUDA_ATTR(TexturePitchAlignment, TEXTURE_PITCH_ALIGNMENT)
    HIP_OVER_CUDA_ATTR(TotalConstantMemory, TOTAL_CONSTANT_MEMORY)
    HIP_OVER_CUDA_ATTR(UnifiedAddressing, UNIFIED_ADDRESSING)
    HIP_OVER_CUDA_ATTR(WarpSize, WARP_SIZE)
    HIP_OVER_CUDA_ATTR(MemoryPoolsSupported, MEMORY_POOLS_SUPPORTED)
    // AMD-specific attributes with a CUDA equivalent.
    HIP_OVER_CUDA_ATTR(MaxSharedMemoryPerMultiprocessor, MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    HIP_OVER_CUDA_ATTR(PhysicalMultiProcessorCount, MULTIPROCESSOR_COUNT)
    // hipStreamWaitValue32/64 support: 32-bit stream memory operations are always supported
    // since CUDA 12, so the 64-bit ones decide.
    HIP_OVER_CUDA_ATTR(CanUseStreamWaitValue, CAN_USE_64_BIT_STREAM_MEM_OPS)
#undef HIP_OVER_CUDA_ATTR
    default: return false;
  }
}

int attribute(const Cuda& c, CUdevice device, CUdevice_attribute a) {
  int v = 0;
  return c.cuDeviceGetAttribute(&v, a, device) == CUDA_SUCCESS ? v : 0;
}

}  // namespace

extern "C" {

hipError_t hipDeviceGet(hipDevice_t* device, int ordinal) {
  if (!device) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  if (!validOrdinal(*c, ordinal)) return hipErrorInvalidDevice;
  *device = c->devices[ordinal];
  return hipSuccess;
}

hipError_t hipDeviceGetName(char* name, int len, hipDevice_t device) {
  if (!name || len <= 0) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  return fromCuda(c->cuDeviceGetName(name, len, device));
}

hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t device) {
  if (!bytes) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  return fromCuda(c->cuDeviceTotalMem(bytes, device));
}

// The CUDA device's own UUID: the one Vulkan's deviceUUID matches on this GPU.
hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t device) {
  if (!uuid) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuDeviceGetUuid);
  CUuuid id{};
  if (CUresult r = c->cuDeviceGetUuid(&id, device)) return fromCuda(r);
  static_assert(sizeof uuid->bytes == sizeof id.bytes);
  std::memcpy(uuid->bytes, id.bytes, sizeof uuid->bytes);
  return hipSuccess;
}

// Unknown attributes, and those with no CUDA meaning, are hipErrorInvalidValue (as HIP's own
// NVIDIA path answers).
hipError_t hipDeviceGetAttribute(int* pi, hipDeviceAttribute_t attr, int deviceId) {
  if (!pi) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  if (!validOrdinal(*c, deviceId)) return hipErrorInvalidDevice;
  CUdevice_attribute a;
  if (!cudaAttribute(attr, &a)) return hipErrorInvalidValue;
  // The value waits and writes are this library's only where the driver exports them.
  if (attr == hipDeviceAttributeCanUseStreamWaitValue &&
      !(c->cuStreamWaitValue64 && c->cuStreamWriteValue64)) {
    *pi = 0;
    return hipSuccess;
  }
  return fromCuda(c->cuDeviceGetAttribute(pi, a, c->devices[deviceId]));
}

// The fields CUDA reports; AMD-only ones stay zero. gcnArchName names the NVIDIA architecture
// the way CUDA's tools do ("sm_90"), since that is what runs the code.
hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int deviceId) {
  if (!prop) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  if (!validOrdinal(*c, deviceId)) return hipErrorInvalidDevice;
  const CUdevice d = c->devices[deviceId];
  std::memset(prop, 0, sizeof *prop);
  if (CUresult r = c->cuDeviceGetName(prop->name, static_cast<int>(sizeof prop->name), d))
    return fromCuda(r);
  if (CUresult r = c->cuDeviceTotalMem(&prop->totalGlobalMem, d)) return fromCuda(r);
  auto get = [&](CUdevice_attribute a) { return attribute(*c, d, a); };
  prop->sharedMemPerBlock =
      static_cast<size_t>(get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  prop->regsPerBlock = get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  prop->warpSize = get(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  prop->maxThreadsPerBlock = get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  prop->maxThreadsDim[0] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  prop->maxThreadsDim[1] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  prop->maxThreadsDim[2] = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  prop->maxGridSize[0] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  prop->maxGridSize[1] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  prop->maxGridSize[2] = get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  prop->clockRate = get(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  prop->memoryClockRate = get(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  prop->memoryBusWidth = get(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  prop->totalConstMem = static_cast<size_t>(get(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY));
  prop->major = get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  prop->minor = get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  prop->multiProcessorCount = get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  prop->l2CacheSize = get(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  prop->maxThreadsPerMultiProcessor = get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  prop->computeMode = get(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
  prop->concurrentKernels = get(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  prop->pciDomainID = get(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  prop->pciBusID = get(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  prop->pciDeviceID = get(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  prop->maxSharedMemoryPerMultiProcessor =
      static_cast<size_t>(get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
  prop->isMultiGpuBoard = get(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD);
  prop->canMapHostMemory = get(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  std::snprintf(prop->gcnArchName, sizeof prop->gcnArchName, "sm_%d%d", prop->major, prop->minor);
  prop->integrated = get(CU_DEVICE_ATTRIBUTE_INTEGRATED);
  prop->cooperativeLaunch = get(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  prop->cooperativeMultiDeviceLaunch = get(CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH);
  prop->memPitch = static_cast<size_t>(get(CU_DEVICE_ATTRIBUTE_MAX_PITCH));
  prop->textureAlignment = static_cast<size_t>(get(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
  prop->texturePitchAlignment =
      static_cast<size_t>(get(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT));
  prop->kernelExecTimeoutEnabled = get(CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT);
  prop->ECCEnabled = get(CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
  prop->tccDriver = get(CU_DEVICE_ATTRIBUTE_TCC_DRIVER);
  prop->managedMemory = get(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  prop->directManagedMemAccessFromHost =
      get(CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
  prop->concurrentManagedAccess = get(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  prop->pageableMemoryAccess = get(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  prop->pageableMemoryAccessUsesHostPageTables =
      get(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
  return hipSuccess;
}

}  // extern "C"
