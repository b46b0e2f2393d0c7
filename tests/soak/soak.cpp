// baton-soak: sustained load on one device for a fixed time, with the process's resources sampled
// at fixed intervals and checked flat (docs/testing.md, 'Reliability').
//
// The load, all at once until the time is up:
//   - one worker thread per queue of the device but the last: each submits batches that wait on
//     a host gate it signals right after the submit (wait-before-signal on every batch) and on
//     what the next worker's queue last signalled (a cross-queue edge), and signal the worker's
//     own timeline 1, 2, 3, ...; every 8th batch records a host call, every 16th a native
//     callback, every 32nd is a queue-ordered alloca/dealloca pair (where the device has it);
//     a worker keeps at most 64 batches in flight, waiting on its own timeline with a timeout;
//   - a host-backend queue whose batches wait on worker 0's timeline (an edge between backends);
//   - with a Vulkan device (unless --no-vulkan): a ping-pong on one shared timeline through the
//     device's last queue, both directions every step: the baton batch waits for the value Vulkan
//     signals next (Vulkan -> device, submitted first, so a wait-before-signal), Vulkan waits for
//     the value the baton batch signals (device -> Vulkan). The mode is Auto, which bridges
//     semaphores on every device (baton/vulkan.hpp says why), on the H100 too.
// Every sample prints resident memory, open fds, threads and, for CUDA/HIP, the stream machinery's
// event pool and in-flight counts (baton::stream::stats). After the first sample (warm-up: pools
// and caches reach their working size), the run must stay flat: fds and threads unchanged, the
// event pool and resident memory within a small allowance (the pool may pass it only while it
// stays under what the in-flight limits allow, a peak of concurrency on a loaded machine). At the
// end every timeline must reach its exact final value, every host call and native callback must
// have run once per batch that recorded it, and no call may have failed; otherwise the exit code
// is 1.
//
//   baton-soak [--seconds N (600)] [--sample S (60)] [--warmup W (S)]
//              [--backend auto|host|cuda|hip] [--no-vulkan]
// The flatness checks compare every sample from the first one at or after W seconds on.
// Exit codes: 0 flat and correct, 1 a failure (printed), 77 the requested backend or device is
// absent (printed reason); 1 instead where BATON_TEST_REQUIRE_BACKENDS names that backend.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/baton.hpp"
#include "interop/process_counts.hpp"
#if BATON_SOAK_STREAM_STATS
#include "stream_backend.hpp"
#endif
#if BATON_SOAK_VULKAN
#include "interop/vulkan_context.hpp"
#endif

namespace {

using baton::Result;
using Clock = std::chrono::steady_clock;
constexpr uint64_t kSecondNs = 1000000000ull;
constexpr uint64_t kHangNs = 20 * kSecondNs;  // a wait this long is a hang, not load
constexpr uint64_t kInFlight = 64;            // batches a worker keeps in flight
// Under ASan or TSan the allocator holds freed memory back (quarantine, shadow), so resident
// memory grows by design; the other checks still apply.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

struct Options {
  double seconds = 600;
  double sampleSeconds = 60;
  double warmupSeconds = -1;  // default: one sample interval
  std::string backend = "auto";
  bool vulkan = true;
};

// The first failure of any thread, and how many there were.
class Failures {
 public:
  void record(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (count_++ == 0) first_ = what;
  }
  void check(Result r, const char* what) {
    if (r != Result::Success)
      record(std::string(what) + ": " + baton::resultName(r) + ": " + baton::lastErrorMessage());
  }
  uint64_t count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }
  std::string first() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return first_;
  }

 private:
  mutable std::mutex mutex_;
  uint64_t count_ = 0;
  std::string first_;
};

Result countHostCall(void* counter) {
  static_cast<std::atomic<uint64_t>*>(counter)->fetch_add(1, std::memory_order_relaxed);
  return Result::Success;
}
Result countNative(const baton::NativeQueue&, void* counter) {
  static_cast<std::atomic<uint64_t>*>(counter)->fetch_add(1, std::memory_order_relaxed);
  return Result::Success;
}

long residentKiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

double processCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Sample {
  double seconds = 0;
  uint64_t batches = 0;
  uint64_t interopSteps = 0;
  long rssKiB = 0;
  size_t fds = 0;
  size_t threads = 0;
  uint64_t eventsCreated = 0, eventsInUse = 0, timepointsLive = 0, recordsInFlight = 0;
  double cpuSeconds = 0;
};

struct Worker {
  baton::Queue queue;
  baton::UniqueSemaphore timeline;  // signalled by this worker's batches: 1, 2, 3, ...
  baton::UniqueSemaphore gate;      // signalled by this worker from the host after each submit
  baton::UniqueCommandBuffer hostCall, native;
  std::atomic<uint64_t> submitted{0};  // last timeline value whose submit returned
  std::atomic<uint64_t> hostCalls{0}, natives{0};
  uint64_t hostCallBatches = 0, nativeBatches = 0, allocas = 0;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--seconds")
      o->seconds = std::atof(value());
    else if (a == "--sample")
      o->sampleSeconds = std::atof(value());
    else if (a == "--warmup")
      o->warmupSeconds = std::atof(value());
    else if (a == "--backend")
      o->backend = value();
    else if (a == "--no-vulkan")
      o->vulkan = false;
    else
      return false;
  }
  if (o->warmupSeconds < 0) o->warmupSeconds = o->sampleSeconds;
  return o->seconds > 0 && o->sampleSeconds > 0 && o->sampleSeconds <= o->seconds &&
         o->warmupSeconds < o->seconds;
}

baton::UniqueCommandBuffer recorded(baton::Device device, Failures& failures,
                                    Result (*record)(baton::CommandBuffer, void*), void* arg) {
  baton::UniqueCommandBuffer cb;
  failures.check(device.createCommandBuffer(cb.put()), "createCommandBuffer");
  if (!cb) return cb;
  failures.check(cb->begin(), "begin");
  failures.check(record(*cb, arg), "record");
  failures.check(cb->end(), "end");
  return cb;
}

