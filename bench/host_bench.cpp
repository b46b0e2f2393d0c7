// host_bench: host-backend benchmarks, each next to a plain C++ baseline measured in the same run.
//
//   WakeLatency/PingPong/*    round trip of two hand-offs between two threads: baton semaphores
//                             vs std::mutex + std::condition_variable
//   WakeLatency/FromSleep/*   signal -> return of a waiter that is surely asleep (the signaller
//                             waits 30 µs first), one way, same two contenders
//                             (* = Free, TwoCpus, OneCpu: where the two threads run; see Placement)
//   WaitAny/1024/Signalled    Instance::waitSemaphores(ANY) over 1024 semaphores, one (the last)
//                             already reached: the cost of the call
//   WaitAny/1024/WhileWaiting the same wait asleep; another thread reaches one of them: signal ->
//                             return
//   Submit/Ready, /Held       empty submissions (one wait, one signal, no command buffers) on a
//                             host queue: per submit() call, and end to end (submitted and
//                             executed) against a mutex + deque + condvar worker queue; Held waits
//                             on a value reached only after all were submitted
//
// Every iteration is timed on its own, so medians (p50) are over single operations, not over
// repetition means. After Google Benchmark's own report, a table gives p50/p99 of each and the
// ratio baton / baseline. --quick runs a tenth of the iterations (a smoke run). All other flags
// are Google Benchmark's.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <baton/baton.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double nsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

// Iteration counts are fixed (no estimation runs), so every sample is from a measured run and
// samples pool cleanly across repetitions.
int64_t gScale = 1;  // divisor: 10 with --quick
int64_t iters(int64_t n) { return std::max<int64_t>(n / gScale, 10); }

baton::Instance gInstance;
baton::Device gDevice;

// Samples of single operations (ns), pooled over the repetitions of one benchmark.
std::map<std::string, std::vector<double>> gSamples;
// End-to-end ns per submission (submit + execute), one figure per repetition.
std::map<std::string, std::vector<double>> gEndToEnd;

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

void publish(benchmark::State& state, const std::string& name, const std::vector<double>& ns) {
  std::vector<double>& pool = gSamples[name];
  pool.insert(pool.end(), ns.begin(), ns.end());
  state.counters["p50_us"] = percentile(ns, 0.5) / 1000.0;
  state.counters["p99_us"] = percentile(ns, 0.99) / 1000.0;
}

bool ok(benchmark::State& state, baton::Result r, const char* what) {
  if (!baton::isError(r)) return true;
  static thread_local std::string message;
  message = std::string(what) + ": " + baton::resultName(r) + ": " + baton::lastErrorMessage();
  state.SkipWithError(message.c_str());
  return false;
}

baton::UniqueSemaphore makeSemaphore(uint64_t initial = 0) {
  baton::SemaphoreCreateInfo info;
  info.initialValue = initial;
  baton::UniqueSemaphore s;
  if (baton::isError(gInstance.createSemaphore(info, s.put()))) {
    std::fprintf(stderr, "createSemaphore: %s\n", baton::lastErrorMessage());
    std::exit(1);
  }
  return s;
}

void spinFor(std::chrono::nanoseconds d) {
  const Clock::time_point end = Clock::now() + d;
  while (Clock::now() < end) {
  }
}

// Where the two threads of a wake-latency benchmark run. The hand-off cost depends on it more
// than on anything baton does (measured on a 2-vCPU VM: a condition-variable round trip took
// 5 µs when the scheduler put both threads on one CPU and 17 µs when it put them on two, and
// spinning waiters win big on two CPUs but lose on one), and an unpinned run lands on either at
// the scheduler's whim. So each is measured pinned both ways, plus unpinned.
enum class Placement { Free, TwoCpus, OneCpu };
const char* placementName(Placement p) {
  return p == Placement::TwoCpus ? "TwoCpus" : p == Placement::OneCpu ? "OneCpu" : "Free";
}
std::vector<int> gCpus;  // the CPUs this process may run on
cpu_set_t gAllowed;

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// Pins the benchmark thread for its lifetime (then restores it); responder() pins the other.
class Pinning {
 public:
  explicit Pinning(Placement p) : placement_(p) {
    if (placement_ != Placement::Free) pinTo(gCpus[0]);
  }
  ~Pinning() {
    if (placement_ != Placement::Free)
      pthread_setaffinity_np(pthread_self(), sizeof gAllowed, &gAllowed);
  }
  void responder() const {
    if (placement_ == Placement::TwoCpus) pinTo(gCpus[1]);
    if (placement_ == Placement::OneCpu) pinTo(gCpus[0]);
  }

