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
// functions), memory.cpp (allocation, host registration, the address ranges, copies, fills,
// pools), memops.cpp (stream memory operations), vmm.cpp (virtual memory management), ipc.cpp
// (IPC memory handles), external.cpp (external semaphores), graphs.cpp (graphs, capture); where
// nccl.h is found, nccl.cpp (communicators), nccl_collectives.cpp (collectives, sends, receives,
// groups) and nccl_reduce.cpp (element types, reductions): the NCCL names, below.
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
//   BATON_FAKE_CUDA_NO_MEMOPS64=1    a driver without 64-bit stream memory operations:
//                                    CAN_USE_64_BIT_STREAM_MEM_OPS reports 0 and
//                                    cuStreamWaitValue64/cuStreamWriteValue64 answer
//                                    CUDA_ERROR_NOT_SUPPORTED (the 32-bit ones still work).
//   BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS=1  every cuMemAlloc allocation is a memfd of its own,
//                                    mapped shared, so that cuIpcGetMemHandle works (M4); by
//                                    default they are heap memory, which AddressSanitizer watches.
// The counters are also exported: `void batonFakeCudaStats(BatonFakeCudaStats*)` (see below),
// found with dlsym in the loaded driver. Every device reports compute capability 9.0 (an H100's)
// unless a test sets another: `int batonFakeCudaSetComputeCapability(int device, int major, int
// minor)` (0 on success, -1 for a device or value out of range), for the attribute queries and
// the communicators made after it.
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
//  G1. Graphs (docs: "Graph Management", "Stream Management" for capture): cuGraphCreate,
//      cuGraphDestroy; nodes added with their dependencies (nodes of the same graph, else
//      CUDA_ERROR_INVALID_VALUE): cuGraphAddEmptyNode, cuGraphAddMemcpyNode (one-dimensional
//      copies: Height and Depth 0 or 1, memory types host, device or unified; else
//      CUDA_ERROR_NOT_SUPPORTED), cuGraphAddMemsetNode (elementSize 1, 2 or 4, height 0 or 1),
//      cuGraphAddHostNode (runs as a host function: behaviour 7), cuGraphAddChildGraphNode (the
//      child is cloned when added, as the driver documents).
//  G2. cuGraphInstantiateWithFlags (cuGraphInstantiate) makes an executable graph from a
//      snapshot of the graph: later changes to the graph, or its destruction, do not change it.
//  G3. cuGraphLaunch enqueues the graph's nodes on the stream, in an order that respects their
//      dependencies (the order they were added in, children inline): independent nodes run one
//      after another, which is one of the orders the driver may choose. Each launch is ordered
//      behind the previous launch of the same executable graph, on any stream.
//  G4. cuGraphExecUpdate (cuGraphExecUpdate_v2): a graph with the same nodes (count, kinds, in
//      order) and the same dependencies updates the executable graph's parameters for its later
//      launches (CU_GRAPH_EXEC_UPDATE_SUCCESS); otherwise CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
//      with CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED (another count or other dependencies) or
//      CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, and the executable graph is unchanged.
//  G5. Stream capture: cuStreamBeginCapture (_v2) on a stream other than the null stream (that:
//      CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; one already capturing: CUDA_ERROR_ILLEGAL_STATE).
//      Until cuStreamEndCapture, the operations enqueued on it (copies, fills, host functions,
//      collectives of the NCCL names) become nodes of a graph, each depending on the one before,
//      and do not run. cuStreamIsCapturing reports NONE, ACTIVE or INVALIDATED.
//  G6. What the capture cannot take invalidates it and returns
//  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
//      (the capture's global mode): cuStreamSynchronize and cuStreamQuery of the capturing stream,
//      cuEventRecord and cuStreamWaitEvent on it (cross-stream capture is not modelled),
//      cuMemAllocFromPoolAsync and cuMemFreeAsync on it; cuGraphLaunch on it likewise;
//      cuCtxSynchronize of its context from any thread (as seen on the H200: a device
//      synchronisation ends a capture in progress, whatever its mode; HIP's hipFree and
//      hipHostFree, through the translation library, make one). Its
//      cuStreamEndCapture then returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph.
//      cuStreamEndCapture of a stream not capturing: CUDA_ERROR_ILLEGAL_STATE.
//  M1. Host registration ("Memory Management": cuMemHostRegister, cuMemHostUnregister,
//      cuMemHostGetDevicePointer). Registering records the range (nothing is page-locked); it
//      then counts as page-locked for copies (behaviour 11) and as device memory for M3. Flags
//      PORTABLE, DEVICEMAP, READ_ONLY are accepted (the device pointer is the host pointer, with or
//      without DEVICEMAP, as on the H100); IOMEMORY is INVALID_VALUE (there is no I/O memory).
//      Answers as measured on the H100 (driver 580): null, size 0 or unknown flags, memory of
//      cuMemHostAlloc or cuMemAlloc: INVALID_VALUE; overlapping a registered range:
//      HOST_MEMORY_ALREADY_REGISTERED; cuMemHostUnregister of an address inside a range but not
//      its base: INVALID_VALUE, of one outside every range: HOST_MEMORY_NOT_REGISTERED; and
//      cuMemHostUnregister first synchronizes the current context (on the H100 it blocked while
//      a stream wait on the range was pending). cuMemHostGetDevicePointer: any address inside
//      registered or cuMemHostAlloc memory; flags other than 0, or other memory: INVALID_VALUE.
//  M2. Virtual memory management with POSIX descriptors ("Virtual Memory Management"; vmm.cpp
//      says how): cuMemGetAllocationGranularity (2 MiB, minimum and recommended, as the H100),
//      cuMemCreate (pinned, on a device, requested handle types none or
//      POSIX_FILE_DESCRIPTOR; a memfd), cuMemRelease, cuMemExportToShareableHandle (a new
//      close-on-exec descriptor the caller owns), cuMemImportFromShareableHandle (the caller keeps
//      its descriptor; a descriptor from another process, by SCM_RIGHTS or inheritance, works),
//      cuMemGetAllocationPropertiesFromHandle, cuMemRetainAllocationHandle,
//      cuMemAddressReserve/Free, cuMemMap (offset 0), cuMemUnmap (whole mappings), cuMemSetAccess.
//      The bytes live until the last descriptor, handle or mapping of them in any process is
//      gone. A mapping is inaccessible until cuMemSetAccess: the fake's host access faults (a
//      GPU's would be an illegal address) and stream memory operations on it are INVALID_VALUE
//      at the call, as on the H100. Copies and fills work on mapped addresses like on any other.
//      VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED and HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED are 1.
//  M3. Stream memory operations ("Stream Memory Operations"; memops.cpp): cuStreamWaitValue32/64,
//      cuStreamWriteValue32/64 (the _v2 names). A wait holds up only its stream's later work
//      until its condition holds: GEQ is cyclic, (int64_t)(*addr - value) >= 0 ((int32_t) for
//      32 bits: a word of ~0 does not release a wait for 9,000,000, one of 2^62 does), EQ, AND,
//      NOR. The stream's worker polls the word with acquire loads — spinning (yielding) for
//      20 µs, then sleeping in steps doubling from 10 µs to 200 µs — so a write by the host, by
//      another stream or by another process mapping the same memory releases it within about
//      200 µs. A write is a release store run in stream order (the default flags' barrier:
//      whatever the stream did before is visible to whoever sees the value). Addresses must be
//      device memory (cuMemAlloc, pools, cuMemHostAlloc, registered host memory, accessible
//      mappings, opened IPC memory) aligned to the word; else INVALID_VALUE at the call.
//      CU_STREAM_WAIT_VALUE_FLUSH: NOT_SUPPORTED (CAN_FLUSH_REMOTE_WRITES is 0, as on the H100);
//      CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER: INVALID_VALUE ("not supported in the v2 API",
//      and so answered by the H100). cuStreamSynchronize, cuCtxSynchronize and the frees that
//      synchronize block while a wait is pending; cuStreamDestroy returns at once (behaviour 9).
//      On a capturing stream they become nodes of the capture (G5), as the H100 captures them.
//      In sync mode a wait runs inside the call that enqueues it: the call returns once the
//      condition holds, so the writer must be another thread or process. Memory freed, unmapped
//      or unregistered under a pending operation (elsewhere than the synchronizing frees): the
//      operation ends without touching it, with a message (abort under STRICT), counted in
//      valueWaitsLost. CAN_USE_64_BIT_STREAM_MEM_OPS and CAN_USE_STREAM_WAIT_VALUE_NOR are 1.
//  M4. CUDA IPC memory (ipc.cpp): cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle for
//      cuMemAlloc memory under BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS=1 (otherwise
//      cuIpcGetMemHandle answers NOT_SUPPORTED, with a message). As measured on the H100: an
//      address inside the allocation is accepted; other memory is INVALID_VALUE; opening in the
//      exporting process is INVALID_CONTEXT; a second open returns the same address and needs a
//      second close; closing another address is INVALID_VALUE. The importer maps the exporter's
//      memfd through /proc/<pid>/fd. Freed by the exporter while opened (undefined behaviour
//      for the driver): the importer keeps the bytes as they were, and nothing it writes is seen
//      by the exporter; a handle opened after the free is INVALID_HANDLE.
//  E1. External semaphores ("External Resource Interoperability"; external.cpp):
//      cuImportExternalSemaphore of CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD only
//      (other types: NOT_SUPPORTED), whose descriptor must be the fake's own stand-in for a Vulkan
//      timeline (fake_timeline_fd.hpp: a memfd page with a magic number and the value; anything
//      else is UNKNOWN, as the H100 answers a pipe's descriptor); the driver takes the descriptor
//      on success and closes it at cuDestroyExternalSemaphore. cuSignalExternalSemaphoresAsync sets
//      the value (a release store) in stream order; cuWaitExternalSemaphoresAsync holds its stream
//      until the value is at least the one waited for, polled as M3's waits are. A destroy while a
//      wait or signal is pending (undefined for the driver) is reported and counted
//      (externalSemaphoresDestroyedInUse), and aborts under STRICT. TIMELINE_SEMAPHORE_INTEROP_
//      SUPPORTED is 1. Binary semaphores, keyed mutexes and NvSciSync are not modelled.
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
//   - Kernels and modules (so no kernel nodes), external memory, external semaphores other than
//     E1's,
//     cuStreamBatchMemOp and memory-operation graph nodes added by hand, graph nodes other than
//     those of G1, graph queries and node setters, cross-stream capture, priorities, IPC events,
//     peer access, cross-context handle checks; stream and event flags other than
//     CU_EVENT_BLOCKING_SYNC and CU_EVENT_DISABLE_TIMING.
//   - Page-locking, read-only registration (a write to READ_ONLY memory succeeds), host or NUMA
//     locations of cuMemCreate, multicast, mapping at an offset, splitting mappings.
//   - Memory limits: every allocation comes from the host heap; cuMemGetInfo reports 1 GiB.
//   - Device-side timing: elapsed times are host times of the worker threads.
//
// ---- NCCL: a third set of names (nccl.cpp, nccl_collectives.cpp, nccl_reduce.cpp) -------------
// Built in where nccl.h is found (NCCL 2.28.9's, in the toolkit's include directory): the module
// then exports NCCL's entry points with nccl.h's prototypes, on this same emulation. Loaded
// through BATON_NCCL_LIBRARY — or BATON_RCCL_LIBRARY: RCCL has the same names, and a hipStream_t
// of the HIP names is a CUstream here — it lets CI run baton's collective engine with several
// emulated devices (BATON_FAKE_CUDA_DEVICES) in one process. Exported: ncclGetVersion (nccl.h's
// NCCL_VERSION_CODE, 22809; BATON_FAKE_NCCL_VERSION=<code> reports another, and N11 follows it),
// ncclGetUniqueId, ncclGetErrorString (NCCL's texts), ncclGetLastError, ncclCommInitRank,
// ncclCommInitRankConfig, ncclCommInitAll, ncclCommFinalize, ncclCommDestroy, ncclCommAbort,
// ncclCommRevoke, ncclCommSplit, ncclCommShrink, ncclCommGetAsyncError, ncclCommCount,
// ncclCommCuDevice, ncclCommUserRank, ncclGroupStart, ncclGroupEnd, ncclAllReduce, ncclBroadcast,
// ncclBcast, ncclReduce, ncclAllGather, ncclReduceScatter, ncclAlltoAll, ncclSend, ncclRecv; for
// tests, batonFakeNcclStats (BatonFakeNcclStats below; BATON_FAKE_CUDA_STATS=1 prints it too) and
// `int batonFakeNcclInjectAsyncError(ncclComm_t, int ncclResult)` (0 on success, -1 for a handle
// that is not live; a null handle injects into every live communicator, -1 when there is none).
// Followed: the NCCL user guide (docs.nvidia.com/deeplearning/nccl/user-guide: "Communicator
// Creation and Management Functions", "Collective Operations", "Group Calls", "Point-To-Point
// Communication", "Fault Tolerance") and nccl.h's comments.
//  N1. A rank is a communicator of an emulated device: the device of the context current on the
//      calling thread at init (none: ncclInvalidUsage). The ranks of one unique id (its 128
//      bytes) meet in a rendezvous that completes when all nranks arrived. Refused at arrival,
//      with a message for ncclGetLastError: a rank out of range or nranks < 1
//      (ncclInvalidArgument); a rank taken, another nranks, two ranks on one device ("Duplicate
//      GPU detected") (ncclInvalidUsage). ncclCommInitAll makes a whole group at once.
//  N2. A blocking init waits for every rank. A non-blocking one (config->blocking == 0;
//      NCCL_CONFIG_INITIALIZER leaves it undefined, which blocks) returns ncclInProgress, and
//      ncclCommGetAsyncError reports ncclInProgress until every rank arrived — for ever if one
//      never does. Inits of one thread inside ncclGroupStart/End (one per device) complete at
//      ncclGroupEnd (which returns ncclInProgress if one is non-blocking).
//  N3. Each collective, send or receive call outside a group enqueues one op on its stream (a null
//      stream: the default stream of the communicator's device). When the stream reaches it,
//      collective k of a rank (numbered per communicator) meets collective k of every other rank;
//      the last to arrive computes every rank's output; each op returns once its round is done.
//      A rank that never gets there leaves its peers' ops blocked — and their streams behind
//      them, as a spinning GPU kernel would — until revoke, abort or NCCL_SHRINK_ABORT ends them.
//      Send k from rank a to rank b meets receive k of b from a; a send's op returns once its
//      receiver took the data. Sends to self are allowed.
//  N4. Inside a group the calls are collected; at the outermost ncclGroupEnd each (communicator,
//      stream) gets one op that posts all its calls first (inputs, sends), then waits for each
//      collective and receive in call order, then for its sends to be taken: the calls of one
//      group never deadlock each other. A collective, send or receive refused inside a group
//      makes ncclGroupEnd return its error, and nothing of the group runs.
//  N5. Non-blocking communicators: a call (or the ncclGroupEnd of calls) returns ncclInProgress,
//      and ncclCommGetAsyncError answers ncclInProgress on the next poll only, then ncclSuccess
//      (the op is enqueued at the call, so stream order holds: the state only exercises the
//      caller's polling). Another call before that poll: ncclInvalidArgument, as NCCL ("Attempt
//      to use communicator before the previous operation returned ncclSuccess").
//  N6. The 12 element types and the 5 built-in operators, reduced in rank order with a rounding
//      to the type after each step (nccl_reduce.cpp says how). Inputs are copied when the op
//      posts them, so in-place calls work (sendbuff == recvbuff; NCCL's in-place layouts of
//      allGather and reduceScatter).
//  N7. Failures. batonFakeNcclInjectAsyncError sets what ncclCommGetAsyncError reports, and what
//      later calls on that rank return (as NCCL's ncclCommEnsureReady does); ops already waiting
//      keep waiting, as with NCCL over sockets after a peer died. ncclCommRevoke(comm, 0) ends
//      this rank's waiting and pending ops of the communicator at once (they return without
//      writing their outputs; a peer completing the round later writes only its own), refuses
//      later calls (ncclInvalidUsage) and ncclCommFinalize, and leaves the communicator to split,
//      shrink and destroy; a non-blocking one answers ncclInProgress on one poll. ncclCommAbort
//      ends the ops likewise and frees the handle. ncclCommFinalize: a blocking one waits until
//      this rank's ops of the communicator ran, a non-blocking one returns ncclInProgress and
//      reports it until then. ncclCommDestroy frees at once (ops already enqueued still run).
//  N8. ncclCommSplit: every parent rank calls it; the ranks of one color make a communicator,
//      ordered by (key, parent rank); NCCL_SPLIT_NOCOLOR takes part and gets NULL.
//      ncclCommShrink: every surviving rank calls it with the same list; the survivors are
//      renumbered in parent order; NCCL_SHRINK_ABORT first ends the parent's ops as revoke does.
//      Their rendezvous are keyed by the parent's group and its count of splits (shrinks). Blocking
//      or not as the config says (NULL: the parent's): non-blocking returns ncclInProgress, and the
//      new communicator — and the parent, until the rendezvous completes — reports it.
//  N10. Capture (NCCL: "Using NCCL with CUDA Graphs"). A call or group on a stream that captures
//      becomes one captured node per (communicator, stream), not run: each launch of a graph
//      holding it runs the calls anew, numbered when the launch reaches them (collective k of a
//      rank is then its k-th run, captured or not). The capture holds the communicator until
//      every graph, executable graph and launch that has the node is gone (NCCL 2.26 and later:
//      the graph's persistent plans); ncclCommDestroy and ncclCommAbort (after ending the ops,
//      as below) wait for that, as NCCL does, for up to 10 s, then return ncclInvalidUsage
//      instead of hanging, naming the graphs still alive.
//  N9. Calls on different communicators may run concurrently on different threads, and
//      ncclCommGetAsyncError from a watchdog thread alongside a call on the same communicator. No
//      lock is held while an op or a call waits. A communicator the program never destroys stays
//      reachable (no leak report at exit).
//  N11. What NCCL refuses at the call for a type or an operator (src/enqueue.cc: ArgsCheck,
//      taskAppend; src/device/onerank.cu: ncclLaunchOneRank), with ncclInvalidArgument and a
//      message: the float8 types where the version reported is below 2.24 (it has none); from
//      2.24, a float8 allReduce, reduce or reduceScatter when a device of the group is below
//      compute capability 9.0 ("FP8 reduction support begins with sm90 capable devices"), and
//      their ncclAvg of float8 on a communicator of one rank (NCCL's one-rank path scales the
//      input without the reduction kernels and has no float8 kernel for it). On a non-blocking
//      communicator, a call refused for its arguments also sets the communicator's asynchronous
//      error (NCCL's ncclEnqueueCheck): ncclCommGetAsyncError reports it and later calls fail.
// Deviations from NCCL, chosen:
//   - One process: no bootstrap, no transports; the unique id is only a key.
//   - Arrival errors (N1) are returned by the init call, non-blocking ones included.
//   - Finalize is local (NCCL waits for the whole group to be quiescent); revoke is quiescent at
//     once (NCCL: about half a second, docs/performance.md, 'Measurements behind design choices').
//   - ncclAvg of floating types sums, then divides (NCCL multiplies each input by 1/nranks first),
//     so that averages of exact values stay exact. The fp8 types saturate (as cuda_fp8.h's
//     __NV_SATFINITE conversions).
//   - A collective whose calls differ between ranks (type, count, operator, root) writes no output
//     and prints a message (NCCL: undefined, often a hang).
//   - ncclGetLastError returns the calling thread's last message, whatever the communicator.
//   - Not exported: ncclMemAlloc/Free, ncclCommRegister and windows, ncclGather, ncclScatter,
//     ncclRedOpCreatePreMulSum (custom operators), ncclCommInitRankScalable,
//     ncclGroupSimulateEnd, the pncclXxx names. Config fields other than blocking are ignored.
//   - Sync mode (BATON_FAKE_CUDA_MODE=sync) runs each op inside its call: a group's ops go through
//     their phases together, but a lone call blocks its thread until its peers' calls arrive
//     (one thread per rank, or groups).
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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
  // cuMemFreeHost, cuMemFreeAsync once its stream ran it), and allocations of this process's
  // virtual memory management (one per cuMemCreate and cuMemImportFromShareableHandle) whose last
  // handle and mapping are not yet gone: a test checks that nothing leaks without a leak checker.
  uint64_t allocationsLive;
  // Graphs (graphs.cpp): graphs and executable graphs not yet destroyed; launches; updates that
  // succeeded and that were refused; ops captured from streams.
  uint64_t graphsLive, execsLive, graphLaunches, execUpdates, execUpdatesRefused, opsCaptured;
  // Stream memory operations (memops.cpp): value waits that found their condition unmet when the
  // stream reached them; waits and writes whose memory was freed or unregistered while pending.
  uint64_t valueWaitsBlocked, valueWaitsLost;
  // External semaphores (external.cpp): imports not yet destroyed; waits that found the value
  // unmet; destroys with a wait or signal still pending (which the driver forbids).
  uint64_t externalSemaphoresLive, externalWaitsBlocked, externalSemaphoresDestroyedInUse;
};
extern "C" void batonFakeCudaStats(BatonFakeCudaStats* out);

