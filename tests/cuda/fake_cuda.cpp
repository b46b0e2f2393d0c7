// A fake CUDA driver (libbaton_fake_cuda.so) for machines without a GPU: it exports the driver
// entry points the CUDA backend requires (under the versioned names cuda.h maps them to), runs
// every stream operation synchronously on host memory, and reports one device (or
// $BATON_FAKE_CUDA_DEVICES). Loaded through BATON_CUDA_DRIVER, it lets CI run the conformance
// suite on the CUDA backend's code path — the shared stream machinery (impl/stream), issuing,
// suspension around host calls, the completion threads, error mapping — without a GPU.
//
// It also exports the HIP entry points baton's HIP backend loads: the module compiles in the
// HIP-over-CUDA translation library (tests/hip/driver/, hip_over_cuda.cpp says how), which finds
// the cu* functions below in this same object. Loaded through BATON_HIP_DRIVER, the HIP backend
// then runs on this one emulation under its HIP names — not on a second copy of it. The HIP names
// follow what is emulated here: no modules and no external memory, on either side.
//
// What it cannot show: asynchrony. Every event has completed when cuEventRecord returns, so
// wait-before-signal is only exercised at the scheduler level; the real GPU runs are the test of
// GPU-side waits (tests/cuda/gpu_run.sh).
#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

thread_local CUcontext tCurrent = nullptr;
std::atomic<int> gEvents{0};

int deviceCount() {
  const char* v = std::getenv("BATON_FAKE_CUDA_DEVICES");
  return v ? std::atoi(v) : 1;
}

// One primary context per device; any non-null pointer serves as a handle.
struct Context {
  int ordinal;
};
Context gContexts[16] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                         {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

struct Stream {
  int unused;
};
// Events keep the host time of their last record (in a synchronous driver, the time the work
// before them finished), so that cuEventElapsedTime measures what ran between two records.
struct Event {
  unsigned flags = 0;
  std::atomic<int64_t> recordedNs{-1};  // -1: never recorded
};
// A memory pool; the device's default pool is one of gDefaultPools.
struct Pool {
  int ordinal;
};
Pool gDefaultPools[16] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                          {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_READY: *name = "CUDA_ERROR_NOT_READY"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; return CUDA_SUCCESS;
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  const char* name = nullptr;
  if (cuGetErrorName(error, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *text = "reported by the fake CUDA driver";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = deviceCount();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount() || ordinal >= 16) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice device) {
  std::snprintf(name, static_cast<size_t>(length), "baton fake CUDA device %d", device);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  std::memset(uuid->bytes, 0xF0 + device, sizeof uuid->bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t(1) << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 1; break;
    default: *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  *context = reinterpret_cast<CUcontext>(&gContexts[device]);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  *context = tCurrent;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  tCurrent = context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  *device = reinterpret_cast<Context*>(tCurrent)->ordinal;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() { return tCurrent ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }

// Like the real driver, calls that create objects need a current context: a backend that forgets
// to make its context current on some thread fails here too, not only on a GPU.
CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  *stream = reinterpret_cast<CUstream>(new Stream());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  delete reinterpret_cast<Stream*>(stream);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamQuery(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int flags) {
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  auto* e = new Event();
  e->flags = flags;
  *event = reinterpret_cast<CUevent>(e);
  gEvents.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent event) {
  delete reinterpret_cast<Event*>(event);
  gEvents.fetch_sub(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent event, CUstream) {
  reinterpret_cast<Event*>(event)->recordedNs.store(nowNs(), std::memory_order_relaxed);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventQuery(CUevent) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
// As the real driver: events never recorded, or created without timing, are invalid handles here.
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  auto* a = reinterpret_cast<Event*>(start);
  auto* b = reinterpret_cast<Event*>(end);
  const int64_t t0 = a->recordedNs.load(std::memory_order_relaxed);
  const int64_t t1 = b->recordedNs.load(std::memory_order_relaxed);
  if (t0 < 0 || t1 < 0 || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = static_cast<float>(t1 - t0) / 1e6f;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream, CUhostFn fn, void* userData) {
  fn(userData);  // stream order is trivially kept: everything before it has run
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* address, size_t size) {
  void* p = std::calloc(1, size);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *address = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr address) {
  std::free(reinterpret_cast<void*>(address));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostAlloc(void** host, size_t size, unsigned int) {
  *host = std::calloc(1, size);
  return *host ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuMemFreeHost(void* host) {
  std::free(host);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* address, void* host, unsigned int) {
  *address = reinterpret_cast<CUdeviceptr>(host);  // unified addressing
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream) {
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), size);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t size, CUstream) {
  std::memcpy(reinterpret_cast<void*>(dst), src, size);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t size) {
  std::memcpy(reinterpret_cast<void*>(dst), src, size);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t size) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), size);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo(size_t* free, size_t* total) {
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  *free = *total = size_t(1) << 30;  // as cuDeviceTotalMem reports; the host heap backs it
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream) {
  auto* p = reinterpret_cast<unsigned int*>(dst);
  for (size_t i = 0; i < count; ++i) p[i] = value;
  return CUDA_SUCCESS;
}

// Memory pools, so that queue-ordered allocation runs too.
CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps*) {
  *pool = reinterpret_cast<CUmemoryPool>(new Pool{-1});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  auto* p = reinterpret_cast<Pool*>(pool);
  if (p >= gDefaultPools && p < gDefaultPools + 16) return CUDA_ERROR_INVALID_VALUE;  // as CUDA
  delete p;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
  if (device < 0 || device >= deviceCount() || device >= 16) return CUDA_ERROR_INVALID_DEVICE;
  *pool = reinterpret_cast<CUmemoryPool>(&gDefaultPools[device]);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void*) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* address, size_t size, CUmemoryPool,
                                         CUstream) {
  return cuMemAlloc(address, size);
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr address, CUstream) { return cuMemFree(address); }

}  // extern "C"
