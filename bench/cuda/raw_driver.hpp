// The raw side of cuda_bench: the driver calls that each figure of baton is compared with, and
// the kernels and timing events the benchmarks themselves use, for one backend (CUDA or HIP).
// One table of functions, so that the benchmarks are written once and run on either backend
// (`cuda_bench --backend hip`); each implementation lives in its own file (raw_cuda.cpp over
// baton::cuda::symbols(), raw_hip.cpp over baton::hip::symbols()). Every function from
// makeCurrent() on is exactly one driver call, straight through the symbol table (not through
// baton's fault-injection wrapper): a raw figure is the driver's cost plus one indirect call to a
// trampoline that jumps into the driver (about a nanosecond).
//
// Handles are opaque (CUstream / hipStream_t and so on); results are the driver's own codes as
// int, 0 being success on both (CUDA_SUCCESS, hipSuccess). One device per process: open() keeps
// the device (and on CUDA its primary context) that makeCurrent() makes current on other threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace baton_bench {

using RawStream = void*;
using RawEvent = void*;
using RawFunction = void*;
using RawGraph = void*;      // CUgraph / hipGraph_t
using RawGraphExec = void*;  // CUgraphExec / hipGraphExec_t

// A host function for launchHostFunc: fn(user) runs on the driver's callback thread. The struct
// must outlive the call's execution (HIP's hipStreamAddCallback has another signature: raw_hip.cpp
// passes the struct itself through a trampoline).
struct RawHostCall {
  void (*fn)(void* user);
  void* user;
};

enum class RawEventKind {
  Plain,         // timing disabled (CU_EVENT_DISABLE_TIMING, hipEventDisableTiming)
  BlockingSync,  // timing disabled + blocking sync (CU_EVENT_BLOCKING_SYNC, hipEventBlockingSync)
  Timing,        // default flags: timing enabled (for eventElapsedMs)
  // timing disabled, shareable with other processes (CU_EVENT_INTERPROCESS, hipEventInterprocess;
  // both require timing disabled): for ipcGetEventHandle
  Interprocess,
};

// The 64 bytes of a CUipcEventHandle / CUipcMemHandle (hipIpc*Handle_t: the same size), which
// shared_bench sends to its peer process as they are.
struct RawIpcHandle {
  unsigned char bytes[64];
};

struct RawDriver {
  // "CUDA", "HIP": the table's column is "raw <name>".
  const char* name;
  // The calls' own names, for the notes of the rows.
  const char* streamWaitEventName;    // cuStreamWaitEvent
  const char* eventRecordName;        // cuEventRecord
  const char* streamSynchronizeName;  // cuStreamSynchronize
  const char* blockingSyncName;       // CU_EVENT_BLOCKING_SYNC
  const char* currentQueryName;       // cuCtxGetCurrent: what baton asks once per submit
  const char* currentQueryWhat;       // "context" (CUDA), "device" (HIP)

  // The driver's versions (and, where it tells, the library that loaded), for the header line.
  // Only after the backend loaded.
  std::string (*versions)();
  // Why the benchmarks' kernels or timing events cannot run on this driver (a missing module,
  // launch or elapsed-time entry point: the tests' fake driver), or nullptr.
  const char* (*cannotRunKernels)();

  // Takes device `ordinal` (CUDA: retains its primary context) and makes it current here.
  int (*open)(int ordinal);
  // Makes open()'s device current on the calling thread.
  int (*makeCurrent)();
  // The query that baton makes once per submit (cuCtxGetCurrent, hipGetDevice).
  int (*currentQuery)();
  // Releases what open() took (CUDA: the primary context).
  int (*close)();

  int (*moduleLoad)(const char* image);  // one module per process
  int (*moduleUnload)();
  int (*getFunction)(RawFunction* out, const char* name);
  // A 1x1x1 grid of one thread; params as cuLaunchKernel's kernelParams (nullptr: none).
  int (*launch)(RawFunction function, RawStream stream, void** params);

  int (*streamCreate)(RawStream* out);  // non-blocking
  int (*streamDestroy)(RawStream stream);
  int (*streamSynchronize)(RawStream stream);
  int (*streamWaitEvent)(RawStream stream, RawEvent event);

  int (*eventCreate)(RawEvent* out, RawEventKind kind);
  int (*eventDestroy)(RawEvent event);
  int (*eventRecord)(RawEvent event, RawStream stream);
  int (*eventQuery)(RawEvent event);
  int (*eventSynchronize)(RawEvent event);
  int (*eventElapsedMs)(float* ms, RawEvent start, RawEvent end);

  // "CUDA_ERROR_NOT_READY", "hipErrorNotReady", ...
  std::string (*errorName)(int result);

  // Added for frame_bench (the engine frame):
  // Enqueues call->fn(call->user) on the stream, in order (cuLaunchHostFunc; HIP:
  // hipStreamAddCallback, since 5.2 does not export hipLaunchHostFunc). The function must make no
  // driver call.
  int (*launchHostFunc)(RawStream stream, const RawHostCall* call);
  // Copies `bytes` between device addresses (device or mapped pinned memory) in stream order:
  // cuMemcpyAsync, hipMemcpyAsync(hipMemcpyDefault), as baton's copyBuffer does.
  int (*memcpyAsync)(uint64_t dst, uint64_t src, size_t bytes, RawStream stream);

