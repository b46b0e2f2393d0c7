// The CUDA backend's hooks for the shared stream tests (tests/stream/stream_test_support.hpp):
// the PTX kernels loaded into the device's primary context (the one baton's queues use) and
// launched with cuLaunchKernel, fault injection at BATON_CU, and the CUresult names. Raw driver
// calls go through baton's own symbol table, so the test binaries run without libcuda too.
#include <cuda.h>

#include "cuda_symbols.hpp"
#include "ptx_kernels.hpp"
#include "stream_test_support.hpp"

namespace baton_test {
namespace {

struct CudaModule {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  bool retained = false;
};

std::string describe(CUresult r, const char* what) {
  return std::string(what) + ": " + baton::cuda::resultName(r);
}

std::string loadKernels(int ordinal, KernelSet* set) {
  const baton::cuda::Symbols& s = baton::cuda::symbols();
  auto* m = new CudaModule();
  set->state = m;
  if (CUresult r = s.cuDeviceGet(&m->device, ordinal)) return describe(r, "cuDeviceGet");
  if (CUresult r = s.cuDevicePrimaryCtxRetain(&m->context, m->device))
    return describe(r, "cuDevicePrimaryCtxRetain");
  m->retained = true;
  (void)s.cuCtxSetCurrent(m->context);
  if (!s.cuModuleLoadData || !s.cuModuleGetFunction || !s.cuLaunchKernel)
    return "the driver lacks cuModuleLoadData/cuModuleGetFunction/cuLaunchKernel";
  if (CUresult r = s.cuModuleLoadData(&m->module, kPtxKernels))
    return describe(r, "cuModuleLoadData");
  for (const KernelEntry& e : kKernelEntries) {
    CUfunction f = nullptr;
    if (CUresult r = s.cuModuleGetFunction(&f, m->module, e.name)) return describe(r, e.name);
    set->*e.slot = f;
  }
  return "";
}

void unloadKernels(KernelSet* set) {
  auto* m = static_cast<CudaModule*>(set->state);
  if (!m) return;
  const baton::cuda::Symbols& s = baton::cuda::symbols();
  if (m->module) {
    (void)s.cuCtxSetCurrent(m->context);
    (void)s.cuModuleUnload(m->module);  // fails harmlessly after a sticky fault
  }
  if (m->retained) (void)s.cuDevicePrimaryCtxRelease(m->device);
  delete m;
  set->state = nullptr;
}

int launch(void* function, void* stream, void** params) {
  return baton::cuda::symbols().cuLaunchKernel(static_cast<CUfunction>(function), 1, 1, 1, 1, 1, 1,
                                               0, static_cast<CUstream>(stream), params, nullptr);
}

int copyAsync(uint64_t dst, uint64_t src, uint64_t size, void* stream) {
  return baton::cuda::symbols().cuMemcpyAsync(dst, src, size, static_cast<CUstream>(stream));
}

bool injectFault(const char* api, Fault fault) {
  return baton::cuda::injectFault(
      api, fault == Fault::IllegalAddress ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_ERROR_INVALID_VALUE);
}

const StreamHooks kCudaHooks = {
    baton::BackendKind::Cuda,
    loadKernels,
    unloadKernels,
    launch,
    copyAsync,
    injectFault,
    [] { baton::cuda::clearFaults(); },
    [] { return baton::cuda::faultsFired(); },
    "CUDA_ERROR_INVALID_VALUE",
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_LAUNCH_FAILED",
    "cuMemsetD32Async",
    "cuEventRecord",
    [](void* stream) -> int {
      return baton::cuda::symbols().cuStreamSynchronize(static_cast<CUstream>(stream));
    },
    "cuGraphLaunch",
    "cuStreamEndCapture",
};
const RegisterStreamHooks kRegistration(kCudaHooks);

}  // namespace
}  // namespace baton_test
