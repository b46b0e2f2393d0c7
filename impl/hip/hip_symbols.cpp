// Loading the HIP runtime, the hipError_t mapping and fault injection; see hip_symbols.hpp.
#include "hip_symbols.hpp"

#include <mutex>
#include <string>

namespace baton::hip {
namespace {

constexpr stream::SymbolName kNames[] = {
#define BATON_HIP_NAME(name) {#name, #name},
#define BATON_HIP_NAME_TYPED(name, type) {#name, #name},
    BATON_HIP_REQUIRED(BATON_HIP_NAME) BATON_HIP_OPTIONAL(BATON_HIP_NAME)
        BATON_HIP_OPTIONAL_TYPED(BATON_HIP_NAME_TYPED)
#undef BATON_HIP_NAME
#undef BATON_HIP_NAME_TYPED
};
static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(Api::Count));

Driver gDriver;
std::once_flag gOnce;

core::Status load(Driver& d) {
  // The versioned name is what Debian's libamdhip64-5 (and ROCm's runtime package) installs; the
  // unversioned link comes with the development package.
  stream::DriverLibrary lib =
      stream::openDriverLibrary("BATON_HIP_DRIVER", {"libamdhip64.so.5", "libamdhip64.so"});
  if (!lib.handle)
    return core::Status(Result::ErrorBackendUnavailable,
                        "the HIP runtime library could not be loaded (tried " + lib.tried +
                            "); install ROCm's HIP runtime (Debian: libamdhip64-5) to use the "
                            "HIP backend");
  d.path = lib.path;

  std::string missing;
  size_t i = 0;
  auto resolve = [&](auto& slot, bool required) {
    void* p = stream::resolveSymbol(lib.handle, kNames[i++], required, &missing);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
  };
#define BATON_HIP_RESOLVE_REQUIRED(name) resolve(d.sym.name, true);
#define BATON_HIP_RESOLVE_OPTIONAL(name) resolve(d.sym.name, false);
#define BATON_HIP_RESOLVE_TYPED(name, type) resolve(d.sym.name, false);
  BATON_HIP_REQUIRED(BATON_HIP_RESOLVE_REQUIRED)
  BATON_HIP_OPTIONAL(BATON_HIP_RESOLVE_OPTIONAL)
  BATON_HIP_OPTIONAL_TYPED(BATON_HIP_RESOLVE_TYPED)
#undef BATON_HIP_RESOLVE_REQUIRED
#undef BATON_HIP_RESOLVE_OPTIONAL
#undef BATON_HIP_RESOLVE_TYPED
  if (!missing.empty())
    return core::Status(Result::ErrorBackendUnavailable,
                        "the HIP runtime (" + lib.path + ") lacks required entry points: " +
                            missing + "; a HIP runtime of ROCm 5.2 or later is needed");

  (void)d.sym.hipRuntimeGetVersion(&d.runtimeVersion);
  hipError_t r = d.sym.hipInit(0);
  if (r != hipSuccess) {
    // Not a load failure: AMD's runtime answers hipInit with hipErrorInvalidDevice (or
    // hipErrorNoDevice) where no AMD GPU is present; the backend then has 0 devices.
    d.initStatus = errorStatus(r, "hipInit");
    return core::Status();
  }
  r = d.sym.hipDriverGetVersion(&d.driverVersion);
  if (r != hipSuccess) d.initStatus = errorStatus(r, "hipDriverGetVersion");
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

std::string resultName(hipError_t result) {
  // AMD's runtime names every value it knows and answers "hipErrorUnknown" otherwise; keep the
  // number visible in that case.
  const char* name = gDriver.sym.hipGetErrorName ? gDriver.sym.hipGetErrorName(result) : nullptr;
  if (name && *name && (result == hipErrorUnknown || std::string(name) != "hipErrorUnknown"))
    return name;
  return "hipError_t(" + std::to_string(static_cast<int>(result)) + ")";
}

bool isSticky(hipError_t result) {
  // The errors after which the device (its HSA queues, or the CUDA context under HIP on NVIDIA)
  // reports the same error to every later call: a kernel fault, an ECC error, a lost device.
  switch (result) {
    case hipErrorIllegalAddress:
    case hipErrorLaunchFailure:
    case hipErrorLaunchTimeOut:
    case hipErrorAssert:
    case hipErrorECCNotCorrectable:
    case hipErrorContextIsDestroyed:
    case hipErrorPriorLaunchFailure:
    case hipErrorUnknown: return true;
    default: return false;
  }
}

core::Status errorStatus(hipError_t result, const char* api) {
  if (result == hipSuccess) return core::Status();
  if (result == hipErrorNotReady) return core::Status(Result::NotReady);
  Result code = Result::ErrorDriver;
  if (isSticky(result)) {
    code = Result::ErrorDeviceLost;
  } else {
    switch (result) {
      case hipErrorOutOfMemory: code = Result::ErrorOutOfDeviceMemory; break;
      case hipErrorNotSupported: code = Result::ErrorNotSupported; break;
      case hipErrorNoDevice:
      case hipErrorInvalidDevice:
      case hipErrorNotInitialized:
      case hipErrorDeinitialized:
      case hipErrorInsufficientDriver:
      case hipErrorNoBinaryForGpu: code = Result::ErrorBackendUnavailable; break;
      default: break;
    }
  }
  const char* text =
      gDriver.sym.hipGetErrorString ? gDriver.sym.hipGetErrorString(result) : nullptr;
  return core::Status(code, std::string(api) + " failed: " + resultName(result) + " (" +
                                (text && *text ? text : "no description") + ")");
}

bool injectFault(const char* api, hipError_t result, uint32_t skip, uint32_t count) {
  return detail::faults.inject(api, static_cast<int>(result), skip, count);
}

bool injectFaultAfterCall(const char* api, hipError_t result, uint32_t skip, uint32_t count) {
  return detail::faults.injectAfterCall(api, static_cast<int>(result), skip, count);
}

void clearFaults() { detail::faults.clear(); }

uint64_t faultsFired() { return detail::faults.fired(); }

void recordCalls(bool on) { detail::faults.record(on); }

std::vector<stream::CallCount> callCounts() { return detail::faults.counts(); }

void injectRandomFaults(uint64_t seed, double probability, hipError_t result) {
  detail::faults.injectRandom(seed, probability, static_cast<int>(result));
}

}  // namespace baton::hip
