// The fake CUDA driver (libbaton_fake_cuda.so) for machines without a GPU. It exports the driver
// entry points the CUDA backend loads (under the versioned names cuda.h maps them to), on host
// memory, with one device (or $BATON_FAKE_CUDA_DEVICES, at most 16). Loaded through
// BATON_CUDA_DRIVER, it lets CI run the conformance suite, the stress test and the stream tests on
// the CUDA backend's own code — the shared stream machinery (impl/stream): issuing, GPU-side
// waits, suspension around host calls, the completion threads, error mapping.
//
// It also exports the HIP entry points of baton's HIP backend: the module compiles in the
// HIP-over-CUDA translation library (tests/hip/driver/, hip_over_cuda.cpp says how), which finds
// the cu* functions of this same object. Loaded through BATON_HIP_DRIVER, the HIP backend runs on
// this one emulation under its HIP names, not on a second copy of it.
//
// The files: fake_cuda.hpp (this: what is modelled, and the engine's interface), engine.cpp (the
// streams' worker threads, recorded positions, the host-function rule, configuration, counters),
// devices.cpp (init, error names, devices, contexts), streams.cpp (streams, events, host
// functions), memory.cpp (allocation, copies, fills, pools).
//
// ---- Configuration (environment, read once) --------------------------------------------------
//   BATON_FAKE_CUDA_MODE=async|sync  async (default): each stream is an in-order worker thread.
//                                    sync: every operation runs inside the call that enqueues it
//                                    (the driver of old: every event has completed when
//                                    cuEventRecord returns).
//   BATON_FAKE_CUDA_DELAY_US=N       async only: each stream operation starts N µs after the
//                                    worker takes it (default 0: the hand-off to the worker
//                                    already leaves events NOT_READY for a while).
//   BATON_FAKE_CUDA_DEVICES=N        devices reported (default 1).
//   BATON_FAKE_CUDA_STRICT=1         a driver call from inside a host function aborts the process
//                                    (after its message), so that a test run fails on it.
//   BATON_FAKE_CUDA_STATS=1          print the counters below to stderr when the module unloads.
// The counters are also exported: `void batonFakeCudaStats(BatonFakeCudaStats*)` (see below),
// found with dlsym in the loaded driver.
//
// ---- Behaviours modelled, and the documentation followed --------------------------------------
// Pages of the CUDA Driver API reference (docs.nvidia.com/cuda/cuda-driver-api): "Stream
// Management" (cuStreamCreate, cuStreamDestroy, cuStreamQuery, cuStreamSynchronize,
// cuStreamWaitEvent), "Event Management" (cuEventCreate, cuEventRecord, cuEventQuery,
// cuEventSynchronize, cuEventDestroy, cuEventElapsedTime), "Execution Control"
// (cuLaunchHostFunc), "Stream Ordered Memory Allocator" (cuMemAllocFromPoolAsync,
// cuMemFreeAsync), "Context Management" (cuCtxSynchronize), and "API synchronization behavior"
// (which copies stage pageable memory).
//   1. Streams are in order: each stream's worker (a thread named "fake-cu-stream") runs its
//   operations (copies, fills, host
//      functions, event records, event waits, pool allocations and frees) one after another, on
//      host memory. Streams run concurrently with each other and with the calling threads.
//   2. cuEventRecord captures the stream's position at the time of the call: the event completes
//      when the work enqueued on that stream before the record has run. A later record
//      overwrites the captured state for later queries and waits only.
//   3. cuEventQuery: CUDA_SUCCESS once the captured work completed, CUDA_ERROR_NOT_READY before;
//      an event never recorded is an empty set of work: CUDA_SUCCESS.
//   4. cuEventSynchronize blocks until the captured work completed (at once for an event never
//      recorded). With CU_EVENT_BLOCKING_SYNC it sleeps at once; otherwise it spins (yielding)
//      for up to 20 µs first, then sleeps.
//   5. cuStreamWaitEvent makes the stream's later work wait for the work captured by the event
//      when cuStreamWaitEvent is called: a re-record after the call does not change what that
//      wait waits for. Waiting on an event never recorded waits for nothing.
//   6. cuLaunchHostFunc: the function runs on a driver thread (the stream's worker) after the
//      work enqueued before it, and the work enqueued after it waits for it to return. Host
//      functions of different streams may run concurrently.
//   7. "The host function must not make any CUDA API calls": enforced. Every cu* entry point
//      (and so every hip* entry point that calls one) returns CUDA_ERROR_NOT_PERMITTED when
//      called from inside a host function, prints the entry point's name (the first 10 times),
//      and counts it (hostFunctionViolations); under BATON_FAKE_CUDA_STRICT=1 it aborts.
//   8. cuStreamSynchronize waits for the work enqueued on the stream before the call;
//      cuStreamQuery answers NOT_READY while any is pending; cuCtxSynchronize waits for the work
//      of every stream of the current context (destroyed ones still draining included).
//   9. cuStreamDestroy returns at once; work already enqueued still runs, then the worker exits.
//      cuEventDestroy of an event whose record is pending: the record still completes, and
//      streams waiting on it are released.
//  10. Stream-ordered allocation: cuMemAllocFromPoolAsync returns the address at once (the
//      memory is usable by work ordered after it); cuMemFreeAsync frees when the stream reaches
//      it, so work ordered before the free on any stream may still use the memory (AddressSanitizer
//      sees a use after it).
//  11. Copies: cuMemcpyHtoDAsync from pageable host memory stages the source at the call (the
//      caller may reuse it at once, as the driver documents); from page-locked memory
//      (cuMemHostAlloc) it reads the source when the stream runs the copy. cuMemcpyHtoD and
//      cuMemcpyDtoH run at once on the calling thread. cuMemFree and cuMemFreeHost first
//      synchronize the current context, as the driver's frees do in practice.
//  12. cuEventElapsedTime: the host time between the two records' execution; NOT_READY while one
//      is pending; INVALID_HANDLE for an event never recorded or created with
//      CU_EVENT_DISABLE_TIMING.
//  13. Calls that create objects need a current context (CUDA_ERROR_INVALID_CONTEXT otherwise).
// What follows for tests: work of two streams on the same memory with no event between them runs
// concurrently on host memory, so ThreadSanitizer reports it as a data race (on a GPU its result
// is undefined too); a stream never destroyed (or whose cuStreamDestroy failed under baton's fault
// injection) keeps its worker thread until exit — a test counting threads leaves out those named
// kWorkerName, or runs in sync mode, which starts no thread.
//
// ---- Not modelled ------------------------------------------------------------------------------
//   - Sticky errors and device loss: the driver never fails on its own; baton's fault injection
//     (stream::DriverFaults, at its wrapper around every driver call) stands in for them.
//   - The legacy default stream's implicit synchronisation: the null stream (and
//     CU_STREAM_LEGACY / CU_STREAM_PER_THREAD) is one more in-order stream of the context.
//   - Kernels and modules, external semaphores and external memory, stream value waits and
//     writes, graphs, priorities, IPC, peer access, cross-context handle checks; stream and
//     event flags other than CU_EVENT_BLOCKING_SYNC and CU_EVENT_DISABLE_TIMING.
//   - Memory limits: every allocation comes from the host heap; cuMemGetInfo reports 1 GiB.
//   - Device-side timing: elapsed times are host times of the worker threads.
#pragma once

