// The fake driver's virtual memory management (fake_cuda.hpp: behaviour M2): cuMemCreate and its
// kin, with POSIX file descriptor export, so that two processes map the same bytes.
//
// An allocation is a memfd (named kVmmMemfdPrefix and the device ordinal) of the requested size;
// a handle (CUmemGenericAllocationHandle) is an Allocation* of this process. A reservation is an
// inaccessible anonymous mapping; cuMemMap maps the memfd over part of it (MAP_SHARED |
// MAP_FIXED), still inaccessible; cuMemSetAccess opens it with mprotect. Exporting dups the memfd;
// importing dups the descriptor it is given (the caller keeps its own) and makes a new handle.
// The bytes live as long as any descriptor or mapping of the memfd does, in any process: the
// kernel's rule for memfds, and the driver's for allocations ("released when all handles and
// mappings are gone").
//
// Errors are the driver's, as measured on the H100 (driver 580) where the reference is silent:
// sizes and addresses not multiples of the granularity, a second map of a mapped range, an export
// the allocation was not created for, a reservation freed while still mapped, a handle released
// once too often: CUDA_ERROR_INVALID_VALUE; a non-zero map offset: CUDA_ERROR_NOT_SUPPORTED; an
// import of a descriptor that is not such an allocation (closed, a pipe, another memfd):
// CUDA_ERROR_UNKNOWN.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "fake_cuda.hpp"

using fake_cuda::AddressRange;
using fake_cuda::kindBit;
using fake_cuda::RangeKind;

