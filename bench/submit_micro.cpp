// submit_micro: the cost of Queue::submit on its own, for profiling. Runs N submissions of one wait
// and one signal with no command buffers, on a host or CUDA queue, and prints the wall-clock ns per
// submit() call (batches of 64, waited for between batches). Made to run under callgrind, with the
// collection limited to submit() so that the queues' own threads are not counted:
//
//   valgrind --tool=callgrind --toggle-collect='baton::Queue::submit*'
//       build/bench/submit_micro cuda covered 20000
//   (then: total Ir / submissions printed)
//
// Without a GPU, BATON_CUDA_DRIVER=<build>/tests/cuda/libbaton_fake_cuda.so runs the CUDA
// backend's code on the fake driver (every event completes when recorded). On CUDA the thread
// makes device 0's primary context current first, as bench/cuda does (it issues raw driver
// calls) and as an engine that also runs CUDA code does; baton then has no context to switch.
//
// Scenarios (what the wait finds when submitted):
//   none      no wait and no signal: the first submission of a frame, fire-and-forget work
//   reached   a value already reached (the gate was signalled on the host up front)
//   covered   queue 0 records a signal of s, queue 1 then submits a wait for it: on a GPU backend
//             a recorded, maybe unreached signal (GPU-side wait); two submits per step
//   pingpong  the live cross-queue ping-pong of bench/cuda (benchPingPong): queue 0 waits for
//             queue 1's last signal and signals s, queue 1 waits for s and signals t
//   live      pingpong timed end to end (1000 round trips, then a host wait for the last
//             signal): the pace of the slower of the submitting and the issuing thread
//   levels    live, 40 rounds of 1000 round trips (whatever [submits] says), printing the
//             spread of the rounds: the pace (ns per submission, until the host saw the last
//             signal), the submitting loop's own pace, and how far the issuing thread trailed at
//             the loop's end (the host wait). On the H100 test machine the pace switches
//             between two levels from one process or period to the next with the same code
//             (docs/performance.md, 'Floors and where the time goes')
//   raw       (cuda) live's raw driver calls on this thread, no baton: bench/cuda's raw event
//             ping-pong, printed per pair of calls (one submission's worth)
//   bursts    a frame loop's shape (bench/cuda/frame_bench): bursts of 64 submissions (32 steps
//             of `covered`), each followed by a host wait for the burst two before it (three in
//             flight) and a sleep of [gap] µs (default 300) off baton, as an engine's submitting
//             thread records the next frame meanwhile. Prints, per burst and for the loop only,
//             the CPU of the process and of each thread, and each thread's voluntary context
//             switches (for baton's threads: about one per sleep, i.e. per wake-up that some
//             other thread paid for). The gaps being longer than the issuing thread's longest
//             spin (kIssueSpinNs), this shows what a bursty submitter costs between bursts: on
//             the H100, 109-123 µs of issuing-thread CPU per burst with a fixed 50 µs spin,
//             68-83 µs with the adaptive one (stream_tuning.hpp).
//
// It also prints the CPU time of the whole process (its queues' threads included) per submission,
// and each thread's CPU time and voluntary context switches (sleeps) per submission.
// SAMPLE=<file> profiles the submitting thread with bench/sampler.hpp (no perf needed), or with
// SAMPLE_THREAD=baton-issue the device's issuing thread; summarize
// the file with bench/symbolize.py on the same machine. E.g. on the GPU test machine:
//   SAMPLE=/tmp/p.txt build/bench/submit_micro cuda pingpong 3000000
//   bench/symbolize.py /tmp/p.txt 40
//
// Usage: submit_micro <host|cuda> <none|reached|covered|pingpong|live|levels|raw|bursts>
//        [submits, default 200000] [bursts: gap in µs, default 300]
#include <dlfcn.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <baton/baton.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sampler.hpp"  // SAMPLE=<file>

