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
};
const RegisterFaultHooks kRegistration(kHipFaultHooks);

}  // namespace
}  // namespace baton_test
