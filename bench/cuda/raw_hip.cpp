// cuda_bench's raw side on HIP (raw_driver.hpp): the HIP runtime through baton's own symbol
// table, the same calls as raw_cuda.cpp under their HIP names. HIP has no context to retain: a
// thread works on its current device (hipSetDevice), which is what baton's HIP backend asks for
// once per submit (hipGetDevice). The benchmarks' kernels are PTX: they load where the runtime
// runs on an NVIDIA GPU (the translation library of tests/hip on the H100), not on an AMD GPU.
#include <cstring>

#include "hip_symbols.hpp"
#include "raw_driver.hpp"

namespace baton_bench {
namespace {

const baton::hip::Symbols* hip = nullptr;
int device = 0;
hipModule_t module = nullptr;

hipStream_t stream(RawStream s) { return static_cast<hipStream_t>(s); }
hipEvent_t event(RawEvent e) { return static_cast<hipEvent_t>(e); }

std::string versions() {
  const baton::hip::Driver& d = baton::hip::loadDriver();
  return "HIP runtime " + std::to_string(d.runtimeVersion) + ", driver " +
         std::to_string(d.driverVersion) + " (" + d.path + ")";
}
const char* cannotRunKernels() {
  hip = &baton::hip::symbols();
  if (!hip->hipModuleLoadData || !hip->hipModuleGetFunction || !hip->hipModuleLaunchKernel ||
      !hip->hipModuleUnload)
    return "this HIP runtime cannot load or launch kernels (no hipModuleLoadData, "
           "hipModuleGetFunction, hipModuleLaunchKernel or hipModuleUnload)";
  if (!hip->hipEventElapsedTime) return "this HIP runtime cannot time events (hipEventElapsedTime)";
  return nullptr;
}

int open(int ordinal) {
  hip = &baton::hip::symbols();
  device = ordinal;
  return hip->hipSetDevice(device);
}
int makeCurrent() { return hip->hipSetDevice(device); }
int currentQuery() {
  int current = 0;
  return hip->hipGetDevice(&current);
}
int close() { return hipSuccess; }

int moduleLoad(const char* image) { return hip->hipModuleLoadData(&module, image); }
int moduleUnload() { return hip->hipModuleUnload(module); }
int getFunction(RawFunction* out, const char* name) {
  hipFunction_t f = nullptr;
  hipError_t r = hip->hipModuleGetFunction(&f, module, name);
  *out = f;
  return r;
}
int launch(RawFunction f, RawStream s, void** params) {
  return hip->hipModuleLaunchKernel(static_cast<hipFunction_t>(f), 1, 1, 1, 1, 1, 1, 0, stream(s),
                                    params, nullptr);
}

int streamCreate(RawStream* out) {
  hipStream_t s = nullptr;
  hipError_t r = hip->hipStreamCreateWithFlags(&s, hipStreamNonBlocking);
  *out = s;
  return r;
}
int streamDestroy(RawStream s) { return hip->hipStreamDestroy(stream(s)); }
int streamSynchronize(RawStream s) { return hip->hipStreamSynchronize(stream(s)); }
int streamWaitEvent(RawStream s, RawEvent e) {
  return hip->hipStreamWaitEvent(stream(s), event(e), 0);
}

int eventCreate(RawEvent* out, RawEventKind kind) {
  unsigned flags =
      kind == RawEventKind::Timing         ? hipEventDefault
      : kind == RawEventKind::BlockingSync ? hipEventDisableTiming | hipEventBlockingSync
      : kind == RawEventKind::Interprocess ? hipEventDisableTiming | hipEventInterprocess
                                           : hipEventDisableTiming;
  hipEvent_t e = nullptr;
  hipError_t r = hip->hipEventCreateWithFlags(&e, flags);
  *out = e;
  return r;
}
int eventDestroy(RawEvent e) { return hip->hipEventDestroy(event(e)); }
int eventRecord(RawEvent e, RawStream s) { return hip->hipEventRecord(event(e), stream(s)); }
int eventQuery(RawEvent e) { return hip->hipEventQuery(event(e)); }
int eventSynchronize(RawEvent e) { return hip->hipEventSynchronize(event(e)); }
int eventElapsedMs(float* ms, RawEvent a, RawEvent b) {
  return hip->hipEventElapsedTime(ms, event(a), event(b));
}

std::string errorName(int r) { return baton::hip::resultName(static_cast<hipError_t>(r)); }

// hipStreamAddCallback's callback also receives the stream and its status: the trampoline drops
// them and calls the RawHostCall (one indirect call more than CUDA's cuLaunchHostFunc).
void hostCallTrampoline(hipStream_t, hipError_t, void* data) {
  const auto* call = static_cast<const RawHostCall*>(data);
  call->fn(call->user);
}
int launchHostFunc(RawStream s, const RawHostCall* call) {
  return hip->hipStreamAddCallback(stream(s), hostCallTrampoline, const_cast<RawHostCall*>(call),
                                   0);
}
int memcpyAsync(uint64_t dst, uint64_t src, size_t bytes, RawStream s) {
  return hip->hipMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src),
                             bytes, hipMemcpyDefault, stream(s));
}