namespace {

// A real GPU's granularity (the H100's, minimum and recommended alike).
constexpr size_t kGranularity = size_t(2) << 20;

struct Allocation {
  int fd = -1;
  size_t size = 0;
  CUmemAllocationProp prop{};
  int handleRefs = 1;  // cuMemCreate / cuMemImportFromShareableHandle / cuMemRetainAllocationHandle
  int mappings = 0;    // cuMemMap
};

struct Mapping {
  size_t size = 0;
  Allocation* allocation = nullptr;
};

// Guards everything below. Never destroyed (a stream worker may outlive static destruction).
std::mutex& mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::set<Allocation*>& allocations() {
  static auto* s = new std::set<Allocation*>();
  return *s;
}
std::map<uintptr_t, size_t>& reservations() {
  static auto* m = new std::map<uintptr_t, size_t>();
  return *m;
}
std::map<uintptr_t, Mapping>& mappings() {
  static auto* m = new std::map<uintptr_t, Mapping>();
  return *m;
}

// A handle this process holds (released handles are not: CUDA_ERROR_INVALID_VALUE).
Allocation* lookupLocked(CUmemGenericAllocationHandle handle) {
  auto* a = reinterpret_cast<Allocation*>(static_cast<uintptr_t>(handle));
  return allocations().count(a) && a->handleRefs > 0 ? a : nullptr;
}
CUmemGenericAllocationHandle handleOf(Allocation* a) {
  return static_cast<CUmemGenericAllocationHandle>(reinterpret_cast<uintptr_t>(a));
}
// Each Allocation (one per cuMemCreate or cuMemImportFromShareableHandle) counts as one live
// allocation of this process (BatonFakeCudaStats::allocationsLive) until its last handle and
// mapping are gone.
void addLocked(Allocation* a) {
  allocations().insert(a);
  fake_cuda::gCounters.allocationsLive.fetch_add(1, std::memory_order_relaxed);
}
void dropIfUnusedLocked(Allocation* a) {
  if (a->handleRefs > 0 || a->mappings > 0) return;
  close(a->fd);
  allocations().erase(a);
  delete a;
  fake_cuda::gCounters.allocationsLive.fetch_sub(1, std::memory_order_relaxed);
}

// The properties cuMemCreate and cuMemGetAllocationGranularity accept: pinned memory on a device
// of the fake, exportable as nothing or as a POSIX descriptor.
CUresult checkProp(const CUmemAllocationProp* prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
  if (prop->location.id < 0 || prop->location.id >= fake_cuda::config().devices)
    return CUDA_ERROR_INVALID_DEVICE;
  if (prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

bool multiple(uint64_t n) { return n % kGranularity == 0; }

// The device ordinal of a memfd this driver made for an allocation, from its name (as
// /proc/self/fd shows it: "/memfd:<name> (deleted)"); -1 for any other descriptor.
int vmmOrdinal(int fd) {
  char path[64], link[256] = {};
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return -1;
  const size_t prefix = std::strlen("/memfd:") + std::strlen(fake_cuda::kVmmMemfdPrefix);
  if (std::strncmp(link, "/memfd:", 7) != 0 ||
      std::strncmp(link + 7, fake_cuda::kVmmMemfdPrefix, prefix - 7) != 0)
    return -1;
  return std::atoi(link + prefix);
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  FAKE_CUDA_ENTRY("cuMemGetAllocationGranularity");
  if (!granularity) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkProp(prop)) return r;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  FAKE_CUDA_ENTRY("cuMemCreate");
  if (!handle || flags != 0 || size == 0 || !multiple(size)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkProp(prop)) return r;
  char name[64];
  std::snprintf(name, sizeof name, "%s%d", fake_cuda::kVmmMemfdPrefix, prop->location.id);
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto* a = new Allocation();
  a->fd = fd;
  a->size = size;
  a->prop = *prop;
  std::lock_guard<std::mutex> lock(mutex());
  addLocked(a);
  *handle = handleOf(a);
  return CUDA_SUCCESS;
}

// The bytes stay while a mapping of them does (here, or in a process that imported them).
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKE_CUDA_ENTRY("cuMemRelease");
  std::lock_guard<std::mutex> lock(mutex());
  Allocation* a = lookupLocked(handle);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  --a->handleRefs;
  dropIfUnusedLocked(a);
  return CUDA_SUCCESS;
}

// A new descriptor the caller owns (close-on-exec, as the driver's), for an allocation created
// with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR among its requested handle types.
CUresult CUDAAPI cuMemExportToShareableHandle(void* shareableHandle,
                                              CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType handleType,
                                              unsigned long long flags) {
  FAKE_CUDA_ENTRY("cuMemExportToShareableHandle");
  if (!shareableHandle || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> lock(mutex());
  Allocation* a = lookupLocked(handle);
  if (!a || !(a->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE;
  const int fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

// The descriptor is passed as the pointer's value, as the driver documents for POSIX descriptors;
// it stays the caller's (the handle holds a dup of it).
CUresult CUDAAPI cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle,
                                                void* osHandle,
                                                CUmemAllocationHandleType shHandleType) {
  FAKE_CUDA_ENTRY("cuMemImportFromShareableHandle");
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  const int given = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
  const int ordinal = vmmOrdinal(given);
  if (ordinal < 0) return CUDA_ERROR_UNKNOWN;  // what the H100's driver answers
  const off_t size = lseek(given, 0, SEEK_END);
  if (size <= 0) return CUDA_ERROR_UNKNOWN;
  const int fd = fcntl(given, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  auto* a = new Allocation();
  a->fd = fd;
  a->size = static_cast<size_t>(size);
  a->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  a->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  a->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a->prop.location.id = ordinal;
  std::lock_guard<std::mutex> lock(mutex());
  addLocked(a);
  *handle = handleOf(a);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                        CUmemGenericAllocationHandle handle) {
  FAKE_CUDA_ENTRY("cuMemGetAllocationPropertiesFromHandle");
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(mutex());
  Allocation* a = lookupLocked(handle);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  *prop = a->prop;
  return CUDA_SUCCESS;
}

// The handle of the allocation mapped at `addr` (any address inside the mapping), retained: the
// same value cuMemCreate returned, as on the H100; each retain needs its cuMemRelease.
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  FAKE_CUDA_ENTRY("cuMemRetainAllocationHandle");
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard<std::mutex> lock(mutex());
  auto it = mappings().upper_bound(a);
  if (it == mappings().begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (a >= it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
  Allocation* alloc = it->second.allocation;
  ++alloc->handleRefs;
  *handle = handleOf(alloc);
  return CUDA_SUCCESS;
}

// ---- address ranges and mappings ----------------------------------------------------------------

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  FAKE_CUDA_ENTRY("cuMemAddressReserve");
  if (!ptr || size == 0 || !multiple(size) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment == 0) alignment = kGranularity;
  if ((alignment & (alignment - 1)) != 0 || !multiple(alignment)) return CUDA_ERROR_INVALID_VALUE;
  // Over-reserve by the alignment, then give back the ends. `addr` is a hint, as for the driver.
  void* hint = addr ? reinterpret_cast<void*>(addr) : nullptr;
  void* p =
      mmap(hint, size + alignment, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + alignment - 1) / alignment * alignment;
  if (aligned > start) munmap(p, aligned - start);
  const uintptr_t tail = aligned + size;
  if (start + size + alignment > tail)
    munmap(reinterpret_cast<void*>(tail), start + size + alignment - tail);
  std::lock_guard<std::mutex> lock(mutex());
  reservations()[aligned] = size;
  *ptr = static_cast<CUdeviceptr>(aligned);
  return CUDA_SUCCESS;
}

// The whole reservation, once nothing is mapped in it.
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FAKE_CUDA_ENTRY("cuMemAddressFree");
  std::lock_guard<std::mutex> lock(mutex());
  auto it = reservations().find(static_cast<uintptr_t>(ptr));
  if (it == reservations().end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = mappings().lower_bound(static_cast<uintptr_t>(ptr));
  if (m != mappings().end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(ptr), size);
  reservations().erase(it);
  return CUDA_SUCCESS;
}

// Maps the allocation's first `size` bytes (offset 0 only) into a reservation, inaccessible until
// cuMemSetAccess.
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags) {
  FAKE_CUDA_ENTRY("cuMemMap");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (offset != 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (size == 0 || !multiple(size) || !multiple(ptr)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(mutex());
  Allocation* a = lookupLocked(handle);
  if (!a || size > a->size) return CUDA_ERROR_INVALID_VALUE;
  const auto base = static_cast<uintptr_t>(ptr);
  auto r = reservations().upper_bound(base);
  if (r == reservations().begin()) return CUDA_ERROR_INVALID_VALUE;
  --r;
  if (base + size > r->first + r->second) return CUDA_ERROR_INVALID_VALUE;
  auto m = mappings().upper_bound(base);
  if (m != mappings().begin() && std::prev(m)->first + std::prev(m)->second.size > base)
    return CUDA_ERROR_INVALID_VALUE;
  if (m != mappings().end() && m->first < base + size) return CUDA_ERROR_INVALID_VALUE;
  if (mmap(reinterpret_cast<void*>(base), size, PROT_NONE, MAP_SHARED | MAP_FIXED, a->fd, 0) ==
      MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  ++a->mappings;
  mappings()[base] = Mapping{size, a};
  AddressRange range;
  range.base = base;
  range.size = size;
  range.kind = RangeKind::Mapped;
  range.accessible = false;
  fake_cuda::addRange(range);
  return CUDA_SUCCESS;
}

// One whole mapping (the fake does not split or join them); the addresses go back to the
// reservation, inaccessible.
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FAKE_CUDA_ENTRY("cuMemUnmap");
  std::lock_guard<std::mutex> lock(mutex());
  auto m = mappings().find(static_cast<uintptr_t>(ptr));
  if (m == mappings().end() || m->second.size != size) return CUDA_ERROR_INVALID_VALUE;
  // Forgotten first: a stream memory operation polling it sees it gone, not unmapped memory.
  fake_cuda::removeRange(m->first, kindBit(RangeKind::Mapped));
  mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  Allocation* a = m->second.allocation;
  mappings().erase(m);
  --a->mappings;
  dropIfUnusedLocked(a);
  return CUDA_SUCCESS;
}

// Access for every device named (the fake's devices share one address space: the widest access
// asked for applies). The range must be mapped throughout.
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
  FAKE_CUDA_ENTRY("cuMemSetAccess");
  if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
    if (desc[i].location.id < 0 || desc[i].location.id >= fake_cuda::config().devices)
      return CUDA_ERROR_INVALID_DEVICE;
    switch (desc[i].flags) {
      case CU_MEM_ACCESS_FLAGS_PROT_NONE: break;
      case CU_MEM_ACCESS_FLAGS_PROT_READ: prot |= PROT_READ; break;
      case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: prot |= PROT_READ | PROT_WRITE; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  const auto base = static_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex());
  auto m = mappings().upper_bound(base);
  if (m == mappings().begin()) return CUDA_ERROR_INVALID_VALUE;
  --m;
  for (uintptr_t at = base; at < base + size;) {  // contiguous mappings cover the range
    if (m == mappings().end() || m->first > at || m->first + m->second.size <= at)
      return CUDA_ERROR_INVALID_VALUE;
    at = m->first + m->second.size;
    ++m;
  }
  if (mprotect(reinterpret_cast<void*>(ptr), size, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
  fake_cuda::setAccessible(base, size, prot != PROT_NONE);
  return CUDA_SUCCESS;
}

}  // extern "C"
