// cuda_bench: the CUDA backend against raw CUDA driver calls measured in the same run
// (issue 3, item 9). Each row prints baton's figure, the raw figure and the ratio.
//
//   submit      host cost of one submit with one recorded wait + one signal, no work, vs
//               cuStreamWaitEvent + cuEventRecord (the wait is on another stream's event that
//               has not completed: a 1 ms kernel holds that stream); also the raw calls when
//               another thread queries the events between uses, as baton's completion threads do
//   parts       the submit row taken apart: no wait or signal, a signal, a wait, both
//   ping-pong   GPU time per cross-queue round trip through two semaphores, vs an event
//               ping-pong between two streams (all submitted behind a 2 ms kernel, timed on the
//               GPU with timing events recorded from native callbacks); and live, submitted
//               while the GPU runs, vs the raw loop on this thread and vs the same raw calls
//               made by a second thread (the floor of issuing on a thread of its own), and vs
//               the raw loop plus baton's core scheduler on this thread (the floor of issuing
//               on the submitting thread)
//   wbs edge    wait-before-signal hand-off: consumer submitted before its producer; GPU time
//               from the producer's work to the consumer's, vs a raw event edge. Also whether the
//               consumer was issued before the producer's work ran (no host round trip)
//   host wake   gate opened by the host -> host wait returns, vs cuEventSynchronize
//   naive loop  submit one empty kernel + host wait, per iteration, vs launch + cuStreamSync
//   cpu         CPU time burned by a host wait over 100 ms of GPU work, vs cuEventSynchronize
//   steady      1M submissions: events, records in flight and RSS, every 100k
//
// Work is held back by fixed-length spin kernels, not by host-opened gates: thousands of stream
// operations queued behind a gate can fill the stream and block the enqueuing thread, which is
// the one that would open the gate (DESIGN §4). Only "host wake" uses a gate (one operation).
// Medians over repetitions; raw and baton alternate within a repetition so drift hits both.
// Ratios in the table are of the medians; the notes of submit and ping-pong also give the median
// of the per-repetition ratios (baton and raw measured back to back), which drifts less when the
// machine's speed changes between repetitions (on the H100 test machine the raw figures alone
// moved by up to 2x between runs).
// BATON_BENCH_SCALE=<n> divides the iteration counts (a smoke run). Output is unbuffered.
// Arguments name the benchmarks to run (submit parts ping-pong wbs wake naive cpu steady); none:
// all.
#include <cuda.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <baton/baton.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda_symbols.hpp"
#include "ptx_kernels.hpp"
#include "stream_backend.hpp"

namespace {

using baton::Result;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char* what, const char* detail) {
  std::fprintf(stderr, "cuda_bench: %s: %s\n", what, detail);
  std::exit(1);
}
#define BATON_OK(expr)                                                \
  do {                                                                \
    Result r_ = (expr);                                               \
    if (r_ != Result::Success) die(#expr, baton::lastErrorMessage()); \
  } while (0)
#define CU_OK(expr)                                                          \
  do {                                                                       \
    CUresult r_ = (expr);                                                    \
    if (r_ != CUDA_SUCCESS) die(#expr, baton::cuda::resultName(r_).c_str()); \
  } while (0)

const baton::cuda::Symbols* cu = nullptr;

double nsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
int scale() {
  const char* s = std::getenv("BATON_BENCH_SCALE");
  int v = s ? std::atoi(s) : 1;
  return v > 0 ? v : 1;
}
int iters(int n) { return std::max(n / scale(), 4); }

double cpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec / 1e6;
}

void row(const char* name, double baton, double raw, const char* unit, const char* note = "") {
  std::printf("%-34s %12.3f %12.3f %8.2fx  %-4s %s\n", name, baton, raw, raw > 0 ? baton / raw : 0,
              unit, note);
}

// ---- the environment: baton instance/device/queues, the raw context, kernels, a gate ---------

struct Env {
  baton::Instance instance;
  baton::Device device;
  baton::Queue q[2];
  CUdevice cuDevice = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction waitFlag = nullptr, empty = nullptr, spinNs = nullptr;
  CUstream raw[2] = {nullptr, nullptr};
  baton::Buffer gateBuffer;
  uint32_t* gateFlag = nullptr;
  uint64_t gateAddress = 0;
};
Env env;

void closeGate() { __atomic_store_n(env.gateFlag, 0u, __ATOMIC_SEQ_CST); }
void openGate() { __atomic_store_n(env.gateFlag, 1u, __ATOMIC_SEQ_CST); }

CUresult launch(CUfunction f, CUstream s, uint64_t* arg) {
  void* params[] = {arg};
  return cu->cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, arg ? params : nullptr, nullptr);
}