 private:
  Placement placement_;
};

// How long the FromSleep signallers wait before signalling: longer than any spin phase (baton
// spins for a few µs before it sleeps), so that the wake-up from the kernel is what is measured.
constexpr std::chrono::microseconds kSleepDelay{30};

// ---- WakeLatency/PingPong --------------------------------------------------------------------

void pingPongBaton(benchmark::State& state, const std::string& name, Placement placement) {
  Pinning pinning(placement);
  baton::UniqueSemaphore ping = makeSemaphore(), pong = makeSemaphore();
  std::atomic<bool> stop{false};
  std::thread responder([&] {
    pinning.responder();
    for (uint64_t v = 1;; ++v) {
      if (baton::isError(ping->wait(v, baton::kWaitForever)) || stop.load()) return;
      if (baton::isError(pong->signal(v))) return;
    }
  });
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    Clock::time_point t0 = Clock::now();
    if (!ok(state, ping->signal(v), "signal")) break;
    if (!ok(state, pong->wait(v, baton::kWaitForever), "wait")) break;
    ns.push_back(nsSince(t0));
  }
  stop.store(true);
  (void)ping->signal(v + 1);
  responder.join();
  publish(state, name, ns);
}

// The baseline: what one writes without baton — a counter per direction under one mutex, a
// condition variable each, notify after unlock (so the woken thread does not block on the mutex).
void pingPongCondvar(benchmark::State& state, const std::string& name, Placement placement) {
  Pinning pinning(placement);
  std::mutex m;
  std::condition_variable cvPing, cvPong;
  uint64_t ping = 0, pong = 0;
  bool stop = false;
  std::thread responder([&] {
    pinning.responder();
    std::unique_lock<std::mutex> lock(m);
    for (uint64_t v = 1;; ++v) {
      cvPing.wait(lock, [&] { return ping >= v || stop; });
      if (stop) return;
      pong = v;
      lock.unlock();
      cvPong.notify_one();
      lock.lock();
    }
  });
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    Clock::time_point t0 = Clock::now();
    {
      std::lock_guard<std::mutex> lock(m);
      ping = v;
    }
    cvPing.notify_one();
    std::unique_lock<std::mutex> lock(m);
    cvPong.wait(lock, [&] { return pong >= v; });
    lock.unlock();
    ns.push_back(nsSince(t0));
  }
  {
    std::lock_guard<std::mutex> lock(m);
    stop = true;
  }
  cvPing.notify_one();
  responder.join();
  publish(state, name, ns);
}

// ---- WakeLatency/FromSleep -------------------------------------------------------------------
// The responder waits for `go`; the benchmark thread waits kSleepDelay, stamps the time and
// signals; the responder measures signal -> wake and acknowledges (untimed).

void fromSleepBaton(benchmark::State& state, const std::string& name, Placement placement) {
  Pinning pinning(placement);
  baton::UniqueSemaphore go = makeSemaphore(), ack = makeSemaphore();
  std::atomic<int64_t> signalledAt{0}, wakeNs{0};
  std::atomic<bool> stop{false};
  std::thread responder([&] {
    pinning.responder();
    for (uint64_t v = 1;; ++v) {
      if (baton::isError(go->wait(v, baton::kWaitForever)) || stop.load()) return;
      int64_t now = Clock::now().time_since_epoch().count();
      wakeNs.store(now - signalledAt.load());
      if (baton::isError(ack->signal(v))) return;
    }
  });
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    spinFor(kSleepDelay);
    signalledAt.store(Clock::now().time_since_epoch().count());
    if (!ok(state, go->signal(v), "signal")) break;
    if (!ok(state, ack->wait(v, baton::kWaitForever), "wait")) break;
    double d = static_cast<double>(wakeNs.load());
    ns.push_back(d);
    state.SetIterationTime(d * 1e-9);
  }
  stop.store(true);
  (void)go->signal(v + 1);
  responder.join();
  publish(state, name, ns);
}

