// The fake driver's initialisation, error names, devices and contexts (fake_cuda.hpp says what
// the driver models). Every entry point first checks the host-function rule (FAKE_CUDA_ENTRY).
#include <atomic>
#include <cstdio>
#include <cstring>

#include "fake_cuda.hpp"

using fake_cuda::config;
using fake_cuda::Context;
using fake_cuda::gContexts;
using fake_cuda::tCurrent;

namespace {

bool validDevice(CUdevice device) { return device >= 0 && device < config().devices; }

// Each device's compute capability as major * 10 + minor: 9.0 (an H100's) unless a test set
// another (batonFakeCudaSetComputeCapability).
std::atomic<int> gComputeCapability[16] = {90, 90, 90, 90, 90, 90, 90, 90,
                                           90, 90, 90, 90, 90, 90, 90, 90};

}  // namespace

int fake_cuda::computeCapability(int device) {
  return device >= 0 && device < 16 ? gComputeCapability[device].load() : 0;
}

extern "C" {

CUresult CUDAAPI cuInit(unsigned int) {
  FAKE_CUDA_ENTRY("cuInit");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDriverGetVersion(int* version) {
  FAKE_CUDA_ENTRY("cuDriverGetVersion");
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  FAKE_CUDA_ENTRY("cuGetErrorName");
  switch (error) {
#define FAKE_CUDA_NAME(e) \
  case e: *name = #e; return CUDA_SUCCESS;
    FAKE_CUDA_NAME(CUDA_SUCCESS)
    FAKE_CUDA_NAME(CUDA_ERROR_INVALID_VALUE)
    FAKE_CUDA_NAME(CUDA_ERROR_OUT_OF_MEMORY)
    FAKE_CUDA_NAME(CUDA_ERROR_NOT_INITIALIZED)
    FAKE_CUDA_NAME(CUDA_ERROR_INVALID_DEVICE)
    FAKE_CUDA_NAME(CUDA_ERROR_INVALID_CONTEXT)
    FAKE_CUDA_NAME(CUDA_ERROR_INVALID_HANDLE)
    FAKE_CUDA_NAME(CUDA_ERROR_NOT_READY)
    FAKE_CUDA_NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
    FAKE_CUDA_NAME(CUDA_ERROR_LAUNCH_FAILED)
    FAKE_CUDA_NAME(CUDA_ERROR_NOT_PERMITTED)
    FAKE_CUDA_NAME(CUDA_ERROR_NOT_SUPPORTED)
    FAKE_CUDA_NAME(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    FAKE_CUDA_NAME(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
    FAKE_CUDA_NAME(CUDA_ERROR_MAP_FAILED)
    FAKE_CUDA_NAME(CUDA_ERROR_UNKNOWN)
#undef FAKE_CUDA_NAME
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  FAKE_CUDA_ENTRY("cuGetErrorString");
  const char* name = nullptr;
  if (cuGetErrorName(error, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *text = "reported by the fake CUDA driver";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  FAKE_CUDA_ENTRY("cuDeviceGetCount");
  *count = config().devices;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_CUDA_ENTRY("cuDeviceGet");
  if (!validDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice device) {
  FAKE_CUDA_ENTRY("cuDeviceGetName");
  std::snprintf(name, static_cast<size_t>(length), "baton fake CUDA device %d", device);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  FAKE_CUDA_ENTRY("cuDeviceGetUuid");
  std::memset(uuid->bytes, 0xF0 + device, sizeof uuid->bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice) {
  FAKE_CUDA_ENTRY("cuDeviceTotalMem");
  *bytes = size_t(1) << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  FAKE_CUDA_ENTRY("cuDeviceGetAttribute");
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = fake_cuda::computeCapability(device) / 10;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = fake_cuda::computeCapability(device) % 10;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    // Host registration, virtual memory management with POSIX descriptors, and NOR waits (M1-M3),
    // as the H100 reports them (CAN_FLUSH_REMOTE_WRITES stays 0 there and here).
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
    // Timeline external semaphores of the fake's own descriptor (E1).
    case CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED: *value = 1; break;
    // BATON_FAKE_CUDA_NO_MEMOPS64=1: a driver without the 64-bit operations.
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
      *value = config().memOps64 ? 1 : 0;
      break;
    default: *value = 0;
  }
  return CUDA_SUCCESS;
}

// One primary context per device.
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  FAKE_CUDA_ENTRY("cuDevicePrimaryCtxRetain");
  if (!validDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  *context = reinterpret_cast<CUcontext>(&gContexts[device]);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
  FAKE_CUDA_ENTRY("cuDevicePrimaryCtxRelease");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  FAKE_CUDA_ENTRY("cuCtxGetCurrent");
  *context = tCurrent;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  FAKE_CUDA_ENTRY("cuCtxSetCurrent");
  tCurrent = context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  FAKE_CUDA_ENTRY("cuCtxGetDevice");
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  *device = reinterpret_cast<Context*>(tCurrent)->ordinal;
  return CUDA_SUCCESS;
}
// Waits for the work of every stream of the current context (behaviour 8).
CUresult CUDAAPI cuCtxSynchronize() {
  FAKE_CUDA_ENTRY("cuCtxSynchronize");
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  bool capturing = false;
  if (fake_cuda::synchronizeContext(tCurrent, &capturing))
    fake_cuda::gCounters.streamSyncBlocked.fetch_add(1, std::memory_order_relaxed);
  return capturing ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

}  // extern "C"

// Sets device `device`'s compute capability (major.minor, each 0..9) for the attribute queries
// and communicators made from now on; 0 on success, -1 for another device or value.
extern "C" __attribute__((visibility("default"))) int batonFakeCudaSetComputeCapability(int device,
                                                                                        int major,
                                                                                        int minor) {
  if (device < 0 || device >= 16 || major < 1 || major > 9 || minor < 0 || minor > 9) return -1;
  gComputeCapability[device].store(major * 10 + minor);
  return 0;
}