// Native callbacks.
Result gateNative(const baton::NativeQueue& q, void*) {
  return launch(env.waitFlag, static_cast<CUstream>(q.stream), &env.gateAddress) == CUDA_SUCCESS
             ? Result::Success
             : Result::ErrorDriver;
}
Result emptyNative(const baton::NativeQueue& q, void*) {
  return launch(env.empty, static_cast<CUstream>(q.stream), nullptr) == CUDA_SUCCESS
             ? Result::Success
             : Result::ErrorDriver;
}
struct SpinArg {
  uint64_t ns;
};
Result spinNative(const baton::NativeQueue& q, void* user) {
  return launch(env.spinNs, static_cast<CUstream>(q.stream), &static_cast<SpinArg*>(user)->ns) ==
                 CUDA_SUCCESS
             ? Result::Success
             : Result::ErrorDriver;
}
struct TimingEvent {
  CUevent event = nullptr;
  std::atomic<int> issued{0};
};
Result recordNative(const baton::NativeQueue& q, void* user) {
  auto* t = static_cast<TimingEvent*>(user);
  t->issued.fetch_add(1);
  return cu->cuEventRecord(t->event, static_cast<CUstream>(q.stream)) == CUDA_SUCCESS
             ? Result::Success
             : Result::ErrorDriver;
}

baton::CommandBuffer commands(
    std::initializer_list<std::pair<baton::NativeCallback, void*>> natives) {
  baton::CommandBuffer cb;
  BATON_OK(env.device.createCommandBuffer(&cb));
  BATON_OK(cb.begin());
  for (auto& [fn, user] : natives) BATON_OK(cb.native(fn, user));
  BATON_OK(cb.end());
  return cb;
}

baton::Semaphore semaphore(const char* name) {
  baton::SemaphoreCreateInfo info;
  info.debugName = name;
  baton::Semaphore s;
  BATON_OK(env.instance.createSemaphore(info, &s));
  return s;
}

Result submit(baton::Queue q, std::vector<baton::SemaphoreValue> waits,
              std::vector<baton::CommandBuffer> cbs, std::vector<baton::SemaphoreValue> signals) {
  baton::SubmitInfo info;
  info.waits = waits;
  info.commandBuffers = cbs;
  info.signals = signals;
  return q.submit(info);
}

CUevent timingEvent() {
  CUevent e;
  CU_OK(cu->cuEventCreate(&e, CU_EVENT_DEFAULT));
  return e;
}
double elapsedUs(CUevent a, CUevent b) {
  float ms = 0;
  CU_OK(cu->cuEventElapsedTime(&ms, a, b));
  return ms * 1000.0;
}