void fromSleepCondvar(benchmark::State& state, const std::string& name, Placement placement) {
  Pinning pinning(placement);
  std::mutex m;
  std::condition_variable cvGo, cvAck;
  uint64_t go = 0, ack = 0;
  bool stop = false;
  int64_t signalledAt = 0, wakeNs = 0;
  std::thread responder([&] {
    pinning.responder();
    std::unique_lock<std::mutex> lock(m);
    for (uint64_t v = 1;; ++v) {
      cvGo.wait(lock, [&] { return go >= v || stop; });
      if (stop) return;
      wakeNs = Clock::now().time_since_epoch().count() - signalledAt;
      ack = v;
      lock.unlock();
      cvAck.notify_one();
      lock.lock();
    }
  });
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    spinFor(kSleepDelay);
    {
      std::lock_guard<std::mutex> lock(m);
      signalledAt = Clock::now().time_since_epoch().count();
      go = v;
    }
    cvGo.notify_one();
    std::unique_lock<std::mutex> lock(m);
    cvAck.wait(lock, [&] { return ack >= v; });
    double d = static_cast<double>(wakeNs);
    lock.unlock();
    ns.push_back(d);
    state.SetIterationTime(d * 1e-9);
  }
  {
    std::lock_guard<std::mutex> lock(m);
    stop = true;
  }
  cvGo.notify_one();
  responder.join();
  publish(state, name, ns);
}

// ---- WaitAny ---------------------------------------------------------------------------------

void waitAnySignalled(benchmark::State& state, const std::string& name, size_t count) {
  std::vector<baton::UniqueSemaphore> sems;
  std::vector<baton::SemaphoreValue> waits;
  for (size_t i = 0; i < count; ++i) {
    sems.push_back(makeSemaphore());
    waits.push_back({*sems.back(), 1});
  }
  // The last one: a wait that scans in order finds it last.
  if (!ok(state, sems.back()->signal(1), "signal")) return;
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  for (auto _ : state) {
    Clock::time_point t0 = Clock::now();
    baton::Result r = gInstance.waitSemaphores(waits, baton::WaitMode::Any, baton::kWaitForever);
    ns.push_back(nsSince(t0));
    if (!ok(state, r, "waitSemaphores")) break;
  }
  publish(state, name, ns);
}

// Iteration v waits (ANY) for value v on every semaphore; the signaller reaches v on one of them
// (rotating, so that each is in turn the one) kSleepDelay after the wait began. Every other
// semaphore stays below v, so only that signal can satisfy the wait.
void waitAnyWhileWaiting(benchmark::State& state, const std::string& name, size_t count) {
  std::vector<baton::UniqueSemaphore> sems;
  std::vector<baton::SemaphoreValue> waits;
  for (size_t i = 0; i < count; ++i) {
    sems.push_back(makeSemaphore());
    waits.push_back({*sems.back(), 0});
  }
  std::atomic<uint64_t> armed{0};
  std::atomic<int64_t> signalledAt{0};
  std::atomic<bool> stop{false};
  std::thread signaller([&] {
    for (uint64_t v = 1;; ++v) {
      while (armed.load() < v) {
        if (stop.load()) return;
      }
      spinFor(kSleepDelay);
      signalledAt.store(Clock::now().time_since_epoch().count());
      if (baton::isError(sems[v % sems.size()]->signal(v))) return;
    }
  });
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    for (baton::SemaphoreValue& w : waits) w.value = v;
    armed.store(v);
    baton::Result r = gInstance.waitSemaphores(waits, baton::WaitMode::Any, baton::kWaitForever);
    double d = static_cast<double>(Clock::now().time_since_epoch().count() - signalledAt.load());
    if (!ok(state, r, "waitSemaphores")) break;
    ns.push_back(d);
    state.SetIterationTime(d * 1e-9);
  }
  stop.store(true);
  signaller.join();
  publish(state, name, ns);
}

// ---- Submit ----------------------------------------------------------------------------------

