// cuda_bench's raw side on CUDA (raw_driver.hpp): the driver API through baton's own symbol
// table, so the benchmark links no CUDA library. Each function is the one call the benchmark
// made before it ran on HIP too, with the same arguments.
#include <cuda.h>

#include <cstring>

#include "cuda_symbols.hpp"
#include "raw_driver.hpp"

namespace baton_bench {
namespace {

const baton::cuda::Symbols* cu = nullptr;
CUdevice device = 0;
CUcontext context = nullptr;
CUmodule module = nullptr;

CUstream stream(RawStream s) { return static_cast<CUstream>(s); }
CUevent event(RawEvent e) { return static_cast<CUevent>(e); }

std::string versions() { return "driver " + std::to_string(baton::cuda::loadDriver().version); }
const char* cannotRunKernels() {
  // The benchmarks launch PTX kernels and time them: a driver without the module API (the
  // tests' fake driver) cannot run them.
  cu = &baton::cuda::symbols();
  if (!cu->cuModuleLoadData || !cu->cuModuleGetFunction || !cu->cuLaunchKernel)
    return "this CUDA driver cannot load or launch kernels";
  if (!cu->cuEventElapsedTime) return "this CUDA driver cannot time events (cuEventElapsedTime)";
  return nullptr;
}

int open(int ordinal) {
  cu = &baton::cuda::symbols();
  if (CUresult r = cu->cuDeviceGet(&device, ordinal)) return r;
  if (CUresult r = cu->cuDevicePrimaryCtxRetain(&context, device)) return r;
  return cu->cuCtxSetCurrent(context);
}
int makeCurrent() { return cu->cuCtxSetCurrent(context); }
int currentQuery() {
  CUcontext current = nullptr;
  return cu->cuCtxGetCurrent(&current);
}
int close() { return cu->cuDevicePrimaryCtxRelease(device); }

int moduleLoad(const char* image) { return cu->cuModuleLoadData(&module, image); }
int moduleUnload() { return cu->cuModuleUnload(module); }
int getFunction(RawFunction* out, const char* name) {
  CUfunction f = nullptr;
  CUresult r = cu->cuModuleGetFunction(&f, module, name);
  *out = f;
  return r;
}
int launch(RawFunction f, RawStream s, void** params) {
  return cu->cuLaunchKernel(static_cast<CUfunction>(f), 1, 1, 1, 1, 1, 1, 0, stream(s), params,
                            nullptr);
}

int streamCreate(RawStream* out) {
  CUstream s = nullptr;
  CUresult r = cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  *out = s;
  return r;
}
int streamDestroy(RawStream s) { return cu->cuStreamDestroy(stream(s)); }
int streamSynchronize(RawStream s) { return cu->cuStreamSynchronize(stream(s)); }
int streamWaitEvent(RawStream s, RawEvent e) {
  return cu->cuStreamWaitEvent(stream(s), event(e), 0);
}

int eventCreate(RawEvent* out, RawEventKind kind) {
  unsigned flags =
      kind == RawEventKind::Timing         ? CU_EVENT_DEFAULT
      : kind == RawEventKind::BlockingSync ? CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC
      : kind == RawEventKind::Interprocess ? CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS
                                           : CU_EVENT_DISABLE_TIMING;
  CUevent e = nullptr;
  CUresult r = cu->cuEventCreate(&e, flags);
  *out = e;
  return r;
}
int eventDestroy(RawEvent e) { return cu->cuEventDestroy(event(e)); }
int eventRecord(RawEvent e, RawStream s) { return cu->cuEventRecord(event(e), stream(s)); }
int eventQuery(RawEvent e) { return cu->cuEventQuery(event(e)); }
int eventSynchronize(RawEvent e) { return cu->cuEventSynchronize(event(e)); }
int eventElapsedMs(float* ms, RawEvent a, RawEvent b) {
  return cu->cuEventElapsedTime(ms, event(a), event(b));
}

std::string errorName(int r) { return baton::cuda::resultName(static_cast<CUresult>(r)); }

int launchHostFunc(RawStream s, const RawHostCall* call) {
  return cu->cuLaunchHostFunc(stream(s), call->fn, call->user);
}
int memcpyAsync(uint64_t dst, uint64_t src, size_t bytes, RawStream s) {
  return cu->cuMemcpyAsync(static_cast<CUdeviceptr>(dst), static_cast<CUdeviceptr>(src), bytes,
                           stream(s));
}

const char* cannotRunGraphs() {
  const auto& c = *cu;
  if (!c.cuStreamBeginCapture || !c.cuStreamEndCapture || !c.cuGraphInstantiate ||
      !c.cuGraphLaunch || !c.cuGraphExecDestroy || !c.cuGraphDestroy)
    return "the driver does not export the graph and capture entry points";
  return nullptr;
}
int beginCapture(RawStream s) {
  return cu->cuStreamBeginCapture(stream(s), CU_STREAM_CAPTURE_MODE_RELAXED);
}
int endCapture(RawStream s, RawGraph* out) {
  CUgraph g = nullptr;
  CUresult r = cu->cuStreamEndCapture(stream(s), &g);
  *out = g;
  return r;
}
int graphInstantiate(RawGraphExec* out, RawGraph g) {
  CUgraphExec e = nullptr;
  CUresult r = cu->cuGraphInstantiate(&e, static_cast<CUgraph>(g), 0);
  *out = e;
  return r;
}
int graphLaunch(RawGraphExec e, RawStream s) {
  return cu->cuGraphLaunch(static_cast<CUgraphExec>(e), stream(s));
}
int graphExecDestroy(RawGraphExec e) { return cu->cuGraphExecDestroy(static_cast<CUgraphExec>(e)); }
int graphDestroy(RawGraph g) { return cu->cuGraphDestroy(static_cast<CUgraph>(g)); }

const char* cannotUseMemOps() {
  const auto& c = *cu;
  if (!c.cuStreamWaitValue64 || !c.cuStreamWriteValue64)
    return "the driver does not export cuStreamWaitValue64 and cuStreamWriteValue64";
  if (!c.cuMemHostRegister || !c.cuMemHostUnregister)
    return "the driver does not export cuMemHostRegister and cuMemHostUnregister";
  return nullptr;
}
int hostRegister(void* p, size_t bytes) {
  return cu->cuMemHostRegister(p, bytes,
                               CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
}
int hostDevicePointer(uint64_t* out, void* p) {
  CUdeviceptr d = 0;
  CUresult r = cu->cuMemHostGetDevicePointer(&d, p, 0);
  *out = d;
  return r;
}
int hostUnregister(void* p) { return cu->cuMemHostUnregister(p); }
int streamWaitValue64(RawStream s, uint64_t address, uint64_t value) {
  return cu->cuStreamWaitValue64(stream(s), static_cast<CUdeviceptr>(address), value,
                                 CU_STREAM_WAIT_VALUE_GEQ);
}
int streamWriteValue64(RawStream s, uint64_t address, uint64_t value) {
  return cu->cuStreamWriteValue64(stream(s), static_cast<CUdeviceptr>(address), value,
                                  CU_STREAM_WRITE_VALUE_DEFAULT);
}

const char* cannotShareEvents() {
  if (!cu->cuIpcGetEventHandle || !cu->cuIpcOpenEventHandle)
    return "the driver does not export cuIpcGetEventHandle and cuIpcOpenEventHandle";
  return nullptr;
}
int ipcGetEventHandle(RawIpcHandle* out, RawEvent e) {
  static_assert(sizeof(CUipcEventHandle) == sizeof(RawIpcHandle));
  CUipcEventHandle h{};
  CUresult r = cu->cuIpcGetEventHandle(&h, event(e));
  std::memcpy(out, &h, sizeof h);
  return r;
}
int ipcOpenEventHandle(RawEvent* out, const RawIpcHandle* handle) {
  CUipcEventHandle h{};
  std::memcpy(&h, handle, sizeof h);
  CUevent e = nullptr;
  CUresult r = cu->cuIpcOpenEventHandle(&e, h);
  *out = e;
  return r;
}

int memAlloc(uint64_t* out, size_t bytes) {
  CUdeviceptr d = 0;
  CUresult r = cu->cuMemAlloc(&d, bytes);
  *out = d;
  return r;
}
int memFree(uint64_t address) { return cu->cuMemFree(static_cast<CUdeviceptr>(address)); }
const char* cannotShareMemory() {
  if (!cu->cuIpcGetMemHandle || !cu->cuIpcOpenMemHandle || !cu->cuIpcCloseMemHandle)
    return "the driver does not export cuIpcGetMemHandle, cuIpcOpenMemHandle and "
           "cuIpcCloseMemHandle";
  return nullptr;
}
int ipcGetMemHandle(RawIpcHandle* out, uint64_t address) {
  static_assert(sizeof(CUipcMemHandle) == sizeof(RawIpcHandle));
  CUipcMemHandle h{};
  CUresult r = cu->cuIpcGetMemHandle(&h, static_cast<CUdeviceptr>(address));
  std::memcpy(out, &h, sizeof h);
  return r;
}
int ipcOpenMemHandle(uint64_t* out, const RawIpcHandle* handle) {
  CUipcMemHandle h{};
  std::memcpy(&h, handle, sizeof h);
  CUdeviceptr d = 0;
  CUresult r = cu->cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  *out = d;
  return r;
}
int ipcCloseMemHandle(uint64_t address) {
  return cu->cuIpcCloseMemHandle(static_cast<CUdeviceptr>(address));
}
int memsetD32Async(uint64_t address, uint32_t value, size_t count, RawStream s) {
  return cu->cuMemsetD32Async(static_cast<CUdeviceptr>(address), value, count, stream(s));
}

}  // namespace

const RawDriver& rawCuda() {
  static const RawDriver d = {
      "CUDA",
      "cuStreamWaitEvent",
      "cuEventRecord",
      "cuStreamSynchronize",
      "CU_EVENT_BLOCKING_SYNC",
      "cuCtxGetCurrent",
      "context",
      BATON_BENCH_RAW_FUNCTIONS,
  };
  return d;
}

}  // namespace baton_bench
