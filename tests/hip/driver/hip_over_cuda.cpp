// libbaton_hip_over_cuda.so: the HIP runtime entry points that baton's HIP backend loads
// (impl/hip/hip_symbols.hpp), implemented over the CUDA driver API, so that the backend's own code
// (its symbol table, error mapping, enumeration and the shared stream machinery of impl/stream)
// runs on an NVIDIA GPU with real asynchrony. It exists because the H100 test machine has no AMD
// GPU and HIP 5.2's own NVIDIA-platform headers do not compile against CUDA 13.
// baton loads it through BATON_HIP_DRIVER, exactly as it would load libamdhip64.so.5.
//
// The prototypes are those of ROCm 5.2's AMD-platform headers (hip_over_cuda.hpp), so each hip*
// name has the type baton resolves. This file loads the driver and holds HIP's current-device
// model; hip_over_cuda_devices.cpp answers device queries, hip_over_cuda_execution.cpp streams,
// events, callbacks and kernel launches, hip_over_cuda_memory.cpp memory, copies, pools and
// imports, hip_over_cuda_graphs.cpp graphs and stream capture, hip_over_cuda_errors.cpp the
// error names and the CUresult mapping. Handles pass straight
// through: a hipStream_t IS a CUstream, a hipEvent_t a CUevent (likewise pools, modules, functions,
// external memory), so a native callback that receives baton's hipStream_t may hand it to CUDA
// code.
//
// Loading. libcuda is never linked; the cu* entry points are resolved once (std::call_once) with
// dlopen/dlsym, under the versioned symbols cuda.h maps their names to (cuMemAlloc ->
// cuMemAlloc_v2), from the first of:
//   (a) the library named by $BATON_HIP_CUDA_DRIVER;
//   (b) this shared object itself, when it also exports cuInit: that is the fake CUDA driver of
//       tests/cuda (libbaton_fake_cuda.so), which compiles these files in so that one emulation
//       answers under both name sets;
//   (c) libcuda.so.1.
// When that fails, hipInit and hipGetDeviceCount answer hipErrorInsufficientDriver (or cuInit's
// own error, mapped: hipErrorNoDevice where CUDA finds no device) and every other call
// hipErrorNotInitialized.
//
// What it implements, and how HIP's contracts map onto CUDA's:
//   - HIP's current-device model over contexts: hipSetDevice(n) makes device n's primary context
//     current (retained once, kept for the process, as HIP's runtime keeps its devices);
//     hipGetDevice names the device of the current context, and 0 on a thread that never chose
//     one (HIP's default device); a call that needs a context on a thread without one first makes
//     device 0's primary context current (HIP's implicit device 0).
//   - enumeration (names, memory, the CUDA device's own UUID, properties with gcnArchName
//     "sm_<major><minor>", attributes), streams, events, hipStreamAddCallback, device and pinned
//     host memory, copies and fills, the device's default stream-ordered pool, OPAQUE_FD memory
//     import, modules (the tests' PTX kernels load and launch through HIP names), graphs of
//     empty, 1D copy, fill, host and child nodes, their instantiation, launch and update, and
//     stream capture;
//   - what processes share: host registration (hipHostRegister, hipHostUnregister; device
//     pointers from hipHostGetDevicePointer), IPC memory handles (hipIpcGetMemHandle,
//     hipIpcOpenMemHandle, hipIpcCloseMemHandle), and the stream memory operations
//     (hipStreamWaitValue32/64, hipStreamWriteValue32/64) where the driver exports CUDA's _v2
//     ones, hipDeviceAttributeCanUseStreamWaitValue reporting the device's
//     CAN_USE_64_BIT_STREAM_MEM_OPS (0 without them). HIP's wait mask is translated only where
//     CUDA's condition is the same (hip_over_cuda_execution.cpp says which);
//   - hipGetErrorName/hipGetErrorString for every hipError_t of 5.2, and a CUresult mapping that
//     keeps CUDA's sticky errors sticky.
//
// What it leaves out on purpose, so that baton takes the paths it takes on ROCm 5.2:
//   - hipLaunchHostFunc (5.2 declares it but does not export it; baton uses hipStreamAddCallback);
//   - the external semaphore entries (5.2 has no timeline handle type; baton bridges semaphores
//     on HIP).
// Built into the fake driver, it also leaves out what that emulation has no CUDA entry point for
// (HIP_OVER_CUDA_NO_MODULES, HIP_OVER_CUDA_NO_EXTERNAL_MEMORY): one emulation, two name sets.
//
// What it cannot prove: AMD's own runtime behaviour. Event and stream semantics here are CUDA's
// (when an event counts as complete, how host callbacks are scheduled, what a fault does to the
// queues; on a context error CUDA runs no further host functions, where HIP documents every
// callback as called exactly once), and AMD-specific flags (coherent host memory, release scopes
// of events) are accepted and have no effect. Those need an AMD GPU.
#include "hip_over_cuda.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

