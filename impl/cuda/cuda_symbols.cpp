// Loading the CUDA driver, the CUresult mapping and fault injection; see cuda_symbols.hpp.
#include "cuda_symbols.hpp"

#include <mutex>
#include <string>

namespace baton::cuda {
namespace {

constexpr stream::SymbolName kNames[] = {
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
  stream::DriverLibrary lib =
      stream::openDriverLibrary("BATON_CUDA_DRIVER", {"libcuda.so.1", "libcuda.so"});
  if (!lib.handle)
    return core::Status(Result::ErrorBackendUnavailable,
                        "the CUDA driver library could not be loaded (tried " + lib.tried +
                            "); install the NVIDIA driver to use the CUDA backend");

  std::string missing;
  size_t i = 0;
  auto resolve = [&](auto& slot, bool required) {
    void* p = stream::resolveSymbol(lib.handle, kNames[i++], required, &missing);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
  };
#define BATON_CUDA_RESOLVE_REQUIRED(name) resolve(d.sym.name, true);
#define BATON_CUDA_RESOLVE_OPTIONAL(name) resolve(d.sym.name, false);
  BATON_CUDA_REQUIRED(BATON_CUDA_RESOLVE_REQUIRED)
  BATON_CUDA_OPTIONAL(BATON_CUDA_RESOLVE_OPTIONAL)
#undef BATON_CUDA_RESOLVE_REQUIRED
#undef BATON_CUDA_RESOLVE_OPTIONAL
  if (!missing.empty())
    return core::Status(Result::ErrorBackendUnavailable,
                        "the CUDA driver (" + lib.path +
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

}  // namespace

namespace detail {
stream::DriverFaults faults(kNames, sizeof kNames / sizeof kNames[0]);
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
  return detail::faults.inject(api, static_cast<int>(result), skip, count);
}

bool injectFaultAfterCall(const char* api, CUresult result, uint32_t skip, uint32_t count) {
  return detail::faults.injectAfterCall(api, static_cast<int>(result), skip, count);
}

void clearFaults() { detail::faults.clear(); }

uint64_t faultsFired() { return detail::faults.fired(); }

void recordCalls(bool on) { detail::faults.record(on); }

std::vector<stream::CallCount> callCounts() { return detail::faults.counts(); }

void injectRandomFaults(uint64_t seed, double probability, CUresult result) {
  detail::faults.injectRandom(seed, probability, static_cast<int>(result));
}

}  // namespace baton::cuda
