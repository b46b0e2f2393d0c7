// The HIP runtime, loaded at run time: libbaton is compiled against Debian's libamdhip64-dev
// headers (ROCm 5.2, AMD platform) only and never links a HIP library, so a machine without ROCm
// still runs everything else.
//
// The entry points are listed once, in X-macros: REQUIRED ones must all resolve or the backend is
// unavailable; OPTIONAL ones gate capabilities or name a real difference between HIP versions:
//   hipLaunchHostFunc   declared by 5.2 but not exported; hipStreamAddCallback is used instead
//   hipDeviceGetUuid    exported since 5.2 (the UUID that Vulkan's deviceUUID matches)
//   pools, external semaphores and memory, stream memory operations, modules, graphs and stream
//   capture, IPC memory handles: capabilities.
//   IPC event handles: the raw baselines of bench/cuda/shared_bench only.
// HIP's C++ overloads (hipMallocFromPoolAsync<T>) make `decltype(&::name)` ambiguous, so those
// entries name their C prototype (BATON_HIP_OPTIONAL_TYPED).
//
// Every call goes through BATON_HIP, the one wrapper where tests inject faults (injectFault).
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#ifndef __HIP_DISABLE_CPP_FUNCTIONS__
#define __HIP_DISABLE_CPP_FUNCTIONS__ 1
#endif
#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "driver_library.hpp"
#include "status.hpp"

// clang-format off
#define BATON_HIP_REQUIRED(X)                                                                \
  X(hipInit) X(hipDriverGetVersion) X(hipRuntimeGetVersion)                                  \
  X(hipGetErrorName) X(hipGetErrorString)                                                    \
  X(hipGetDeviceCount) X(hipDeviceGet) X(hipDeviceGetName) X(hipDeviceTotalMem)              \
  X(hipDeviceGetAttribute) X(hipGetDeviceProperties) X(hipGetDevice) X(hipSetDevice)         \
  X(hipStreamCreateWithFlags) X(hipStreamDestroy) X(hipStreamSynchronize)                    \
  X(hipStreamWaitEvent) X(hipStreamAddCallback)                                              \
  X(hipEventCreateWithFlags) X(hipEventDestroy) X(hipEventRecord) X(hipEventQuery)           \
  X(hipEventSynchronize)                                                                     \
  X(hipMalloc) X(hipFree) X(hipHostMalloc) X(hipHostFree) X(hipHostGetDevicePointer)         \
  X(hipMemcpyAsync) X(hipMemcpyHtoDAsync) X(hipMemsetD32Async)

#define BATON_HIP_OPTIONAL(X)                                                                \
  X(hipDeviceGetUuid) X(hipLaunchHostFunc)                                                   \
  X(hipDeviceGetDefaultMemPool) X(hipFreeAsync) X(hipMemPoolSetAttribute)                    \
  X(hipImportExternalSemaphore) X(hipDestroyExternalSemaphore)                               \
  X(hipSignalExternalSemaphoresAsync) X(hipWaitExternalSemaphoresAsync)                      \
  X(hipImportExternalMemory) X(hipDestroyExternalMemory) X(hipExternalMemoryGetMappedBuffer) \
  X(hipStreamWaitValue64) X(hipStreamWriteValue64)                                           \
  X(hipModuleLoadData) X(hipModuleUnload) X(hipModuleGetFunction) X(hipModuleLaunchKernel)   \
  X(hipGraphCreate) X(hipGraphDestroy) X(hipGraphAddEmptyNode) X(hipGraphAddMemcpyNode1D)    \
  X(hipGraphAddMemsetNode) X(hipGraphAddHostNode) X(hipGraphAddChildGraphNode)               \
  X(hipGraphInstantiateWithFlags) X(hipGraphExecDestroy) X(hipGraphLaunch)                   \
  X(hipGraphExecUpdate) X(hipStreamBeginCapture) X(hipStreamEndCapture)                      \
  X(hipStreamIsCapturing)                                                                    \
  X(hipMemGetInfo) X(hipDeviceSynchronize) X(hipMemcpyHtoD) X(hipMemcpyDtoH)                 \
  X(hipEventElapsedTime) X(hipStreamQuery)                                                   \
  X(hipIpcGetEventHandle) X(hipIpcOpenEventHandle)                                           \
  X(hipIpcGetMemHandle) X(hipIpcOpenMemHandle) X(hipIpcCloseMemHandle)                      \
  X(hipHostRegister) X(hipHostUnregister)

#define BATON_HIP_OPTIONAL_TYPED(X)                                                          \
  X(hipMallocFromPoolAsync, hipError_t (*)(void**, size_t, hipMemPool_t, hipStream_t))
// clang-format on

