// What the files of the HIP-over-CUDA translation library share (hip_over_cuda.cpp says what the
// library is for): the CUDA driver entry points it resolves, the loaded driver, HIP's current
// device over CUDA contexts, the handle conversions and the CUresult mapping.
//
// The HIP types and prototypes are the AMD-platform ones of ROCm 5.2's headers, exactly those that
// baton's HIP backend is compiled against (impl/hip/hip_symbols.hpp), so that every hip* function
// defined here has the signature baton resolves; the CUDA types come from the toolkit's cuda.h
// (the driver API; nothing of it is linked).
#pragma once

// The build defines both (meson.build here, and tests/cuda's for the fake driver), as impl/hip's
// does for baton: the AMD platform, C prototypes only.
#if !defined(__HIP_PLATFORM_AMD__) || !defined(__HIP_DISABLE_CPP_FUNCTIONS__)
#error "compile with -D__HIP_PLATFORM_AMD__=1 -D__HIP_DISABLE_CPP_FUNCTIONS__=1"
#endif
#include <cuda.h>
#include <hip/hip_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <mutex>

// The CUDA entry points used. REQUIRED ones back baton's required HIP names and must all resolve;
// a missing OPTIONAL one makes its HIP counterparts answer hipErrorNotSupported. Each resolves
// under the versioned symbol cuda.h maps its name to (cuMemAlloc -> cuMemAlloc_v2), so the types
// always match.
// clang-format off
#define HIP_OVER_CUDA_REQUIRED(X)                                                            \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)      \
  X(cuDeviceTotalMem) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)                    \
  X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxGetDevice)                                    \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)           \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize)  \
  X(cuLaunchHostFunc)                                                                        \
  X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer) \
  X(cuMemcpyAsync) X(cuMemcpyHtoDAsync) X(cuMemsetD32Async)

#define HIP_OVER_CUDA_OPTIONAL(X)                                                            \
  X(cuDeviceGetUuid) X(cuStreamQuery) X(cuEventElapsedTime) X(cuCtxSynchronize)              \
  X(cuMemGetInfo) X(cuMemcpyHtoD) X(cuMemcpyDtoH)                                            \
  X(cuDeviceGetDefaultMemPool) X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync)                  \
  X(cuMemPoolSetAttribute)                                                                   \
  X(cuImportExternalMemory) X(cuExternalMemoryGetMappedBuffer) X(cuDestroyExternalMemory)    \
  X(cuModuleLoadData) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuModuleUnload)            \
  X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphAddEmptyNode) X(cuGraphAddMemcpyNode)          \
  X(cuGraphAddMemsetNode) X(cuGraphAddHostNode) X(cuGraphAddChildGraphNode)                  \
  X(cuGraphInstantiate) X(cuGraphExecDestroy) X(cuGraphLaunch) X(cuGraphExecUpdate)          \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuStreamIsCapturing)                     \
  X(cuStreamWaitValue32) X(cuStreamWaitValue64) X(cuStreamWriteValue32)                      \
  X(cuStreamWriteValue64) X(cuMemHostRegister) X(cuMemHostUnregister)                        \
  X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle)
// clang-format on

// Hidden, inline functions included: the module exports the hip* entry points only.
#pragma GCC visibility push(hidden)
namespace hip_over_cuda {

// The CUDA driver, loaded once per process (hip_over_cuda.cpp) and never unloaded.
struct Cuda {
#define HIP_OVER_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  HIP_OVER_CUDA_REQUIRED(HIP_OVER_CUDA_MEMBER)
  HIP_OVER_CUDA_OPTIONAL(HIP_OVER_CUDA_MEMBER)
#undef HIP_OVER_CUDA_MEMBER
  hipError_t status = hipErrorNotInitialized;  // hipInit's answer; hipSuccess once usable
  // By HIP ordinal, allocated once and kept for the process (plain arrays: no C++ library
  // template is instantiated, so nothing of the C++ library is exported either).
  int count = 0;
  CUdevice* devices = nullptr;
  // Each device's primary context, retained by the first hipSetDevice (or implicit device 0)
  // and never released, as HIP's runtime keeps its devices.
  std::atomic<CUcontext>* primary = nullptr;
  std::mutex retainLock;
};

extern Cuda gCuda;
extern std::atomic<bool> gReady;

// Loads the driver on the first call (thread safe) and returns it, usable or not (status).
Cuda& cuda();
// The loaded driver, or null when it could not be loaded or initialized. One load on the hot
// path.
inline Cuda* ready() {
  if (gReady.load(std::memory_order_acquire)) [[likely]]
    return &gCuda;
  Cuda& c = cuda();
  return c.status == hipSuccess ? &c : nullptr;
}

inline bool validOrdinal(const Cuda& c, int ordinal) { return ordinal >= 0 && ordinal < c.count; }

// Makes device `ordinal`'s primary context current on this thread (hipSetDevice).
hipError_t makeCurrent(Cuda& c, int ordinal);
// HIP's implicit device 0: a thread that never chose a device works on device 0, so a call that
// needs a context on a thread without one makes device 0's primary context current first.
hipError_t ensureContext(Cuda& c);
// The same for calls on `stream`: the null stream and hipStreamPerThread (CU_STREAM_PER_THREAD,
// the same value) are the current device's; any other stream carries its own context.
inline hipError_t ensureContextFor(Cuda& c, hipStream_t stream) {
  if (stream != nullptr && stream != hipStreamPerThread) return hipSuccess;
  return ensureContext(c);
}

// HIP's opaque handles are CUDA's: a hipStream_t IS a CUstream, and so on.
inline CUstream cu(hipStream_t s) { return reinterpret_cast<CUstream>(s); }
inline CUevent cu(hipEvent_t e) { return reinterpret_cast<CUevent>(e); }
inline CUmemoryPool cu(hipMemPool_t p) { return reinterpret_cast<CUmemoryPool>(p); }
inline CUmodule cu(hipModule_t m) { return reinterpret_cast<CUmodule>(m); }
inline CUfunction cu(hipFunction_t f) { return reinterpret_cast<CUfunction>(f); }
inline CUexternalMemory cuExternal(hipExternalMemory_t m) {
  return static_cast<CUexternalMemory>(m);
}
inline CUdeviceptr dptr(const void* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}
inline void* pointer(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// CUresult -> hipError_t (hip_over_cuda_errors.cpp). Most codes share their number by design
// (HIP copied CUDA's), but each one is mapped by name; CUDA's sticky errors (the context is
// unusable, "the process must be terminated and relaunched") all land on HIP errors that say so
// (hipErrorIllegalAddress, hipErrorLaunchFailure, hipErrorECCNotCorrectable, ...), never on a
// generic code.
hipError_t fromCuda(CUresult result);

}  // namespace hip_over_cuda
#pragma GCC visibility pop

// Every entry point that needs the driver starts here: `c` is the driver, or the call answers
// hipErrorNotInitialized.
#define HIP_OVER_CUDA_DRIVER(c)                        \
  ::hip_over_cuda::Cuda* c = ::hip_over_cuda::ready(); \
  if (!c) return hipErrorNotInitialized
// An optional CUDA entry point the call needs: without it, hipErrorNotSupported.
#define HIP_OVER_CUDA_NEED(c, name) \
  if (!c->name) return hipErrorNotSupported