// held = false: the wait is already met when submitted (the common case);
// held = true: every submission waits for a value the host reaches after the loop, so all go
// through the core's deferred path and are released by one signal.
void submitBaton(benchmark::State& state, const std::string& name, bool held) {
  baton::Queue queue;
  if (!ok(state, gDevice.getQueue(0, &queue), "getQueue")) return;
  baton::UniqueSemaphore gate = makeSemaphore(held ? 0 : 1), timeline = makeSemaphore();
  // info refers to `signal`, so raising signal.value gives each submission the next value.
  baton::SemaphoreValue wait{*gate, 1}, signal{*timeline, 0};
  baton::SubmitInfo info{wait, {}, signal};
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  Clock::time_point start = Clock::now();
  for (auto _ : state) {
    ++signal.value;
    Clock::time_point t0 = Clock::now();
    baton::Result r = queue.submit(info);
    ns.push_back(nsSince(t0));
    if (!ok(state, r, "submit")) return;
  }
  if (held && !ok(state, gate->signal(1), "signal")) return;
  if (!ok(state, timeline->wait(signal.value, baton::kWaitForever), "wait")) return;
  gEndToEnd[name].push_back(nsSince(start) / static_cast<double>(signal.value));
  state.SetItemsProcessed(state.iterations());
  publish(state, name, ns);
}

// The baseline: a worker thread popping closures from a mutex-protected deque, each closure
// raising a "done" counter that a waiter could watch — the hand-rolled queue baton replaces.
void submitDeque(benchmark::State& state, const std::string& name) {
  std::mutex m;
  std::condition_variable cvWork, cvDone;
  std::deque<std::function<void()>> work;
  uint64_t done = 0;
  bool stop = false;
  std::thread worker([&] {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      cvWork.wait(lock, [&] { return !work.empty() || stop; });
      if (work.empty()) return;
      std::function<void()> f = std::move(work.front());
      work.pop_front();
      lock.unlock();
      f();
      lock.lock();
    }
  });
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  uint64_t v = 0;
  Clock::time_point start = Clock::now();
  for (auto _ : state) {
    ++v;
    Clock::time_point t0 = Clock::now();
    {
      std::lock_guard<std::mutex> lock(m);
      work.emplace_back([&, v] {
        {
          std::lock_guard<std::mutex> l(m);
          done = v;
        }
        cvDone.notify_all();
      });
    }
    cvWork.notify_one();
    ns.push_back(nsSince(t0));
  }
  {
    std::unique_lock<std::mutex> lock(m);
    cvDone.wait(lock, [&] { return done >= v; });
    stop = true;
  }
  cvWork.notify_one();
  worker.join();
  gEndToEnd[name].push_back(nsSince(start) / static_cast<double>(v));
  state.SetItemsProcessed(state.iterations());
  publish(state, name, ns);
}

// ---- Registration and the summary ------------------------------------------------------------

constexpr int kRepetitions = 5;

void add(const std::string& name, int64_t iterations, bool manualTime,
         std::function<void(benchmark::State&, const std::string&)> fn) {
  benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
      name.c_str(), [fn, name](benchmark::State& state) { fn(state, name); });
  b->Iterations(iters(iterations))
      ->Repetitions(gScale > 1 ? 2 : kRepetitions)
      ->ReportAggregatesOnly(true)
      ->Unit(benchmark::kMicrosecond);
  if (manualTime)
    b->UseManualTime();
  else
    b->UseRealTime();
}

