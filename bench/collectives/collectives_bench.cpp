// collectives_bench: baton's collectives (baton/communicator.hpp) against raw NCCL calls on raw
// CUDA streams and events, in the same run. Two GPUs of one process, one rank each. Every figure
// alternates the raw and the baton measurement (ABAB, --reps pairs), so that drift of the machine
// hits both; the tables give the medians and their ratio baton/raw.
//
//   bandwidth  allReduce of float32, sum, 8 B .. 1 GiB (x4 steps, and 64 MiB, 256 MiB, 1 GiB):
//              bus bandwidth (algbw x 2(n-1)/n) of a loop of back-to-back allReduces (16 GiB in
//              all, 20 to 2000 calls), timed on the host from the first call until both ranks'
//              last one completed. Then the burst: 20 allReduces of 64 MiB timed the same way,
//              each timing after 5 ms of an idle host, whose difference is what a loop costs
//              baton once (its threads' wake-ups at both ends). Raw: the two
//              blocking communicators of ncclCommInitAll, one stream per GPU, this thread issuing
//              both ranks' calls in one ncclGroupStart/End per iteration, an event recorded per
//              stream after the loop and cuEventSynchronize on each. baton:
//              Instance::createCommunicators, a recorded command buffer per rank holding the
//              allReduce, submitted to the rank's queue per iteration, signalling the rank's
//              timeline semaphore; Semaphore::wait for both last values. Both use the same
//              buffers; the first repetition of each size checks the result. Target: >= 0.98x
//              at 64 MiB and above.
//   latency    8 B .. 64 KiB, one allReduce at a time, its completion seen on the host before the
//              next is issued (raw: cuEventSynchronize on both streams; baton: Semaphore::wait on
//              both ranks' signals); the median over every allReduce. Target: <= 1.1x.
//   pipeline   a training step of --layers layers: per layer a compute kernel on queue 0 of each
//              GPU (baton_spin_ns busy-waiting --kernel-us, launched from a native callback with
//              cuLaunchKernel; raw: the same launch on a compute stream), and the layer's gradient
//              allReduce (--layer-size, in place) on queue 1 once that compute finished, so that
//              it overlaps the next layer's compute (baton: a timeline semaphore per queue; raw:
//              two streams per GPU, cuEventRecord and cuStreamWaitEvent). The host waits for the
//              step's end before the next (the optimizer's turn). Median step time, target
//              <= 1.02x; overlap = (compute alone + communication alone) / step time, the two
//              "alone" figures measured on the raw side in the same run.
//
// What the comparison includes on baton's side (impl/stream/collectives.hpp): collectives are
// issued for each device by its caller thread (the issuing thread hands each group over and waits),
// never by the submitting thread, on blocking communicators split from non-blocking ones, with
// events around each group for the no-progress watch; a submission with collectives publishes its
// signals from the host once its work completed.
//
// The compute kernel is PTX (tests/cuda/ptx_kernels.hpp), loaded per device with cuModuleLoadData.
// Where the driver cannot run kernels (the tests' emulated driver), it is a cuMemsetD32Async of
// 1 MiB on both sides instead, and the figures mean nothing: a smoke test of the code paths (the
// output says so). The raw side's CUDA calls go through baton's own symbol table of the driver
// (cuda_symbols.hpp, as bench/cuda/raw_cuda.cpp), its NCCL calls through raw_nccl.hpp; the ranks
// of both sides are made in collective_ranks.cpp.
//
// Options: benchmark names (bandwidth latency pipeline; none: all); --quick (sizes up to 8 MiB,
// 4 MiB layers, few iterations: seconds); --sizes LIST (the bandwidth sizes, e.g. 8,1K,64M,1G);
// --iterations N (per repetition: allReduces per bandwidth timing, allReduces per latency
// repetition, pipeline steps); --reps N (repetitions of each side); --layers N; --kernel-us US;
// --layer-size SIZE; --backend cuda|hip (baton's backend; the raw side is CUDA and NCCL either
// way: for HIP on an NVIDIA GPU, BATON_HIP_DRIVER names tests/hip's translation library and
// BATON_RCCL_LIBRARY a libnccl); --json FILE (the results, machine-readable). NCCL_NVLS_ENABLE=0 is
// set unless the environment sets it (the GPU machines require it). A backend, collective library
// or second device that is missing ends the run with the reason and exit code 77 (a skip), unless
// BATON_TEST_REQUIRE_BACKENDS names the backend (then 1). Output is unbuffered.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "collective_ranks.hpp"

