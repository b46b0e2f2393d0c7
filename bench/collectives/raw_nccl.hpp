// The raw side of collectives_bench: the NCCL entry points that its raw figures call, opened by the
// benchmark itself with dlopen, not through baton's collective library (impl/stream), so that a
// raw figure is NCCL's own cost plus one indirect call. The library is found as baton finds it
// (impl/stream/collective_library.cpp): $BATON_NCCL_LIBRARY when set, else libnccl.so.2, then
// libnccl.so. Where both load the same file the process holds one copy of NCCL; the two sides'
// communicators are separate either way.
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <nccl.h>

#include <cstdlib>
#include <string>

namespace baton_bench {

// The entry points the raw side calls; each resolves to the type nccl.h declares.
#define BATON_BENCH_NCCL_ENTRY_POINTS(X) \
  X(ncclGetVersion)                      \
  X(ncclGetErrorString)                  \
  X(ncclCommInitAll)                     \
  X(ncclCommDestroy) X(ncclGroupStart) X(ncclGroupEnd) X(ncclAllReduce) X(ncclCommGetAsyncError)

struct RawNccl {
#define BATON_BENCH_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  BATON_BENCH_NCCL_ENTRY_POINTS(BATON_BENCH_NCCL_MEMBER)
#undef BATON_BENCH_NCCL_MEMBER
  int version = 0;     // ncclGetVersion: 22809 for 2.28.9
  std::string path;    // the file that loaded, as the dynamic linker resolved it
  std::string reason;  // why it did not load; "" when it did

  bool loaded() const { return reason.empty(); }
};

// Opens NCCL and resolves the entry points; on failure, `reason` names the paths tried and why.
// The library is never closed (its threads outlive the benchmark's objects).
inline RawNccl loadRawNccl() {
  RawNccl nccl;
  std::string tried;
  void* handle = nullptr;
  const char* override = std::getenv("BATON_NCCL_LIBRARY");
  for (const char* candidate :
       {override && *override ? override : nullptr, "libnccl.so.2", "libnccl.so"}) {
    if (!candidate) continue;
    handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* error = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + candidate + ": " + (error ? error : "?");
  }
  if (!handle) {
    nccl.reason = "NCCL could not be loaded (tried " + tried + ")";
    return nccl;
  }
  link_map* map = nullptr;
  nccl.path = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map ? map->l_name : "?";
  std::string missing;
#define BATON_BENCH_NCCL_RESOLVE(name)                                   \
  nccl.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name)); \
  if (!nccl.name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  BATON_BENCH_NCCL_ENTRY_POINTS(BATON_BENCH_NCCL_RESOLVE)
#undef BATON_BENCH_NCCL_RESOLVE
  if (!missing.empty()) {
    nccl.reason = "NCCL (" + nccl.path + ") lacks " + missing;
    return nccl;
  }
  if (nccl.ncclGetVersion(&nccl.version) != ncclSuccess)
    nccl.reason = "NCCL (" + nccl.path + "): ncclGetVersion failed";
  return nccl;
}

}  // namespace baton_bench