#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

// The counters, as batonFakeCudaStats reports them (all only grow, except the live counts).
struct BatonFakeCudaStats {
  uint64_t hostFunctionViolations;  // driver calls made from inside a host function
  uint64_t opsExecuted;             // stream operations run
  uint64_t eventQueryNotReady;      // cuEventQuery answers CUDA_ERROR_NOT_READY
  uint64_t eventSyncBlocked;        // cuEventSynchronize calls that had to wait
  uint64_t streamWaitsBlocked;      // cuStreamWaitEvent waits that held their stream up
  uint64_t streamSyncBlocked;       // stream/context synchronizations that had to wait
  uint64_t streamsLive;             // streams created and not destroyed
  uint64_t eventsLive;              // events created and not destroyed
  uint32_t async;                   // 1 in async mode, 0 in sync mode
  uint32_t delayUs;                 // BATON_FAKE_CUDA_DELAY_US
  // Allocations (cuMemAlloc, cuMemHostAlloc, cuMemAllocFromPoolAsync) not yet freed (cuMemFree,
  // cuMemFreeHost, cuMemFreeAsync once its stream ran it): a test checks that nothing leaks
  // without a leak checker.
  uint64_t allocationsLive;
};
extern "C" void batonFakeCudaStats(BatonFakeCudaStats* out);

