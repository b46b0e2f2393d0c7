// Loading the CUDA driver, the CUresult mapping and fault injection; see cuda_symbols.hpp.
#include "cuda_symbols.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace baton::cuda {
namespace {

struct Names {
  const char* api;     // as written in cuda.h's documentation: "cuMemAlloc"
  const char* symbol;  // what the library exports for this header: "cuMemAlloc_v2"
};

constexpr Names kNames[] = {
#define BATON_CUDA_NAME(name) {#name, BATON_CUDA_STR(name)},
    BATON_CUDA_REQUIRED(BATON_CUDA_NAME) BATON_CUDA_OPTIONAL(BATON_CUDA_NAME)
#undef BATON_CUDA_NAME
};
static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(Api::Count));

Driver gDriver;
std::once_flag gOnce;

core::Status load(Driver& d) {
  // The versioned library name is what the driver package installs; the unversioned one exists
  // only with development packages (and in the toolkit's stubs, which fail cuInit cleanly).
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("BATON_CUDA_DRIVER"); env && *env) candidates.push_back(env);
  candidates.push_back("libcuda.so.1");
  candidates.push_back("libcuda.so");
  void* lib = nullptr;
  std::string tried;
  for (const std::string& path : candidates) {
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* err = dlerror();
    tried += (tried.empty() ? "" : "; ") + path + ": " + (err ? err : "not found");
  }
  if (!lib)
    return core::Status(Result::ErrorBackendUnavailable,
                        "the CUDA driver library could not be loaded (tried " + tried +
                            "); install the NVIDIA driver to use the CUDA backend");

  std::string missing;
  size_t i = 0;
  auto resolve = [&](auto& slot, bool required) {
    void* p = dlsym(lib, kNames[i].symbol);
    if (!p && required) missing += (missing.empty() ? "" : ", ") + std::string(kNames[i].symbol);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
    ++i;
  };
#define BATON_CUDA_RESOLVE_REQUIRED(name) resolve(d.sym.name, true);
#define BATON_CUDA_RESOLVE_OPTIONAL(name) resolve(d.sym.name, false);
  BATON_CUDA_REQUIRED(BATON_CUDA_RESOLVE_REQUIRED)
  BATON_CUDA_OPTIONAL(BATON_CUDA_RESOLVE_OPTIONAL)
#undef BATON_CUDA_RESOLVE_REQUIRED
#undef BATON_CUDA_RESOLVE_OPTIONAL
  if (!missing.empty())
    return core::Status(Result::ErrorBackendUnavailable,
                        "the CUDA driver (" + candidates.front() +
                            ") lacks required entry points: " + missing +
                            "; a driver supporting CUDA " + std::to_string(CUDA_VERSION / 1000) +
                            "." + std::to_string(CUDA_VERSION % 1000 / 10) + " is needed");

  CUresult r = d.sym.cuInit(0);
  if (r != CUDA_SUCCESS) {
    core::Status s = toStatus(r, "cuInit");
    return core::Status(Result::ErrorBackendUnavailable, s.message());
  }
  r = d.sym.cuDriverGetVersion(&d.version);
  if (r != CUDA_SUCCESS)
    return core::Status(Result::ErrorBackendUnavailable,
                        toStatus(r, "cuDriverGetVersion").message());
  return core::Status();
}

struct Fault {
  Api api;
  CUresult result;
  uint32_t skip;
  uint32_t count;
};
std::mutex gFaultMutex;
std::vector<Fault> gFaults;
std::atomic<uint64_t> gFaultsFired{0};

}  // namespace

namespace detail {
std::atomic<bool> faultsArmed{false};

bool takeFault(Api api, CUresult* result) {
  std::lock_guard<std::mutex> lock(gFaultMutex);
  for (auto it = gFaults.begin(); it != gFaults.end(); ++it) {
    if (it->api != api) continue;
    if (it->skip > 0) {
      --it->skip;
      return false;
    }
    *result = it->result;
    if (--it->count == 0) gFaults.erase(it);
    if (gFaults.empty()) faultsArmed.store(false, std::memory_order_relaxed);
    gFaultsFired.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}
}  // namespace detail

const Driver& loadDriver() {
  std::call_once(gOnce, [] { gDriver.loadStatus = load(gDriver); });
  return gDriver;
}

const Symbols& symbols() { return gDriver.sym; }

std::string resultName(CUresult result) {
  const char* name = nullptr;
  if (gDriver.sym.cuGetErrorName && gDriver.sym.cuGetErrorName(result, &name) == CUDA_SUCCESS &&
      name)
    return name;
  // The errors of a failed load, which a driver that cannot initialise may not name itself
  // (the toolkit's stub library answers every cuGetErrorName with an error).
  switch (result) {
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
      return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    default: return "CUresult(" + std::to_string(static_cast<int>(result)) + ")";
  }
}

bool isSticky(CUresult result) {
  // The errors that the CUDA documentation calls persistent: "the process must be terminated
  // and relaunched" (the context is unusable and every later call reports the same error).
  switch (result) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_UNKNOWN: return true;
    default: return false;
  }
}

core::Status errorStatus(CUresult result, const char* api) {
  if (result == CUDA_SUCCESS) return core::Status();
  if (result == CUDA_ERROR_NOT_READY) return core::Status(Result::NotReady);
  Result code = Result::ErrorDriver;
  if (isSticky(result)) {
    code = Result::ErrorDeviceLost;
  } else {
    switch (result) {
      case CUDA_ERROR_OUT_OF_MEMORY: code = Result::ErrorOutOfDeviceMemory; break;
      case CUDA_ERROR_NOT_SUPPORTED: code = Result::ErrorNotSupported; break;
      case CUDA_ERROR_NO_DEVICE:
      case CUDA_ERROR_NOT_INITIALIZED:
      case CUDA_ERROR_DEINITIALIZED:
      case CUDA_ERROR_STUB_LIBRARY:
      case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
      case CUDA_ERROR_SYSTEM_NOT_READY: code = Result::ErrorBackendUnavailable; break;
      default: break;
    }
  }
  const char* text = nullptr;
  if (!gDriver.sym.cuGetErrorString || gDriver.sym.cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  return core::Status(code, std::string(api) + " failed: " + resultName(result) + " (" +
                                (text ? text : "no description") + ")");
}

bool injectFault(const char* api, CUresult result, uint32_t skip, uint32_t count) {
  if (!api || count == 0) return false;
  for (size_t i = 0; i < static_cast<size_t>(Api::Count); ++i) {
    if (std::strcmp(kNames[i].api, api) != 0 && std::strcmp(kNames[i].symbol, api) != 0) continue;
    std::lock_guard<std::mutex> lock(gFaultMutex);
    gFaults.push_back({static_cast<Api>(i), result, skip, count});
    detail::faultsArmed.store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void clearFaults() {
  std::lock_guard<std::mutex> lock(gFaultMutex);
  gFaults.clear();
  detail::faultsArmed.store(false, std::memory_order_relaxed);
  gFaultsFired.store(0, std::memory_order_relaxed);
}

uint64_t faultsFired() { return gFaultsFired.load(std::memory_order_relaxed); }

}  // namespace baton::cuda
