// The CUDA backend's hooks for the fault sweep (fault_hooks.hpp): baton::cuda's fault injection
// and call counting at BATON_CU, and the CUresult names.
#include <cuda.h>

#include "cuda_symbols.hpp"
#include "fault_hooks.hpp"

namespace baton_test {
namespace {

CUresult code(FaultKind fault) {
  switch (fault) {
    case FaultKind::OutOfMemory: return CUDA_ERROR_OUT_OF_MEMORY;
    case FaultKind::IllegalAddress: return CUDA_ERROR_ILLEGAL_ADDRESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

const FaultHooks kCudaFaultHooks = {
    baton::BackendKind::Cuda,
    [](const char* api, FaultKind fault, uint32_t skip, bool afterCall) {
      return afterCall ? baton::cuda::injectFaultAfterCall(api, code(fault), skip, 1)
                       : baton::cuda::injectFault(api, code(fault), skip, 1);
    },
    [](uint64_t seed, double probability, FaultKind fault) {
      baton::cuda::injectRandomFaults(seed, probability, code(fault));
    },
    [] { baton::cuda::clearFaults(); },
    [] { return baton::cuda::faultsFired(); },
    [](bool on) { baton::cuda::recordCalls(on); },
    [] { return baton::cuda::callCounts(); },
    {"CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_ILLEGAL_ADDRESS"},
    "cuDeviceGetAttribute",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuMemFreeAsync",
    "cuEventRecord",
    {"cuMemPoolCreate", "cuMemPoolSetAttribute", nullptr},
    [] { return baton::cuda::symbols().cuCtxSetCurrent(nullptr) == CUDA_SUCCESS; },
    "BATON_CUDA_DRIVER",
};
const RegisterFaultHooks kRegistration(kCudaFaultHooks);

}  // namespace
}  // namespace baton_test