void printRow(const char* what, const std::string& baton, const std::string& baseline) {
  const std::vector<double>& a = gSamples[baton];
  double a50 = percentile(a, 0.5) / 1000.0, a99 = percentile(a, 0.99) / 1000.0;
  if (baseline.empty()) {
    std::printf("%-44s %9.2f %9.2f %11s %9s\n", what, a50, a99, "-", "-");
    return;
  }
  const std::vector<double>& b = gSamples[baseline];
  double b50 = percentile(b, 0.5) / 1000.0;
  std::printf("%-44s %9.2f %9.2f %11.2f %8.2fx\n", what, a50, a99, b50, b50 > 0 ? a50 / b50 : 0);
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  // Our flag out, Google Benchmark's in; random interleaving by default, so that slow drift of
  // the machine (other load, frequency) spreads over both sides of every ratio.
  std::vector<char*> args{argv[0]};
  static char interleave[] = "--benchmark_enable_random_interleaving=true";
  args.push_back(interleave);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      gScale = 10;
    else
      args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  // Only the host backend: these figures are about the core and the host queues.
  baton::InstanceCreateInfo info;
  info.backendMask = baton::backendBit(baton::BackendKind::Host);
  baton::UniqueInstance instance;
  uint32_t count = 1;
  baton::PhysicalDevice physical;
  baton::UniqueDevice device;
  if (baton::isError(baton::createInstance(info, instance.put())) ||
      baton::isError(instance->enumeratePhysicalDevices(&count, &physical)) ||
      baton::isError(instance->createDevice(physical, {1}, device.put()))) {
    std::fprintf(stderr, "setup failed: %s\n", baton::lastErrorMessage());
    return 1;
  }
  gInstance = *instance;
  sched_getaffinity(0, sizeof gAllowed, &gAllowed);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &gAllowed)) gCpus.push_back(cpu);
  gDevice = *device;

  std::vector<Placement> placements{Placement::Free, Placement::OneCpu};
  if (gCpus.size() >= 2) placements.insert(placements.begin() + 1, Placement::TwoCpus);
  using WakeFn = void (*)(benchmark::State&, const std::string&, Placement);
  struct {
    const char* name;
    int64_t iterations;
    bool manualTime;
    WakeFn fn;
  } wakes[] = {{"WakeLatency/PingPong/%s/baton", 5000, false, pingPongBaton},
               {"WakeLatency/PingPong/%s/condvar", 5000, false, pingPongCondvar},
               {"WakeLatency/FromSleep/%s/baton", 2000, true, fromSleepBaton},
               {"WakeLatency/FromSleep/%s/condvar", 2000, true, fromSleepCondvar}};
  for (Placement p : placements) {
    for (const auto& w : wakes) {
      char name[128];
      std::snprintf(name, sizeof name, w.name, placementName(p));
      WakeFn fn = w.fn;
      add(name, w.iterations, w.manualTime,
          [fn, p](benchmark::State& s, const std::string& n) { fn(s, n, p); });
    }
  }
  add("WaitAny/1/Signalled", 20000, false,
      [](benchmark::State& s, const std::string& n) { waitAnySignalled(s, n, 1); });
  add("WaitAny/1024/Signalled", 4000, false,
      [](benchmark::State& s, const std::string& n) { waitAnySignalled(s, n, 1024); });
  add("WaitAny/1024/WhileWaiting", 4000, true,
      [](benchmark::State& s, const std::string& n) { waitAnyWhileWaiting(s, n, 1024); });
  add("Submit/Ready/baton", 100000, false,
      [](benchmark::State& s, const std::string& n) { submitBaton(s, n, false); });
  add("Submit/Held/baton", 20000, false,
      [](benchmark::State& s, const std::string& n) { submitBaton(s, n, true); });
  add("Submit/deque", 100000, false, submitDeque);

  Clock::time_point start = Clock::now();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  std::printf(
      "\nSummary: per-operation p50 and p99 in µs over %s; ratio = baton p50 / baseline "
      "p50\n\n",
      gScale > 1 ? "a quick run" : "all repetitions");
  std::printf("%-44s %9s %9s %11s %9s\n", "benchmark", "p50 us", "p99 us", "baseline", "ratio");
  for (Placement p : placements) {
    const std::string where = placementName(p);
    printRow(("wake: ping-pong round trip, " + where).c_str(),
             "WakeLatency/PingPong/" + where + "/baton",
             "WakeLatency/PingPong/" + where + "/condvar");
    printRow(("wake: signal -> sleeping waiter, " + where).c_str(),
             "WakeLatency/FromSleep/" + where + "/baton",
             "WakeLatency/FromSleep/" + where + "/condvar");
  }
  printRow("wait-ANY x1, reached", "WaitAny/1/Signalled", "");
  printRow("wait-ANY x1024, one reached", "WaitAny/1024/Signalled", "");
  printRow("wait-ANY x1024, signal -> wake", "WaitAny/1024/WhileWaiting", "");
  printRow("submit() call, wait met (vs deque push)", "Submit/Ready/baton", "Submit/deque");
  printRow("submit() call, wait held (vs deque push)", "Submit/Held/baton", "Submit/deque");

  std::printf("\nEnd to end (submitted and executed), median over repetitions:\n");
  for (const char* name : {"Submit/Ready/baton", "Submit/Held/baton", "Submit/deque"}) {
    double ns = median(gEndToEnd[name]);
    std::printf("  %-22s %8.2f us per submission  %10.0f per second\n", name, ns / 1000.0,
                ns > 0 ? 1e9 / ns : 0);
  }
  std::printf("\nwhole run: %.1f s\n", nsSince(start) / 1e9);
  return 0;
}
