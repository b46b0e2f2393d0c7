// cuda_bench: the CUDA or HIP backend against the raw driver calls of the same backend, measured in
// the same run. Each row prints baton's figure, the raw figure and the ratio. `--backend hip` runs
// the HIP backend against raw HIP calls (raw_driver.hpp); the default is CUDA. The rows name the
// CUDA calls below; on HIP they are the same calls under their HIP names (hipStreamWaitEvent,
// hipEventRecord, ...), and baton's per-submit query of the current context is hipGetDevice. The
// kernels are PTX, so HIP runs them only over an NVIDIA GPU (the translation library of tests/hip,
// through BATON_HIP_DRIVER).
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
// the one that would open the gate (seen on the H100 test machine: docs/architecture.md,
// 'Wait-before-signal and deferred submissions'). Only "host wake" uses a gate (one operation).
// Medians over repetitions; raw and baton alternate within a repetition so drift hits both.
// Ratios in the table are of the medians; the notes of submit and ping-pong also give the median
// of the per-repetition ratios (baton and raw measured back to back), which drifts less when the
// machine's speed changes between repetitions (on the H100 test machine the raw figures alone
// moved by up to 2x between runs).
// BATON_BENCH_SCALE=<n> divides the iteration counts (a smoke run). Output is unbuffered.
// Arguments name the benchmarks to run (submit parts ping-pong wbs wake naive cpu steady); none:
// all. `--backend cuda|hip` picks the backend: the first device of that backend is used.
// `--trace <path>` adds two rows to the submit figure: the same batches with a timeline trace
// session paused (its hooks off) and recording, alternating, the trace then written to <path>. A
// backend that is not built, not loaded or has no device, or a driver that cannot run the
// kernels (the tests' fake driver), ends the run with the reason and exit code 77 (a skip).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <baton/baton.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_device.hpp"
#include "ptx_kernels.hpp"
#include "raw_driver.hpp"
#include "sampler.hpp"  // ThreadCpu: the live ping-pong's CPU by thread
#include "stream_backend.hpp"
#include "trace.hpp"

