// The fake driver's CUDA IPC memory handles (fake_cuda.hpp: behaviour M4): cuIpcGetMemHandle,
// cuIpcOpenMemHandle (its _v2 name) and cuIpcCloseMemHandle, for cuMemAlloc memory that another
// process can map: with BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS=1 each cuMemAlloc allocation is a
// memfd of its own (memory.cpp). Without it, allocations are heap memory (which AddressSanitizer
// watches) and cuIpcGetMemHandle answers CUDA_ERROR_NOT_SUPPORTED, saying why.
//
// The 64-byte handle names the exporting process, its memfd's descriptor number, the mapped size
// and the allocation's serial number (also in the memfd's name, so that a descriptor number reused
// after the exporter freed the allocation is told apart). The importer opens
// /proc/<pid>/fd/<n> (allowed between processes of one user), checks the name, maps it shared and
// closes the descriptor again: the mapping alone keeps the bytes alive.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "fake_cuda.hpp"

using fake_cuda::AddressRange;
using fake_cuda::kindBit;
using fake_cuda::RangeKind;
using fake_cuda::tCurrent;

namespace {

constexpr char kMagic[8] = {'b', 'f', 'c', 'u', 'i', 'p', 'c', '1'};

struct Payload {
  char magic[8];
  int32_t pid;
  int32_t fd;
  uint64_t size;
  uint64_t serial;
};
static_assert(sizeof(Payload) <= CU_IPC_HANDLE_SIZE);

// What this process opened: by address, with the exporter's (pid, serial) and a count of opens.
struct Opened {
  int32_t pid = 0;
  uint64_t serial = 0;
  size_t size = 0;
  int refs = 0;
};
std::mutex gMutex;
std::map<uintptr_t, Opened> gOpened;

// Whether `path` names a memfd of serial `serial` made by memory.cpp.
bool isAllocation(const char* path, uint64_t serial) {
  char link[256] = {};
  if (readlink(path, link, sizeof link - 1) <= 0) return false;
  char expected[128];
  std::snprintf(expected, sizeof expected, "/memfd:%s%llu ", fake_cuda::kIpcMemfdPrefix,
                static_cast<unsigned long long>(serial));
  return std::strncmp(link, expected, std::strlen(expected)) == 0;
}

}  // namespace

extern "C" {

// Any address inside a cuMemAlloc allocation names the whole allocation (the H100 accepted an
// interior pointer too); other memory (host, pools) is CUDA_ERROR_INVALID_VALUE, as there.
CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  FAKE_CUDA_ENTRY("cuIpcGetMemHandle");
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  AddressRange r;
  if (!fake_cuda::findRange(dptr, 1, &r) || r.kind != RangeKind::Device)
    return CUDA_ERROR_INVALID_VALUE;
  Payload p{};
  size_t size = 0;
  if (!fake_cuda::shareableAllocation(r.base, &p.fd, &size, &p.serial)) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      std::fprintf(stderr,
                   "fake CUDA: cuIpcGetMemHandle: this allocation is heap memory no other process "
                   "can map; set BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS=1 for memfd-backed "
                   "cuMemAlloc: CUDA_ERROR_NOT_SUPPORTED\n");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  std::memcpy(p.magic, kMagic, sizeof kMagic);
  p.pid = static_cast<int32_t>(getpid());
  p.size = size;
  std::memset(handle, 0, sizeof *handle);
  std::memcpy(handle->reserved, &p, sizeof p);
  return CUDA_SUCCESS;
}

// The exporter's allocation, mapped here. In the exporting process itself:
// CUDA_ERROR_INVALID_CONTEXT, as measured on the H100; a second open of the same handle returns
// the same address and counts (as the driver documents). A handle that names no live allocation
// (bytes of no handle: CUDA_ERROR_INVALID_VALUE, as measured; an exporter gone or an allocation
// freed: CUDA_ERROR_INVALID_HANDLE).
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int flags) {
  FAKE_CUDA_ENTRY("cuIpcOpenMemHandle");
  if (!pdptr || (flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) return CUDA_ERROR_INVALID_VALUE;
  Payload p;
  std::memcpy(&p, handle.reserved, sizeof p);
  if (std::memcmp(p.magic, kMagic, sizeof kMagic) != 0 || p.size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!tCurrent || p.pid == static_cast<int32_t>(getpid())) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(gMutex);
  for (auto& [base, o] : gOpened) {
    if (o.pid == p.pid && o.serial == p.serial) {
      ++o.refs;
      *pdptr = static_cast<CUdeviceptr>(base);
      return CUDA_SUCCESS;
    }
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", p.pid, p.fd);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
  char self[64];
  std::snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
  void* m = isAllocation(self, p.serial)
                ? mmap(nullptr, p.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : nullptr;
  close(fd);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (m == MAP_FAILED) return CUDA_ERROR_MAP_FAILED;
  const auto base = reinterpret_cast<uintptr_t>(m);
  gOpened[base] = Opened{p.pid, p.serial, p.size, 1};
  AddressRange r;
  r.base = base;
  r.size = p.size;
  r.kind = RangeKind::IpcOpened;
  fake_cuda::addRange(r);
  *pdptr = static_cast<CUdeviceptr>(base);
  return CUDA_SUCCESS;
}

// Unmapped when the last open is closed; another address is CUDA_ERROR_INVALID_VALUE, as
// measured.
CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr) {
  FAKE_CUDA_ENTRY("cuIpcCloseMemHandle");
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = gOpened.find(static_cast<uintptr_t>(dptr));
  if (it == gOpened.end()) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second.refs > 0) return CUDA_SUCCESS;
  fake_cuda::removeRange(it->first, kindBit(RangeKind::IpcOpened));
  munmap(reinterpret_cast<void*>(it->first), it->second.size);
  gOpened.erase(it);
  return CUDA_SUCCESS;
}

}  // extern "C"
