// The HIP backend's hooks for the fault sweep (fault_hooks.hpp): baton::hip's fault injection
// and call counting at BATON_HIP, and the hipError_t names.
#include <hip/hip_runtime_api.h>

#include "fault_hooks.hpp"
#include "hip_symbols.hpp"

namespace baton_test {
namespace {

hipError_t code(FaultKind fault) {
  switch (fault) {
    case FaultKind::OutOfMemory: return hipErrorOutOfMemory;
    case FaultKind::IllegalAddress: return hipErrorIllegalAddress;
    default: return hipErrorInvalidValue;
  }
}

// HIP has no "no device" state: another device is made current.
bool switchDevice() {
  const baton::hip::Symbols& s = baton::hip::symbols();
  int count = 0, current = 0;
  if (s.hipGetDeviceCount(&count) != hipSuccess || count < 2) return false;
  if (s.hipGetDevice(&current) != hipSuccess) return false;
  return s.hipSetDevice(current == 0 ? 1 : 0) == hipSuccess;
}

const FaultHooks kHipFaultHooks = {
    baton::BackendKind::Hip,
    [](const char* api, FaultKind fault, uint32_t skip, bool afterCall) {
      return afterCall ? baton::hip::injectFaultAfterCall(api, code(fault), skip, 1)
                       : baton::hip::injectFault(api, code(fault), skip, 1);
    },
    [](uint64_t seed, double probability, FaultKind fault) {
      baton::hip::injectRandomFaults(seed, probability, code(fault));
    },
    [] { baton::hip::clearFaults(); },
    [] { return baton::hip::faultsFired(); },
    [](bool on) { baton::hip::recordCalls(on); },
    [] { return baton::hip::callCounts(); },
    {"hipErrorOutOfMemory", "hipErrorInvalidValue", "hipErrorIllegalAddress"},
    "hipDeviceGetAttribute",
    "hipGetDevice",
    "hipSetDevice",
    "hipFreeAsync",
    "hipEventRecord",
    {"hipDeviceGetDefaultMemPool", nullptr, nullptr},
    switchDevice,
    "BATON_HIP_DRIVER",
};
const RegisterFaultHooks kRegistration(kHipFaultHooks);

}  // namespace
}  // namespace baton_test