namespace {

using namespace baton_bench;
using baton::Result;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "8 B", "64 KiB", "1 GiB" (exact multiples only; otherwise bytes).
std::string sizeText(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}
// "64M", "1GiB", "4096" -> bytes; 0 when it is not a size.
uint64_t parseSize(const std::string& text) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  std::string unit = end;
  uint64_t scale = 1;
  if (unit == "K" || unit == "KiB")
    scale = 1ull << 10;
  else if (unit == "M" || unit == "MiB")
    scale = 1ull << 20;
  else if (unit == "G" || unit == "GiB")
    scale = 1ull << 30;
  else if (!unit.empty() && unit != "B")
    return 0;
  return n * scale;
}

// ---- options ------------------------------------------------------------------------------------

struct Options {
  bool bandwidth = false, latency = false, pipeline = false;  // none named: all
  bool quick = false;
  std::vector<uint64_t> sizes;  // --sizes; empty: the defaults
  int iterations = 0;           // 0: per benchmark (below)
  int reps = 0;                 // 0: 5, or 2 with --quick
  int layers = 8;
  double kernelUs = 200;
  uint64_t layerBytes = 0;  // 0: 16 MiB, or 4 MiB with --quick
  baton::BackendKind backend = baton::BackendKind::Cuda;
  const char* json = nullptr;
};
Options opt;

// 8 B, x4 up to 1 GiB, plus 64 MiB, 256 MiB and 1 GiB; --quick: up to 8 MiB.
std::vector<uint64_t> defaultBandwidthSizes() {
  const uint64_t top = opt.quick ? 8ull << 20 : 1ull << 30;
  std::vector<uint64_t> sizes;
  for (uint64_t s = 8; s <= top; s *= 4) sizes.push_back(s);
  for (uint64_t s : {64ull << 20, 256ull << 20, 1ull << 30})
    if (s <= top) sizes.push_back(s);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}
// The latency sizes: 8 B, x4, and 64 KiB.
std::vector<uint64_t> latencySizes() {
  std::vector<uint64_t> sizes;
  for (uint64_t s = 8; s < 64 << 10; s *= 4) sizes.push_back(s);
  sizes.push_back(64 << 10);
  return sizes;
}
int reps() { return opt.reps > 0 ? opt.reps : opt.quick ? 2 : 5; }
// Back-to-back allReduces per bandwidth timing: 16 GiB in all, 20 to 2000 of them (a timing of
// 30-100 ms on 2×H200), so that what a loop costs once — the first call's issue after the host
// idled, seeing the last completion — is not counted as bandwidth (the burst figure below shows
// it); 5 with --quick. (Until 2026-11-28 512 MiB in all, 20 to 500: 20 calls of 64 MiB, ~5 ms,
// where baton's ~0.2-0.5 ms of thread wake-ups at both ends read as 0.91-0.97x of raw.)
int bandwidthIterations(uint64_t bytes) {
  if (opt.iterations > 0) return opt.iterations;
  if (opt.quick) return 5;
  return static_cast<int>(std::clamp<uint64_t>((16ull << 30) / bytes, 20, 2000));
}
// The burst: this many allReduces of kBurstBytes, each timing started after the host idled
// (kBurstIdleUs, as the other side's run and the check leave it), timed as the bandwidth loops.
constexpr int kBurstCalls = 20;
constexpr uint64_t kBurstBytes = 64ull << 20;
constexpr int kBurstIdleUs = 5000;
int latencyIterations() { return opt.iterations > 0 ? opt.iterations : opt.quick ? 20 : 200; }
int pipelineSteps() { return opt.iterations > 0 ? opt.iterations : opt.quick ? 5 : 50; }

// ---- allReduce loops: the unit of the bandwidth and the latency figures ---------------------

// The buffers and recorded command buffers of one size, shared by both sides.
struct AllReduce {
  uint64_t bytes = 0;
  baton::Buffer src[kRanks], dst[kRanks];
  uint64_t srcAddress[kRanks] = {}, dstAddress[kRanks] = {};
  baton::CommandBuffer cb[kRanks];  // rank r's allReduce src -> dst
};

// Command buffers for `bytes` of the given buffers (which may be larger).
void recordAllReduce(AllReduce& a, uint64_t bytes) {
  a.bytes = bytes;
  for (int i = 0; i < kRanks; ++i) {
    if (a.cb[i]) BATON_OK(a.cb[i].destroy());
    Rank& r = env.ranks[i];
    a.cb[i] = record(r, [&](baton::CommandBuffer cb) {
      return cb.allReduce(r.communicator, a.src[i], 0, a.dst[i], 0, bytes / 4,
                          baton::ElementType::Float32, baton::ReduceOp::Sum);
    });
  }
}
// Buffers of `bytes` per rank: sources of 1.0f, destinations of 0.
AllReduce allocateAllReduce(uint64_t bytes) {
  AllReduce a;
  for (int i = 0; i < kRanks; ++i) {
    a.src[i] = deviceBuffer(env.ranks[i], bytes, kOneF);
    a.dst[i] = deviceBuffer(env.ranks[i], bytes, 0);
    a.srcAddress[i] = address(a.src[i]);
    a.dstAddress[i] = address(a.dst[i]);
  }
  return a;
}
void release(AllReduce& a) {
  for (int i = 0; i < kRanks; ++i) {
    BATON_OK(a.cb[i].destroy());
    BATON_OK(a.src[i].destroy());
    BATON_OK(a.dst[i].destroy());
  }
}

