// Bridged-mode latency of baton's Vulkan interop (issue 4, DESIGN §5), side by side with the
// same hand-off written with Vulkan alone, on whatever Vulkan device is present (lavapipe here)
// and baton's host backend:
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
//   baton-interop-bench [--rounds N]
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
#include "vulkan_context.hpp"

namespace {

using namespace baton;
using Clock = std::chrono::steady_clock;
using test::VulkanContext;

double usBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

struct Stats {
  double median, p90, p99;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {at(0.5), at(0.9), at(0.99)};
}
void row(const char* name, const std::vector<double>& samples) {
  Stats s = stats(samples);
  std::printf("  %-40s %10.1f %10.1f %10.1f\n", name, s.median, s.p90, s.p99);
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "baton-interop-bench: %s failed: %s\n", what, lastErrorMessage());
    std::exit(1);
  }
}

// The signaller sleeps this long before each signal so that the waiter is blocked, not spinning.
constexpr auto kSettle = std::chrono::microseconds(300);

// One-way hand-off: `wait(v)` on a second thread, `signal(v)` here; returns µs per sample.
template <class Wait, class Signal>
std::vector<double> oneWay(uint32_t rounds, uint64_t base, Wait wait, Signal signal) {
  std::vector<double> out;
  std::atomic<uint64_t> woke{0};
  Clock::time_point wokeAt[2];
  std::thread waiter([&] {
    for (uint32_t i = 1; i <= rounds; ++i) {
      wait(base + i);
      wokeAt[i % 2] = Clock::now();
      woke.store(i, std::memory_order_release);
    }
  });
  for (uint32_t i = 1; i <= rounds; ++i) {
    std::this_thread::sleep_for(kSettle);
    Clock::time_point t0 = Clock::now();
    signal(base + i);
    while (woke.load(std::memory_order_acquire) < i) std::this_thread::yield();
    out.push_back(usBetween(t0, wokeAt[i % 2]));
  }
  waiter.join();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t rounds = 500;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = static_cast<uint32_t>(std::max(10l, std::strtol(argv[++i], nullptr, 10)));
    } else if (!std::strcmp(argv[i], "--quick")) {
      rounds = 50;
    } else {
      std::fprintf(stderr, "usage: baton-interop-bench [--rounds N] [--quick]\n");
      return 2;
    }
  }
  VulkanContext vk;
  if (!vk.ok()) {
    std::printf("baton-interop-bench: skipped: %s\n", vk.skip.c_str());
    return 0;
  }
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
  return 0;
}