// The symbol an entry point resolves to, after cuda.h's versioning macros.
#define HIP_OVER_CUDA_STR2(x) #x
#define HIP_OVER_CUDA_STR(x) HIP_OVER_CUDA_STR2(x)

namespace hip_over_cuda {

Cuda gCuda;
std::atomic<bool> gReady{false};

namespace {

std::once_flag gOnce;

// ---- loading ----------------------------------------------------------------------------------

// Rule (b): this object itself, when it exports cuInit. A function of internal linkage names the
// object (the address of an exported one could resolve to another library's definition).
void* openSelf() {
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&openSelf), &self) || !self.dli_fname) return nullptr;
  void* handle = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return nullptr;
  // dlsym searches the object's dependencies too: only a cuInit defined in this object counts.
  Dl_info where{};
  void* init = dlsym(handle, "cuInit");
  if (init && dladdr(init, &where) && where.dli_fbase == self.dli_fbase) return handle;
  dlclose(handle);
  return nullptr;
}

void* openDriver() {
  if (const char* path = std::getenv("BATON_HIP_CUDA_DRIVER"); path && *path) {
    // An explicit choice is not second-guessed with a fallback; say why it failed.
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      std::fprintf(stderr, "hip_over_cuda: BATON_HIP_CUDA_DRIVER=%s: %s\n", path, dlerror());
    return handle;
  }
  if (void* self = openSelf()) return self;
  return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
}

hipError_t load(Cuda& c) {
  void* lib = openDriver();
  if (!lib) return hipErrorInsufficientDriver;
  bool missing = false;
  auto resolve = [&](auto& slot, const char* symbol, bool required) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(lib, symbol));
    if (!slot && required) {
      std::fprintf(stderr, "hip_over_cuda: the CUDA driver lacks %s\n", symbol);
      missing = true;
    }
  };
#define HIP_OVER_CUDA_RESOLVE_REQUIRED(name) resolve(c.name, HIP_OVER_CUDA_STR(name), true);
#define HIP_OVER_CUDA_RESOLVE_OPTIONAL(name) resolve(c.name, HIP_OVER_CUDA_STR(name), false);
  HIP_OVER_CUDA_REQUIRED(HIP_OVER_CUDA_RESOLVE_REQUIRED)
  HIP_OVER_CUDA_OPTIONAL(HIP_OVER_CUDA_RESOLVE_OPTIONAL)
#undef HIP_OVER_CUDA_RESOLVE_REQUIRED
#undef HIP_OVER_CUDA_RESOLVE_OPTIONAL
  if (missing) return hipErrorInsufficientDriver;
  if (CUresult r = c.cuInit(0)) return fromCuda(r);
  int count = 0;
  if (CUresult r = c.cuDeviceGetCount(&count)) return fromCuda(r);
  if (count <= 0) return hipErrorNoDevice;
  c.devices = new CUdevice[count];
  for (int i = 0; i < count; ++i)
    if (CUresult r = c.cuDeviceGet(&c.devices[i], i)) return fromCuda(r);
  c.primary = new std::atomic<CUcontext>[count]();
  c.count = count;
  return hipSuccess;
}