// `iterations` allReduces back to back, raw: one group of both ranks' calls per iteration, then
// the host sees both streams' ends. Returns the seconds from the first call until then; when
// `callSeconds`, stores there the seconds of the last group's calls (ncclGroupStart .. End).
double rawAllReduces(const AllReduce& a, int iterations, double* callSeconds = nullptr) {
  const size_t count = a.bytes / 4;
  const Clock::time_point t0 = Clock::now();
  Clock::time_point groupStart = t0;
  for (int i = 0; i < iterations; ++i) {
    if (callSeconds) groupStart = Clock::now();
    NCCL_OK(nccl.ncclGroupStart());
    for (int k = 0; k < kRanks; ++k) {
      const Rank& r = env.ranks[k];
      NCCL_OK(nccl.ncclAllReduce(pointer(a.srcAddress[k]), pointer(a.dstAddress[k]), count,
                                 ncclFloat32, ncclSum, r.ncclComm, r.commStream));
    }
    NCCL_GROUP_END();
  }
  if (callSeconds) *callSeconds = secondsSince(groupStart);
  rawFinish(Streams::Comm);
  return secondsSince(t0);
}

// The same on baton: each rank's command buffer submitted to its comm queue per iteration,
// signalling its timeline; then Semaphore::wait for both ranks' last values. The submit infos are
// built once, as an engine keeps them, so that what is timed is submit() itself.
double batonAllReduces(const AllReduce& a, int iterations) {
  baton::SemaphoreValue signal[kRanks];
  baton::SubmitInfo info[kRanks];
  for (int k = 0; k < kRanks; ++k) {
    signal[k].semaphore = env.ranks[k].reduced;
    info[k].commandBuffers = baton::Span<const baton::CommandBuffer>(&a.cb[k], 1);
    info[k].signals = baton::Span<const baton::SemaphoreValue>(&signal[k], 1);
  }
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    for (int k = 0; k < kRanks; ++k) {
      signal[k].value = ++env.ranks[k].reducedValue;
      BATON_OK(env.ranks[k].comm.submit(info[k]));
    }
  }
  for (Rank& r : env.ranks) wait(r.reduced, r.reducedValue);
  return secondsSince(t0);
}

// Whether every rank's destination holds 2.0 (1.0 + 1.0) at both ends; a message when not. The
// destinations are zeroed again for the next check.
std::string checkAllReduce(AllReduce& a, const char* side) {
  std::string bad;
  for (int k = 0; k < kRanks; ++k) {
    float ends[2];
    readEnds(env.ranks[k], a.dst[k], a.bytes, ends);
    if (ends[0] != 2.0f || ends[1] != 2.0f)
      bad += std::string(side) + " rank " + std::to_string(k) + " of " + sizeText(a.bytes) + ": " +
             std::to_string(ends[0]) + ", " + std::to_string(ends[1]) + " (want 2); ";
    runAndWait(env.ranks[k],
               [&](baton::CommandBuffer cb) { return cb.fillBuffer(a.dst[k], 0, a.bytes, 0); });
  }
  return bad;
}

// ---- results and their tables ----------------------------------------------------------------

// One size's figures: microseconds per allReduce (the median), and for the bandwidth the bus
// bandwidth derived from them.
struct Row {
  uint64_t bytes;
  double rawUs, batonUs;
  double busbw(double us) const { return bytes / us * 1e-3 * 2.0 * (kRanks - 1) / kRanks; }
  double rawGbs() const { return busbw(rawUs); }
  double batonGbs() const { return busbw(batonUs); }
};
struct PipelineResult {
  bool ran = false;
  uint64_t layerBytes = 0;
  double rawUs = 0, batonUs = 0, computeUs = 0, commUs = 0;
};
std::vector<Row> bandwidthRows, latencyRows;
struct Burst {
  double rawUs = 0, batonUs = 0;  // 0: not measured
} burst;
PipelineResult pipelineResult;
std::vector<std::string> failures;
std::string runDate;  // when the run started, local time

// The note of a row against its target: " (met)", " (MISSED)", or why it does not count.
const char* verdict(bool applies, bool met) {
  if (!applies) return "";
  if (!env.kernels) return " (emulated: no meaning)";
  return met ? " (met)" : " (MISSED)";
}

