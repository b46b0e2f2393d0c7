// The guide's "Backends and several devices" (docs/guide.md): what each backend reports, and a
// wait across two devices. Uses the first two GPU devices when there are two, else two logical
// devices of the host backend (the same code). Built and run by meson test (suite guide); the
// regions between the [name] lines are the guide's code blocks (tests/docs/check_examples.py).
#include <baton/baton.hpp>
#include <cstdio>
#include <vector>

#include "check.hpp"

using guide::expect;
using guide::ok;

int main() {
  baton::UniqueInstance instance;
  expect(ok(baton::createInstance({}, instance.put())), "createInstance");

  // [backends]
  // Every backend baton knows, built in or not, and why one is not available.
  baton::BackendInfo backends[baton::kBackendKindCount];
  uint32_t backendCount = baton::kBackendKindCount;
  baton::Result r = instance->enumerateBackends(&backendCount, backends);
  for (uint32_t i = 0; ok(r) && i < backendCount; ++i) {
    std::printf("%-5s %s, %u devices %s\n", baton::backendName(backends[i].kind),
                backends[i].available ? "available" : "unavailable", backends[i].deviceCount,
                backends[i].reason);  // e.g. "hipGetDeviceCount failed: hipErrorNoDevice (...)"
  }
  // [backends]
  expect(ok(r), "enumerateBackends");

  // [find-backend]
  // The first device of one backend (HIP here), with what the toolchain calls its architecture.
  auto firstOf = [&](baton::BackendKind kind, baton::PhysicalDevice* found) {
    uint32_t n = 0;
    if (baton::isError(instance->enumeratePhysicalDevices(&n, nullptr))) return false;
    std::vector<baton::PhysicalDevice> all(n);
    if (baton::isError(instance->enumeratePhysicalDevices(&n, all.data()))) return false;
    for (baton::PhysicalDevice p : all) {
      baton::PhysicalDeviceProperties properties;
      if (ok(p.getProperties(&properties)) && properties.backend == kind) {
        std::printf("%s: %s, %s\n", baton::backendName(kind), properties.name, properties.arch);
        *found = p;  // arch: "gfx90a:sramecc+:xnack-" on an MI250, "sm_90" on an H100
        return true;
      }
    }
    return false;  // no such device: enumerateBackends says why
  };
  baton::PhysicalDevice hip;
  bool haveHip = firstOf(baton::BackendKind::Hip, &hip);
  // [find-backend]
  std::printf("a HIP device: %s\n", haveHip ? "yes" : "no");

  // [two-devices]
  // Physical devices of every available backend, host first.
  uint32_t count = 0;
  r = instance->enumeratePhysicalDevices(&count, nullptr);
  std::vector<baton::PhysicalDevice> physicals(count);
  if (ok(r)) r = instance->enumeratePhysicalDevices(&count, physicals.data());
  std::vector<baton::PhysicalDevice> gpus;
  for (baton::PhysicalDevice p : physicals) {
    baton::PhysicalDeviceProperties properties;
    if (ok(p.getProperties(&properties)) && properties.backend != baton::BackendKind::Host)
      gpus.push_back(p);
  }
  // Two GPUs if there are two; otherwise two logical devices on the host's physical device.
  baton::PhysicalDevice first = gpus.size() >= 2 ? gpus[0] : physicals[0];
  baton::PhysicalDevice second = gpus.size() >= 2 ? gpus[1] : physicals[0];

  baton::UniqueDevice a, b;
  if (ok(r)) r = instance->createDevice(first, {1, "producer"}, a.put());
  if (ok(r)) r = instance->createDevice(second, {1, "consumer"}, b.put());
  baton::Queue qa, qb;
  if (ok(r)) r = a->getQueue(0, &qa);
  if (ok(r)) r = b->getQueue(0, &qb);
  // Semaphores belong to the instance: every queue of every device can wait on them.
  baton::UniqueSemaphore handoff;
  if (ok(r)) r = instance->createSemaphore({0, "handoff"}, handoff.put());
  baton::SemaphoreValue produced{*handoff, 1}, consumed{*handoff, 2};
  if (ok(r)) r = qb.submit(baton::SubmitInfo{produced, {}, consumed});  // waits before the signal
  if (ok(r)) r = qa.submit(baton::SubmitInfo{{}, {}, produced});
  if (ok(r)) r = handoff->wait(2, baton::kWaitForever);
  // [two-devices]
  expect(ok(r), "a wait across two devices");
  std::printf("devices: %zu GPU devices; the hand-off ran on %s\n", gpus.size(),
              gpus.size() >= 2 ? "two GPUs" : "two host devices");

  return guide::finish("devices");
}