namespace {

using baton::Result;
using baton_bench::RawDriver;
using baton_bench::RawEvent;
using baton_bench::RawEventKind;
using baton_bench::RawFunction;
using baton_bench::RawStream;
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
// A raw driver call: 0 is success on both backends.
#define RAW_OK(expr)                                       \
  do {                                                     \
    int r_ = (expr);                                       \
    if (r_ != 0) die(#expr, driver.errorName(r_).c_str()); \
  } while (0)

// The chosen backend's raw calls (a copy: one indirection less on every call).
RawDriver driver;

using baton_bench::median;
using baton_bench::nsSince;
using baton_bench::percentile;
using baton_bench::scale;
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
  RawFunction waitFlag = nullptr, empty = nullptr, spinNs = nullptr;
  RawStream raw[2] = {nullptr, nullptr};
  baton::Buffer gateBuffer;
  uint32_t* gateFlag = nullptr;
  uint64_t gateAddress = 0;
};
Env env;

void closeGate() { __atomic_store_n(env.gateFlag, 0u, __ATOMIC_SEQ_CST); }
void openGate() { __atomic_store_n(env.gateFlag, 1u, __ATOMIC_SEQ_CST); }

int launch(RawFunction f, RawStream s, uint64_t* arg) {
  void* params[] = {arg};
  return driver.launch(f, s, arg ? params : nullptr);
}

// Native callbacks.
Result gateNative(const baton::NativeQueue& q, void*) {
  return launch(env.waitFlag, static_cast<RawStream>(q.stream), &env.gateAddress) == 0
             ? Result::Success
             : Result::ErrorDriver;
}
Result emptyNative(const baton::NativeQueue& q, void*) {
  return launch(env.empty, static_cast<RawStream>(q.stream), nullptr) == 0 ? Result::Success
                                                                           : Result::ErrorDriver;
}
struct SpinArg {
  uint64_t ns;
};
Result spinNative(const baton::NativeQueue& q, void* user) {
  return launch(env.spinNs, static_cast<RawStream>(q.stream), &static_cast<SpinArg*>(user)->ns) == 0
             ? Result::Success
             : Result::ErrorDriver;
}
struct TimingEvent {
  RawEvent event = nullptr;
  std::atomic<int> issued{0};
};
Result recordNative(const baton::NativeQueue& q, void* user) {
  auto* t = static_cast<TimingEvent*>(user);
  t->issued.fetch_add(1);
  return driver.eventRecord(t->event, static_cast<RawStream>(q.stream)) == 0 ? Result::Success
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

RawEvent timingEvent() {
  RawEvent e;
  RAW_OK(driver.eventCreate(&e, RawEventKind::Timing));
  return e;
}
double elapsedUs(RawEvent a, RawEvent b) {
  float ms = 0;
  RAW_OK(driver.eventElapsedMs(&ms, a, b));
  return ms * 1000.0;
}

// Ends the run as skipped (meson's exit code 77), saying why this machine cannot run it.
[[noreturn]] void skip(const std::string& why) {
  std::printf("cuda_bench: %s\n", why.c_str());
  std::exit(77);
}

// --trace <path>: the submit figure also with the timeline trace on, written to <path>.
const char* tracePath = nullptr;

// The backend under test (--backend).
baton::BackendKind backendKind = baton::BackendKind::Cuda;
const char* backendName() { return backendKind == baton::BackendKind::Hip ? "HIP" : "CUDA"; }

void setup() {
  const std::string name = backendName();
  // Only the backend under test.
  baton::PhysicalDevice physical;
  baton::PhysicalDeviceProperties props;
  std::string why;
  BATON_OK(baton_bench::findBenchDevice(backendKind, -1, &env.instance, &physical, &props, &why));
  if (!physical) skip(why);
  std::printf("backend: %s\n", driver.name);
  if (backendKind == baton::BackendKind::Cuda || !props.arch[0])
    std::printf("device: %s (compute %u.%u), %s\n", props.name, props.computeMajor,
                props.computeMinor, driver.versions().c_str());
  else
    std::printf("device: %s (compute %u.%u, arch %s), %s\n", props.name, props.computeMajor,
                props.computeMinor, props.arch, driver.versions().c_str());
  baton::DeviceCreateInfo info;
  info.queueCount = 2;
  BATON_OK(env.instance.createDevice(physical, info, &env.device));
  BATON_OK(env.device.getQueue(0, &env.q[0]));
  BATON_OK(env.device.getQueue(1, &env.q[1]));

  if (const char* why = driver.cannotRunKernels()) skip(why);
  RAW_OK(driver.open(static_cast<int>(props.ordinal)));
  if (int r = driver.moduleLoad(baton_test::kPtxKernels))
    skip("the " + name + " driver cannot load the benchmarks' PTX kernels (NVIDIA GPU code): " +
         driver.errorName(r));
  RAW_OK(driver.getFunction(&env.waitFlag, "baton_wait_flag"));
  RAW_OK(driver.getFunction(&env.empty, "baton_empty"));
  RAW_OK(driver.getFunction(&env.spinNs, "baton_spin_ns"));
  for (RawStream& s : env.raw) RAW_OK(driver.streamCreate(&s));

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

// `n` raw events of `kind`, and their end.
std::vector<RawEvent> makeEvents(size_t n, RawEventKind kind = RawEventKind::Plain) {
  std::vector<RawEvent> events(n);
  for (RawEvent& e : events) RAW_OK(driver.eventCreate(&e, kind));
  return events;
}
void destroyEvents(const std::vector<RawEvent>& events) {
  for (RawEvent e : events) RAW_OK(driver.eventDestroy(e));
}

// ---- 1. submit cost -------------------------------------------------------------------------

void benchSubmit() {
  const int kBatch = 64, kReps = iters(100);
  SpinArg hold{1'000'000};  // 1 ms: longer than a batch takes to submit
  baton::Semaphore s = semaphore("submit-s"), t = semaphore("submit-t");
  baton::CommandBuffer busy = commands({{spinNative, &hold}});
  uint64_t sv = 0, tv = 0;
  std::vector<RawEvent> rawEvents = makeEvents(kBatch);
  std::vector<RawEvent> rawBlocking = makeEvents(kBatch, RawEventKind::BlockingSync);
  RawEvent busyEvent;
  RAW_OK(driver.eventCreate(&busyEvent, RawEventKind::Plain));
  // Raw again, with each event queried by another thread after it completed, as a completion
  // thread does: what that costs the next record of the event is part of baton's figure.
  std::vector<RawEvent> rawQueried = makeEvents(kBatch);
  std::vector<double> ours, enqueued, raw, rawBlock, rawForeign, ratios, enqueuedRatios;
  int late = 0;
  // baton: queue 0 holds a recorded, incomplete signal; queue 1 submits kBatch times, each
  // waiting for it. Returns ns per submit() call; *start: when the batch began, *records: the
  // records issued before it.
  auto submitBatch = [&](Clock::time_point* start, uint64_t* records) {
    const uint64_t before = baton::stream::stats().recordsIssued;
    // Through the issuing thread, which is then awake when the batch starts, as within a stream
    // of submissions. By default this submission, on an idle queue, would be issued by this
    // thread, and the batch would start with the issuing thread asleep: its wake-up (25-150 us
    // on the H100 machine) would count in "until enqueued". The batch's own first submission,
    // on an idle queue, is still issued here by default.
    baton::stream::setIssueMode(baton::stream::IssueMode::IssuingThread);
    BATON_OK(submit(env.q[0], {}, {busy}, {{s, ++sv}}));
    baton::stream::resetIssueMode();
    // Its event recorded, so that the count after is queue 1's alone.
    while (baton::stream::stats().recordsIssued < before + 1) std::this_thread::yield();
    *records = baton::stream::stats().recordsIssued;
    // The submit info is built once, as an engine would keep it, so that what is timed is
    // submit() itself (the raw loop below allocates nothing either).
    baton::SemaphoreValue wait{s, sv}, signal{t, tv};
    baton::SubmitInfo info{wait, {}, signal};
    *start = Clock::now();
    for (int i = 0; i < kBatch; ++i) {
      signal.value = ++tv;
      BATON_OK(env.q[1].submit(info));
    }
    return nsSince(*start) / kBatch;
  };
  for (int rep = 0; rep < kReps; ++rep) {
    Clock::time_point t0;
    uint64_t records = 0;
    ours.push_back(submitBatch(&t0, &records));
    // The driver calls run on the queue's issuing thread: until it has enqueued the batch.
    while (baton::stream::stats().recordsIssued < records + kBatch) {
    }
    enqueued.push_back(nsSince(t0) / kBatch);
    uint64_t reached = 0;
    BATON_OK(s.getValue(&reached));
    late += reached >= sv;  // the kernel ended before the batch did: the waits were not pending
    BATON_OK(env.device.waitIdle());

    for (std::vector<RawEvent>* events : {&rawEvents, &rawBlocking, &rawQueried}) {
      RAW_OK(launch(env.spinNs, env.raw[0], &hold.ns));
      RAW_OK(driver.eventRecord(busyEvent, env.raw[0]));
      t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) {
        RAW_OK(driver.streamWaitEvent(env.raw[1], busyEvent));
        RAW_OK(driver.eventRecord((*events)[i], env.raw[1]));
      }
      double ns = nsSince(t0) / kBatch;
      (events == &rawEvents ? raw : events == &rawBlocking ? rawBlock : rawForeign).push_back(ns);
      RAW_OK(driver.streamSynchronize(env.raw[1]));
      if (events == &rawQueried) {
        std::thread([&] {
          RAW_OK(driver.makeCurrent());
          for (RawEvent e : rawQueried) RAW_OK(driver.eventQuery(e));
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
  if (tracePath) {
    // The same batches with the timeline trace recording and not, alternating within one trace
    // session (paused between): what the trace's hooks cost submit() when on, and off.
    std::vector<double> off, on;
    if (!baton::core::trace::start(tracePath))
      die("--trace", "a trace session already runs (BATON_TRACE is set?)");
    for (int rep = 0; rep < kReps; ++rep) {
      for (bool traced : {false, true}) {
        baton::core::trace::pause(!traced);
        Clock::time_point start;
        uint64_t records = 0;
        (traced ? on : off).push_back(submitBatch(&start, &records));
        BATON_OK(env.device.waitIdle());
      }
    }
    baton::core::trace::pause(false);
    const baton::core::Status written = baton::core::trace::stop();
    if (!written.ok()) die("--trace", written.message().c_str());
    row("  submit, trace session paused", median(off) / 1e3, median(raw) / 1e3, "us",
        "(the hooks' cost when off: one relaxed load each)");
    std::snprintf(note, sizeof note,
                  "(the trace recording; %.2fx the paused figure; written to %s)",
                  median(on) / median(off), tracePath);
    row("  submit, trace recording", median(on) / 1e3, median(raw) / 1e3, "us", note);
  }
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
      ("(raw vs raw: cost of " + std::string(driver.blockingSyncName) + ")").c_str());
  row("  raw, events queried by a 2nd thread", median(rawForeign) / 1e3, median(raw) / 1e3, "us",
      "(raw vs raw: each event was last queried by another thread)");
  for (const std::vector<RawEvent>* events : {&rawEvents, &rawBlocking, &rawQueried})
    destroyEvents(*events);
  RAW_OK(driver.eventDestroy(busyEvent));
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
  std::vector<RawEvent> rawEvents = makeEvents(kBatch);
  RawEvent busyEvent;
  RAW_OK(driver.eventCreate(&busyEvent, RawEventKind::Plain));
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
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) RAW_OK(driver.currentQuery());
      rawCurrent.push_back(nsSince(t0) / kBatch);
    }

    for (bool withWait : {false, true}) {
      RAW_OK(launch(env.spinNs, env.raw[0], &hold.ns));
      RAW_OK(driver.eventRecord(busyEvent, env.raw[0]));
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) {
        if (withWait) RAW_OK(driver.streamWaitEvent(env.raw[1], busyEvent));
        RAW_OK(driver.eventRecord(rawEvents[i], env.raw[1]));
      }
      (withWait ? rawBoth : rawRecord).push_back(nsSince(t0) / kBatch);
      RAW_OK(driver.streamSynchronize(env.raw[1]));
    }
  }
  double m[kVariants];
  for (int v = 0; v < kVariants; ++v) m[v] = median(ours[v]) / 1e3;
  const double record = median(rawRecord) / 1e3, both = median(rawBoth) / 1e3;
  const std::string recordNote = "(raw: " + std::string(driver.eventRecordName) + ")",
                    bothNote = "(raw: " + std::string(driver.streamWaitEventName) + " + " +
                               driver.eventRecordName + ")";
  row(names[kNothing], m[kNothing], record, "us", recordNote.c_str());
  row(names[kSignal], m[kSignal], record, "us", recordNote.c_str());
  row(names[kWait], m[kWait], both, "us", bothNote.c_str());
  row(names[kBoth], m[kBoth], both, "us", bothNote.c_str());
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
  std::printf("%-34s %12s %12.3f %9s  us   (baton asks for the current %s once per submit)\n",
              ("  raw: " + std::string(driver.currentQueryName)).c_str(), "-",
              median(rawCurrent) / 1e3, "-", driver.currentQueryWhat);
  destroyEvents(rawEvents);
  RAW_OK(driver.eventDestroy(busyEvent));
}

// ---- 2. cross-queue ping-pong -----------------------------------------------------------------

// Round i of the raw event ping-pong between the two raw streams: stream 0 waits for round
// i-1's event of stream 1 and records a[i]; stream 1 waits for that and records b[i].
void rawRound(const std::vector<RawEvent>& a, const std::vector<RawEvent>& b, int i) {
  if (i) RAW_OK(driver.streamWaitEvent(env.raw[0], b[i - 1]));
  RAW_OK(driver.eventRecord(a[i], env.raw[0]));
  RAW_OK(driver.streamWaitEvent(env.raw[1], a[i]));
  RAW_OK(driver.eventRecord(b[i], env.raw[1]));
}

// The raw live ping-pong with its driver calls made by a second thread, to which this thread
// hands each round through a ring of slots: the floor of any design that issues on a thread of
// its own (baton's device issuing thread), with no bookkeeping at all. Returns the wall time
// in ns from the first hand-off until the last event completed. With `driverNs`, the second
// thread also times its driver calls (two clock reads a round) and adds the ns to it.
double rawHandoff(const std::vector<RawEvent>& la, const std::vector<RawEvent>& lb,
                  double* driverNs = nullptr) {
  struct alignas(64) Slot {
    std::atomic<int> round{-1};
  };
  static Slot slots[64];
  for (Slot& slot : slots) slot.round.store(-1, std::memory_order_relaxed);
  const int n = static_cast<int>(la.size());
  auto t0 = Clock::now();
  std::thread issuer([&] {
    RAW_OK(driver.makeCurrent());
    for (int i = 0; i < n; ++i) {
      Slot& slot = slots[i % 64];
      while (slot.round.load(std::memory_order_acquire) != i) {
      }
      if (driverNs) {
        auto t = Clock::now();
        rawRound(la, lb, i);
        *driverNs += nsSince(t);
      } else {
        rawRound(la, lb, i);
      }
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
  RAW_OK(driver.eventSynchronize(lb[n - 1]));
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
double rawPlusScheduler(const std::vector<RawEvent>& la, const std::vector<RawEvent>& lb,
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
  RAW_OK(driver.eventSynchronize(lb[n - 1]));
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
  std::vector<RawEvent> ea = makeEvents(kRounds), eb = makeEvents(kRounds);
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

    RAW_OK(launch(env.spinNs, env.raw[0], &hold.ns));
    RAW_OK(driver.eventRecord(start.event, env.raw[0]));
    for (int i = 0; i < kRounds; ++i) rawRound(ea, eb, i);
    RAW_OK(driver.eventRecord(end.event, env.raw[1]));
    RAW_OK(driver.eventSynchronize(end.event));
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
  sampler::ThreadCpu oursByThread, rawByThread;
  uint64_t records = 0, retiredOnSubmit = 0;  // of the live loops (not the serial floor's)
  // The live loop: kLive round trips submitted back to back, then a host wait for the last.
  auto live = [&] {
    for (int i = 0; i < kLive; ++i) {
      BATON_OK(submit(env.q[0], {{t, tv}}, {}, {{s, ++sv}}));
      BATON_OK(submit(env.q[1], {{s, sv}}, {}, {{t, ++tv}}));
    }
    BATON_OK(t.wait(tv, UINT64_MAX));
  };
  for (int rep = 0; rep < kReps; ++rep) {
    const baton::stream::Stats before = baton::stream::stats();
    oursByThread.begin();
    double c0 = cpuSeconds();
    auto t0 = Clock::now();
    live();
    ours.push_back(nsSince(t0) / 1e3 / kLive);
    cpuOurs += cpuSeconds() - c0;
    oursByThread.end();
    const baton::stream::Stats after = baton::stream::stats();
    records += after.recordsIssued - before.recordsIssued;
    retiredOnSubmit += after.retiredOnSubmit - before.retiredOnSubmit;
    std::vector<RawEvent> la = makeEvents(kLive), lb = makeEvents(kLive);
    rawByThread.begin();
    c0 = cpuSeconds();
    t0 = Clock::now();
    for (int i = 0; i < kLive; ++i) rawRound(la, lb, i);
    RAW_OK(driver.eventSynchronize(lb[kLive - 1]));
    raw.push_back(nsSince(t0) / 1e3 / kLive);
    cpuRaw += cpuSeconds() - c0;
    rawByThread.end();
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
  // The spread of the repetitions: on the H100 test machine the issuing thread's cost per
  // submission switches between two levels from one process or period to the next, with the same
  // code, which moves the ratio above by up to a factor of two or more (docs/performance.md,
  // 'Floors and where the time goes', has the levels and the ratios); the spread shows which level
  // (or both) a run saw.
  std::printf(
      "    live reps, us per round trip: baton p10 %.3f, median %.3f, p90 %.3f; raw p10 %.3f, "
      "median %.3f, p90 %.3f\n",
      percentile(ours, 10), median(ours), percentile(ours, 90), percentile(raw, 10), median(raw),
      percentile(raw, 90));
  const double rounds = static_cast<double>(kReps) * kLive;
  row("  CPU time per live round trip", cpuOurs * 1e6 / rounds, cpuRaw * 1e6 / rounds, "us",
      "(process: baton counts its completion threads too)");
  std::printf("    by thread, baton (us per round trip): %s\n", oursByThread.text(rounds).c_str());
  std::printf("    by thread, raw (us per round trip): %s\n", rawByThread.text(rounds).c_str());
  std::printf(
      "    records retired by the submitting thread: %llu of %llu (the rest by the "
      "completion threads)\n",
      static_cast<unsigned long long>(retiredOnSubmit), static_cast<unsigned long long>(records));

  // Where the issuing thread's time goes: a few more repetitions with its timing on
  // (setIssueTiming), after the figures above so as not to slow them, beside the raw calls made
  // by a second thread timed the same way (a clock read before and after the calls).
  const int kTimedReps = std::max(1, kReps / 4);
  baton::stream::setIssueTiming(true);
  const baton::stream::Stats tb = baton::stream::stats();
  for (int rep = 0; rep < kTimedReps; ++rep) live();
  baton::stream::setIssueTiming(false);
  const baton::stream::Stats ta = baton::stream::stats();
  double rawDriverNs = 0;
  for (int rep = 0; rep < kTimedReps; ++rep) {
    std::vector<RawEvent> la = makeEvents(kLive), lb = makeEvents(kLive);
    rawHandoff(la, lb, &rawDriverNs);
    destroyEvents(la);
    destroyEvents(lb);
  }
  const double issued = static_cast<double>(ta.issueTimed - tb.issueTimed);
  if (issued > 0) {
    std::printf(
        "    issuing thread, timed (%d more reps): %.0f ns busy per submission, of which %.0f ns "
        "in %.1f driver calls; raw's 2nd thread: %.0f ns of driver calls per submission (2 "
        "calls)\n",
        kTimedReps, (ta.issueBusyNs - tb.issueBusyNs) / issued,
        (ta.issueDriverNs - tb.issueDriverNs) / issued,
        (ta.issueDriverCalls - tb.issueDriverCalls) / issued,
        rawDriverNs / (2.0 * kTimedReps * kLive));
  } else {
    std::printf("    issuing thread, timed: no submission reached it (all issued directly)\n");
  }
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
  RawEvent edge;
  RAW_OK(driver.eventCreate(&edge, RawEventKind::Plain));
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

    RAW_OK(launch(env.spinNs, env.raw[0], &hold.ns));
    RAW_OK(driver.eventRecord(t0.event, env.raw[0]));
    RAW_OK(driver.eventRecord(edge, env.raw[0]));
    RAW_OK(driver.streamWaitEvent(env.raw[1], edge));
    RAW_OK(driver.eventRecord(t1.event, env.raw[1]));
    RAW_OK(driver.eventSynchronize(t1.event));
    raw.push_back(elapsedUs(t0.event, t1.event));
  }
  char note[128];
  std::snprintf(note, sizeof note, "consumer issued before producer finished: %d/%d",
                issuedBeforeGate, kReps);
  row("wait-before-signal edge (GPU)", median(ours), median(raw), "us", note);
  RAW_OK(driver.eventDestroy(edge));
}

// ---- 4. host wake ---------------------------------------------------------------------------

void benchHostWake() {
  const int kReps = iters(300);
  baton::Semaphore s = semaphore("wake");
  baton::CommandBuffer gate = commands({{gateNative, nullptr}});
  RawEvent e;
  RAW_OK(driver.eventCreate(&e, RawEventKind::Plain));
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
    RAW_OK(launch(env.waitFlag, env.raw[0], &env.gateAddress));
    RAW_OK(driver.eventRecord(e, env.raw[0]));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    t0 = Clock::now();
    openGate();
    RAW_OK(driver.eventSynchronize(e));
    raw.push_back(nsSince(t0));
  }
  double o = median(ours), r = median(raw);
  char note[96];
  std::snprintf(note, sizeof note, "(includes the gate's exit; difference %.2f us)", (o - r) / 1e3);
  row("host wake after GPU completion", o / 1e3, r / 1e3, "us", note);
  RAW_OK(driver.eventDestroy(e));
}

// ---- 5. naive loop ----------------------------------------------------------------------------

void benchNaive() {
  const int kIters = iters(2000);
  baton::Semaphore s = semaphore("naive");
  baton::CommandBuffer kernel = commands({{emptyNative, nullptr}});
  uint64_t v = 0;
  const baton::stream::Stats before = baton::stream::stats();
  auto t0 = Clock::now();
  for (int i = 0; i < kIters; ++i) {
    BATON_OK(submit(env.q[0], {}, {kernel}, {{s, ++v}}));
    BATON_OK(s.wait(v, UINT64_MAX));
  }
  double ours = nsSince(t0) / kIters;
  const baton::stream::Stats after = baton::stream::stats();
  t0 = Clock::now();
  for (int i = 0; i < kIters; ++i) {
    RAW_OK(launch(env.empty, env.raw[0], nullptr));
    RAW_OK(driver.streamSynchronize(env.raw[0]));
  }
  double raw = nsSince(t0) / kIters;
  char note[160];
  std::snprintf(note, sizeof note, "(raw: launch + %s; baton issued %llu of %d on this thread)",
                driver.streamSynchronizeName,
                static_cast<unsigned long long>(after.directIssued - before.directIssued), kIters);
  row("naive: submit kernel + wait, each", ours / 1e3, raw / 1e3, "us", note);
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
  RawEvent e;
  RAW_OK(driver.eventCreate(&e, RawEventKind::Plain));
  c0 = cpuSeconds();
  t0 = Clock::now();
  RAW_OK(launch(env.spinNs, env.raw[0], &spin.ns));
  RAW_OK(driver.eventRecord(e, env.raw[0]));
  RAW_OK(driver.eventSynchronize(e));
  double rawCpu = cpuSeconds() - c0, rawWall = nsSince(t0) / 1e6;
  char note[96];
  std::snprintf(note, sizeof note, "(wall %.1f ms vs %.1f ms; whole process)", oursWall, rawWall);
  row("CPU while waiting 100 ms GPU work", oursCpu * 1e3, rawCpu * 1e3, "ms", note);
  RAW_OK(driver.eventDestroy(e));
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
  struct {
    const char* name;
    void (*run)();
  } benches[] = {{"submit", benchSubmit},       {"parts", benchSubmitParts},
                 {"ping-pong", benchPingPong},  {"wbs", benchWaitBeforeSignal},
                 {"wake", benchHostWake},       {"naive", benchNaive},
                 {"cpu", benchCpuWhileWaiting}, {"steady", benchSteadyState}};
  const char* usage =
      "usage: cuda_bench [--backend cuda|hip] [--trace PATH] [submit parts ping-pong wbs wake "
      "naive cpu steady]\n";
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) a += "=" + std::string(argv[++i]);
    if (a == "--trace" && i + 1 < argc) {
      tracePath = argv[++i];
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage);
      return 0;
    } else if (a == "--backend=cuda") {
      backendKind = baton::BackendKind::Cuda;
    } else if (a == "--backend=hip") {
      backendKind = baton::BackendKind::Hip;
    } else if (std::none_of(std::begin(benches), std::end(benches),
                            [&](const auto& b) { return a == b.name; })) {
      std::fprintf(stderr, "cuda_bench: unknown argument %s\n%s", a.c_str(), usage);
      return 2;
    } else {
      only.push_back(a);
    }
  }
#if BATON_BENCH_CUDA
  if (backendKind == baton::BackendKind::Cuda) driver = baton_bench::rawCuda();
#endif
#if BATON_BENCH_HIP
  if (backendKind == baton::BackendKind::Hip) driver = baton_bench::rawHip();
#endif
  if (!driver.name) skip(std::string(backendName()) + " is not compiled into this build");

  setup();
  if (backendKind == baton::BackendKind::Cuda)
    std::printf("BATON_CUDA_BLOCKING_SYNC_EVENTS=%s\n\n",
                std::getenv("BATON_CUDA_BLOCKING_SYNC_EVENTS")
                    ? std::getenv("BATON_CUDA_BLOCKING_SYNC_EVENTS")
                    : "0");
  else
    std::printf("pooled events: plain (BATON_CUDA_BLOCKING_SYNC_EVENTS is the CUDA backend's)\n\n");
  std::printf("%-34s %12s %12s %9s  %s\n", "figure", "baton",
              ("raw " + std::string(driver.name)).c_str(), "ratio", "unit");
  for (auto& b : benches) {
    if (!only.empty() && std::find(only.begin(), only.end(), b.name) == only.end()) continue;
    std::fprintf(stderr, "[%s]\n", b.name);  // progress, so a hang shows where
    b.run();
  }
  BATON_OK(env.device.waitIdle());
  for (RawStream s : env.raw) RAW_OK(driver.streamDestroy(s));
  (void)env.gateBuffer.destroy();
  (void)env.device.destroy();
  (void)env.instance.destroy();
  RAW_OK(driver.moduleUnload());
  RAW_OK(driver.close());
  return 0;
}