void setup() {
  BATON_OK(baton::createInstance({}, &env.instance));
  uint32_t count = 0;
  BATON_OK(env.instance.enumerateBackends(&count, nullptr));
  std::vector<baton::BackendInfo> infos(count);
  BATON_OK(env.instance.enumerateBackends(&count, infos.data()));
  for (auto& b : infos)
    if (b.kind == baton::BackendKind::Cuda && !b.available) {
      std::printf("cuda_bench: CUDA unavailable: %s\n", b.reason);
      std::exit(0);
    }
  BATON_OK(env.instance.enumeratePhysicalDevices(&count, nullptr));
  std::vector<baton::PhysicalDevice> all(count);
  BATON_OK(env.instance.enumeratePhysicalDevices(&count, all.data()));
  baton::PhysicalDevice physical;
  baton::PhysicalDeviceProperties props;
  for (auto p : all) {
    BATON_OK(p.getProperties(&props));
    if (props.backend == baton::BackendKind::Cuda) {
      physical = p;
      break;
    }
  }
  if (!physical) {
    std::printf("cuda_bench: no CUDA device\n");
    std::exit(0);
  }
  std::printf("device: %s (compute %u.%u), driver %d\n", props.name, props.computeMajor,
              props.computeMinor, baton::cuda::loadDriver().version);
  baton::DeviceCreateInfo info;
  info.queueCount = 2;
  BATON_OK(env.instance.createDevice(physical, info, &env.device));
  BATON_OK(env.device.getQueue(0, &env.q[0]));
  BATON_OK(env.device.getQueue(1, &env.q[1]));

  cu = &baton::cuda::symbols();
  // The benchmarks launch PTX kernels: a driver without the module API (the tests' fake
  // driver) cannot run them.
  if (!cu->cuModuleLoadData || !cu->cuModuleGetFunction || !cu->cuLaunchKernel) {
    std::printf("cuda_bench: this CUDA driver cannot load or launch kernels\n");
    std::exit(0);
  }
  CU_OK(cu->cuDeviceGet(&env.cuDevice, static_cast<int>(props.ordinal)));
  CU_OK(cu->cuDevicePrimaryCtxRetain(&env.ctx, env.cuDevice));
  CU_OK(cu->cuCtxSetCurrent(env.ctx));
  CU_OK(cu->cuModuleLoadData(&env.module, baton_test::kPtxKernels));
  CU_OK(cu->cuModuleGetFunction(&env.waitFlag, env.module, "baton_wait_flag"));
  CU_OK(cu->cuModuleGetFunction(&env.empty, env.module, "baton_empty"));
  CU_OK(cu->cuModuleGetFunction(&env.spinNs, env.module, "baton_spin_ns"));
  for (CUstream& s : env.raw) CU_OK(cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  baton::BufferCreateInfo gate;
  gate.size = 4;
  gate.memory = baton::MemoryKind::HostPinned;
  BATON_OK(env.device.createBuffer(gate, &env.gateBuffer));
  void* host = nullptr;
  BATON_OK(env.gateBuffer.map(&host));
  env.gateFlag = static_cast<uint32_t*>(host);
  BATON_OK(env.gateBuffer.getDeviceAddress(&env.gateAddress));
  closeGate();
}

// `n` raw events made with `flags`, and their end.
std::vector<CUevent> makeEvents(size_t n, unsigned flags = CU_EVENT_DISABLE_TIMING) {
  std::vector<CUevent> events(n);
  for (CUevent& e : events) CU_OK(cu->cuEventCreate(&e, flags));
  return events;
}
void destroyEvents(const std::vector<CUevent>& events) {
  for (CUevent e : events) CU_OK(cu->cuEventDestroy(e));
}

// ---- 1. submit cost -------------------------------------------------------------------------

void benchSubmit() {
  const int kBatch = 64, kReps = iters(100);
  SpinArg hold{1'000'000};  // 1 ms: longer than a batch takes to submit
  baton::Semaphore s = semaphore("submit-s"), t = semaphore("submit-t");
  baton::CommandBuffer busy = commands({{spinNative, &hold}});
  uint64_t sv = 0, tv = 0;
  std::vector<CUevent> rawEvents = makeEvents(kBatch);
  std::vector<CUevent> rawBlocking =
      makeEvents(kBatch, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
  CUevent busyEvent;
  CU_OK(cu->cuEventCreate(&busyEvent, CU_EVENT_DISABLE_TIMING));
  // Raw again, with each event queried by another thread after it completed, as a completion
  // thread does: what that costs the next record of the event is part of baton's figure.
  std::vector<CUevent> rawQueried = makeEvents(kBatch);
  std::vector<double> ours, enqueued, raw, rawBlock, rawForeign, ratios, enqueuedRatios;
  int late = 0;
  for (int rep = 0; rep < kReps; ++rep) {
    // baton: queue 0 holds a recorded, incomplete signal; queue 1 submits kBatch times.
    uint64_t records = baton::stream::stats().recordsIssued;
    BATON_OK(submit(env.q[0], {}, {busy}, {{s, ++sv}}));
    // Its event recorded, so that the count below is queue 1's alone.
    while (baton::stream::stats().recordsIssued < records + 1) std::this_thread::yield();
    records = baton::stream::stats().recordsIssued;
    // The submit info is built once, as an engine would keep it, so that what is timed is
    // submit() itself (the raw loop below allocates nothing either).
    baton::SemaphoreValue wait{s, sv}, signal{t, tv};
    baton::SubmitInfo info{wait, {}, signal};
    auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i) {
      signal.value = ++tv;
      BATON_OK(env.q[1].submit(info));
    }
    ours.push_back(nsSince(t0) / kBatch);
    // The driver calls run on the queue's issuing thread: until it has enqueued the batch.
    while (baton::stream::stats().recordsIssued < records + kBatch) {
    }
    enqueued.push_back(nsSince(t0) / kBatch);
    uint64_t reached = 0;
    BATON_OK(s.getValue(&reached));
    late += reached >= sv;  // the kernel ended before the batch did: the waits were not pending
    BATON_OK(env.device.waitIdle());

    for (std::vector<CUevent>* events : {&rawEvents, &rawBlocking, &rawQueried}) {
      CU_OK(launch(env.spinNs, env.raw[0], &hold.ns));
      CU_OK(cu->cuEventRecord(busyEvent, env.raw[0]));
      t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) {
        CU_OK(cu->cuStreamWaitEvent(env.raw[1], busyEvent, 0));
        CU_OK(cu->cuEventRecord((*events)[i], env.raw[1]));
      }
      double ns = nsSince(t0) / kBatch;
      (events == &rawEvents ? raw : events == &rawBlocking ? rawBlock : rawForeign).push_back(ns);
      CU_OK(cu->cuStreamSynchronize(env.raw[1]));
      if (events == &rawQueried) {
        std::thread([&] {
          CU_OK(cu->cuCtxSetCurrent(env.ctx));
          for (CUevent e : rawQueried) CU_OK(cu->cuEventQuery(e));
        }).join();
      }
    }
    ratios.push_back(ours.back() / raw.back());
    enqueuedRatios.push_back(enqueued.back() / raw.back());
  }
  char note[128];
  std::snprintf(note, sizeof note,
                "(batches of %d; %d/%d batches outlived the 1 ms kernel; paired ratio %.2fx)",
                kBatch, late, kReps, median(ratios));
  row("submit (1 wait + 1 signal)", median(ours) / 1e3, median(raw) / 1e3, "us", note);
  std::snprintf(note, sizeof note,
                "(from the first submit until the issuing thread enqueued the batch; paired "
                "%.2fx)",
                median(enqueuedRatios));
  row("  submit, until enqueued on the stream", median(enqueued) / 1e3, median(raw) / 1e3, "us",
      note);
  // The backend-independent part: the same submission on a host queue (validation, handles,
  // scheduler, semaphores), whose issue is a push to a worker thread.
  {
    baton::PhysicalDevice hostPhysical;
    uint32_t count = 0;
    BATON_OK(env.instance.enumeratePhysicalDevices(&count, nullptr));
    std::vector<baton::PhysicalDevice> all(count);
    BATON_OK(env.instance.enumeratePhysicalDevices(&count, all.data()));
    for (auto p : all) {
      baton::PhysicalDeviceProperties props;
      BATON_OK(p.getProperties(&props));
      if (props.backend == baton::BackendKind::Host) hostPhysical = p;
    }
    baton::DeviceCreateInfo info;
    info.queueCount = 1;
    baton::Device host;
    BATON_OK(env.instance.createDevice(hostPhysical, info, &host));
    baton::Queue hq;
    BATON_OK(host.getQueue(0, &hq));
    baton::Semaphore hs = semaphore("host-s"), ht = semaphore("host-t");
    BATON_OK(hs.signal(1));
    std::vector<double> core;
    uint64_t hv = 0;
    for (int rep = 0; rep < kReps; ++rep) {
      baton::SemaphoreValue wait{hs, 1}, signal{ht, hv};
      baton::SubmitInfo info{wait, {}, signal};
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) {
        signal.value = ++hv;
        BATON_OK(hq.submit(info));
      }
      core.push_back(nsSince(t0) / kBatch);
      BATON_OK(hq.waitIdle());
    }
    row("  same submit on a host queue", median(core) / 1e3, median(raw) / 1e3, "us",
        "(the core's share: validation, handles, scheduler, semaphores)");
    (void)host.destroy();
    (void)hs.destroy();
    (void)ht.destroy();
  }
  row("  raw with blocking-sync events", median(rawBlock) / 1e3, median(raw) / 1e3, "us",
      "(raw vs raw: cost of CU_EVENT_BLOCKING_SYNC)");
  row("  raw, events queried by a 2nd thread", median(rawForeign) / 1e3, median(raw) / 1e3, "us",
      "(raw vs raw: each event was last queried by another thread)");
  for (const std::vector<CUevent>* events : {&rawEvents, &rawBlocking, &rawQueried})
    destroyEvents(*events);
  CU_OK(cu->cuEventDestroy(busyEvent));
}