// Whether BATON_TEST_REQUIRE_BACKENDS (backend names, comma-separated: "hip,cuda") names
// `backend`, as the test suites read it (tests/backend_fixture.hpp): the registrations on the
// emulated driver set it, so that a driver that stops loading fails the soak instead of skipping
// it.
bool required(const std::string& backend) {
  const char* list = std::getenv("BATON_TEST_REQUIRE_BACKENDS");
  if (!list) return false;
  const std::string names = std::string(",") + list + ",";
  return names.find("," + backend + ",") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  Options opt;
  if (!parse(argc, argv, &opt)) {
    std::fprintf(stderr,
                 "usage: baton-soak [--seconds N] [--sample S] [--backend auto|host|cuda|hip] "
                 "[--no-vulkan]\n");
    return 2;
  }

  baton::UniqueInstance instance;
  if (baton::createInstance({}, instance.put()) != Result::Success) {
    std::printf("createInstance failed: %s\n", baton::lastErrorMessage());
    return 1;
  }
  uint32_t count = 0;
  (void)instance->enumeratePhysicalDevices(&count, nullptr);
  std::vector<baton::PhysicalDevice> physicals(count);
  (void)instance->enumeratePhysicalDevices(&count, physicals.data());

#if BATON_SOAK_VULKAN
  std::unique_ptr<baton::test::VulkanContext> vk;
  if (opt.vulkan) {
    vk = std::make_unique<baton::test::VulkanContext>();
    if (!vk->ok()) {
      std::printf("vulkan: no usable device; the soak runs without interop\n");
      vk.reset();
    }
  }
  baton::PhysicalDevice vulkanMatch;
  if (vk &&
      baton::matchVulkanPhysicalDevice(*instance, vk->view(), &vulkanMatch) != Result::Success)
    vulkanMatch = {};
#endif

  // The device: the requested backend, or the best present (CUDA, HIP, host); with a Vulkan
  // device, the baton device of the same GPU where there is one.
  baton::PhysicalDevice physical;
  baton::PhysicalDeviceProperties props;
  const char* order[] = {"cuda", "hip", "host"};
  for (const char* name : order) {
    if (opt.backend != "auto" && opt.backend != name) continue;
    for (baton::PhysicalDevice p : physicals) {
      baton::PhysicalDeviceProperties pp;
      if (p.getProperties(&pp) != Result::Success ||
          std::strcmp(baton::backendName(pp.backend), name))
        continue;
#if BATON_SOAK_VULKAN
      if (physical && vulkanMatch != p) continue;  // keep looking for the Vulkan GPU
#else
      if (physical) continue;
#endif
      physical = p;
      props = pp;
    }
    if (physical) break;
  }
  if (!physical) {
    // Why the backend is absent, in the driver's words.
    std::string why;
    baton::BackendInfo infos[baton::kBackendKindCount];
    uint32_t infoCount = baton::kBackendKindCount;
    if (instance->enumerateBackends(&infoCount, infos) == Result::Success)
      for (uint32_t i = 0; i < infoCount; ++i)
        if (opt.backend == baton::backendName(infos[i].kind) && infos[i].reason[0])
          why = std::string(": ") + infos[i].reason;
    if (required(opt.backend)) {
      std::printf(
          "FAIL: no %s device%s (required here by BATON_TEST_REQUIRE_BACKENDS: it must "
          "not skip)\n",
          opt.backend.c_str(), why.c_str());
      return 1;
    }
    std::printf("skip: no %s device%s (baton-info lists the backends and why)\n",
                opt.backend.c_str(), why.c_str());
    return 77;
  }
  baton::PhysicalDevice hostPhysical;
  for (baton::PhysicalDevice p : physicals) {
    baton::PhysicalDeviceProperties pp;
    if (p.getProperties(&pp) == Result::Success && pp.backend == baton::BackendKind::Host)
      hostPhysical = p;
  }

  Failures failures;
  baton::DeviceCreateInfo deviceInfo;
  deviceInfo.queueCount = std::min<uint32_t>(props.maxQueues, 5);
  baton::UniqueDevice device, hostDevice;
  failures.check(instance->createDevice(physical, deviceInfo, device.put()), "createDevice");
  if (hostPhysical)
    failures.check(instance->createDevice(hostPhysical, {}, hostDevice.put()), "createDevice host");
  if (failures.count()) {
    std::printf("FAILED: %s\n", failures.first().c_str());
    return 1;
  }
  const bool useVulkan =
#if BATON_SOAK_VULKAN
      vk != nullptr && deviceInfo.queueCount >= 2;
#else
      false;
#endif
  const uint32_t workerCount = std::max<uint32_t>(1, deviceInfo.queueCount - (useVulkan ? 1 : 0));
  const bool alloca = (props.capabilities & baton::kCapabilityStreamOrderedAlloc) != 0;

  std::vector<std::unique_ptr<Worker>> workers;
  for (uint32_t t = 0; t < workerCount; ++t) {
    auto w = std::make_unique<Worker>();
    failures.check(device->getQueue(t, &w->queue), "getQueue");
    failures.check(instance->createSemaphore({}, w->timeline.put()), "createSemaphore");
    failures.check(instance->createSemaphore({}, w->gate.put()), "createSemaphore");
    w->hostCall = recorded(
        *device, failures,
        [](baton::CommandBuffer c, void* n) { return c.hostCall(countHostCall, n); },
        &w->hostCalls);
    w->native = recorded(
        *device, failures, [](baton::CommandBuffer c, void* n) { return c.native(countNative, n); },
        &w->natives);
    workers.push_back(std::move(w));
  }

  std::printf("soak: %s device \"%s\", %u worker queues, %s, host-backend edge %s, alloca %s\n",
              baton::backendName(props.backend), props.name, workerCount,
              useVulkan ? "Vulkan ping-pong on the last queue" : "no Vulkan",
              hostDevice ? "on" : "off", alloca ? "on" : "off (no stream-ordered allocation)");
  std::printf("soak: %.0f s, a sample every %.0f s, flat from %.0f s on\n", opt.seconds,
              opt.sampleSeconds, opt.warmupSeconds);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> batches{0};

  auto work = [&](uint32_t t) {
    Worker& me = *workers[t];
    Worker& next = *workers[(t + 1) % workerCount];
    uint64_t i = 0;
    baton::Buffer pending;  // an alloca whose dealloca goes with the next batch
    while (!stop.load(std::memory_order_relaxed) && failures.count() == 0) {
      ++i;
      if (i > kInFlight) {
        Result r = me.timeline->wait(i - kInFlight, kHangNs);
        if (r != Result::Success) {
          failures.check(r, "worker in-flight wait");
          break;
        }
      }
      const uint64_t cross = next.submitted.load(std::memory_order_acquire);
      baton::SemaphoreValue waits[2] = {{*me.gate, i}, {*next.timeline, cross}};
      baton::SemaphoreValue signal{*me.timeline, i};
      baton::SubmitInfo info;
      info.waits = {waits, cross && &next != &me ? 2u : 1u};
      info.signals = {&signal, 1};
      Result r;
      if (alloca && i % 32 == 0) {
        // alloca ordered after the waits, signalling i; dealloca with the next batch
        baton::BufferCreateInfo b;
        b.size = 4096;
        r = me.queue.allocaBuffer(info.waits, b, info.signals, &pending);
        me.allocas++;
      } else if (pending) {
        r = me.queue.deallocaBuffer(info.waits, pending, info.signals);
        pending = {};
      } else {
        baton::CommandBuffer cb;
        if (i % 8 == 0) {
          cb = *me.hostCall;
          me.hostCallBatches++;
        } else if (i % 16 == 5) {
          cb = *me.native;
          me.nativeBatches++;
        }
        info.commandBuffers = {&cb, cb ? 1u : 0u};
        r = me.queue.submit({&info, 1});
      }
      if (r != Result::Success) {
        failures.check(r, "worker submit");
        break;
      }
      me.submitted.store(i, std::memory_order_release);
      failures.check(me.gate->signal(i), "gate signal");
      batches.fetch_add(1, std::memory_order_relaxed);
    }
    if (pending) failures.check(me.queue.deallocaBuffer({}, pending, {}), "final dealloca");
  };

  // The host-backend queue: batches that wait for worker 0's latest value (a cross-backend edge).
  baton::UniqueSemaphore hostTimeline;
  std::atomic<uint64_t> hostSubmitted{0};
  auto hostEdge = [&]() {
    baton::Queue q;
    failures.check(hostDevice->getQueue(0, &q), "host getQueue");
    failures.check(instance->createSemaphore({}, hostTimeline.put()), "createSemaphore");
    uint64_t j = 0;
    while (!stop.load(std::memory_order_relaxed) && failures.count() == 0) {
      ++j;
      if (j > kInFlight && hostTimeline->wait(j - kInFlight, kHangNs) != Result::Success) {
        failures.check(Result::Timeout, "host-edge in-flight wait");
        break;
      }
      baton::SemaphoreValue wait{*workers[0]->timeline,
                                 workers[0]->submitted.load(std::memory_order_acquire)};
      baton::SemaphoreValue signal{*hostTimeline, j};
      baton::SubmitInfo info;
      info.waits = {&wait, wait.value ? 1u : 0u};
      info.signals = {&signal, 1};
      Result r = q.submit({&info, 1});
      if (r != Result::Success) {
        failures.check(r, "host-edge submit");
        break;
      }
      hostSubmitted.store(j);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  };

  std::atomic<uint64_t> interopSteps{0};
  std::string interopMode = "none";
#if BATON_SOAK_VULKAN
  baton::VulkanTimeline shared;
  if (useVulkan) {
    baton::VulkanTimelineCreateInfo info;
    info.vulkan = vk->view();
    info.device = *device;
    info.debugName = "soak shared";
    failures.check(baton::createVulkanTimeline(*instance, info, &shared), "createVulkanTimeline");
    interopMode = shared.mode == baton::InteropMode::Native ? "native" : "bridged";
    std::printf("soak: Vulkan device \"%s\", shared timeline %s\n", vk->name.c_str(),
                interopMode.c_str());
  }
  auto interop = [&]() {
    baton::Queue q;
    failures.check(device->getQueue(deviceInfo.queueCount - 1, &q), "getQueue");
    // Step k: Vulkan waits 2k (baton's), signals 2k+1; baton waits 2k+1, signals 2k+2. The
    // baton batch goes first: its wait is for a value Vulkan has not been asked for yet.
    for (uint64_t k = 0; !stop.load(std::memory_order_relaxed) && failures.count() == 0; ++k) {
      baton::SemaphoreValue wait{shared.baton, 2 * k + 1}, signal{shared.baton, 2 * k + 2};
      baton::SubmitInfo info;
      info.waits = {&wait, 1};
      info.signals = {&signal, 1};
      Result r = q.submit({&info, 1});
      if (r != Result::Success) {
        failures.check(r, "interop submit");
        break;
      }
      if (vk->submit({{shared.vulkan, 2 * k}}, VK_NULL_HANDLE, {{shared.vulkan, 2 * k + 1}}) !=
          VK_SUCCESS) {
        failures.record("vkQueueSubmit failed");
        break;
      }
      // Both directions every step: the host waits on the Vulkan side for baton's value.
      if (vk->wait(shared.vulkan, 2 * k + 2, kHangNs) != VK_SUCCESS) {
        failures.record("interop step " + std::to_string(k) + ": Vulkan never saw value " +
                        std::to_string(2 * k + 2));
        break;
      }
      interopSteps.store(k + 1, std::memory_order_relaxed);
    }
  };
#endif

  std::vector<Sample> samples;
  const auto start = Clock::now();
  auto sample = [&]() {
    Sample s;
    s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    s.batches = batches.load();
    s.interopSteps = interopSteps.load();
    s.rssKiB = residentKiB();
    s.fds = baton::test::openFds();
    s.threads = baton::test::threadCount();
#if BATON_SOAK_STREAM_STATS
    baton::stream::Stats st = baton::stream::stats();
    s.eventsCreated = st.eventsCreated;
    s.eventsInUse = st.eventsInUse;
    s.timepointsLive = st.timepointsLive;
    s.recordsInFlight = st.recordsInFlight;
#endif
    s.cpuSeconds = processCpuSeconds();
    samples.push_back(s);
    std::printf("%8.1f s %12" PRIu64 " batches %9" PRIu64
                " interop steps  rss %7ld KiB  fds %4zu  threads %3zu  events %5" PRIu64
                " (in use %4" PRIu64 ")  timepoints %5" PRIu64 "  in flight %4" PRIu64
                "  cpu %.1f s\n",
                s.seconds, s.batches, s.interopSteps, s.rssKiB, s.fds, s.threads, s.eventsCreated,
                s.eventsInUse, s.timepointsLive, s.recordsInFlight, s.cpuSeconds);
  };

  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < workerCount; ++t) threads.emplace_back(work, t);
  if (hostDevice) threads.emplace_back(hostEdge);
#if BATON_SOAK_VULKAN
  if (useVulkan && failures.count() == 0) threads.emplace_back(interop);
#endif

  const int sampleCount = static_cast<int>(opt.seconds / opt.sampleSeconds + 0.5);
  for (int n = 1; n <= sampleCount && failures.count() == 0; ++n) {
    const auto due = start + std::chrono::duration<double>(n * opt.sampleSeconds);
    while (Clock::now() < due && failures.count() == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (failures.count() == 0) sample();
  }
  stop = true;
  for (std::thread& t : threads) t.join();

  // Drain and check the model: every timeline reaches exactly the value its last submit signalled.
  bool ok = failures.count() == 0;
  uint64_t hostCallsExpected = 0, hostCallsRan = 0, nativesExpected = 0, nativesRan = 0,
           allocas = 0;
  for (auto& w : workers) {
    const uint64_t last = w->submitted.load();
    failures.check(w->timeline->wait(last, kHangNs), "final wait");
    uint64_t value = 0;
    failures.check(w->timeline->getValue(&value), "getValue");
    if (value != last)
      failures.record("a worker timeline ended at " + std::to_string(value) + ", not " +
                      std::to_string(last));
    failures.check(w->queue.waitIdle(kHangNs), "waitIdle");
    hostCallsExpected += w->hostCallBatches;
    hostCallsRan += w->hostCalls.load();
    nativesExpected += w->nativeBatches;
    nativesRan += w->natives.load();
    allocas += w->allocas;
  }
  if (hostTimeline) failures.check(hostTimeline->wait(hostSubmitted.load(), kHangNs), "host wait");
  if (hostCallsRan != hostCallsExpected || nativesRan != nativesExpected)
    failures.record("host calls ran " + std::to_string(hostCallsRan) + " of " +
                    std::to_string(hostCallsExpected) + ", native callbacks " +
                    std::to_string(nativesRan) + " of " + std::to_string(nativesExpected));
  sample();  // after the drain: nothing in flight
#if BATON_SOAK_VULKAN
  if (useVulkan) {
    (void)vkQueueWaitIdle(vk->queue);
    failures.check(device->waitIdle(kHangNs), "device waitIdle");
    failures.check(baton::destroyVulkanTimeline(vk->view(), shared), "destroyVulkanTimeline");
  }
#endif
  ok = ok && failures.count() == 0;

  // Flat: from the first sample (warm-up done) to the last one under load.
  std::vector<std::string> growth;
  size_t base = 0;  // the first sample after the warm-up
  while (base + 1 < samples.size() && samples[base].seconds + 0.05 < opt.warmupSeconds) ++base;
  if (samples.size() >= base + 3) {
    const Sample& first = samples[base];
    const Sample& last = samples[samples.size() - 2];  // the final one is after the drain
    size_t fdsMin = first.fds, fdsMax = first.fds, thrMin = first.threads, thrMax = first.threads;
    for (size_t i = base; i + 1 < samples.size(); ++i) {
      fdsMin = std::min(fdsMin, samples[i].fds);
      fdsMax = std::max(fdsMax, samples[i].fds);
      thrMin = std::min(thrMin, samples[i].threads);
      thrMax = std::max(thrMax, samples[i].threads);
    }
    if (fdsMax != fdsMin)
      growth.push_back("open fds ranged " + std::to_string(fdsMin) + ".." + std::to_string(fdsMax));
    if (thrMax != thrMin)
      growth.push_back("threads ranged " + std::to_string(thrMin) + ".." + std::to_string(thrMax));
    constexpr long kRssAllowanceKiB = 4096;
    if (kSanitized)
      std::printf(
          "resident memory not checked: a sanitizer build (its allocator keeps freed "
          "memory in quarantine)\n");
    else if (last.rssKiB > first.rssKiB + kRssAllowanceKiB)
      growth.push_back("resident memory grew " + std::to_string(last.rssKiB - first.rssKiB) +
                       " KiB (allowance " + std::to_string(kRssAllowanceKiB) + ")");
    // Events: a leak grows the pool without bound; reaching a new peak of concurrency (a loaded
    // machine can delay completions for a while) grows it up to what the in-flight limits allow.
    // Growth past the allowance fails only beyond that bound.
    constexpr uint64_t kEventAllowance = 32;
    const uint64_t eventBound = (workerCount + 1) * (kInFlight + 16) + 64;
    if (last.eventsCreated > first.eventsCreated + kEventAllowance &&
        last.eventsCreated > eventBound)
      growth.push_back("the event pool grew from " + std::to_string(first.eventsCreated) + " to " +
                       std::to_string(last.eventsCreated) + " events (bound " +
                       std::to_string(eventBound) + ")");
    std::printf(
        "flat from %.0f s to %.0f s: rss %+ld KiB, fds %zu..%zu, threads %zu..%zu, events "
        "%+" PRId64 "\n",
        first.seconds, last.seconds, last.rssKiB - first.rssKiB, fdsMin, fdsMax, thrMin, thrMax,
        static_cast<int64_t>(last.eventsCreated - first.eventsCreated));
  } else {
    growth.push_back("fewer than 2 samples under load after the warm-up: nothing to compare");
  }
  const Sample& end = samples.back();
  std::printf("soak: %" PRIu64 " batches (%.0f/s), %" PRIu64 " interop round trips (%s), %" PRIu64
              " host calls, %" PRIu64 " native callbacks, %" PRIu64 " allocas; %.2f CPU s per s\n",
              end.batches, end.batches / end.seconds, end.interopSteps, interopMode.c_str(),
              hostCallsRan, nativesRan, allocas, end.cpuSeconds / end.seconds);
  for (const std::string& g : growth) std::printf("NOT FLAT: %s\n", g.c_str());
  if (failures.count())
    std::printf("FAILED: %" PRIu64 " failures; the first: %s\n", failures.count(),
                failures.first().c_str());
  workers.clear();
  hostTimeline.reset();
  if (!ok || !growth.empty()) return 1;
  std::printf("soak passed: flat and correct\n");
  return 0;
}
