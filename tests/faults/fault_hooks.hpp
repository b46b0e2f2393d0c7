// What the fault sweep (fault_sweep.cpp) and the focused fault cases (fault_cases.cpp) need of a
// GPU backend beyond baton's public API: the fault injection, call counting and random faults at
// the backend's one wrapper around driver calls (docs/architecture.md, 'Layers and files';
// baton::cuda / baton::hip in impl/*/..._symbols.hpp), and the names its messages use. One table
// per backend (fault_hooks_cuda.cpp, fault_hooks_hip.cpp), registered by a static object when
// linked whole, as tests/stream does with StreamHooks.
#pragma once

#include <cstdint>
#include <vector>

#include "baton/baton.hpp"
#include "driver_library.hpp"

namespace baton_test {

// The injected errors: two transient ones and one sticky one (the device is then lost).
enum class FaultKind : uint32_t {
  OutOfMemory,     // CUDA_ERROR_OUT_OF_MEMORY / hipErrorOutOfMemory
  InvalidValue,    // CUDA_ERROR_INVALID_VALUE / hipErrorInvalidValue
  IllegalAddress,  // CUDA_ERROR_ILLEGAL_ADDRESS / hipErrorIllegalAddress: sticky
  Count
};

struct FaultHooks {
  baton::BackendKind kind;
  // Makes call number `skip` (0-based, counted from now) of entry point `api` fail with `fault`:
  // without calling the driver, or (afterCall) after calling it.
  bool (*inject)(const char* api, FaultKind fault, uint32_t skip, bool afterCall);
  // Makes every call fail with `fault` with probability `probability` (seeded PRNG).
  void (*injectRandom)(uint64_t seed, double probability, FaultKind fault);
  void (*clear)();       // removes every fault, random ones too
  uint64_t (*fired)();   // faults that fired since clear()
  void (*record)(bool);  // call counting on (from zero) or off
  std::vector<baton::stream::CallCount> (*counts)();
  // The driver's name of each FaultKind ("CUDA_ERROR_INVALID_VALUE"), as messages show it.
  const char* errorName[static_cast<size_t>(FaultKind::Count)];

  // For the focused cases (fault_cases.cpp): the entry points they fail, as messages name them.
  const char* attributeApi;    // cuDeviceGetAttribute / hipDeviceGetAttribute
  const char* getCurrentApi;   // cuCtxGetCurrent / hipGetDevice
  const char* setCurrentApi;   // cuCtxSetCurrent / hipSetDevice
  const char* freeAsyncApi;    // cuMemFreeAsync / hipFreeAsync
  const char* eventRecordApi;  // cuEventRecord / hipEventRecord
  // The memory-pool calls of enumeration and device creation: cuMemPoolCreate and
  // cuMemPoolSetAttribute (createDevice), hipDeviceGetDefaultMemPool (enumeration); null-ended.
  const char* poolApis[3];
  // Makes another context (CUDA: none; HIP: another device) current on the calling thread,
  // straight through the driver (not counted, never failed), as user code in a native callback
  // may (cudaSetDevice). Returns false where it cannot (HIP with one device).
  bool (*switchContext)();
  // The environment variable naming the driver library (BATON_CUDA_DRIVER, BATON_HIP_DRIVER).
  const char* driverEnv;
};

inline std::vector<const FaultHooks*>& linkedFaultHooks() {
  static std::vector<const FaultHooks*> hooks;
  return hooks;
}
struct RegisterFaultHooks {
  explicit RegisterFaultHooks(const FaultHooks& hooks) { linkedFaultHooks().push_back(&hooks); }
};
// The backends the tests are instantiated for: those whose hooks are linked in (gtest evaluates
// the generator after every static registration ran).
inline std::vector<baton::BackendKind> linkedFaultBackends() {
  std::vector<baton::BackendKind> kinds;
  for (const FaultHooks* h : linkedFaultHooks()) kinds.push_back(h->kind);
  return kinds;
}

}  // namespace baton_test