// ---- 1b. what the parts of a submit cost ---------------------------------------------------

// The submit row taken apart, to show where baton's cost lies: batches of submits on queue 1
// with nothing, with one signal, with one recorded pending wait, and with both (the submit row),
// all in one repetition; raw: cuEventRecord alone, and cuStreamWaitEvent + cuEventRecord. Every
// baton submission records an event, so "nothing" compares with a raw record. The differences
// of the medians attribute the cost of a signal and of a wait. Also: the same submission held
// in the scheduler (the core's share alone), and what the driver's cuCtxGetCurrent costs.
void benchSubmitParts() {
  const int kBatch = 64, kReps = iters(100);
  SpinArg hold{1'000'000};  // 1 ms: longer than the batches take to submit
  baton::Semaphore s = semaphore("parts-s"), t = semaphore("parts-t");
  baton::CommandBuffer busy = commands({{spinNative, &hold}});
  uint64_t sv = 0, tv = 0;
  std::vector<CUevent> rawEvents = makeEvents(kBatch);
  CUevent busyEvent;
  CU_OK(cu->cuEventCreate(&busyEvent, CU_EVENT_DISABLE_TIMING));
  enum { kNothing, kSignal, kWait, kBoth, kVariants };
  const char* names[kVariants] = {"  parts: no wait, no signal", "  parts: 1 signal",
                                  "  parts: 1 recorded wait", "  parts: 1 wait + 1 signal"};
  std::vector<double> ours[kVariants], rawRecord, rawBoth, held, rawCurrent;
  baton::Semaphore gate = semaphore("parts-gate");
  uint64_t gv = 0;
  for (int rep = 0; rep < kReps; ++rep) {
    BATON_OK(submit(env.q[0], {}, {busy}, {{s, ++sv}}));
    baton::SemaphoreValue wait{s, sv}, signal{t, tv};
    for (int v = 0; v < kVariants; ++v) {
      baton::SubmitInfo info;
      if (v == kWait || v == kBoth) info.waits = {&wait, 1};
      if (v == kSignal || v == kBoth) info.signals = {&signal, 1};
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) {
        signal.value = ++tv;
        BATON_OK(env.q[1].submit(info));
      }
      ours[v].push_back(nsSince(t0) / kBatch);
    }
    BATON_OK(env.device.waitIdle());
    // Held: each submit waits for a value only the host signals, so the batch stays in the
    // scheduler (validation, handles, the queue's lock, a push): the core's share, without the
    // backend or the driver. The host then releases it, untimed.
    {
      baton::SemaphoreValue gateWait{gate, ++gv}, signal{t, tv};
      baton::SubmitInfo info;
      info.waits = {&gateWait, 1};
      info.signals = {&signal, 1};
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) {
        signal.value = ++tv;
        BATON_OK(env.q[1].submit(info));
      }
      held.push_back(nsSince(t0) / kBatch);
      BATON_OK(gate.signal(gv));
      BATON_OK(env.device.waitIdle());
    }
    {
      CUcontext current = nullptr;
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) CU_OK(cu->cuCtxGetCurrent(&current));
      rawCurrent.push_back(nsSince(t0) / kBatch);
    }

    for (bool withWait : {false, true}) {
      CU_OK(launch(env.spinNs, env.raw[0], &hold.ns));
      CU_OK(cu->cuEventRecord(busyEvent, env.raw[0]));
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) {
        if (withWait) CU_OK(cu->cuStreamWaitEvent(env.raw[1], busyEvent, 0));
        CU_OK(cu->cuEventRecord(rawEvents[i], env.raw[1]));
      }
      (withWait ? rawBoth : rawRecord).push_back(nsSince(t0) / kBatch);
      CU_OK(cu->cuStreamSynchronize(env.raw[1]));
    }
  }
  double m[kVariants];
  for (int v = 0; v < kVariants; ++v) m[v] = median(ours[v]) / 1e3;
  const double record = median(rawRecord) / 1e3, both = median(rawBoth) / 1e3;
  row(names[kNothing], m[kNothing], record, "us", "(raw: cuEventRecord)");
  row(names[kSignal], m[kSignal], record, "us", "(raw: cuEventRecord)");
  row(names[kWait], m[kWait], both, "us", "(raw: cuStreamWaitEvent + cuEventRecord)");
  row(names[kBoth], m[kBoth], both, "us", "(raw: cuStreamWaitEvent + cuEventRecord)");
  char note[160];
  std::snprintf(note, sizeof note,
                "(baton's added cost: base %.3f, signal %.3f, wait %.3f us beyond raw %.3f)",
                m[kNothing] - record, m[kSignal] - m[kNothing],
                m[kWait] - m[kNothing] - (both - record), both - record);
  std::printf("  %s\n", note);
  std::printf(
      "%-34s %12.3f %12s %9s  us   (1 wait on a host-signalled value + 1 signal: the "
      "core alone, no driver call)\n",
      "  parts: held in the scheduler", median(held) / 1e3, "-", "-");
  std::printf(
      "%-34s %12s %12.3f %9s  us   (baton asks for the current context once per "
      "submit)\n",
      "  raw: cuCtxGetCurrent", "-", median(rawCurrent) / 1e3, "-");
  destroyEvents(rawEvents);
  CU_OK(cu->cuEventDestroy(busyEvent));
}