namespace baton::hip {

// One enumerator per entry point, for fault injection.
enum class Api : uint16_t {
#define BATON_HIP_ENUM(name) name,
#define BATON_HIP_ENUM_TYPED(name, type) name,
  BATON_HIP_REQUIRED(BATON_HIP_ENUM) BATON_HIP_OPTIONAL(BATON_HIP_ENUM)
      BATON_HIP_OPTIONAL_TYPED(BATON_HIP_ENUM_TYPED)
#undef BATON_HIP_ENUM
#undef BATON_HIP_ENUM_TYPED
          Count
};

struct Symbols {
#define BATON_HIP_MEMBER(name) decltype(&::name) name = nullptr;
#define BATON_HIP_MEMBER_TYPED(name, type) std::type_identity_t<type> name = nullptr;
  BATON_HIP_REQUIRED(BATON_HIP_MEMBER)
  BATON_HIP_OPTIONAL(BATON_HIP_MEMBER)
  BATON_HIP_OPTIONAL_TYPED(BATON_HIP_MEMBER_TYPED)
#undef BATON_HIP_MEMBER
#undef BATON_HIP_MEMBER_TYPED
};

// The runtime, loaded once per process and never unloaded (its threads outlive any object of
// ours). loadDriver() is idempotent and thread safe; its first outcome is kept.
struct Driver {
  Symbols sym;
  std::string path;        // the library that loaded
  int driverVersion = 0;   // hipDriverGetVersion
  int runtimeVersion = 0;  // hipRuntimeGetVersion, e.g. 50221153 for ROCm 5.2.3
  // Success once the library loaded and resolved. hipInit's own failure is not a load failure:
  // AMD's runtime answers hipErrorInvalidDevice or hipErrorNoDevice on a machine without an AMD
  // GPU, and the backend then reports 0 devices with that reason (initStatus).
  core::Status loadStatus;
  core::Status initStatus;
};
// Loads $BATON_HIP_DRIVER when set, else libamdhip64.so.5, then libamdhip64.so, and calls
// hipInit(0). loadStatus is Success or ErrorBackendUnavailable naming the paths tried, the dlopen
// errors or the missing required entry points.
const Driver& loadDriver();
// The loaded runtime's symbols; only valid after loadDriver() succeeded.
const Symbols& symbols();

// hipError_t -> Status: Success, NotReady, or an error whose message is
// "<api> failed: <hipErrorName> (<hipGetErrorString>)"; sticky faults give ErrorDeviceLost,
// out-of-memory ErrorOutOfDeviceMemory, a missing device or runtime ErrorBackendUnavailable,
// hipErrorNotSupported ErrorNotSupported, everything else ErrorDriver.
core::Status errorStatus(hipError_t result, const char* api);
inline core::Status toStatus(hipError_t result, const char* api) {
  if (result == hipSuccess) [[likely]]
    return core::Status();
  return errorStatus(result, api);
}
// Whether the error leaves the device unusable (reported by every later call).
bool isSticky(hipError_t result);
// "hipErrorIllegalAddress", or "hipError_t(<n>)" when the runtime does not know it.
std::string resultName(hipError_t result);

// ---- fault injection (tests) ------------------------------------------------------------------

// Makes `count` calls of the entry point `api` ("hipEventRecord"), after `skip` calls that succeed
// normally, return `result` without calling the runtime. Returns false for an unknown name.
// Thread safe; for tests only.
bool injectFault(const char* api, hipError_t result, uint32_t skip = 0, uint32_t count = 1);
// The same, but the driver is called first and its result replaced by `result`: an error
// reported by a call that did its work (drivers report errors of earlier asynchronous work from
// unrelated calls). For release entry points, whose object the driver then still frees.
bool injectFaultAfterCall(const char* api, hipError_t result, uint32_t skip = 0,
                          uint32_t count = 1);
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
// Makes every call through the wrapper fail with `result` (e.g. hipErrorOutOfMemory) with
// probability `probability`, drawn from a PRNG seeded with `seed`; a probability <= 0 ends it, and
// so does clearFaults(). For tests only.
void injectRandomFaults(uint64_t seed, double probability, hipError_t result);

namespace detail {
extern stream::DriverFaults faults;
}  // namespace detail

}  // namespace baton::hip

// Calls a runtime entry point through the fault-injection wrapper; yields its hipError_t.
#define BATON_HIP(name, ...)                                                                     \
  ::baton::stream::callDriver<hipError_t>(::baton::hip::detail::faults, ::baton::hip::Api::name, \
                                          ::baton::hip::symbols().name, __VA_ARGS__)
// The same, as a Status naming the call.
#define BATON_HIP_STATUS(name, ...) ::baton::hip::toStatus(BATON_HIP(name, __VA_ARGS__), #name)