namespace {

#define CHECK(call)                                                                \
  do {                                                                             \
    baton::Result r_ = (call);                                                     \
    if (baton::isError(r_)) {                                                      \
      std::fprintf(stderr, "FAILED: %s -> %s: %s\n", #call, baton::resultName(r_), \
                   baton::lastErrorMessage());                                     \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

baton::PhysicalDevice find(baton::Instance instance, baton::BackendKind kind) {
  uint32_t count = 0;
  CHECK(instance.enumeratePhysicalDevices(&count, nullptr));
  std::vector<baton::PhysicalDevice> all(count);
  CHECK(instance.enumeratePhysicalDevices(&count, all.data()));
  for (baton::PhysicalDevice p : all) {
    baton::PhysicalDeviceProperties props;
    CHECK(p.getProperties(&props));
    if (props.backend == kind && props.maxQueues >= 2) return p;
  }
  std::fprintf(stderr, "no %s device with two queues\n", baton::backendName(kind));
  std::exit(1);
}

// Makes device 0's primary context current on this thread (the driver baton loads: the same
// BATON_CUDA_DRIVER, or libcuda.so.1). Without it each submit pays for a context switch there
// and back.
void makePrimaryContextCurrent() {
  const char* path = std::getenv("BATON_CUDA_DRIVER");
  void* lib = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  using Init = int (*)(unsigned);
  using Retain = int (*)(void**, int);
  using SetCurrent = int (*)(void*);
  auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
  auto retain = reinterpret_cast<Retain>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
  auto setCurrent = reinterpret_cast<SetCurrent>(dlsym(lib, "cuCtxSetCurrent"));
  void* context = nullptr;
  if (init && retain && setCurrent && init(0) == 0 && retain(&context, 0) == 0)
    (void)setCurrent(context);  // retained for the life of the process
}

// The raw CUDA counterpart of the `live` scenario, for profiling the driver's own share: the
// event ping-pong of bench/cuda (rawRound) on two non-blocking streams, in rounds of 1000 round
// trips, each until the host sees the last event. Returns the ns per driver-call pair (the raw
// cost of one submission), or a negative value without a driver.
double rawLive(long submits) {
  const char* path = std::getenv("BATON_CUDA_DRIVER");
  void* lib = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
  using StreamCreate = int (*)(void**, unsigned);
  using EventCreate = int (*)(void**, unsigned);
  using EventRecord = int (*)(void*, void*);
  using StreamWait = int (*)(void*, void*, unsigned);
  using EventSync = int (*)(void*);
  auto streamCreate = reinterpret_cast<StreamCreate>(dlsym(lib, "cuStreamCreate"));
  auto eventCreate = reinterpret_cast<EventCreate>(dlsym(lib, "cuEventCreate"));
  auto record = reinterpret_cast<EventRecord>(dlsym(lib, "cuEventRecord"));
  auto wait = reinterpret_cast<StreamWait>(dlsym(lib, "cuStreamWaitEvent"));
  auto sync = reinterpret_cast<EventSync>(dlsym(lib, "cuEventSynchronize"));
  if (!streamCreate || !eventCreate || !record || !wait || !sync) return -1;
  constexpr int kRounds = 1000;
  void* streams[2];
  for (void*& st : streams)
    if (streamCreate(&st, 1 /* CU_STREAM_NON_BLOCKING */) != 0) return -1;
  std::vector<void*> a(kRounds), b(kRounds);
  for (int i = 0; i < kRounds; ++i)
    if (eventCreate(&a[i], 2 /* CU_EVENT_DISABLE_TIMING */) != 0 || eventCreate(&b[i], 2) != 0)
      return -1;
  long done = 0;
  double ns = 0;
  while (done < submits) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRounds; ++i, done += 2) {
      if (i) wait(streams[0], b[i - 1], 0);
      record(a[i], streams[0]);
      wait(streams[1], a[i], 0);
      record(b[i], streams[1]);
    }
    sync(b[kRounds - 1]);
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }
  return ns / static_cast<double>(done);
}

using sampler::voluntarySwitches;

double processCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s <host|cuda> <none|reached|covered|pingpong|live|levels|raw|bursts> "
                 "[submits] [gap us]\n",
                 argv[0]);
    return 2;
  }
  const baton::BackendKind kind =
      std::strcmp(argv[1], "cuda") == 0 ? baton::BackendKind::Cuda : baton::BackendKind::Host;
  const std::string scenario = argv[2];
  const long submits = argc > 3 ? std::atol(argv[3]) : 200000;
  if (kind == baton::BackendKind::Cuda) makePrimaryContextCurrent();
  if (scenario == "raw") {
    if (std::getenv("SAMPLE") && !sampler::start()) std::fprintf(stderr, "sampler: no timer\n");
    const double ns = rawLive(submits);
    if (std::getenv("SAMPLE")) sampler::stop(std::getenv("SAMPLE"));
    if (ns < 0) {
      std::fprintf(stderr, "raw: no CUDA driver\n");
      return 1;
    }
    std::printf("cuda raw: %ld driver-call pairs, %.1f ns per pair\n", submits, ns);
    return 0;
  }

  baton::UniqueInstance instance;
  CHECK(baton::createInstance(baton::InstanceCreateInfo{}, instance.put()));
  baton::DeviceCreateInfo deviceInfo;
  deviceInfo.queueCount = 2;
  baton::UniqueDevice device;
  CHECK(instance->createDevice(find(*instance, kind), deviceInfo, device.put()));
  baton::Queue q0, q1;
  CHECK(device->getQueue(0, &q0));
  CHECK(device->getQueue(1, &q1));
  baton::UniqueSemaphore s, t;
  baton::SemaphoreCreateInfo info;
  info.debugName = "s";
  CHECK(instance->createSemaphore(info, s.put()));
  info.debugName = "t";
  CHECK(instance->createSemaphore(info, t.put()));

  // The submit infos are built once, as an engine would keep them; only values change.
  baton::SemaphoreValue waitS{*s, 0}, signalS{*s, 0}, waitT{*t, 0}, signalT{*t, 0};
  baton::SubmitInfo onlySignalS{{}, {}, signalS};
  baton::SubmitInfo waitSsignalT{waitS, {}, signalT};
  baton::SubmitInfo waitTsignalS{waitT, {}, signalS};

  // Batches of kBatch submissions, each followed by Device::waitIdle outside the timing, as
  // bench/cuda's benchSubmit does: the queues' threads then finish the work and recycle events,
  // timepoints and submissions between batches, so that what is counted does not depend on how
  // the threads were scheduled (under valgrind they run one at a time, and a completion thread
  // could otherwise starve for the whole run).
  constexpr long kBatch = 64;
  long done = 0;
  double ns = 0;
  // One round trip of the ping-pong: queue 0 waits for queue 1's last signal and signals s,
  // queue 1 waits for s and signals t. Returns the submissions made.
  auto roundTrip = [&] {
    waitT.value = signalT.value;
    ++signalS.value;
    CHECK(q0.submit(waitTsignalS));
    waitS.value = signalS.value;
    ++signalT.value;
    CHECK(q1.submit(waitSsignalT));
    return 2;
  };
  auto timed = [&](auto&& submitOne) {
    while (done < submits) {
      auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < kBatch && done < submits; ++i) done += submitOne();
      ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      CHECK(device->waitIdle());
    }
  };
  // SAMPLE_THREAD=<name>: sample that thread instead (e.g. baton-issue, made with the device).
  if (std::getenv("SAMPLE")) {
    const char* name = std::getenv("SAMPLE_THREAD");
    if (!(name ? sampler::startNamed(name) : sampler::start()))
      std::fprintf(stderr, "sampler: no timer\n");
  }
  if (scenario == "none") {
    baton::SubmitInfo nothing;
    timed([&] {
      CHECK(q1.submit(nothing));
      return 1;
    });
  } else if (scenario == "reached") {
    CHECK(s->signal(1));
    signalS.value = waitS.value = 1;
    timed([&] {
      ++signalT.value;
      CHECK(q1.submit(waitSsignalT));
      return 1;
    });
  } else if (scenario == "covered") {
    timed([&] {
      ++signalS.value;
      CHECK(q0.submit(onlySignalS));
      waitS.value = signalS.value;
      ++signalT.value;
      CHECK(q1.submit(waitSsignalT));
      return 2;
    });
  } else if (scenario == "pingpong") {
    timed(roundTrip);
  } else if (scenario == "live") {
    // As pingpong, but timed end to end in rounds of 1000 round trips, each until the host sees
    // the last signal, with no waitIdle between batches: the issuing thread's pace, as in
    // bench/cuda's live ping-pong.
    while (done < submits) {
      auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < 1000 && done < submits; ++i) done += roundTrip();
      CHECK(t->wait(signalT.value, UINT64_MAX));
      ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
  } else if (scenario == "levels") {
    constexpr int kRounds = 40;
    std::vector<double> pace, loop, trail;
    for (int r = 0; r < kRounds; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < 1000; ++i) done += roundTrip();
      const auto t1 = std::chrono::steady_clock::now();
      CHECK(t->wait(signalT.value, UINT64_MAX));
      const auto t2 = std::chrono::steady_clock::now();
      pace.push_back(std::chrono::duration<double, std::nano>(t2 - t0).count() / 2000);
      loop.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / 2000);
      trail.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
      ns += std::chrono::duration<double, std::nano>(t2 - t0).count();
    }
    for (std::vector<double>* v : {&pace, &loop, &trail}) std::sort(v->begin(), v->end());
    auto at = [](const std::vector<double>& v, int p) { return v[v.size() * p / 100]; };
    std::printf(
        "levels: %d rounds of 1000 round trips; pace p10 %.0f, median %.0f, p90 %.0f ns per "
        "submission; submitting loop median %.0f ns; issuing thread behind at the loop's end: "
        "median %.0f us (p90 %.0f)\n",
        kRounds, at(pace, 10), at(pace, 50), at(pace, 90), at(loop, 50), at(trail, 50),
        at(trail, 90));
  } else if (scenario == "bursts") {
    constexpr long kBurst = 64;
    const long gapUs = argc > 4 ? std::atol(argv[4]) : 300;
    std::vector<uint64_t> ends;  // t's value at the end of each burst
    sampler::ThreadCpu byThread;
    byThread.begin();
    const double cpu0 = processCpuNs();
    const auto start = std::chrono::steady_clock::now();
    while (done < submits) {
      auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < kBurst && done < submits; i += 2) {
        ++signalS.value;
        CHECK(q0.submit(onlySignalS));
        waitS.value = signalS.value;
        ++signalT.value;
        CHECK(q1.submit(waitSsignalT));
        done += 2;
      }
      ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      ends.push_back(signalT.value);
      if (ends.size() >= 3) CHECK(t->wait(ends[ends.size() - 3], UINT64_MAX));
      std::this_thread::sleep_for(std::chrono::microseconds(gapUs));
    }
    const double cpu = processCpuNs() - cpu0;
    const double wall =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    byThread.end();
    const double bursts = static_cast<double>(ends.size());
    std::printf("bursts: %zu of %ld submits, %.1f us apart; per burst, loop only:\n", ends.size(),
                kBurst, wall / bursts / 1e3);
    std::printf("  CPU us (voluntary switches) by thread: %s\n",
                byThread.text(bursts, true).c_str());
    std::printf("  process CPU %.0f ns\n", cpu / bursts);
  } else {
    std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }
  if (std::getenv("SAMPLE")) sampler::stop(std::getenv("SAMPLE"));
  // Each thread's CPU time per submission: the thread whose time is the wall time is the one
  // that sets the pace (the others wait part of the time).
  std::printf("CPU ns per submit by thread:");
  for (const sampler::Thread& t : sampler::threads())
    std::printf(" %s %.0f", t.name.c_str(), sampler::cpuNs(t.tid) / static_cast<double>(done));
  std::printf("\n");
  // Sleeps per 1000 submissions: for baton's threads, about the wake-ups that others paid for.
  std::printf("voluntary switches per 1000 submits by thread:");
  for (const sampler::Thread& t : sampler::threads())
    std::printf(" %s %.1f", t.name.c_str(),
                1e3 * static_cast<double>(voluntarySwitches(t.tid)) / static_cast<double>(done));
  std::printf("\n");
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double cpuNs = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
                       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
  std::printf("%s %s: %ld submits, %.1f ns per submit() call, process CPU %.1f ns per submit\n",
              argv[1], scenario.c_str(), done, ns / static_cast<double>(done),
              cpuNs / static_cast<double>(done));
  CHECK(device->waitIdle());
  return 0;
}