// ---- 2. cross-queue ping-pong -----------------------------------------------------------------

// Round i of the raw event ping-pong between the two raw streams: stream 0 waits for round
// i-1's event of stream 1 and records a[i]; stream 1 waits for that and records b[i].
void rawRound(const std::vector<CUevent>& a, const std::vector<CUevent>& b, int i) {
  if (i) CU_OK(cu->cuStreamWaitEvent(env.raw[0], b[i - 1], 0));
  CU_OK(cu->cuEventRecord(a[i], env.raw[0]));
  CU_OK(cu->cuStreamWaitEvent(env.raw[1], a[i], 0));
  CU_OK(cu->cuEventRecord(b[i], env.raw[1]));
}

// The raw live ping-pong with its driver calls made by a second thread, to which this thread
// hands each round through a ring of slots: the floor of any design that issues on a thread of
// its own (baton's device issuing thread), with no bookkeeping at all. Returns the wall time
// in ns from the first hand-off until the last event completed.
double rawHandoff(const std::vector<CUevent>& la, const std::vector<CUevent>& lb) {
  struct alignas(64) Slot {
    std::atomic<int> round{-1};
  };
  static Slot slots[64];
  for (Slot& slot : slots) slot.round.store(-1, std::memory_order_relaxed);
  const int n = static_cast<int>(la.size());
  auto t0 = Clock::now();
  std::thread issuer([&] {
    CU_OK(cu->cuCtxSetCurrent(env.ctx));
    for (int i = 0; i < n; ++i) {
      Slot& slot = slots[i % 64];
      while (slot.round.load(std::memory_order_acquire) != i) {
      }
      rawRound(la, lb, i);
      slot.round.store(-1, std::memory_order_release);
    }
  });
  for (int i = 0; i < n; ++i) {
    Slot& slot = slots[i % 64];
    while (slot.round.load(std::memory_order_acquire) != -1) {
    }
    slot.round.store(i, std::memory_order_release);
  }
  issuer.join();
  CU_OK(cu->cuEventSynchronize(lb[n - 1]));
  return nsSince(t0);
}

// The raw live ping-pong with baton's core scheduler added on this thread: each round also
// makes the live loop's two submissions (q0 waits for y and signals x, q1 waits for x and
// signals y), held in the scheduler behind a host-signalled gate, so that no driver call and no
// other thread is involved. The floor of any design that issues on the submitting thread: the
// driver calls plus the core's share, in series. Timed in chunks of kSerialChunk rounds; between
// chunks the clock stops while the held submissions are released and finish (as in the live
// loop, the core then recycles their storage). Returns the ns of all chunks together, plus the
// wait for the last raw event (as rawHandoff, the caller divides by the rounds).
double rawPlusScheduler(const std::vector<CUevent>& la, const std::vector<CUevent>& lb,
                        baton::Semaphore& gate, uint64_t* gv, baton::Semaphore& x, uint64_t* xv,
                        baton::Semaphore& y, uint64_t* yv) {
  const int kSerialChunk = 32;
  const int n = static_cast<int>(la.size());
  double ns = 0;
  for (int first = 0; first < n; first += kSerialChunk) {
    baton::SemaphoreValue gateWait{gate, ++*gv};
    auto t0 = Clock::now();
    for (int i = first; i < std::min(n, first + kSerialChunk); ++i) {
      BATON_OK(submit(env.q[0], {i > first ? baton::SemaphoreValue{y, *yv} : gateWait}, {},
                      {{x, ++*xv}}));
      BATON_OK(submit(env.q[1], {{x, *xv}}, {}, {{y, ++*yv}}));
      rawRound(la, lb, i);
    }
    ns += nsSince(t0);
    BATON_OK(gate.signal(*gv));
    BATON_OK(env.device.waitIdle());
  }
  auto t0 = Clock::now();
  CU_OK(cu->cuEventSynchronize(lb[n - 1]));
  return ns + nsSince(t0);
}

