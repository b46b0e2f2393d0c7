// The fake driver's memory: allocations on the host heap (unified addressing: a CUdeviceptr is a
// host address), copies and fills as stream operations, and stream-ordered pools (fake_cuda.hpp:
// behaviours 10 and 11).
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "fake_cuda.hpp"

using fake_cuda::Stream;
using fake_cuda::tCurrent;

namespace {

void* ptr(CUdeviceptr address) { return reinterpret_cast<void*>(address); }

// Page-locked host allocations (cuMemHostAlloc), by start address: copies from them read the
// source when the stream runs them; copies from other host memory stage it at the call.
struct PinnedRanges {
  std::mutex mutex;
  std::map<uintptr_t, size_t> ranges;

  bool contains(const void* p, size_t size) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = ranges.upper_bound(a);
    if (it == ranges.begin()) return false;
    --it;
    return a >= it->first && a + size <= it->first + it->second;
  }
};
PinnedRanges& pinned() {
  static PinnedRanges* p = new PinnedRanges();
  return *p;
}

// A memory pool; a device's default pool is one of gDefaultPools.
struct Pool {
  int ordinal;
};
Pool gDefaultPools[16] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                          {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

// Counts allocations live (BatonFakeCudaStats::allocationsLive).
void allocated() { fake_cuda::gCounters.allocationsLive.fetch_add(1, std::memory_order_relaxed); }
void release(void* p) {
  if (!p) return;
  fake_cuda::gCounters.allocationsLive.fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}

// The frees synchronize the current context first, as the driver's do in practice.
void synchronizeCurrent() {
  if (tCurrent && fake_cuda::synchronizeContext(tCurrent))
    fake_cuda::gCounters.streamSyncBlocked.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

extern "C" {

// ---- allocation ---------------------------------------------------------------------------------

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* address, size_t size) {
  FAKE_CUDA_ENTRY("cuMemAlloc");
  void* p = std::calloc(1, size);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  allocated();
  *address = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr address) {
  FAKE_CUDA_ENTRY("cuMemFree");
  synchronizeCurrent();
  release(ptr(address));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostAlloc(void** host, size_t size, unsigned int) {
  FAKE_CUDA_ENTRY("cuMemHostAlloc");
  *host = std::calloc(1, size);
  if (!*host) return CUDA_ERROR_OUT_OF_MEMORY;
  allocated();
  PinnedRanges& p = pinned();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.ranges[reinterpret_cast<uintptr_t>(*host)] = size;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeHost(void* host) {
  FAKE_CUDA_ENTRY("cuMemFreeHost");
  synchronizeCurrent();
  {
    PinnedRanges& p = pinned();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.ranges.erase(reinterpret_cast<uintptr_t>(host));
  }
  release(host);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* address, void* host, unsigned int) {
  FAKE_CUDA_ENTRY("cuMemHostGetDevicePointer");
  *address = reinterpret_cast<CUdeviceptr>(host);  // unified addressing
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo(size_t* free, size_t* total) {
  FAKE_CUDA_ENTRY("cuMemGetInfo");
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  *free = *total = size_t(1) << 30;  // as cuDeviceTotalMem reports; the host heap backs it
  return CUDA_SUCCESS;
}

// ---- copies and fills ---------------------------------------------------------------------------

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream) {
  FAKE_CUDA_ENTRY("cuMemcpyAsync");
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  fake_cuda::enqueue(*s, [dst, src, size] { std::memmove(ptr(dst), ptr(src), size); });
  return CUDA_SUCCESS;
}
// Pageable sources are staged now; page-locked ones are read when the copy runs.
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t size, CUstream stream) {
  FAKE_CUDA_ENTRY("cuMemcpyHtoDAsync");
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  if (pinned().contains(src, size)) {
    fake_cuda::enqueue(*s, [dst, src, size] { std::memcpy(ptr(dst), src, size); });
  } else {
    auto staged = std::make_shared<std::vector<unsigned char>>(
        static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + size);
    fake_cuda::enqueue(*s,
                       [dst, staged] { std::memcpy(ptr(dst), staged->data(), staged->size()); });
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                                  CUstream stream) {
  FAKE_CUDA_ENTRY("cuMemsetD32Async");
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  fake_cuda::enqueue(*s, [dst, value, count] {
    auto* p = static_cast<unsigned int*>(ptr(dst));
    for (size_t i = 0; i < count; ++i) p[i] = value;
  });
  return CUDA_SUCCESS;
}
// The synchronous copies run on the calling thread at once (behaviour 11).
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t size) {
  FAKE_CUDA_ENTRY("cuMemcpyHtoD");
  std::memcpy(ptr(dst), src, size);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t size) {
  FAKE_CUDA_ENTRY("cuMemcpyDtoH");
  std::memcpy(dst, ptr(src), size);
  return CUDA_SUCCESS;
}

// ---- stream-ordered pools -----------------------------------------------------------------------

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps*) {
  FAKE_CUDA_ENTRY("cuMemPoolCreate");
  *pool = reinterpret_cast<CUmemoryPool>(new Pool{-1});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  FAKE_CUDA_ENTRY("cuMemPoolDestroy");
  auto* p = reinterpret_cast<Pool*>(pool);
  if (p >= gDefaultPools && p < gDefaultPools + 16) return CUDA_ERROR_INVALID_VALUE;  // as CUDA
  delete p;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
  FAKE_CUDA_ENTRY("cuDeviceGetDefaultMemPool");
  if (device < 0 || device >= fake_cuda::config().devices) return CUDA_ERROR_INVALID_DEVICE;
  *pool = reinterpret_cast<CUmemoryPool>(&gDefaultPools[device]);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void*) {
  FAKE_CUDA_ENTRY("cuMemPoolSetAttribute");
  return CUDA_SUCCESS;
}
// The address is returned at once; the stream gets an op of its own for the allocation, so that
// it takes its place (and its delay) in stream order like the driver's.
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* address, size_t size, CUmemoryPool,
                                         CUstream stream) {
  FAKE_CUDA_ENTRY("cuMemAllocFromPoolAsync");
  if (!address) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_cuda::capturing(*s)) {  // G6
    fake_cuda::invalidateCapture(*s);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  void* p = std::calloc(1, size ? size : 1);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  allocated();
  fake_cuda::enqueue(*s, [] {});
  *address = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
// Freed when the stream reaches it (behaviour 10).
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr address, CUstream stream) {
  FAKE_CUDA_ENTRY("cuMemFreeAsync");
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_cuda::capturing(*s)) {  // G6
    fake_cuda::invalidateCapture(*s);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  fake_cuda::enqueue(*s, [address] { release(ptr(address)); });
  return CUDA_SUCCESS;
}

}  // extern "C"