// For tests: a counter of the fake driver loaded from `path` (the BATON_CUDA_DRIVER or
// BATON_HIP_DRIVER baton used), or -1 when `path` is unset or not a loaded fake.
inline int64_t batonFakeCudaCounter(const char* path, uint64_t BatonFakeCudaStats::*counter) {
  if (!path || !*path) return -1;
  void* library = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!library) return -1;
  auto* stats =
      reinterpret_cast<void (*)(BatonFakeCudaStats*)>(dlsym(library, "batonFakeCudaStats"));
  BatonFakeCudaStats st{};
  if (stats) stats(&st);
  dlclose(library);
  return stats ? static_cast<int64_t>(st.*counter) : -1;
}

// The fake NCCL's counters, as batonFakeNcclStats reports them (exported only where the module was
// built with nccl.h; find it with dlsym). The live counts go down, the others only grow.
struct BatonFakeNcclStats {
  uint64_t communicatorsLive;    // handles made (init, split, shrink) not yet destroyed or aborted
  uint64_t collectivesExecuted;  // collectives completed, counted once per rank
  uint64_t p2pExecuted;          // sends and receives completed, each counted
  uint64_t opsAborted;           // stream ops ended by revoke, abort or NCCL_SHRINK_ABORT
  uint64_t opsLive;              // stream ops enqueued by NCCL calls and not yet finished
  uint64_t persistentLive;       // captures held by graphs, executable graphs or launches (N10)
};
extern "C" void batonFakeNcclStats(BatonFakeNcclStats* out);

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
  bool memOps64 = true;               // !BATON_FAKE_CUDA_NO_MEMOPS64
  bool shareableAllocations = false;  // BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS
};
const Config& config();