void benchPingPong() {
  const int kRounds = 100, kReps = iters(20);
  SpinArg hold{2'000'000};  // 2 ms: longer than submitting the rounds takes
  baton::Semaphore s = semaphore("ping"), t = semaphore("pong");
  TimingEvent start, end;
  start.event = timingEvent();
  end.event = timingEvent();
  baton::CommandBuffer first = commands({{spinNative, &hold}, {recordNative, &start}});
  baton::CommandBuffer last = commands({{recordNative, &end}});
  std::vector<CUevent> ea = makeEvents(kRounds), eb = makeEvents(kRounds);
  uint64_t sv = 0, tv = 0;
  std::vector<double> ours, raw;
  for (int rep = 0; rep < kReps; ++rep) {
    BATON_OK(submit(env.q[0], {}, {first}, {}));
    for (int i = 0; i < kRounds; ++i) {
      BATON_OK(submit(env.q[0], {{t, tv}}, {}, {{s, ++sv}}));
      if (i + 1 < kRounds)
        BATON_OK(submit(env.q[1], {{s, sv}}, {}, {{t, ++tv}}));
      else
        BATON_OK(submit(env.q[1], {{s, sv}}, {last}, {{t, ++tv}}));
    }
    BATON_OK(t.wait(tv, UINT64_MAX));
    ours.push_back(elapsedUs(start.event, end.event) / kRounds);

    CU_OK(launch(env.spinNs, env.raw[0], &hold.ns));
    CU_OK(cu->cuEventRecord(start.event, env.raw[0]));
    for (int i = 0; i < kRounds; ++i) rawRound(ea, eb, i);
    CU_OK(cu->cuEventRecord(end.event, env.raw[1]));
    CU_OK(cu->cuEventSynchronize(end.event));
    raw.push_back(elapsedUs(start.event, end.event) / kRounds);
  }
  row("ping-pong, per round trip (GPU)", median(ours), median(raw), "us",
      "(pre-queued behind a kernel: GPU-side edges only)");

  // Live: submitted back to back while the GPU runs, timed on the host from the first submit
  // to the host seeing the last signal; the host's submission rate is part of the figure.
  const int kLive = 1000;
  ours.clear();
  raw.clear();
  std::vector<double> ratios, handoff, serial;
  baton::Semaphore gate = semaphore("serial-gate"), x = semaphore("serial-x"),
                   y = semaphore("serial-y");
  uint64_t gv = 0, xv = 0, yv = 0;
  double cpuOurs = 0, cpuRaw = 0;  // CPU time of the whole process (baton: with its threads)
  for (int rep = 0; rep < kReps; ++rep) {
    double c0 = cpuSeconds();
    auto t0 = Clock::now();
    for (int i = 0; i < kLive; ++i) {
      BATON_OK(submit(env.q[0], {{t, tv}}, {}, {{s, ++sv}}));
      BATON_OK(submit(env.q[1], {{s, sv}}, {}, {{t, ++tv}}));
    }
    BATON_OK(t.wait(tv, UINT64_MAX));
    ours.push_back(nsSince(t0) / 1e3 / kLive);
    cpuOurs += cpuSeconds() - c0;
    std::vector<CUevent> la = makeEvents(kLive), lb = makeEvents(kLive);
    c0 = cpuSeconds();
    t0 = Clock::now();
    for (int i = 0; i < kLive; ++i) rawRound(la, lb, i);
    CU_OK(cu->cuEventSynchronize(lb[kLive - 1]));
    raw.push_back(nsSince(t0) / 1e3 / kLive);
    cpuRaw += cpuSeconds() - c0;
    ratios.push_back(ours.back() / raw.back());
    handoff.push_back(rawHandoff(la, lb) / 1e3 / kLive);
    serial.push_back(rawPlusScheduler(la, lb, gate, &gv, x, &xv, y, &yv) / 1e3 / kLive);
    destroyEvents(la);
    destroyEvents(lb);
  }
  char note[112];
  std::snprintf(note, sizeof note,
                "(submitted while running: 2 submits per round trip; paired ratio %.2fx)",
                median(ratios));
  row("ping-pong, per round trip (live)", median(ours), median(raw), "us", note);
  row("  raw, calls made by a 2nd thread", median(handoff), median(raw), "us",
      "(raw vs raw: the same calls handed over a round at a time, as to an issuing thread)");
  row("  raw + scheduler, one thread", median(serial), median(raw), "us",
      "(raw calls + the 2 submissions held in the core, in series: issuing on the caller)");
  const double rounds = static_cast<double>(kReps) * kLive;
  row("  CPU time per live round trip", cpuOurs * 1e6 / rounds, cpuRaw * 1e6 / rounds, "us",
      "(process: baton counts its completion threads too)");
  destroyEvents(ea);
  destroyEvents(eb);
}

