// cuda_bench's raw side on CUDA (raw_driver.hpp): the driver API through baton's own symbol
// table, so the benchmark links no CUDA library. Each function is the one call the benchmark
// made before it ran on HIP too, with the same arguments.
#include <cuda.h>

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
  unsigned flags = kind == RawEventKind::Timing ? CU_EVENT_DEFAULT
                   : kind == RawEventKind::BlockingSync
                       ? CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC
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