struct Counters {
  std::atomic<uint64_t> hostFunctionViolations{0}, opsExecuted{0}, eventQueryNotReady{0},
      eventSyncBlocked{0}, streamWaitsBlocked{0}, streamSyncBlocked{0}, streamsLive{0},
      eventsLive{0}, allocationsLive{0}, graphsLive{0}, execsLive{0}, graphLaunches{0},
      execUpdates{0}, execUpdatesRefused{0}, opsCaptured{0}, valueWaitsBlocked{0},
      valueWaitsLost{0}, externalSemaphoresLive{0}, externalWaitsBlocked{0},
      externalSemaphoresDestroyedInUse{0};
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
// A device's compute capability, major * 10 + minor (batonFakeCudaSetComputeCapability).
int computeCapability(int device);

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
  // Stream capture (graphs.cpp, behaviour G5): while `capture` is set (guarded by mutex), ops
  // become nodes of that graph instead of running; `capturing` mirrors it for a lock-free check.
  std::atomic<bool> capturing{false};
  struct Graph* capture = nullptr;
  bool captureInvalidated = false;
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
// Appends an op (runs it, in sync mode); returns its position. On a capturing stream the op
// becomes a node of the capture's graph instead (graphs.cpp), and the position does not move.
uint64_t enqueue(Stream& stream, Stream::Op op);
// graphs.cpp: with stream.mutex held and stream.capture set, appends `op` as a captured node.
void captureLocked(Stream& stream, Stream::Op op);
// Whether `stream` captures; an entry point that the capture cannot take calls invalidate.
bool capturing(const Stream& stream);
// Ends a capture in the invalidated state (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED at its end).
void invalidateCapture(Stream& stream);
// cuEventRecord's capture: an op that stamps the mark, at the stream's current end.
std::shared_ptr<Mark> record(Stream& stream);
bool complete(const Mark& mark);
// Blocks the calling thread until `stream` finished `position` ops; `spin` first spins up to
// 20 µs. Returns whether it had to wait.
bool waitFor(Stream& stream, uint64_t position, bool spin);
// Waits for the work of every stream of `context` enqueued before the call (not a capturing
// stream's, whose ops do not run). Returns whether it had to wait. With `capturing`
// (cuCtxSynchronize), a capture in progress is invalidated, and *capturing set.
bool synchronizeContext(CUcontext context, bool* capturing = nullptr);

int64_t nowNs();

// The polling of waits on memory (M3, E1), on the calling thread (a stream's worker): calls
// `check` until it answers Met or Abandon, spinning (yielding) for 20 µs after the first Unmet,
// then sleeping in steps doubling from 10 µs to 200 µs. Returns whether a check was Unmet.
enum class Poll { Met, Unmet, Abandon };
bool pollUntil(const std::function<Poll()>& check);

// ---- Device-visible address ranges (memory.cpp; behaviours M1-M4) ------------------------------
// Every range a device pointer may fall in: what stream memory operations and
// cuMemHostGetDevicePointer check their addresses against. Ranges never overlap.
enum class RangeKind {
  Device,      // cuMemAlloc (heap, or a memfd mapping with BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS)
  Pool,        // cuMemAllocFromPoolAsync
  HostAlloc,   // cuMemHostAlloc (page-locked)
  Registered,  // cuMemHostRegister (page-locked)
  Mapped,      // cuMemMap of a cuMemCreate allocation (vmm.cpp)
  IpcOpened,   // cuIpcOpenMemHandle (vmm.cpp)
};
struct AddressRange {
  uintptr_t base = 0;
  size_t size = 0;
  RangeKind kind = RangeKind::Device;
  unsigned flags = 0;      // Registered: the cuMemHostRegister flags
  bool accessible = true;  // Mapped: false until cuMemSetAccess grants read or write
};
// Records a range. A range it overlaps is a stale one (host memory freed while still registered,
// say): it is dropped, with a message. With `refuseOverlap`, nothing changes and false is returned.
bool addRange(const AddressRange& range, bool refuseOverlap = false);
// Forgets the range that starts at `base`, if it is of one of `kinds` (a bit per RangeKind);
// returns whether there was one, and its description in *out.
bool removeRange(uintptr_t base, unsigned kinds, AddressRange* out = nullptr);
inline constexpr unsigned kindBit(RangeKind k) { return 1u << static_cast<unsigned>(k); }
// The range holding [address, address + bytes), if any.
bool findRange(uintptr_t address, size_t bytes, AddressRange* out);
// Marks the mapped ranges inside [base, base + size) accessible or not (cuMemSetAccess).
void setAccessible(uintptr_t base, size_t size, bool accessible);
// Runs `fn` with the range registry locked for reading, if [address, address + bytes) is still
// a known range: a stream memory operation reads or writes its word through this, so that a
// range being freed or unregistered (which takes the lock for writing first) cannot be unmapped
// under it. Returns false, without calling `fn`, when the range is gone.
bool withLiveRange(uintptr_t address, size_t bytes, const std::function<void()>& fn);

// cuMemAlloc's memfds under BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS are named this prefix and a
// serial number (unique in the process), which cuIpcGetMemHandle puts in the handle and
// cuIpcOpenMemHandle checks (ipc.cpp). cuMemCreate's are named kVmmMemfdPrefix and the device.
inline constexpr char kIpcMemfdPrefix[] = "baton-fake-cuda-ipc:";
inline constexpr char kVmmMemfdPrefix[] = "baton-fake-cuda-vmm:";
// The memfd, mapped size and serial of a shareable cuMemAlloc allocation starting at `base`.
bool shareableAllocation(uintptr_t base, int* fd, size_t* size, uint64_t* serial);

// The stream memory operations' reports (memops.cpp): an operation whose memory went away while
// it was pending (message; abort under STRICT).
void memoryOpLostItsRange(const char* what, uintptr_t address);

}  // namespace fake_cuda

