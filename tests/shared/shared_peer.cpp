// The other process of the cross-process suite (shared_tests.cpp starts it with fork and exec):
// imports a shared semaphore from an inherited descriptor and plays one part, with baton's public
// API only, on the backend it is told.
//
//   baton-shared-peer <backend> <fd> <part> [values...]
//
// Parts (values are semaphore values):
//   signal V            host signal of V
//   queue-signal V      a submission with no wait that signals V (GPU-side where the device can)
//   relay W V           a submission that waits for W and signals V; then waits until V is reached
//   relay-loop N        for k in 0..N-1: a submission waiting for 2k+1 that signals 2k+2 (the
//                       parent signals the odd values); then waits for 2N
//   wait V              host wait for V (up to 20 s)
//   fail REASON         fails the semaphore with REASON
//   die-signalling V    submits a signal of V behind a wait that nothing will satisfy, then kills
//                       itself with SIGKILL
//   die-waiting V       links a host wait for V on another thread, then kills itself
//   hold                imports and exits (cleanly) without destroying anything
//
// Exit status: 0 when the part did what it says, 3 when a wait failed (ErrorSemaphoreFailed;
// the reason goes to stdout), 4 on a wait that timed out, 2 on any other error (printed).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "baton/baton.hpp"

namespace {

using namespace baton;

constexpr uint64_t kWaitNs = 20'000'000'000ull;

int fail(const char* what, Result r) {
  std::printf("peer: %s: %s\n", what, resultName(r));
  std::fflush(stdout);
  return 2;
}

int waitResult(Semaphore s, uint64_t value) {
  Result r = s.wait(value, kWaitNs);
  if (r == Result::Success) return 0;
  if (r == Result::ErrorSemaphoreFailed || r == Result::ErrorDeviceLost) {
    char reason[1024] = {};
    (void)s.getFailureReason(reason, sizeof reason);
    std::printf("peer: wait failed: %s\n", reason);
    std::fflush(stdout);
    return 3;
  }
  if (r == Result::Timeout) return 4;
  return fail("wait", r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <backend> <fd> <part> [values...]\n", argv[0]);
    return 2;
  }
  const std::string backend = argv[1];
  const int fd = std::atoi(argv[2]);
  const std::string part = argv[3];
  auto arg = [&](int i) -> uint64_t { return i < argc ? std::strtoull(argv[i], nullptr, 10) : 0; };

  UniqueInstance instance;
  if (Result r = createInstance(InstanceCreateInfo(), instance.put()); r != Result::Success)
    return fail("createInstance", r);
  SemaphoreImportInfo importInfo;
  importInfo.fd = fd;
  importInfo.debugName = "shared (peer)";
  UniqueSemaphore s;
  if (Result r = instance->importSemaphore(importInfo, s.put()); r != Result::Success)
    return fail("importSemaphore", r);
  close(fd);

  // The device of the backend asked for.
  uint32_t count = 0;
  (void)instance->enumeratePhysicalDevices(&count, nullptr);
  std::vector<PhysicalDevice> physicals(count);
  (void)instance->enumeratePhysicalDevices(&count, physicals.data());
  PhysicalDevice physical;
  for (PhysicalDevice p : physicals) {
    PhysicalDeviceProperties props;
    if (p.getProperties(&props) == Result::Success && backend == backendName(props.backend)) {
      physical = p;
      break;
    }
  }
  if (!physical) return fail(("no device of backend " + backend).c_str(), Result::NotReady);
  UniqueDevice device;
  if (Result r = instance->createDevice(physical, DeviceCreateInfo(), device.put());
      r != Result::Success)
    return fail("createDevice", r);
  Queue queue;
  (void)device->getQueue(0, &queue);

  auto submit = [&](std::vector<SemaphoreValue> waits, std::vector<SemaphoreValue> signals) {
    SubmitInfo info;
    info.waits = waits;
    info.signals = signals;
    return queue.submit(info);
  };

  if (part == "signal") {
    if (Result r = s->signal(arg(4)); r != Result::Success) return fail("signal", r);
    return 0;
  }
  if (part == "queue-signal") {
    if (Result r = submit({}, {{*s, arg(4)}}); r != Result::Success) return fail("submit", r);
    return waitResult(*s, arg(4));
  }
  if (part == "relay") {
    if (Result r = submit({{*s, arg(4)}}, {{*s, arg(5)}}); r != Result::Success)
      return fail("submit", r);
    return waitResult(*s, arg(5));
  }
  if (part == "relay-loop") {
    const uint64_t n = arg(4);
    for (uint64_t k = 0; k < n; ++k)
      if (Result r = submit({{*s, 2 * k + 1}}, {{*s, 2 * k + 2}}); r != Result::Success)
        return fail("submit", r);
    return waitResult(*s, 2 * n);
  }
  if (part == "wait") return waitResult(*s, arg(4));
  if (part == "fail") {
    if (Result r = s->fail(argc > 4 ? argv[4] : "failed by the peer"); r != Result::Success)
      return fail("fail", r);
    return 0;
  }
  if (part == "die-signalling") {
    SemaphoreCreateInfo never;
    UniqueSemaphore gate;
    (void)instance->createSemaphore(never, gate.put());
    if (Result r = submit({{*gate, 1}}, {{*s, arg(4)}}); r != Result::Success)
      return fail("submit", r);
    // The time of death, on the clock every process shares (CLOCK_MONOTONIC).
    std::printf(
        "peer: submitted, dying at %lld\n",
        static_cast<long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::fflush(stdout);
    kill(getpid(), SIGKILL);
  }
  if (part == "die-waiting") {
    std::thread([&] { (void)s->wait(arg(4), kWaitNs); }).detach();
    usleep(50'000);  // the wait is linked by then
    std::printf("peer: waiting\n");
    std::fflush(stdout);
    kill(getpid(), SIGKILL);
  }
  if (part == "hold") {
    std::printf("peer: holding\n");
    std::fflush(stdout);
    _exit(0);
  }
  std::fprintf(stderr, "peer: unknown part '%s'\n", part.c_str());
  return 2;
}