// ---- 3. wait-before-signal edge -------------------------------------------------------------

void benchWaitBeforeSignal() {
  const int kReps = iters(100);
  SpinArg hold{200'000};  // 200 us: the producer's work is still running when both are submitted
  baton::Semaphore s = semaphore("wbs");
  TimingEvent t0, t1;
  t0.event = timingEvent();
  t1.event = timingEvent();
  baton::CommandBuffer producer = commands({{spinNative, &hold}, {recordNative, &t0}});
  baton::CommandBuffer consumer = commands({{recordNative, &t1}});
  CUevent edge;
  CU_OK(cu->cuEventCreate(&edge, CU_EVENT_DISABLE_TIMING));
  uint64_t v = 0;
  int issuedBeforeGate = 0;
  std::vector<double> ours, raw;
  for (int rep = 0; rep < kReps; ++rep) {
    ++v;
    int before = t1.issued.load();
    BATON_OK(submit(env.q[1], {{s, v}}, {consumer}, {}));  // held: nothing signals v yet
    BATON_OK(submit(env.q[0], {}, {producer}, {{s, v}}));  // publishes v: releases the consumer
    // The consumer's native callback runs when its queue's issuing thread issues it. It ran
    // while the producer's 200 us kernel was still running (s not reached): released on the
    // producer's signal, with no host round trip.
    auto t = Clock::now();
    while (t1.issued.load() == before && nsSince(t) < 1e6) std::this_thread::yield();
    uint64_t reached = 0;
    BATON_OK(s.getValue(&reached));
    if (t1.issued.load() == before + 1 && reached < v) ++issuedBeforeGate;
    BATON_OK(env.device.waitIdle());
    ours.push_back(elapsedUs(t0.event, t1.event));

    CU_OK(launch(env.spinNs, env.raw[0], &hold.ns));
    CU_OK(cu->cuEventRecord(t0.event, env.raw[0]));
    CU_OK(cu->cuEventRecord(edge, env.raw[0]));
    CU_OK(cu->cuStreamWaitEvent(env.raw[1], edge, 0));
    CU_OK(cu->cuEventRecord(t1.event, env.raw[1]));
    CU_OK(cu->cuEventSynchronize(t1.event));
    raw.push_back(elapsedUs(t0.event, t1.event));
  }
  char note[128];
  std::snprintf(note, sizeof note, "consumer issued before producer finished: %d/%d",
                issuedBeforeGate, kReps);
  row("wait-before-signal edge (GPU)", median(ours), median(raw), "us", note);
  CU_OK(cu->cuEventDestroy(edge));
}

// ---- 4. host wake ---------------------------------------------------------------------------

void benchHostWake() {
  const int kReps = iters(300);
  baton::Semaphore s = semaphore("wake");
  baton::CommandBuffer gate = commands({{gateNative, nullptr}});
  CUevent e;
  CU_OK(cu->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  uint64_t v = 0;
  std::vector<double> ours, raw;
  for (int rep = 0; rep < kReps; ++rep) {
    closeGate();
    BATON_OK(submit(env.q[0], {}, {gate}, {{s, ++v}}));
    std::this_thread::sleep_for(std::chrono::microseconds(50));  // gate kernel running
    auto t0 = Clock::now();
    openGate();
    BATON_OK(s.wait(v, UINT64_MAX));
    ours.push_back(nsSince(t0));

    closeGate();
    CU_OK(launch(env.waitFlag, env.raw[0], &env.gateAddress));
    CU_OK(cu->cuEventRecord(e, env.raw[0]));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    t0 = Clock::now();
    openGate();
    CU_OK(cu->cuEventSynchronize(e));
    raw.push_back(nsSince(t0));
  }
  double o = median(ours), r = median(raw);
  char note[96];
  std::snprintf(note, sizeof note, "(includes the gate's exit; difference %.2f us)", (o - r) / 1e3);
  row("host wake after GPU completion", o / 1e3, r / 1e3, "us", note);
  CU_OK(cu->cuEventDestroy(e));
}

// ---- 5. naive loop ----------------------------------------------------------------------------

void benchNaive() {
  const int kIters = iters(2000);
  baton::Semaphore s = semaphore("naive");
  baton::CommandBuffer kernel = commands({{emptyNative, nullptr}});
  uint64_t v = 0;
  auto t0 = Clock::now();
  for (int i = 0; i < kIters; ++i) {
    BATON_OK(submit(env.q[0], {}, {kernel}, {{s, ++v}}));
    BATON_OK(s.wait(v, UINT64_MAX));
  }
  double ours = nsSince(t0) / kIters;
  t0 = Clock::now();
  for (int i = 0; i < kIters; ++i) {
    CU_OK(launch(env.empty, env.raw[0], nullptr));
    CU_OK(cu->cuStreamSynchronize(env.raw[0]));
  }
  double raw = nsSince(t0) / kIters;
  row("naive: submit kernel + wait, each", ours / 1e3, raw / 1e3, "us",
      "(raw: launch + cuStreamSynchronize)");
}

// ---- 6. CPU burned while waiting ----------------------------------------------------------------

void benchCpuWhileWaiting() {
  SpinArg spin{100'000'000};  // 100 ms of GPU time
  baton::Semaphore s = semaphore("long");
  baton::CommandBuffer work = commands({{spinNative, &spin}});
  double c0 = cpuSeconds();
  auto t0 = Clock::now();
  BATON_OK(submit(env.q[0], {}, {work}, {{s, 1}}));
  BATON_OK(s.wait(1, UINT64_MAX));
  double oursCpu = cpuSeconds() - c0, oursWall = nsSince(t0) / 1e6;
  CUevent e;
  CU_OK(cu->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  c0 = cpuSeconds();
  t0 = Clock::now();
  CU_OK(launch(env.spinNs, env.raw[0], &spin.ns));
  CU_OK(cu->cuEventRecord(e, env.raw[0]));
  CU_OK(cu->cuEventSynchronize(e));
  double rawCpu = cpuSeconds() - c0, rawWall = nsSince(t0) / 1e6;
  char note[96];
  std::snprintf(note, sizeof note, "(wall %.1f ms vs %.1f ms; whole process)", oursWall, rawWall);
  row("CPU while waiting 100 ms GPU work", oursCpu * 1e3, rawCpu * 1e3, "ms", note);
  CU_OK(cu->cuEventDestroy(e));
}

// ---- 7. steady state ----------------------------------------------------------------------------

long rssKiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

void benchSteadyState() {
  const int kTotal = 1'000'000 / scale(), kEvery = std::max(kTotal / 10, 1);
  baton::Semaphore a = semaphore("steady-a"), b = semaphore("steady-b");
  std::printf("\nsteady state: %d submissions, alternating 2 queues, each waiting on the other\n",
              kTotal);
  std::printf("%10s %10s %10s %10s %12s %10s %12s\n", "submitted", "events", "in use", "timepoints",
              "in flight", "RSS KiB", "us/submit");
  auto t0 = Clock::now();
  for (int i = 1; i <= kTotal; ++i) {
    uint64_t v = static_cast<uint64_t>(i);
    if (i % 2)
      BATON_OK(submit(env.q[0], {{b, v - 1}}, {}, {{a, v}}));
    else
      BATON_OK(submit(env.q[1], {{a, v - 1}}, {}, {{b, v}}));
    if (i % kEvery == 0) {
      baton::stream::Stats st = baton::stream::stats();
      std::printf("%10d %10llu %10llu %10llu %12llu %10ld %12.3f\n", i,
                  static_cast<unsigned long long>(st.eventsCreated),
                  static_cast<unsigned long long>(st.eventsInUse),
                  static_cast<unsigned long long>(st.timepointsLive),
                  static_cast<unsigned long long>(st.recordsInFlight), rssKiB(),
                  nsSince(t0) / 1e3 / i);
    }
  }
  BATON_OK(env.device.waitIdle());
  baton::stream::Stats st = baton::stream::stats();
  std::printf("%10s %10llu %10llu %10llu %12llu %10ld   (after waitIdle)\n", "idle",
              static_cast<unsigned long long>(st.eventsCreated),
              static_cast<unsigned long long>(st.eventsInUse),
              static_cast<unsigned long long>(st.timepointsLive),
              static_cast<unsigned long long>(st.recordsInFlight), rssKiB());
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  setup();
  std::printf("BATON_CUDA_BLOCKING_SYNC_EVENTS=%s\n\n",
              std::getenv("BATON_CUDA_BLOCKING_SYNC_EVENTS")
                  ? std::getenv("BATON_CUDA_BLOCKING_SYNC_EVENTS")
                  : "0");
  std::printf("%-34s %12s %12s %9s  %s\n", "figure", "baton", "raw CUDA", "ratio", "unit");
  struct {
    const char* name;
    void (*run)();
  } benches[] = {{"submit", benchSubmit},       {"parts", benchSubmitParts},
                 {"ping-pong", benchPingPong},  {"wbs", benchWaitBeforeSignal},
                 {"wake", benchHostWake},       {"naive", benchNaive},
                 {"cpu", benchCpuWhileWaiting}, {"steady", benchSteadyState}};
  for (auto& b : benches) {
    if (argc > 1 && std::none_of(argv + 1, argv + argc,
                                 [&](const char* a) { return std::strcmp(a, b.name) == 0; }))
      continue;
    std::fprintf(stderr, "[%s]\n", b.name);  // progress, so a hang shows where
    b.run();
  }
  BATON_OK(env.device.waitIdle());
  for (CUstream s : env.raw) CU_OK(cu->cuStreamDestroy(s));
  (void)env.gateBuffer.destroy();
  (void)env.device.destroy();
  (void)env.instance.destroy();
  CU_OK(cu->cuModuleUnload(env.module));
  CU_OK(cu->cuDevicePrimaryCtxRelease(env.cuDevice));
  return 0;
}