namespace fake_cuda {

// The name of every stream worker thread (/proc/self/task/*/comm), so that tests counting the
// process's threads can leave the driver's out.
inline constexpr char kWorkerName[] = "fake-cu-stream";

struct Config {
  bool async = true;
  uint32_t delayUs = 0;
  int devices = 1;
  bool strict = false;
  bool stats = false;
};
const Config& config();

struct Counters {
  std::atomic<uint64_t> hostFunctionViolations{0}, opsExecuted{0}, eventQueryNotReady{0},
      eventSyncBlocked{0}, streamWaitsBlocked{0}, streamSyncBlocked{0}, streamsLive{0},
      eventsLive{0}, allocationsLive{0};
};
extern Counters gCounters;

// Thread-locals in the static TLS block (a few bytes, as drivers loaded with dlopen do): dynamic
// TLS of a dlopen'ed module made LeakSanitizer's exit-time scan crash ("Tracer caught signal 11").
#define FAKE_CUDA_TLS __attribute__((tls_model("initial-exec")))

// The host-function rule (behaviour 7): set on a worker while it runs a host function.
extern thread_local bool tInHostFunction FAKE_CUDA_TLS;
CUresult hostFunctionViolation(const char* entry);
#define FAKE_CUDA_ENTRY(name)                        \
  do {                                               \
    if (fake_cuda::tInHostFunction) [[unlikely]]     \
      return fake_cuda::hostFunctionViolation(name); \
  } while (0)

// The calling thread's current context (cuCtxSetCurrent); a Context* or null.
extern thread_local CUcontext tCurrent FAKE_CUDA_TLS;
struct Context {
  int ordinal;
};
extern Context gContexts[16];

// An in-order stream. In async mode a worker thread runs `ops`; in sync mode the enqueuing call
// runs each op itself. `done` counts the ops finished; an op's position is its 1-based index.
struct Stream : std::enable_shared_from_this<Stream> {
  using Op = std::function<void()>;
  CUcontext context = nullptr;
  std::mutex mutex;
  std::condition_variable work;      // ops or stop arrived (the worker waits)
  std::condition_variable progress;  // done grew (waits for a position)
  std::deque<Op> ops;
  uint64_t enqueued = 0;                 // guarded by mutex
  uint64_t done = 0;                     // guarded by mutex; mirrored by doneAcquire
  std::atomic<uint64_t> doneAcquire{0};  // for lock-free completion checks
  bool stop = false;                     // destroyed: drain, then exit
  bool exited = false;
  std::thread worker;
};

// A recorded position (cuEventRecord): complete once its stream has finished `position` ops.
struct Mark {
  std::shared_ptr<Stream> stream;
  uint64_t position = 0;
  std::atomic<int64_t> ns{-1};  // host time the record ran (cuEventElapsedTime)
};

// The stream a handle names: the context's null stream for 0, CU_STREAM_LEGACY and
// CU_STREAM_PER_THREAD. Null when there is no current context for such a handle.
Stream* resolve(CUstream handle);
Stream* createStream(CUcontext context);
void destroyStream(Stream* stream);
// Appends an op (runs it, in sync mode); returns its position.
uint64_t enqueue(Stream& stream, Stream::Op op);
// cuEventRecord's capture: an op that stamps the mark, at the stream's current end.
std::shared_ptr<Mark> record(Stream& stream);
bool complete(const Mark& mark);
// Blocks the calling thread until `stream` finished `position` ops; `spin` first spins up to
// 20 µs. Returns whether it had to wait.
bool waitFor(Stream& stream, uint64_t position, bool spin);
// Waits for the work of every stream of `context` enqueued before the call. Returns whether it
// had to wait.
bool synchronizeContext(CUcontext context);

int64_t nowNs();

}  // namespace fake_cuda