// ---- 1. bandwidth ----------------------------------------------------------------------------

// What a loop of allReduces costs once: kBurstCalls of kBurstBytes after kBurstIdleUs of the host
// doing nothing (baton's threads then sleep: the issuing and caller threads are woken by the
// first submission, the completion threads sleep in the driver on the last record), against the
// same on raw NCCL; the difference in µs is the fixed cost, paid once per burst.
void benchBurst(AllReduce& a) {
  recordAllReduce(a, kBurstBytes);
  std::vector<double> raw, ours;
  auto idle = [] { std::this_thread::sleep_for(std::chrono::microseconds(kBurstIdleUs)); };
  rawAllReduces(a, 2);
  batonAllReduces(a, 2);
  for (int rep = 0; rep < 3 * reps(); ++rep) {
    idle();
    raw.push_back(rawAllReduces(a, kBurstCalls) * 1e6);
    idle();
    ours.push_back(batonAllReduces(a, kBurstCalls) * 1e6);
  }
  burst = {median(raw), median(ours)};
  std::printf(
      "burst: %d allReduces of %s, each timing after %d ms of an idle host: raw %.1f us, baton "
      "%.1f us (%.3fx); baton's fixed cost per burst %.1f us\n",
      kBurstCalls, sizeText(kBurstBytes).c_str(), kBurstIdleUs / 1000, burst.rawUs, burst.batonUs,
      burst.batonUs / burst.rawUs, burst.batonUs - burst.rawUs);
}

void benchBandwidth(const std::vector<uint64_t>& sizes) {
  const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  AllReduce a = allocateAllReduce(largest);
  std::printf(
      "\nallReduce bus bandwidth: float32 sum over %d GPUs, back-to-back loops; busbw = algbw x "
      "2(n-1)/n; %d repetitions of each side, alternating\n",
      kRanks, reps());
  std::printf("%10s %12s %12s %8s %6s %12s %12s\n", "size", "raw GB/s", "baton GB/s", "ratio",
              "iters", "raw us", "baton us");
  for (uint64_t bytes : sizes) {
    recordAllReduce(a, bytes);
    const int iterations = bandwidthIterations(bytes), warmup = std::max(2, iterations / 10);
    std::vector<double> raw, ours;
    for (int rep = 0; rep < reps(); ++rep) {
      rawAllReduces(a, warmup);
      raw.push_back(rawAllReduces(a, iterations) / iterations);
      if (rep == 0) {
        const std::string bad = checkAllReduce(a, "raw");
        if (!bad.empty()) failures.push_back(bad);
      }
      batonAllReduces(a, warmup);
      ours.push_back(batonAllReduces(a, iterations) / iterations);
      if (rep == 0) {
        const std::string bad = checkAllReduce(a, "baton");
        if (!bad.empty()) failures.push_back(bad);
      }
    }
    const Row row{bytes, median(raw) * 1e6, median(ours) * 1e6};
    const double ratio = row.batonGbs() / row.rawGbs();
    bandwidthRows.push_back(row);
    std::printf("%10s %12.2f %12.2f %7.3fx %6d %12.2f %12.2f%s\n", sizeText(bytes).c_str(),
                row.rawGbs(), row.batonGbs(), ratio, iterations, row.rawUs, row.batonUs,
                verdict(bytes >= (64ull << 20), ratio >= 0.98));
  }
  std::printf("target: >= 0.98x at 64 MiB and above\n");
  if (largest >= kBurstBytes && !opt.quick) benchBurst(a);
  release(a);
}

// ---- 2. latency ------------------------------------------------------------------------------

void benchLatency() {
  const std::vector<uint64_t> sizes = latencySizes();
  AllReduce a = allocateAllReduce(sizes.back());
  const int iterations = latencyIterations();
  std::printf(
      "\nallReduce latency: one at a time, completion seen on the host before the next (raw: "
      "cuEventSynchronize on both streams; baton: Semaphore::wait on both ranks' signals); median "
      "of %d x %d per side, alternating\n",
      reps(), iterations);
  // "raw call": the median time of raw's group of calls (both ranks' enqueue), part of raw us.
  std::printf("%10s %12s %12s %8s %10s\n", "size", "raw us", "baton us", "ratio", "raw call");
  for (uint64_t bytes : sizes) {
    recordAllReduce(a, bytes);
    std::vector<double> raw, ours, calls;
    rawAllReduces(a, 5);
    batonAllReduces(a, 5);
    for (int rep = 0; rep < reps(); ++rep) {
      for (int i = 0; i < iterations; ++i) {
        double call = 0;
        raw.push_back(rawAllReduces(a, 1, &call) * 1e6);
        calls.push_back(call * 1e6);
      }
      for (int i = 0; i < iterations; ++i) ours.push_back(batonAllReduces(a, 1) * 1e6);
    }
    const Row row{bytes, median(raw), median(ours)};
    const double ratio = row.batonUs / row.rawUs;
    latencyRows.push_back(row);
    std::printf("%10s %12.2f %12.2f %7.3fx %10.2f%s\n", sizeText(bytes).c_str(), row.rawUs,
                row.batonUs, ratio, median(calls), verdict(true, ratio <= 1.1));
  }
  std::printf("target: <= 1.1x\n");
  release(a);
}