  // Graphs, for frame_bench's raw-graph side (the graph sides' baseline): why this driver has no
  // graphs (an entry point missing), or nullptr; stream capture in relaxed mode (other threads keep
  // calling the driver meanwhile) into a graph, its instantiation, launch and destruction
  // (cuStreamBeginCapture, cuStreamEndCapture, cuGraphInstantiate, cuGraphLaunch,
  // cuGraphExecDestroy, cuGraphDestroy; HIP: the hip* names).
  const char* (*cannotRunGraphs)();
  int (*beginCapture)(RawStream stream);
  int (*endCapture)(RawStream stream, RawGraph* out);
  int (*graphInstantiate)(RawGraphExec* out, RawGraph graph);
  int (*graphLaunch)(RawGraphExec exec, RawStream stream);
  int (*graphExecDestroy)(RawGraphExec exec);
  int (*graphDestroy)(RawGraph graph);

  // Added for shared_bench (two processes on one device):
  // Why this driver has no 64-bit stream memory operations or host registration (an entry point
  // missing), or nullptr. Whether the device supports them is the device's capability
  // (kCapabilityStreamMemOps64: CAN_USE_64_BIT_STREAM_MEM_OPS,
  // hipDeviceAttributeCanUseStreamWaitValue).
  const char* (*cannotUseMemOps)();
  // Registers host memory (a page of a memfd that every process maps) for device access:
  // cuMemHostRegister(PORTABLE | DEVICEMAP), hipHostRegister(Portable | Mapped); its device address
  // (cuMemHostGetDevicePointer, hipHostGetDevicePointer); cuMemHostUnregister, hipHostUnregister.
  int (*hostRegister)(void* host, size_t bytes);
  int (*hostDevicePointer)(uint64_t* out, void* host);
  int (*hostUnregister)(void* host);
  // In stream order: waits until the 64-bit word at `address` is at least `value` (CUDA's GEQ,
  // which compares cyclically; hipStreamWaitValueGte with a full mask), and writes `value` to it
  // after the stream's earlier work, with a memory barrier (default flags).
  int (*streamWaitValue64)(RawStream stream, uint64_t address, uint64_t value);
  int (*streamWriteValue64)(RawStream stream, uint64_t address, uint64_t value);
  // Why this driver cannot share events between processes (cuIpcGetEventHandle or
  // cuIpcOpenEventHandle missing), or nullptr. Events from eventCreate(Interprocess).
  const char* (*cannotShareEvents)();
  int (*ipcGetEventHandle)(RawIpcHandle* out, RawEvent event);
  int (*ipcOpenEventHandle)(RawEvent* out, const RawIpcHandle* handle);
  // Device memory (cuMemAlloc, cuMemFree; hipMalloc, hipFree) and its IPC handles: why the driver
  // has none (cuIpcGetMemHandle, cuIpcOpenMemHandle or cuIpcCloseMemHandle missing) or nullptr,
  // the handle of an allocation, its mapping in another process (lazy peer access, as the CUDA
  // runtime always asks) and the unmapping.
  int (*memAlloc)(uint64_t* out, size_t bytes);
  int (*memFree)(uint64_t address);
  const char* (*cannotShareMemory)();
  int (*ipcGetMemHandle)(RawIpcHandle* out, uint64_t address);
  int (*ipcOpenMemHandle)(uint64_t* out, const RawIpcHandle* handle);
  int (*ipcCloseMemHandle)(uint64_t address);
  // Fills `count` 32-bit words at `address` with `value` in stream order (cuMemsetD32Async,
  // hipMemsetD32Async).
  int (*memsetD32Async)(uint64_t address, uint32_t value, size_t count, RawStream stream);
};

// The functions of a RawDriver in member order: each implementation defines functions of these
// names and lists them with this macro after the names of its calls.
#define BATON_BENCH_RAW_FUNCTIONS                                                               \
  versions, cannotRunKernels, open, makeCurrent, currentQuery, close, moduleLoad, moduleUnload, \
      getFunction, launch, streamCreate, streamDestroy, streamSynchronize, streamWaitEvent,     \
      eventCreate, eventDestroy, eventRecord, eventQuery, eventSynchronize, eventElapsedMs,     \
      errorName, launchHostFunc, memcpyAsync, cannotRunGraphs, beginCapture, endCapture,        \
      graphInstantiate, graphLaunch, graphExecDestroy, graphDestroy, cannotUseMemOps,           \
      hostRegister, hostDevicePointer, hostUnregister, streamWaitValue64, streamWriteValue64,   \
      cannotShareEvents, ipcGetEventHandle, ipcOpenEventHandle, memAlloc, memFree,              \
      cannotShareMemory, ipcGetMemHandle, ipcOpenMemHandle, ipcCloseMemHandle, memsetD32Async

// Defined by raw_cuda.cpp and raw_hip.cpp, each built with its backend (BATON_BENCH_CUDA,
// BATON_BENCH_HIP).
const RawDriver& rawCuda();
const RawDriver& rawHip();

}  // namespace baton_bench