const char* cannotRunGraphs() {
  const auto& h = *hip;
  if (!h.hipStreamBeginCapture || !h.hipStreamEndCapture || !h.hipGraphInstantiateWithFlags ||
      !h.hipGraphLaunch || !h.hipGraphExecDestroy || !h.hipGraphDestroy)
    return "the runtime does not export the graph and capture entry points";
  return nullptr;
}
int beginCapture(RawStream s) {
  return hip->hipStreamBeginCapture(stream(s), hipStreamCaptureModeRelaxed);
}
int endCapture(RawStream s, RawGraph* out) {
  hipGraph_t g = nullptr;
  hipError_t r = hip->hipStreamEndCapture(stream(s), &g);
  *out = g;
  return r;
}
int graphInstantiate(RawGraphExec* out, RawGraph g) {
  hipGraphExec_t e = nullptr;
  hipError_t r = hip->hipGraphInstantiateWithFlags(&e, static_cast<hipGraph_t>(g), 0);
  *out = e;
  return r;
}
int graphLaunch(RawGraphExec e, RawStream s) {
  return hip->hipGraphLaunch(static_cast<hipGraphExec_t>(e), stream(s));
}
int graphExecDestroy(RawGraphExec e) {
  return hip->hipGraphExecDestroy(static_cast<hipGraphExec_t>(e));
}
int graphDestroy(RawGraph g) { return hip->hipGraphDestroy(static_cast<hipGraph_t>(g)); }

const char* cannotUseMemOps() {
  const auto& h = *hip;
  if (!h.hipStreamWaitValue64 || !h.hipStreamWriteValue64)
    return "the runtime does not export hipStreamWaitValue64 and hipStreamWriteValue64";
  if (!h.hipHostRegister || !h.hipHostUnregister)
    return "the runtime does not export hipHostRegister and hipHostUnregister";
  return nullptr;
}
int hostRegister(void* p, size_t bytes) {
  return hip->hipHostRegister(p, bytes, hipHostRegisterPortable | hipHostRegisterMapped);
}
int hostDevicePointer(uint64_t* out, void* p) {
  void* d = nullptr;
  hipError_t r = hip->hipHostGetDevicePointer(&d, p, 0);
  *out = reinterpret_cast<uint64_t>(d);
  return r;
}
int hostUnregister(void* p) { return hip->hipHostUnregister(p); }
// HIP's wait takes a mask; every bit set is the plain comparison (CUDA's GEQ over the translation
// library, which accepts no other mask for Gte).
int streamWaitValue64(RawStream s, uint64_t address, uint64_t value) {
  return hip->hipStreamWaitValue64(stream(s), reinterpret_cast<void*>(address), value,
                                   hipStreamWaitValueGte, ~uint64_t{0});
}
int streamWriteValue64(RawStream s, uint64_t address, uint64_t value) {
  return hip->hipStreamWriteValue64(stream(s), reinterpret_cast<void*>(address), value, 0);
}

const char* cannotShareEvents() {
  if (!hip->hipIpcGetEventHandle || !hip->hipIpcOpenEventHandle)
    return "the runtime does not export hipIpcGetEventHandle and hipIpcOpenEventHandle";
  return nullptr;
}
int ipcGetEventHandle(RawIpcHandle* out, RawEvent e) {
  static_assert(sizeof(hipIpcEventHandle_t) == sizeof(RawIpcHandle));
  hipIpcEventHandle_t h{};
  hipError_t r = hip->hipIpcGetEventHandle(&h, event(e));
  std::memcpy(out, &h, sizeof h);
  return r;
}
int ipcOpenEventHandle(RawEvent* out, const RawIpcHandle* handle) {
  hipIpcEventHandle_t h{};
  std::memcpy(&h, handle, sizeof h);
  hipEvent_t e = nullptr;
  hipError_t r = hip->hipIpcOpenEventHandle(&e, h);
  *out = e;
  return r;
}

int memAlloc(uint64_t* out, size_t bytes) {
  void* d = nullptr;
  hipError_t r = hip->hipMalloc(&d, bytes);
  *out = reinterpret_cast<uint64_t>(d);
  return r;
}
int memFree(uint64_t address) { return hip->hipFree(reinterpret_cast<void*>(address)); }
const char* cannotShareMemory() {
  if (!hip->hipIpcGetMemHandle || !hip->hipIpcOpenMemHandle || !hip->hipIpcCloseMemHandle)
    return "the runtime does not export hipIpcGetMemHandle, hipIpcOpenMemHandle and "
           "hipIpcCloseMemHandle";
  return nullptr;
}
int ipcGetMemHandle(RawIpcHandle* out, uint64_t address) {
  static_assert(sizeof(hipIpcMemHandle_t) == sizeof(RawIpcHandle));
  hipIpcMemHandle_t h{};
  hipError_t r = hip->hipIpcGetMemHandle(&h, reinterpret_cast<void*>(address));
  std::memcpy(out, &h, sizeof h);
  return r;
}
int ipcOpenMemHandle(uint64_t* out, const RawIpcHandle* handle) {
  hipIpcMemHandle_t h{};
  std::memcpy(&h, handle, sizeof h);
  void* d = nullptr;
  hipError_t r = hip->hipIpcOpenMemHandle(&d, h, hipIpcMemLazyEnablePeerAccess);
  *out = reinterpret_cast<uint64_t>(d);
  return r;
}
int ipcCloseMemHandle(uint64_t address) {
  return hip->hipIpcCloseMemHandle(reinterpret_cast<void*>(address));
}
int memsetD32Async(uint64_t address, uint32_t value, size_t count, RawStream s) {
  return hip->hipMemsetD32Async(reinterpret_cast<hipDeviceptr_t>(address), static_cast<int>(value),
                                count, stream(s));
}

}  // namespace

const RawDriver& rawHip() {
  static const RawDriver d = {
      "HIP",
      "hipStreamWaitEvent",
      "hipEventRecord",
      "hipStreamSynchronize",
      "hipEventBlockingSync",
      "hipGetDevice",
      "device",
      BATON_BENCH_RAW_FUNCTIONS,
  };
  return d;
}

}  // namespace baton_bench
