// The fake driver's memory: allocations on the host heap (unified addressing: a CUdeviceptr is a
// host address), host registration, copies and fills as stream operations, and stream-ordered
// pools (fake_cuda.hpp: behaviours 10, 11 and M1-M2). Every range a device pointer may name is
// recorded in one registry, which the stream memory operations (memops.cpp) check addresses
// against; memory shared with other processes is in vmm.cpp (cuMemCreate and its kin) and
// ipc.cpp (cuIpc*).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <shared_mutex>
#include <vector>

#include "fake_cuda.hpp"

using fake_cuda::AddressRange;
using fake_cuda::kindBit;
using fake_cuda::RangeKind;
using fake_cuda::Stream;
using fake_cuda::tCurrent;

namespace {

void* ptr(CUdeviceptr address) { return reinterpret_cast<void*>(address); }

// The ranges, by start address. Never destroyed: stream workers still running at exit use it.
struct Ranges {
  std::shared_mutex mutex;
  std::map<uintptr_t, AddressRange> byBase;

  // The range holding [a, a + n); byBase.end() if none. Lock held.
  std::map<uintptr_t, AddressRange>::iterator holding(uintptr_t a, size_t n) {
    auto it = byBase.upper_bound(a);
    if (it == byBase.begin()) return byBase.end();
    --it;
    const AddressRange& r = it->second;
    return a >= r.base && a - r.base <= r.size && n <= r.size - (a - r.base) ? it : byBase.end();
  }
};
Ranges& ranges() {
  static Ranges* r = new Ranges();
  return *r;
}

const char* kindName(RangeKind k) {
  switch (k) {
    case RangeKind::Device: return "cuMemAlloc";
    case RangeKind::Pool: return "cuMemAllocFromPoolAsync";
    case RangeKind::HostAlloc: return "cuMemHostAlloc";
    case RangeKind::Registered: return "cuMemHostRegister";
    case RangeKind::Mapped: return "cuMemMap";
    case RangeKind::IpcOpened: return "cuIpcOpenMemHandle";
  }
  return "?";
}

// Page-locked memory (cuMemHostAlloc, cuMemHostRegister): copies from it read the source when
// the stream runs them; copies from other host memory stage it at the call (behaviour 11).
bool pageLocked(const void* p, size_t size) {
  AddressRange r;
  return fake_cuda::findRange(reinterpret_cast<uintptr_t>(p), size, &r) &&
         (r.kind == RangeKind::HostAlloc || r.kind == RangeKind::Registered);
}

// A memory pool; a device's default pool is one of gDefaultPools.
struct Pool {
  int ordinal;
};
Pool gDefaultPools[16] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                          {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

// cuMemAlloc's memory under BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS (behaviour M4): one memfd per
// allocation, mapped shared, so that cuIpcGetMemHandle can name it to another process.
struct Shareable {
  int fd = -1;
  size_t mapped = 0;  // the size rounded up to pages
  uint64_t serial = 0;
};
std::mutex gShareableMutex;
std::map<uintptr_t, Shareable> gShareable;
std::atomic<uint64_t> gSerial{1};

size_t pageRound(size_t n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

void* allocShareable(size_t size) {
  const uint64_t serial = gSerial.fetch_add(1);
  char name[64];
  std::snprintf(name, sizeof name, "%s%llu", fake_cuda::kIpcMemfdPrefix,
                static_cast<unsigned long long>(serial));
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  const size_t mapped = pageRound(size ? size : 1);
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(mapped)) == 0)
    p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(gShareableMutex);
  gShareable[reinterpret_cast<uintptr_t>(p)] = Shareable{fd, mapped, serial};
  return p;
}

// Frees what cuMemAlloc returned: unmapped and closed when it was shareable. False when it was
// not.
bool freeShareable(void* p) {
  Shareable s;
  {
    std::lock_guard<std::mutex> lock(gShareableMutex);
    auto it = gShareable.find(reinterpret_cast<uintptr_t>(p));
    if (it == gShareable.end()) return false;
    s = it->second;
    gShareable.erase(it);
  }
  munmap(p, s.mapped);
  close(s.fd);
  return true;
}

// Counts allocations live (BatonFakeCudaStats::allocationsLive).
void allocated(void* p, size_t size, RangeKind kind) {
  fake_cuda::gCounters.allocationsLive.fetch_add(1, std::memory_order_relaxed);
  AddressRange r;
  r.base = reinterpret_cast<uintptr_t>(p);
  r.size = size ? size : 1;
  r.kind = kind;
  fake_cuda::addRange(r);
}
// Forgets the range first (a stream memory operation still polling it then sees it gone, rather
// than freed memory), then frees.
void release(void* p, unsigned kinds) {
  if (!p) return;
  fake_cuda::removeRange(reinterpret_cast<uintptr_t>(p), kinds);
  fake_cuda::gCounters.allocationsLive.fetch_sub(1, std::memory_order_relaxed);
  if (!freeShareable(p)) std::free(p);
}

// The frees synchronize the current context first, as the driver's do in practice.
void synchronizeCurrent() {
  if (tCurrent && fake_cuda::synchronizeContext(tCurrent))
    fake_cuda::gCounters.streamSyncBlocked.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

// ---- the range registry -------------------------------------------------------------------------

bool fake_cuda::addRange(const AddressRange& range, bool refuseOverlap) {
  Ranges& r = ranges();
  std::unique_lock<std::shared_mutex> lock(r.mutex);
  const uintptr_t end = range.base + range.size;
  auto it = r.byBase.lower_bound(range.base);
  if (it != r.byBase.begin()) {
    auto prev = std::prev(it);
    if (prev->second.base + prev->second.size > range.base) it = prev;
  }
  std::vector<uintptr_t> stale;
  for (; it != r.byBase.end() && it->first < end; ++it) stale.push_back(it->first);
  if (!stale.empty() && refuseOverlap) return false;
  for (uintptr_t base : stale) {
    const AddressRange& old = r.byBase[base];
    std::fprintf(stderr,
                 "fake CUDA: %s range %p (%zu bytes) overlaps the %s range at %p: the older one "
                 "was freed without being released from the driver, and is forgotten\n",
                 kindName(range.kind), reinterpret_cast<void*>(range.base), range.size,
                 kindName(old.kind), reinterpret_cast<void*>(old.base));
    r.byBase.erase(base);
  }
  r.byBase[range.base] = range;
  return true;
}

bool fake_cuda::removeRange(uintptr_t base, unsigned kinds, AddressRange* out) {
  Ranges& r = ranges();
  std::unique_lock<std::shared_mutex> lock(r.mutex);
  auto it = r.byBase.find(base);
  if (it == r.byBase.end() || !(kinds & kindBit(it->second.kind))) return false;
  if (out) *out = it->second;
  r.byBase.erase(it);
  return true;
}

bool fake_cuda::findRange(uintptr_t address, size_t bytes, AddressRange* out) {
  Ranges& r = ranges();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  auto it = r.holding(address, bytes);
  if (it == r.byBase.end()) return false;
  *out = it->second;
  return true;
}

void fake_cuda::setAccessible(uintptr_t base, size_t size, bool accessible) {
  Ranges& r = ranges();
  std::unique_lock<std::shared_mutex> lock(r.mutex);
  for (auto it = r.byBase.lower_bound(base); it != r.byBase.end() && it->first < base + size; ++it)
    if (it->second.kind == RangeKind::Mapped) it->second.accessible = accessible;
}

bool fake_cuda::withLiveRange(uintptr_t address, size_t bytes, const std::function<void()>& fn) {
  Ranges& r = ranges();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  auto it = r.holding(address, bytes);
  if (it == r.byBase.end() || !it->second.accessible) return false;
  fn();
  return true;
}

bool fake_cuda::shareableAllocation(uintptr_t base, int* fd, size_t* size, uint64_t* serial) {
  std::lock_guard<std::mutex> lock(gShareableMutex);
  auto it = gShareable.find(base);
  if (it == gShareable.end()) return false;
  *fd = it->second.fd;
  *size = it->second.mapped;
  *serial = it->second.serial;
  return true;
}

extern "C" {

// ---- allocation ---------------------------------------------------------------------------------

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* address, size_t size) {
  FAKE_CUDA_ENTRY("cuMemAlloc");
  void* p = fake_cuda::config().shareableAllocations ? allocShareable(size) : std::calloc(1, size);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  allocated(p, size, RangeKind::Device);
  *address = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr address) {
  FAKE_CUDA_ENTRY("cuMemFree");
  synchronizeCurrent();
  release(ptr(address), kindBit(RangeKind::Device) | kindBit(RangeKind::Pool));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostAlloc(void** host, size_t size, unsigned int) {
  FAKE_CUDA_ENTRY("cuMemHostAlloc");
  *host = std::calloc(1, size);
  if (!*host) return CUDA_ERROR_OUT_OF_MEMORY;
  allocated(*host, size, RangeKind::HostAlloc);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeHost(void* host) {
  FAKE_CUDA_ENTRY("cuMemFreeHost");
  synchronizeCurrent();
  release(host, kindBit(RangeKind::HostAlloc));
  return CUDA_SUCCESS;
}

// ---- host registration (behaviour M1) -----------------------------------------------------------

// Page-locks nothing (the fake's device reads host memory anyway); records the range, which then
// counts as page-locked for copies and as a device address for stream memory operations. The
// answers are the driver's, as measured on the H100 (driver 580): a range overlapping a registered
// one is HOST_MEMORY_ALREADY_REGISTERED; cuMemHostAlloc or device memory is INVALID_VALUE; so is
// IOMEMORY, since the fake has no I/O memory (the driver refuses it for ordinary memory).
CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytes, unsigned int flags) {
  FAKE_CUDA_ENTRY("cuMemHostRegister");
  constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                              CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (!p || bytes == 0 || (flags & ~kKnown) || (flags & CU_MEMHOSTREGISTER_IOMEMORY))
    return CUDA_ERROR_INVALID_VALUE;
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  const auto base = reinterpret_cast<uintptr_t>(p);
  AddressRange existing;
  for (uintptr_t a : {base, base + bytes - 1}) {
    if (!fake_cuda::findRange(a, 1, &existing)) continue;
    return existing.kind == RangeKind::Registered ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                                                  : CUDA_ERROR_INVALID_VALUE;
  }
  AddressRange r;
  r.base = base;
  r.size = bytes;
  r.kind = RangeKind::Registered;
  r.flags = flags;
  // A range that straddles others (neither end inside one) overlaps them too.
  if (!fake_cuda::addRange(r, /*refuseOverlap=*/true))
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  return CUDA_SUCCESS;
}
// By the base address given to cuMemHostRegister only (another address inside the range is
// INVALID_VALUE, one outside every range HOST_MEMORY_NOT_REGISTERED, as measured). It first
// synchronizes the current context, as the driver does: on the H100 it blocked until a stream
// wait pending on the range was released.
CUresult CUDAAPI cuMemHostUnregister(void* p) {
  FAKE_CUDA_ENTRY("cuMemHostUnregister");
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  synchronizeCurrent();
  const auto base = reinterpret_cast<uintptr_t>(p);
  if (fake_cuda::removeRange(base, kindBit(RangeKind::Registered))) return CUDA_SUCCESS;
  AddressRange inside;
  return fake_cuda::findRange(base, 1, &inside) && inside.kind == RangeKind::Registered
             ? CUDA_ERROR_INVALID_VALUE
             : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
// Any address inside page-locked memory (cuMemHostAlloc, cuMemHostRegister); the device pointer
// is the host pointer (every device has CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM semantics under
// unified addressing). Flags must be 0, as the driver requires.
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* address, void* host, unsigned int flags) {
  FAKE_CUDA_ENTRY("cuMemHostGetDevicePointer");
  if (!address || !host || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  if (!pageLocked(host, 1)) return CUDA_ERROR_INVALID_VALUE;
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
  if (pageLocked(src, size)) {
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
  allocated(p, size, RangeKind::Pool);
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
  fake_cuda::enqueue(*s, [address] { release(ptr(address), kindBit(RangeKind::Pool)); });
  return CUDA_SUCCESS;
}

}  // extern "C"
