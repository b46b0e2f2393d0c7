// The two ranks of collectives_bench, each with its baton objects (a device with a compute and a
// comm queue, a communicator of Instance::createCommunicators, a timeline per queue) and its raw
// ones (the device's primary context, a compute and a comm stream, events, the PTX module, a
// communicator of ncclCommInitAll), made and destroyed together; and the helpers that both sides'
// benchmarks share. Both sides use the primary context of each device, as baton and NCCL do.
//
// Every failure ends the process: a missing backend, collective library or second device as a
// skip (exit code 77, or 1 where BATON_TEST_REQUIRE_BACKENDS names the backend), anything else
// with a message naming the call (exit code 1).
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <baton/baton.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cuda_symbols.hpp"
#include "raw_nccl.hpp"

namespace baton_bench {

constexpr int kRanks = 2;
// A host wait longer than this is a hang: the run ends with a message instead.
constexpr uint64_t kWaitTimeoutNs = 120'000'000'000ull;
// The emulated compute (a driver without kernels): bytes set per layer.
constexpr size_t kScratchBytes = 1 << 20;
// 1.0f, the bits of every allReduce source element.
constexpr uint32_t kOneF = 0x3f800000;

[[noreturn]] void die(const char* what, const std::string& detail);
#define BATON_OK(expr)                                                           \
  do {                                                                           \
    ::baton::Result r_ = (expr);                                                 \
    if (r_ != ::baton::Result::Success) die(#expr, ::baton::lastErrorMessage()); \
  } while (0)
#define CU_OK(expr)                                                    \
  do {                                                                 \
    CUresult r_ = (expr);                                              \
    if (r_ != CUDA_SUCCESS) die(#expr, ::baton::cuda::resultName(r_)); \
  } while (0)
#define NCCL_OK(expr)                                                              \
  do {                                                                             \
    ncclResult_t r_ = (expr);                                                      \
    if (r_ != ncclSuccess) die(#expr, ::baton_bench::nccl.ncclGetErrorString(r_)); \
  } while (0)

// The raw side's communicators are blocking unless NCCL_COMM_BLOCKING=0 is set (NCCL's own
// switch, for communicators whose config leaves it undefined: the raw side's; baton's always set
// it): then they are non-blocking, as baton's are, and every call is followed by polling
// ncclCommGetAsyncError until it is no longer ncclInProgress (rawSettle). Running the benchmark
// both ways shows what non-blocking communicators cost NCCL itself: the floor of baton's figures.
void rawSettle();
// ncclGroupEnd, then rawSettle (ncclInProgress is not an error for non-blocking communicators).
#define NCCL_GROUP_END()                                               \
  do {                                                                 \
    ncclResult_t r_ = ::baton_bench::nccl.ncclGroupEnd();              \
    if (r_ != ncclSuccess && r_ != ncclInProgress)                     \
      die("ncclGroupEnd", ::baton_bench::nccl.ncclGetErrorString(r_)); \
    ::baton_bench::rawSettle();                                        \
  } while (0)

// The raw side's libraries: NCCL (raw_nccl.hpp) and the CUDA driver's symbol table.
extern RawNccl nccl;
extern const baton::cuda::Symbols* cu;

struct Rank {
  int ordinal = 0;  // the CUDA (or HIP) device ordinal
  std::string name;
  // baton
  baton::Device device;
  baton::Queue compute, comm;  // queues 0 and 1
  baton::Communicator communicator;
  baton::Semaphore computed, reduced;  // signalled by the compute and the comm queue
  uint64_t computedValue = 0, reducedValue = 0;
  baton::Buffer staging;  // pinned, for reading results back
  float* stagingHost = nullptr;
  baton::Buffer scratch;  // the emulated compute's memory
  uint64_t scratchAddress = 0;
  // raw
  CUdevice cuDevice = 0;
  CUcontext context = nullptr;  // the primary context, which baton and NCCL use too
  CUstream computeStream = nullptr, commStream = nullptr;
  CUevent done = nullptr;           // recorded after a loop, synchronized on
  std::vector<CUevent> computeEnd;  // the pipeline's: layer l's compute finished
  CUmodule module = nullptr;
  CUfunction spin = nullptr;  // baton_spin_ns, when the driver runs kernels
  ncclComm_t ncclComm = nullptr;
};

struct Env {
  baton::BackendKind backend = baton::BackendKind::Cuda;  // baton's side
  baton::Instance instance;
  Rank ranks[kRanks];
  bool kernels = false;  // false: the driver cannot run kernels (the compute is a memset)
  baton::CollectiveSupport batonNccl;
};
extern Env env;

// "CUDA" or "HIP": baton's backend.
const char* backendName();

// Makes both ranks on the first two devices of `backend` (baton) and the same devices' ordinals
// (raw), and their communicators; loads the raw side's libraries.
void setupRanks(baton::BackendKind backend);
// Destroys them; nothing may be pending.
void teardownRanks();

// The raw side: makes rank r's primary context current on this thread.
void makeCurrent(const Rank& r);
// The raw side's "host sees the end": an event recorded on `which` stream of each rank, then
// cuEventSynchronize on each, in rank order.
enum class Streams { Comm, Compute };
void rawFinish(Streams which);

// A command buffer of rank r's device holding what `fn` records.
baton::CommandBuffer record(const Rank& r,
                            const std::function<baton::Result(baton::CommandBuffer)>& fn);
// Semaphore::wait, ending the run after kWaitTimeoutNs.
void wait(baton::Semaphore s, uint64_t value);
// Runs `fn`'s commands on rank r's comm queue and waits for them (set-up and checks: not timed).
void runAndWait(Rank& r, const std::function<baton::Result(baton::CommandBuffer)>& fn);
// A device buffer of rank r, every 32-bit word set to `fill`.
baton::Buffer deviceBuffer(Rank& r, uint64_t bytes, uint32_t fill);
uint64_t address(baton::Buffer b);
inline void* pointer(uint64_t address) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
}
// The first and the last float of `bytes` of b, read back through the rank's pinned staging.
void readEnds(Rank& r, baton::Buffer b, uint64_t bytes, float out[2]);

}  // namespace baton_bench
