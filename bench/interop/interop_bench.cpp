// Latency of baton's Vulkan interop (docs/guide.md, 'Vulkan interop'), each figure next to the same
// hand-off written with raw Vulkan (and raw CUDA) calls, in one run. Two halves:
//
// Bridged, with baton's host backend, on whatever Vulkan device is present (lavapipe in CI):
//
//   vk signal -> baton wake    vkSignalSemaphore on the host; a thread blocked in baton's
//                              Semaphore::wait returns (through the watcher thread)
//   vk queue -> baton wake     a vkQueueSubmit that only signals; a baton host waiter returns
//   baton signal -> vk wake    Semaphore::signal; a thread blocked in vkWaitSemaphores returns
//   round trip                 Vulkan queue <-> baton host queue ping-pong on one timeline, every
//                              round submitted up front (wait-before-signal both ways)
//
// Each "raw" line is the same hand-off with vkWaitSemaphores/vkSignalSemaphore only, so the
// difference is what the bridge costs. One-way latencies: the waiter is given time to fall
// asleep first (a real hand-off, not a spin), then the time from just before the signalling call
// to the waiter's return is taken on one steady clock.
//
// Vulkan <-> CUDA, with the CUDA device that is the Vulkan device (native_bench.cpp): ping-pong
// and host wake through native and bridged imports, next to raw Vulkan + CUDA external
// semaphores. Where that cannot run (no CUDA, no fd export: lavapipe) it prints
// "native: skipped: <reason>".
//
//   baton-interop-bench [--quick] [--rounds N] [--only bridged|cuda]
//   BATON_VULKAN_DEVICE=<name substring> picks the Vulkan device (e.g. H100).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "baton/baton.hpp"
#include "baton/vulkan.hpp"
#include "bench_util.hpp"
#include "vulkan_context.hpp"

