// The HIP backend's hooks for the shared stream tests (tests/stream/stream_test_support.hpp): the
// test kernels loaded with hipModuleLoadData on the device baton's queues use and launched with
// hipModuleLaunchKernel, fault injection at BATON_HIP, and the hipError_t names. Raw runtime calls
// go through baton's own symbol table, so the binaries run without a HIP runtime too.
//
// The kernels are the PTX of tests/cuda/ptx_kernels.hpp: they load where the HIP runtime sits on
// the CUDA driver (libbaton_hip_over_cuda.so on the H100). AMD's runtime wants a code object
// instead and answers hipModuleLoadData with an error, and the fake driver of CI has no modules:
// the tests that launch kernels then skip with that reason.
#include "hip_symbols.hpp"
#include "ptx_kernels.hpp"
#include "stream_test_support.hpp"

namespace baton_test {
namespace {

std::string describe(hipError_t r, const char* what) {
  return std::string(what) + ": " + baton::hip::resultName(r);
}

std::string loadKernels(int ordinal, KernelSet* set) {
  const baton::hip::Symbols& s = baton::hip::symbols();
  // The module belongs to the device that is current on this thread; baton's issuing thread
  // makes the same device current before it runs native callbacks.
  if (hipError_t r = s.hipSetDevice(ordinal)) return describe(r, "hipSetDevice");
  if (!s.hipModuleLoadData || !s.hipModuleGetFunction || !s.hipModuleLaunchKernel ||
      !s.hipModuleUnload)
    return "the HIP runtime lacks hipModuleLoadData/hipModuleGetFunction/hipModuleLaunchKernel";
  hipModule_t module = nullptr;
  if (hipError_t r = s.hipModuleLoadData(&module, kPtxKernels))
    return describe(r, "hipModuleLoadData");
  set->state = module;
  for (const KernelEntry& e : kKernelEntries) {
    hipFunction_t f = nullptr;
    if (hipError_t r = s.hipModuleGetFunction(&f, module, e.name)) return describe(r, e.name);
    set->*e.slot = f;
  }
  return "";
}

void unloadKernels(KernelSet* set) {
  if (!set->state) return;
  // Fails harmlessly after a sticky fault.
  (void)baton::hip::symbols().hipModuleUnload(static_cast<hipModule_t>(set->state));
  set->state = nullptr;
}

int launch(void* function, void* stream, void** params) {
  return baton::hip::symbols().hipModuleLaunchKernel(static_cast<hipFunction_t>(function), 1, 1, 1,
                                                     1, 1, 1, 0, static_cast<hipStream_t>(stream),
                                                     params, nullptr);
}

int copyAsync(uint64_t dst, uint64_t src, uint64_t size, void* stream) {
  auto* d = reinterpret_cast<void*>(static_cast<uintptr_t>(dst));
  auto* s = reinterpret_cast<void*>(static_cast<uintptr_t>(src));
  return baton::hip::symbols().hipMemcpyAsync(d, s, size, hipMemcpyDefault,
                                              static_cast<hipStream_t>(stream));
}

bool injectFault(const char* api, Fault fault) {
  return baton::hip::injectFault(
      api, fault == Fault::IllegalAddress ? hipErrorIllegalAddress : hipErrorInvalidValue);
}

const StreamHooks kHipHooks = {
    baton::BackendKind::Hip,
    loadKernels,
    unloadKernels,
    launch,
    copyAsync,
    injectFault,
    [] { baton::hip::clearFaults(); },
    [] { return baton::hip::faultsFired(); },
    "hipErrorInvalidValue",
    "hipErrorIllegalAddress",
    "hipErrorLaunchFailure",
    "hipMemsetD32Async",
    "hipEventRecord",
    [](void* stream) -> int {
      return baton::hip::symbols().hipStreamSynchronize(static_cast<hipStream_t>(stream));
    },
    "hipGraphLaunch",
    "hipStreamEndCapture",
};
const RegisterStreamHooks kRegistration(kHipHooks);

}  // namespace
}  // namespace baton_test