// ---- 3. training-step pipeline ---------------------------------------------------------------

// One layer's compute on `stream` of rank k, the same launch on both sides: the spin kernel, or
// (no kernels) a memset of the scratch buffer.
uint64_t kernelNs = 0;
CUresult launchCompute(int k, CUstream stream) {
  const Rank& r = env.ranks[k];
  if (!env.kernels)
    return cu->cuMemsetD32Async(r.scratchAddress, static_cast<unsigned>(kernelNs),
                                kScratchBytes / 4, stream);
  uint64_t ns = kernelNs;
  void* params[] = {&ns};
  return cu->cuLaunchKernel(r.spin, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
}
// baton's native callback for it: the stream is the queue's (a hipStream_t on HIP, which is a
// CUstream where HIP runs over CUDA), with the device current.
int rankIndex[kRanks] = {0, 1};
Result computeNative(const baton::NativeQueue& q, void* user) {
  return launchCompute(*static_cast<int*>(user), static_cast<CUstream>(q.stream)) == CUDA_SUCCESS
             ? Result::Success
             : Result::ErrorDriver;
}

struct Pipeline {
  int layers = 0;
  uint64_t bytes = 0;  // per layer's gradient
  std::vector<baton::Buffer> grads[kRanks];
  std::vector<uint64_t> gradAddress[kRanks];
  baton::CommandBuffer computeCb[kRanks];
  std::vector<baton::CommandBuffer> reduceCb[kRanks];  // per layer, in place
};

// One raw step: per layer, the compute on each GPU's compute stream, an event after it that the
// comm stream waits for, and the layer's allReduce (both ranks in one group) on the comm streams;
// then the host sees both ends. `compute` or `comm` false leaves that half out (the "alone"
// figures). Seconds.
double rawStep(const Pipeline& p, bool compute, bool comm) {
  const size_t count = p.bytes / 4;
  const Clock::time_point t0 = Clock::now();
  for (int l = 0; l < p.layers; ++l) {
    if (compute) {
      for (int k = 0; k < kRanks; ++k) {
        Rank& r = env.ranks[k];
        makeCurrent(r);  // NCCL's group calls change the current device
        CU_OK(launchCompute(k, r.computeStream));
        if (comm) {
          CU_OK(cu->cuEventRecord(r.computeEnd[l], r.computeStream));
          CU_OK(cu->cuStreamWaitEvent(r.commStream, r.computeEnd[l], 0));
        }
      }
    }
    if (comm) {
      NCCL_OK(nccl.ncclGroupStart());
      for (int k = 0; k < kRanks; ++k) {
        const Rank& r = env.ranks[k];
        void* grad = pointer(p.gradAddress[k][l]);
        NCCL_OK(
            nccl.ncclAllReduce(grad, grad, count, ncclFloat32, ncclSum, r.ncclComm, r.commStream));
      }
      NCCL_GROUP_END();
    }
  }
  rawFinish(comm ? Streams::Comm : Streams::Compute);
  return secondsSince(t0);
}

// One baton step, in the raw step's order: per layer, each rank's compute submitted to queue 0
// signalling its compute timeline, then its allReduce to queue 1 waiting for that value and
// signalling the comm timeline; the host waits for both ranks' last comm values.
double batonStep(const Pipeline& p) {
  baton::SemaphoreValue computed[kRanks], computeWait[kRanks], reduced[kRanks];
  baton::SubmitInfo computeInfo[kRanks], reduceInfo[kRanks];
  for (int k = 0; k < kRanks; ++k) {
    computed[k].semaphore = computeWait[k].semaphore = env.ranks[k].computed;
    reduced[k].semaphore = env.ranks[k].reduced;
    computeInfo[k].commandBuffers = baton::Span<const baton::CommandBuffer>(&p.computeCb[k], 1);
    computeInfo[k].signals = baton::Span<const baton::SemaphoreValue>(&computed[k], 1);
    reduceInfo[k].waits = baton::Span<const baton::SemaphoreValue>(&computeWait[k], 1);
    reduceInfo[k].signals = baton::Span<const baton::SemaphoreValue>(&reduced[k], 1);
  }
  const Clock::time_point t0 = Clock::now();
  for (int l = 0; l < p.layers; ++l) {
    for (int k = 0; k < kRanks; ++k) {
      Rank& r = env.ranks[k];
      computed[k].value = computeWait[k].value = ++r.computedValue;
      BATON_OK(r.compute.submit(computeInfo[k]));
    }
    for (int k = 0; k < kRanks; ++k) {
      Rank& r = env.ranks[k];
      reduced[k].value = ++r.reducedValue;
      reduceInfo[k].commandBuffers = baton::Span<const baton::CommandBuffer>(&p.reduceCb[k][l], 1);
      BATON_OK(r.comm.submit(reduceInfo[k]));
    }
  }
  for (Rank& r : env.ranks) wait(r.reduced, r.reducedValue);
  return secondsSince(t0);
}

void benchPipeline() {
  Pipeline p;
  p.layers = opt.layers;
  p.bytes = opt.layerBytes ? opt.layerBytes : opt.quick ? 4ull << 20 : 16ull << 20;
  kernelNs = static_cast<uint64_t>(opt.kernelUs * 1e3);
  for (int k = 0; k < kRanks; ++k) {
    Rank& r = env.ranks[k];
    makeCurrent(r);
    while (r.computeEnd.size() < static_cast<size_t>(p.layers)) {
      CUevent e = nullptr;
      CU_OK(cu->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
      r.computeEnd.push_back(e);
    }
    p.computeCb[k] =
        record(r, [&](baton::CommandBuffer cb) { return cb.native(computeNative, &rankIndex[k]); });
    for (int l = 0; l < p.layers; ++l) {
      // Zeros: the in-place sums stay finite however many steps run.
      p.grads[k].push_back(deviceBuffer(r, p.bytes, 0));
      p.gradAddress[k].push_back(address(p.grads[k].back()));
      baton::Buffer g = p.grads[k].back();
      p.reduceCb[k].push_back(record(r, [&](baton::CommandBuffer cb) {
        return cb.allReduce(r.communicator, g, 0, g, 0, p.bytes / 4, baton::ElementType::Float32,
                            baton::ReduceOp::Sum);
      }));
    }
  }
  const int steps = pipelineSteps(), warmup = 2;
  char compute[64] = "a 1 MiB memset (emulated: no kernels)";
  if (env.kernels) std::snprintf(compute, sizeof compute, "a %.0f us spin kernel", opt.kernelUs);
  std::printf(
      "\ntraining-step pipeline: %d layers; per layer %s on queue 0 of each GPU, then its %s "
      "allReduce (float32 sum, in place) on queue 1, overlapping the next layer's compute; the "
      "host waits for each step's end; median of %d x %d steps per side, alternating\n",
      p.layers, compute, sizeText(p.bytes).c_str(), reps(), steps);
  std::vector<double> raw, ours, computeAlone, commAlone;
  for (int rep = 0; rep < reps(); ++rep) {
    for (int s = 0; s < warmup; ++s) rawStep(p, true, true);
    for (int s = 0; s < steps; ++s) raw.push_back(rawStep(p, true, true) * 1e6);
    for (int s = 0; s < warmup; ++s) batonStep(p);
    for (int s = 0; s < steps; ++s) ours.push_back(batonStep(p) * 1e6);
    for (int s = 0; s < steps; ++s) computeAlone.push_back(rawStep(p, true, false) * 1e6);
    for (int s = 0; s < steps; ++s) commAlone.push_back(rawStep(p, false, true) * 1e6);
  }
  PipelineResult& res = pipelineResult;
  res.ran = true;
  res.layerBytes = p.bytes;
  res.rawUs = median(raw);
  res.batonUs = median(ours);
  res.computeUs = median(computeAlone);
  res.commUs = median(commAlone);
  const double ratio = res.batonUs / res.rawUs, alone = res.computeUs + res.commUs;
  std::printf("%-28s %12s %12s %8s\n", "figure", "raw", "baton", "ratio");
  std::printf("%-28s %12.1f %12.1f %7.3fx%s\n", "step time (us)", res.rawUs, res.batonUs, ratio,
              verdict(true, ratio <= 1.02));
  std::printf("%-28s %12.2f %12.2f\n", "overlap", alone / res.rawUs, alone / res.batonUs);
  std::printf(
      "alone (raw, us per step): compute %.1f, communication %.1f; overlap = their sum / step "
      "time (1: none, 2: perfect when they are equal)\n",
      res.computeUs, res.commUs);
  std::printf("target: step time <= 1.02x\n");
  for (int k = 0; k < kRanks; ++k) {
    BATON_OK(env.ranks[k].device.waitIdle());
    BATON_OK(p.computeCb[k].destroy());
    for (baton::CommandBuffer cb : p.reduceCb[k]) BATON_OK(cb.destroy());
    for (baton::Buffer b : p.grads[k]) BATON_OK(b.destroy());
  }
}

// ---- header and JSON ---------------------------------------------------------------------------

std::string versionText(int code) {
  // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

void printHeader() {
  std::printf("collectives_bench: baton vs raw NCCL, %d ranks in one process, %s\n", kRanks,
              runDate.c_str());
  std::printf("baton backend: %s; raw side: CUDA driver %d and NCCL on raw streams and events\n",
              backendName(), baton::cuda::loadDriver().version);
  for (int k = 0; k < kRanks; ++k)
    std::printf("GPU %d: %s (ordinal %d)\n", k, env.ranks[k].name.c_str(), env.ranks[k].ordinal);
  std::printf("NCCL (raw):   %s (%d), %s\n", versionText(nccl.version).c_str(), nccl.version,
              nccl.path.c_str());
  std::printf("%s (baton): %s (%u), %s%s\n",
              opt.backend == baton::BackendKind::Hip ? "RCCL" : "NCCL",
              versionText(static_cast<int>(env.batonNccl.version)).c_str(), env.batonNccl.version,
              env.batonNccl.library, env.batonNccl.canRevoke ? ", revoke" : "");
  std::printf("NCCL_NVLS_ENABLE=%s\n", std::getenv("NCCL_NVLS_ENABLE"));
  const char* blocking = std::getenv("NCCL_COMM_BLOCKING");
  std::printf("raw communicators: %s\n",
              blocking && std::string(blocking) == "0"
                  ? "non-blocking (NCCL_COMM_BLOCKING=0), as baton's"
                  : "blocking (baton's calls: blocking too, unless BATON_NCCL_BLOCKING_CALLS=0)");
  if (!env.kernels)
    std::printf(
        "emulated: this driver cannot run kernels; the compute is a memset and the figures have "
        "no meaning (a smoke test)\n");
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

void writeJson(const char* path) {
  std::FILE* f = std::fopen(path, "w");
  if (!f) die("--json", std::string("cannot write ") + path);
  std::fprintf(f, "{\n  \"date\": %s,\n  \"backend\": %s,\n  \"emulated\": %s,\n",
               jsonString(runDate).c_str(), jsonString(backendName()).c_str(),
               env.kernels ? "false" : "true");
  std::fprintf(f, "  \"cuda_driver\": %d,\n", baton::cuda::loadDriver().version);
  std::fprintf(f, "  \"gpus\": [%s, %s],\n", jsonString(env.ranks[0].name).c_str(),
               jsonString(env.ranks[1].name).c_str());
  std::fprintf(f, "  \"nccl_raw\": {\"version\": %d, \"path\": %s},\n", nccl.version,
               jsonString(nccl.path).c_str());
  std::fprintf(f, "  \"nccl_baton\": {\"version\": %u, \"path\": %s},\n", env.batonNccl.version,
               jsonString(env.batonNccl.library).c_str());
  std::fprintf(f, "  \"reps\": %d,\n", reps());
  // Bandwidth rows: ratio = baton busbw / raw busbw; latency rows: baton us / raw us.
  auto rows = [&](const char* name, const std::vector<Row>& v, bool bandwidth) {
    std::fprintf(f, "  \"%s\": [", name);
    for (size_t i = 0; i < v.size(); ++i) {
      const Row& r = v[i];
      std::fprintf(f, "%s\n    {\"bytes\": %llu, \"raw_us\": %.3f, \"baton_us\": %.3f",
                   i ? "," : "", static_cast<unsigned long long>(r.bytes), r.rawUs, r.batonUs);
      if (bandwidth)
        std::fprintf(f, ", \"raw_busbw_gbs\": %.4f, \"baton_busbw_gbs\": %.4f", r.rawGbs(),
                     r.batonGbs());
      std::fprintf(f, ", \"ratio\": %.4f}",
                   bandwidth ? r.batonGbs() / r.rawGbs() : r.batonUs / r.rawUs);
    }
    std::fprintf(f, "%s],\n", v.empty() ? "" : "\n  ");
  };
  rows("bandwidth", bandwidthRows, true);
  rows("latency", latencyRows, false);
  if (burst.rawUs > 0)
    std::fprintf(f,
                 "  \"burst\": {\"calls\": %d, \"bytes\": %llu, \"idle_us\": %d, \"raw_us\": %.2f, "
                 "\"baton_us\": %.2f, \"fixed_cost_us\": %.2f},\n",
                 kBurstCalls, static_cast<unsigned long long>(kBurstBytes), kBurstIdleUs,
                 burst.rawUs, burst.batonUs, burst.batonUs - burst.rawUs);
  const PipelineResult& p = pipelineResult;
  if (p.ran)
    std::fprintf(f,
                 "  \"pipeline\": {\"layers\": %d, \"kernel_us\": %.1f, \"layer_bytes\": %llu, "
                 "\"raw_step_us\": %.2f, \"baton_step_us\": %.2f, \"ratio\": %.4f, "
                 "\"compute_alone_us\": %.2f, \"comm_alone_us\": %.2f, \"raw_overlap\": %.3f, "
                 "\"baton_overlap\": %.3f},\n",
                 opt.layers, opt.kernelUs, static_cast<unsigned long long>(p.layerBytes), p.rawUs,
                 p.batonUs, p.batonUs / p.rawUs, p.computeUs, p.commUs,
                 (p.computeUs + p.commUs) / p.rawUs, (p.computeUs + p.commUs) / p.batonUs);
  else
    std::fprintf(f, "  \"pipeline\": null,\n");
  std::fprintf(f, "  \"failures\": %zu\n}\n", failures.size());
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  // Before anything loads NCCL: NVLink multicast can take the GPU machines' GPUs out of service.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const char* usage =
      "usage: collectives_bench [bandwidth] [latency] [pipeline] [--quick] [--sizes LIST] "
      "[--iterations N] [--reps N] [--layers N] [--kernel-us US] [--layer-size SIZE] "
      "[--backend cuda|hip] [--json FILE]\n";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "collectives_bench: %s needs a value\n%s", a.c_str(), usage);
        std::exit(2);
      }
      return argv[++i];
    };
    auto bad = [&](const std::string& v) {
      std::fprintf(stderr, "collectives_bench: bad value %s for %s\n%s", v.c_str(), a.c_str(),
                   usage);
      std::exit(2);
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage);
      return 0;
    } else if (a == "bandwidth") {
      opt.bandwidth = true;
    } else if (a == "latency") {
      opt.latency = true;
    } else if (a == "pipeline") {
      opt.pipeline = true;
    } else if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--sizes") {
      const std::string list = value();
      size_t at = 0;
      while (at <= list.size()) {
        const size_t comma = std::min(list.find(',', at), list.size());
        const uint64_t bytes = parseSize(list.substr(at, comma - at));
        if (bytes == 0 || bytes % 4 != 0) bad(list);  // whole float32 elements
        opt.sizes.push_back(bytes);
        at = comma + 1;
      }
    } else if (a == "--iterations") {
      if ((opt.iterations = std::atoi(value().c_str())) < 1) bad(argv[i]);
    } else if (a == "--reps") {
      if ((opt.reps = std::atoi(value().c_str())) < 1) bad(argv[i]);
    } else if (a == "--layers") {
      if ((opt.layers = std::atoi(value().c_str())) < 1) bad(argv[i]);
    } else if (a == "--kernel-us") {
      if ((opt.kernelUs = std::atof(value().c_str())) < 0) bad(argv[i]);
    } else if (a == "--layer-size") {
      opt.layerBytes = parseSize(value());
      if (opt.layerBytes == 0 || opt.layerBytes % 4 != 0) bad(argv[i]);
    } else if (a == "--backend") {
      const std::string b = value();
      if (b == "cuda")
        opt.backend = baton::BackendKind::Cuda;
      else if (b == "hip")
        opt.backend = baton::BackendKind::Hip;
      else
        bad(b);
    } else if (a == "--json") {
      if (i + 1 >= argc) bad("");
      opt.json = argv[++i];
    } else {
      std::fprintf(stderr, "collectives_bench: unknown argument %s\n%s", a.c_str(), usage);
      return 2;
    }
  }
  if (!opt.bandwidth && !opt.latency && !opt.pipeline)
    opt.bandwidth = opt.latency = opt.pipeline = true;

  setupRanks(opt.backend);
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  runDate = date;
  printHeader();
  // The first collectives of a communicator set up its connections: not part of any figure.
  {
    AllReduce a = allocateAllReduce(1 << 20);
    recordAllReduce(a, 1 << 20);
    rawAllReduces(a, 5);
    batonAllReduces(a, 5);
    release(a);
  }
  if (opt.bandwidth) benchBandwidth(opt.sizes.empty() ? defaultBandwidthSizes() : opt.sizes);
  if (opt.latency) benchLatency();
  if (opt.pipeline) benchPipeline();

  int rc = 0;
  if (!failures.empty()) {
    std::printf("\nFAILED: %zu wrong result(s): %s\n", failures.size(), failures[0].c_str());
    rc = 1;
  } else if (opt.bandwidth) {
    std::printf("\nverified: every size's allReduce gave 2.0 on both ranks, raw and baton\n");
  }
  if (opt.json) {
    writeJson(opt.json);
    std::printf("results written to %s\n", opt.json);
  }
  teardownRanks();
  return rc;
}
