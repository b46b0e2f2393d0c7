// The CUDA driver API, loaded at run time: libbaton is compiled against cuda.h only and never links
// libcuda, so a machine without the NVIDIA driver still runs everything else.
//
// The entry points are listed once, in X-macros: REQUIRED ones must all resolve or the backend is
// unavailable; OPTIONAL ones (memory pools, external semaphores and memory, stream memory
// operations, modules, graphs and stream capture, virtual memory management) may be null and gate
// capabilities; the IPC event handles are there for the raw baselines of bench/cuda/shared_bench
// only. cuda.h maps API names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2,
// cuDeviceGetUuid -> cuDeviceGetUuid_v2, cuGraphInstantiate -> cuGraphInstantiateWithFlags); the
// table resolves exactly the symbol that the header's prototype describes, so the types always
// match.
//
// Every call goes through BATON_CU, the one wrapper where tests inject faults (injectFault).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "driver_library.hpp"
#include "status.hpp"

// clang-format off
#define BATON_CUDA_REQUIRED(X)                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                     \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetUuid)                  \
  X(cuDeviceTotalMem) X(cuDeviceGetAttribute)                                               \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)                                  \
  X(cuCtxGetCurrent) X(cuCtxSetCurrent)                                                     \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)          \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) \
  X(cuLaunchHostFunc)                                                                       \
  X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer) \
  X(cuMemcpyAsync) X(cuMemcpyHtoDAsync) X(cuMemsetD32Async)

#define BATON_CUDA_OPTIONAL(X)                                                              \
  X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolSetAttribute)                           \
  X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync)                                              \
  X(cuImportExternalSemaphore) X(cuDestroyExternalSemaphore)                                \
  X(cuSignalExternalSemaphoresAsync) X(cuWaitExternalSemaphoresAsync)                       \
  X(cuImportExternalMemory) X(cuDestroyExternalMemory) X(cuExternalMemoryGetMappedBuffer)   \
  X(cuStreamWaitValue32) X(cuStreamWriteValue32) X(cuStreamWaitValue64) X(cuStreamWriteValue64) \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel)            \
  X(cuMemGetInfo) X(cuCtxSynchronize) X(cuMemcpyHtoD) X(cuMemcpyDtoH)                       \
  X(cuEventElapsedTime) X(cuStreamQuery)                                                    \
  X(cuIpcGetEventHandle) X(cuIpcOpenEventHandle)                                            \
  X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle)                        \
  X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphAddEmptyNode) X(cuGraphAddMemcpyNode)         \
  X(cuGraphAddMemsetNode) X(cuGraphAddHostNode) X(cuGraphAddChildGraphNode)                 \
  X(cuGraphInstantiate) X(cuGraphExecDestroy) X(cuGraphLaunch) X(cuGraphExecUpdate)         \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuStreamIsCapturing)                     \
  X(cuMemHostRegister) X(cuMemHostUnregister)                                              \
  X(cuMemGetAllocationGranularity) X(cuMemCreate) X(cuMemRelease)                          \
  X(cuMemExportToShareableHandle) X(cuMemImportFromShareableHandle)                        \
  X(cuMemGetAllocationPropertiesFromHandle) X(cuMemAddressReserve) X(cuMemAddressFree)     \
  X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)                                             \
  X(cuExternalMemoryGetMappedMipmappedArray) X(cuMipmappedArrayGetLevel)                   \
  X(cuMipmappedArrayDestroy) X(cuSurfObjectCreate) X(cuSurfObjectDestroy)                  \
  X(cuTexObjectCreate) X(cuTexObjectDestroy) X(cuMemcpy3DAsync)
// clang-format on