// ---- The fake NCCL's internals (nccl.cpp, nccl_collectives.cpp, nccl_reduce.cpp) ---------------
// Seen only by units that include nccl.h before this header.
#ifdef NCCL_H_
#include <cstdarg>

struct ncclComm {};  // a handle; the registry (nccl.cpp) maps it to its Rank

namespace fake_cuda::nccl {

struct NcclCounters {
  std::atomic<uint64_t> communicatorsLive{0}, communicatorsMade{0}, collectivesExecuted{0},
      p2pExecuted{0}, opsAborted{0}, opsLive{0}, persistentLive{0};
};
extern NcclCounters gNccl;

// The ops of one communicator group: collective rounds and messages (nccl_collectives.cpp).
struct Clique;
std::shared_ptr<Clique> makeClique(int nranks);
uint64_t cliqueId(const Clique& clique);

// One rank of a communicator: what a handle names, and what its stream ops hold (they outlive the
// handle after destroy or abort).
struct Rank {
  Rank(int device_, bool blocking_) : device(device_), blocking(blocking_) {}
  const int device;     // the ordinal of the context current at init (a split's: the parent's)
  const bool blocking;  // config->blocking != 0
  // Set once the creation rendezvous completed, after clique, rank and nranks (release).
  std::atomic<bool> ready{false};
  // Revoked or aborted: set with the clique's mutex held, so that waiting ops see it.
  std::atomic<bool> revoked{false};
  std::shared_ptr<Clique> clique;
  int rank = -1, nranks = 0;
  // The lowest compute capability (major * 10 + minor) of the group's devices, as NCCL's
  // comm->minCompCap, fixed when the rendezvous completed.
  int minComputeCapability = 0;
  std::mutex mutex;              // guards what follows
  std::condition_variable idle;  // opsFinished grew (ncclCommFinalize)
  // The asynchronous error: batonFakeNcclInjectAsyncError's, or a non-blocking call's refusal
  // (N11).
  ncclResult_t injected = ncclSuccess;
  int pollsInProgress = 0;    // ncclCommGetAsyncError polls still answered ncclInProgress
  int gatheringsPending = 0;  // non-blocking splits and shrinks of this parent not complete
  bool finalizing = false;
  uint64_t collectives = 0, splits = 0, shrinks = 0;  // sequence numbers issued
  std::vector<uint64_t> sends, recvs;                 // per peer
  uint64_t opsEnqueued = 0, opsFinished = 0;
  int persistentRefs = 0;  // captures of its calls still held by a graph or a launch (N10)
};

// What ncclGetVersion reports: NCCL_VERSION_CODE (nccl.h's), or BATON_FAKE_NCCL_VERSION.
int version();
// Records the calling thread's last error (ncclGetLastError) and returns `result`.
ncclResult_t fail(ncclResult_t result, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
// The rank a live handle names; null for any other pointer.
std::shared_ptr<Rank> lookup(const ncclComm* comm);
// Blocks until every state's creation rendezvous completed.
void waitReady(const std::vector<std::shared_ptr<Rank>>& states);
// What NCCL's ncclCommEnsureReady checks before a call on a communicator.
ncclResult_t ensureUsable(Rank& rank, const char* api);
// Ends the rank's waiting and pending ops (they return without writing outputs).
void revoke(Rank& rank);
// The rank's handle was destroyed or aborted: its peers' first calls stop waiting for it
// (BATON_FAKE_NCCL_CONNECT_IN_CALL, nccl_collectives.cpp).
void departed(Rank& rank);
// Groups (nccl_collectives.cpp): inside ncclGroupStart/End on this thread; a creation call inside
// a group leaves its wait (or its progress report) to ncclGroupEnd.
bool inGroup();
void deferToGroup(const std::shared_ptr<Rank>& state, bool callBlocks);

// The arithmetic (nccl_reduce.cpp). Enumerators in the order of nccl_collectives.cpp's Call.
enum class Collective { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll };
size_t elementSize(int type);  // 0 for a type NCCL does not have
// Writes each rank's output (null: none, or withdrawn) from every rank's input, in rank order.
void compute(Collective kind, int type, int op, size_t count, int root,
             const std::vector<std::vector<unsigned char>>& inputs,
             const std::vector<void*>& outputs);

}  // namespace fake_cuda::nccl
#endif  // NCCL_H_
