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
// Parts on a shared buffer as well (its descriptor, inherited, and size follow the part; its
// contents are written and checked as shared_buffer_data.hpp says):
//   buffer-produce B SIZE P V     imports the buffer, writes pattern P into it on the queue (a
//                                 fill, then an update) and signals V behind it
//   buffer-relay B SIZE W P Q V   the queue waits for W, copies the buffer out and checks it holds
//                                 P; then, unless Q is 0, writes Q into it and signals V
//   buffer-hold B SIZE P          imports, says "peer: imported", waits (host) for 1, then checks
//                                 on the queue that the buffer holds P, writes P + 1 and signals 2
//   buffer-import B SIZE          imports the buffer; exits 6 (printing the result) if it fails
//
// Exit status: 0 when the part did what it says, 3 when a wait failed (ErrorSemaphoreFailed;
// the reason goes to stdout), 4 on a wait that timed out, 5 when a buffer did not hold what it
// should (printed), 6 when an import the part expected to work failed, 2 on any other error
// (printed).
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
#include "shared_buffer_data.hpp"

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

// The buffer parts (see the top of the file); argv[4] is the buffer's descriptor, argv[5] its
// size, then the part's values.
int bufferPart(const std::string& part, Instance instance, Device device, Queue queue, Semaphore s,
               int argc, char** argv) {
  auto arg = [&](int i) -> uint64_t { return i < argc ? std::strtoull(argv[i], nullptr, 10) : 0; };
  BufferImportInfo importInfo;
  importInfo.fd = static_cast<int>(arg(4));
  importInfo.size = arg(5);
  UniqueBuffer shared;
  Result imported = device.importBuffer(importInfo, shared.put());
  close(importInfo.fd);
  if (part == "buffer-import") {
    if (imported == Result::Success) return 0;
    std::printf("peer: import: %s: %s\n", resultName(imported), lastErrorMessage());
    std::fflush(stdout);
    return 6;
  }
  if (imported != Result::Success) return fail("importBuffer", imported);
  const uint64_t size = importInfo.size;

  auto submit = [&](std::vector<SemaphoreValue> waits, std::vector<CommandBuffer> cbs,
                    std::vector<SemaphoreValue> signals) {
    SubmitInfo info;
    info.waits = waits;
    info.commandBuffers = cbs;
    info.signals = signals;
    return queue.submit(info);
  };
  // Records into a new command buffer; null on an error (printed).
  auto record = [&](auto&& body) {
    UniqueCommandBuffer cb;
    if (device.createCommandBuffer(cb.put()) != Result::Success || cb->begin() != Result::Success)
      return UniqueCommandBuffer();
    if (!body(*cb) || cb->end() != Result::Success) return UniqueCommandBuffer();
    return cb;
  };
  auto writer = [&](uint32_t pattern) {
    return record([&](CommandBuffer cb) {
      const std::vector<uint8_t> tag = baton_test::tagOf(pattern);
      return cb.fillBuffer(*shared, 0, size / 4 * 4, pattern) == Result::Success &&
             cb.updateBuffer(*shared, 0, tag.size(), tag.data()) == Result::Success;
    });
  };
  // Waits (on the queue) for `wait`, copies the buffer out and checks it holds `pattern`.
  auto check = [&](uint64_t wait, uint32_t pattern) -> int {
    BufferCreateInfo localInfo;
    localInfo.size = size;
    localInfo.memory = MemoryKind::HostPinned;
    UniqueBuffer local;
    if (Result r = device.createBuffer(localInfo, local.put()); r != Result::Success)
      return fail("createBuffer", r);
    UniqueCommandBuffer copy = record([&](CommandBuffer cb) {
      return cb.copyBuffer(*shared, 0, *local, 0, size) == Result::Success;
    });
    if (!copy) return fail("recording the copy", Result::ErrorInvalidArgument);
    UniqueSemaphore copied;
    std::vector<SemaphoreValue> waits;
    if (wait) waits.push_back({s, wait});
    if (Result r = instance.createSemaphore(SemaphoreCreateInfo(), copied.put());
        r != Result::Success)
      return fail("createSemaphore", r);
    if (Result r = submit(waits, {*copy}, {{*copied, 1}}); r != Result::Success)
      return fail("submit", r);
    if (int r = waitResult(*copied, 1)) return r;
    void* p = nullptr;
    if (Result r = local->map(&p); r != Result::Success) return fail("map", r);
    const std::string wrong = baton_test::checkBytes(static_cast<const uint8_t*>(p), size, pattern);
    if (!wrong.empty()) {
      std::printf("peer: the shared buffer does not hold pattern %u: %s\n", pattern, wrong.c_str());
      std::fflush(stdout);
      return 5;
    }
    return 0;
  };

  if (part == "buffer-produce") {
    UniqueCommandBuffer cb = writer(static_cast<uint32_t>(arg(6)));
    if (!cb) return fail("recording", Result::ErrorInvalidArgument);
    if (Result r = submit({}, {*cb}, {{s, arg(7)}}); r != Result::Success) return fail("submit", r);
    return waitResult(s, arg(7));
  }
  if (part == "buffer-relay") {
    if (int r = check(arg(6), static_cast<uint32_t>(arg(7)))) return r;
    if (arg(8) == 0) return 0;
    UniqueCommandBuffer cb = writer(static_cast<uint32_t>(arg(8)));
    if (!cb) return fail("recording", Result::ErrorInvalidArgument);
    if (Result r = submit({}, {*cb}, {{s, arg(9)}}); r != Result::Success) return fail("submit", r);
    return waitResult(s, arg(9));
  }
  if (part == "buffer-hold") {
    std::printf("peer: imported\n");
    std::fflush(stdout);
    if (int r = waitResult(s, 1)) return r;
    const auto pattern = static_cast<uint32_t>(arg(6));
    if (int r = check(0, pattern)) return r;
    UniqueCommandBuffer cb = writer(pattern + 1);
    if (!cb) return fail("recording", Result::ErrorInvalidArgument);
    if (Result r = submit({}, {*cb}, {{s, 2}}); r != Result::Success) return fail("submit", r);
    return waitResult(s, 2);
  }
  std::fprintf(stderr, "peer: unknown part '%s'\n", part.c_str());
  return 2;
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
  if (part.rfind("buffer-", 0) == 0)
    return bufferPart(part, *instance, *device, queue, *s, argc, argv);
  if (part == "hold") {
    std::printf("peer: holding\n");
    std::fflush(stdout);
    _exit(0);
  }
  std::fprintf(stderr, "peer: unknown part '%s'\n", part.c_str());
  return 2;
}