namespace baton::cuda {

// The symbol each entry point resolves to, after cuda.h's versioning macros.
#define BATON_CUDA_STR2(x) #x
#define BATON_CUDA_STR(x) BATON_CUDA_STR2(x)

// One enumerator per entry point (named after the versioned symbol), for fault injection.
enum class Api : uint16_t {
#define BATON_CUDA_ENUM(name) name,
  BATON_CUDA_REQUIRED(BATON_CUDA_ENUM) BATON_CUDA_OPTIONAL(BATON_CUDA_ENUM)
#undef BATON_CUDA_ENUM
      Count
};

struct Symbols {
#define BATON_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  BATON_CUDA_REQUIRED(BATON_CUDA_MEMBER)
  BATON_CUDA_OPTIONAL(BATON_CUDA_MEMBER)
#undef BATON_CUDA_MEMBER
};

// The driver, loaded once per process and never unloaded (threads of the driver outlive any
// object of ours). load() is idempotent and thread safe; its first outcome is kept.
struct Driver {
  Symbols sym;
  int version = 0;  // cuDriverGetVersion, e.g. 13000
  core::Status loadStatus;
};
// Loads libcuda.so.1 (or $BATON_CUDA_DRIVER when set) and calls cuInit(0). Success or
// ErrorBackendUnavailable naming the paths tried, the dlopen errors, the missing required
// entry points or cuInit's error.
const Driver& loadDriver();
// The loaded driver's symbols; only valid after loadDriver() succeeded.
const Symbols& symbols();

// CUresult -> Status: Success, NotReady, or an error whose message is
// "<api> failed: <CUDA_ERROR_NAME> (<description>)"; sticky faults give ErrorDeviceLost,
// out-of-memory ErrorOutOfDeviceMemory, a missing or mismatched driver ErrorBackendUnavailable,
// CUDA_ERROR_NOT_SUPPORTED ErrorNotSupported, everything else ErrorDriver. Success is decided
// inline: every driver call of the submit path returns it.
core::Status errorStatus(CUresult result, const char* api);  // the rest
inline core::Status toStatus(CUresult result, const char* api) {
  if (result == CUDA_SUCCESS) [[likely]]
    return core::Status();
  return errorStatus(result, api);
}
// Whether the error leaves the context unusable (it is reported by every later call).
bool isSticky(CUresult result);
// "CUDA_ERROR_ILLEGAL_ADDRESS", or "CUresult(<n>)" when the driver does not know it.
std::string resultName(CUresult result);

// ---- fault injection (tests) ------------------------------------------------------------------

// Makes `count` calls of the entry point `api` (an API name from cuda.h such as "cuEventRecord",
// or its versioned symbol), after `skip` calls that succeed normally, return `result` without
// calling the driver. Returns false for an unknown name. Thread safe; for tests only.
bool injectFault(const char* api, CUresult result, uint32_t skip = 0, uint32_t count = 1);
// The same, but the driver is called first and its result replaced by `result`: an error
// reported by a call that did its work (drivers report errors of earlier asynchronous work from
// unrelated calls). For release entry points, whose object the driver then still frees.
bool injectFaultAfterCall(const char* api, CUresult result, uint32_t skip = 0, uint32_t count = 1);
// Removes every injected fault.
void clearFaults();
// How many injected faults fired since the last clearFaults().
uint64_t faultsFired();
// Starts (from zero) or stops counting the calls of each entry point at the wrapper, so that a
// test can list the (entry point, occurrence) pairs a workload makes (tests/faults). Counting
// arms the wrapper: every call then takes a lock. For tests only.
void recordCalls(bool on);
// The entry points called since counting last started, with how often; in table order.
std::vector<stream::CallCount> callCounts();
// Makes every call through the wrapper fail with `result` (e.g. CUDA_ERROR_OUT_OF_MEMORY) with
// probability `probability`, drawn from a PRNG seeded with `seed`; a probability <= 0 ends it, and
// so does clearFaults(). For tests only.
void injectRandomFaults(uint64_t seed, double probability, CUresult result);

namespace detail {
extern stream::DriverFaults faults;
}  // namespace detail

}  // namespace baton::cuda

// Calls a driver entry point through the fault-injection wrapper; yields its CUresult.
#define BATON_CU(name, ...)                                                                      \
  ::baton::stream::callDriver<CUresult>(::baton::cuda::detail::faults, ::baton::cuda::Api::name, \
                                        ::baton::cuda::symbols().name, __VA_ARGS__)
// The same, as a Status naming the call.
#define BATON_CU_STATUS(name, ...) ::baton::cuda::toStatus(BATON_CU(name, __VA_ARGS__), #name)