// ---- HIP's current device over CUDA contexts ---------------------------------------------------

hipError_t primaryContext(Cuda& c, int ordinal, CUcontext* out) {
  CUcontext ctx = c.primary[ordinal].load(std::memory_order_acquire);
  if (!ctx) {
    std::lock_guard<std::mutex> lock(c.retainLock);
    ctx = c.primary[ordinal].load(std::memory_order_relaxed);
    if (!ctx) {
      if (CUresult r = c.cuDevicePrimaryCtxRetain(&ctx, c.devices[ordinal])) return fromCuda(r);
      c.primary[ordinal].store(ctx, std::memory_order_release);
    }
  }
  *out = ctx;
  return hipSuccess;
}

}  // namespace

Cuda& cuda() {
  std::call_once(gOnce, [] {
    gCuda.status = load(gCuda);
    gReady.store(gCuda.status == hipSuccess, std::memory_order_release);
  });
  return gCuda;
}

hipError_t makeCurrent(Cuda& c, int ordinal) {
  CUcontext ctx = nullptr;
  if (hipError_t e = primaryContext(c, ordinal, &ctx)) return e;
  return fromCuda(c.cuCtxSetCurrent(ctx));
}

hipError_t ensureContext(Cuda& c) {
  CUcontext ctx = nullptr;
  if (CUresult r = c.cuCtxGetCurrent(&ctx)) return fromCuda(r);
  return ctx ? hipSuccess : makeCurrent(c, 0);
}

}  // namespace hip_over_cuda

using hip_over_cuda::cuda;
using hip_over_cuda::Cuda;
using hip_over_cuda::fromCuda;
using hip_over_cuda::makeCurrent;
using hip_over_cuda::validOrdinal;

extern "C" {

// ---- initialization and versions --------------------------------------------------------------

hipError_t hipInit(unsigned int flags) {
  if (flags != 0) return hipErrorInvalidValue;
  return cuda().status;
}

hipError_t hipDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  return fromCuda(c->cuDriverGetVersion(driverVersion));
}

// The HIP version this library implements (the headers'), with or without a driver: baton asks
// before hipInit.
hipError_t hipRuntimeGetVersion(int* runtimeVersion) {
  if (!runtimeVersion) return hipErrorInvalidValue;
  *runtimeVersion = HIP_VERSION;
  return hipSuccess;
}

// ---- devices and the current device ----------------------------------------------------------

// Like AMD's runtime: 0 devices is hipErrorNoDevice, with *count = 0.
hipError_t hipGetDeviceCount(int* count) {
  if (!count) return hipErrorInvalidValue;
  *count = 0;
  Cuda& c = cuda();
  if (c.status != hipSuccess) return c.status;
  *count = c.count;
  return hipSuccess;
}

hipError_t hipSetDevice(int deviceId) {
  HIP_OVER_CUDA_DRIVER(c);
  if (!validOrdinal(*c, deviceId)) return hipErrorInvalidDevice;
  return makeCurrent(*c, deviceId);
}

hipError_t hipGetDevice(int* deviceId) {
  if (!deviceId) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  CUcontext ctx = nullptr;
  if (CUresult r = c->cuCtxGetCurrent(&ctx)) return fromCuda(r);
  if (!ctx) {
    *deviceId = 0;  // HIP's default device
    return hipSuccess;
  }
  // The usual case, without a driver call: a primary context this library made current.
  for (int i = 0; i < c->count; ++i) {
    if (c->primary[i].load(std::memory_order_acquire) == ctx) {
      *deviceId = i;
      return hipSuccess;
    }
  }
  // A context made current by CUDA code in the same process (baton's CUDA backend, the
  // application).
  CUdevice device = 0;
  if (CUresult r = c->cuCtxGetDevice(&device)) return fromCuda(r);
  for (int i = 0; i < c->count; ++i) {
    if (c->devices[i] == device) {
      *deviceId = i;
      return hipSuccess;
    }
  }
  return hipErrorInvalidDevice;
}

}  // extern "C"