namespace {

using namespace baton;
using namespace baton::bench;
using test::VulkanContext;

void row(const char* name, const std::vector<double>& samples) {
  Stats s = stats(samples);
  std::printf("  %-40s %10.1f %10.1f %10.1f\n", name, s.median, s.p90, s.p99);
}

void check(bool ok, const char* what) {
  if (!ok) fatal(what, lastErrorMessage());
}

// The bridged half: Vulkan <-> baton host backend.
void runBridged(VulkanContext& vk, uint32_t rounds) {
  Instance instance;
  InstanceCreateInfo ii;
  ii.backendMask = backendBit(BackendKind::Host);
  check(createInstance(ii, &instance) == Result::Success, "createInstance");
  uint32_t count = 1;
  PhysicalDevice host;
  (void)instance.enumeratePhysicalDevices(&count, &host);  // host first
  Device device;
  check(instance.createDevice(host, DeviceCreateInfo{}, &device) == Result::Success,
        "createDevice");
  Queue queue;
  check(device.getQueue(0, &queue) == Result::Success, "getQueue");

  VulkanTimelineCreateInfo ti;
  ti.vulkan = vk.view();
  ti.device = device;
  ti.debugName = "bench";
  VulkanTimeline t;
  check(createVulkanTimeline(instance, ti, &t) == Result::Success, "createVulkanTimeline");
  VkSemaphore raw = vk.createTimeline();
  VulkanInteropInfo info;
  check(getVulkanSemaphoreInterop(t.baton, &info) == Result::Success, "getVulkanSemaphoreInterop");

  std::printf("baton Vulkan interop, %s mode: %s + baton host backend, %u samples each\n",
              interopModeName(info.mode), vk.name.c_str(), rounds);
  std::printf("  %-40s %10s %10s %10s\n", "latency (us)", "median", "p90", "p99");

  uint64_t base = 0;
  auto batonWait = [&](uint64_t v) { (void)t.baton.wait(v, kWaitForever); };
  auto vkWaitShared = [&](uint64_t v) { vk.wait(t.vulkan, v, UINT64_MAX); };
  auto vkWaitRaw = [&](uint64_t v) { vk.wait(raw, v, UINT64_MAX); };

  row("vk host signal -> baton waiter wakes",
      oneWay(rounds, base, batonWait, [&](uint64_t v) { vk.signal(t.vulkan, v); }));
  base += rounds;
  row("  raw: vk host signal -> vkWaitSemaphores",
      oneWay(rounds, 0, vkWaitRaw, [&](uint64_t v) { vk.signal(raw, v); }));

  row("vk queue signal -> baton waiter wakes", oneWay(rounds, base, batonWait, [&](uint64_t v) {
        vk.submit({}, VK_NULL_HANDLE, {{t.vulkan, v}});
      }));
  base += rounds;
  row("  raw: vk queue signal -> vkWaitSemaphores",
      oneWay(rounds, rounds, vkWaitRaw, [&](uint64_t v) {
        vk.submit({}, VK_NULL_HANDLE, {{raw, v}});
      }));

  row("baton host signal -> vkWaitSemaphores",
      oneWay(rounds, base, vkWaitShared, [&](uint64_t v) { (void)t.baton.signal(v); }));
  base += rounds;
  row("baton host signal -> baton waiter",
      oneWay(rounds, base, batonWait, [&](uint64_t v) { (void)t.baton.signal(v); }));
  base += rounds;

  // Round trips: Vulkan queue (waits 2r, signals 2r+1) <-> the other side (waits 2r+1, signals
  // 2r+2), every round submitted before the first runs.
  {
    std::vector<double> perRound;
    UniqueCommandBuffer empty;
    check(device.createCommandBuffer(empty.put()) == Result::Success, "createCommandBuffer");
    check(empty->begin() == Result::Success && empty->end() == Result::Success, "record");
    CommandBuffer cbs[] = {*empty};
    for (int rep = 0; rep < 5; ++rep) {
      uint64_t start = base;  // the shared timeline's current value
      Clock::time_point t0 = Clock::now();
      for (uint32_t r = 0; r < rounds; ++r) {
        uint64_t v = start + 2 * r;
        vk.submit({{t.vulkan, v}}, VK_NULL_HANDLE, {{t.vulkan, v + 1}});
        SemaphoreValue w{t.baton, v + 1}, s{t.baton, v + 2};
        SubmitInfo si;
        si.waits = Span<const SemaphoreValue>(&w, 1);
        si.commandBuffers = cbs;
        si.signals = Span<const SemaphoreValue>(&s, 1);
        check(queue.submit(si) == Result::Success, "Queue::submit");
      }
      check(t.baton.wait(start + 2 * rounds, kWaitForever) == Result::Success, "wait");
      perRound.push_back(usBetween(t0, Clock::now()) / rounds);
      base = start + 2 * rounds;
    }
    row("round trip vk queue <-> baton host queue *", perRound);

    // Raw: a host thread plays the other side with vkWaitSemaphores + vkSignalSemaphore.
    std::vector<double> rawRound;
    uint64_t rbase = 2ull * rounds;  // the raw semaphore's value after the one-way runs
    for (int rep = 0; rep < 5; ++rep) {
      uint64_t start = rbase;
      Clock::time_point t0 = Clock::now();
      std::thread other([&] {
        for (uint32_t r = 0; r < rounds; ++r) {
          vk.wait(raw, start + 2 * r + 1, UINT64_MAX);
          vk.signal(raw, start + 2 * r + 2);
        }
      });
      for (uint32_t r = 0; r < rounds; ++r)
        vk.submit({{raw, start + 2 * r}}, VK_NULL_HANDLE, {{raw, start + 2 * r + 1}});
      vk.wait(raw, start + 2 * rounds, UINT64_MAX);
      other.join();
      rawRound.push_back(usBetween(t0, Clock::now()) / rounds);
      rbase = start + 2 * rounds;
    }
    row("  raw: vk queue <-> host thread (vk API) *", rawRound);
    std::printf("  * mean per round of %u rounds, over 5 runs\n", rounds);
  }

  vkQueueWaitIdle(vk.queue);
  (void)destroyVulkanTimeline(vk.view(), t);
  vk.destroy(raw);
  (void)device.destroy();
  (void)instance.destroy();
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);  // rows appear as they are measured
  Options options;
  bool bridged = true, cuda = true;
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: baton-interop-bench [--quick] [--rounds N] [--only bridged|cuda]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      options.rounds = static_cast<uint32_t>(std::max(10l, std::strtol(argv[++i], nullptr, 10)));
    } else if (!std::strcmp(argv[i], "--quick")) {
      options.rounds = 50;
      options.pingPongRounds = 50;
      options.reps = 3;
      options.wakeSamples = 20;
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      ++i;
      bridged = !std::strcmp(argv[i], "bridged");
      cuda = !std::strcmp(argv[i], "cuda");
      if (!bridged && !cuda) return usage();
    } else {
      return usage();
    }
  }
  VulkanContext vk;
  if (!vk.ok()) {
    std::printf("baton-interop-bench: skipped: %s\n", vk.skip.c_str());
    return 0;
  }
  if (bridged) runBridged(vk, options.rounds);
  if (cuda) {
#if BATON_INTEROP_BENCH_CUDA
    runCuda(vk, options);
#else
    std::printf(
        "native: skipped: this build has no CUDA backend (configured with -Dcuda=disabled, or "
        "cuda.h was not found)\n");
#endif
  }
  return 0;
}
