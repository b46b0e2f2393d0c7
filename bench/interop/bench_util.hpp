// What the two halves of baton-interop-bench share: the clock, statistics, the one-way hand-off
// harness, and the entry point of the Vulkan <-> CUDA half (native_bench.cpp, built only where
// the CUDA backend is).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "vulkan_context.hpp"

namespace baton::bench {

using Clock = std::chrono::steady_clock;

inline double usBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

struct Stats {
  double median, p90, p99;
};
inline Stats stats(std::vector<double> v) {
  if (v.empty()) return {0, 0, 0};
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {at(0.5), at(0.9), at(0.99)};
}
inline double median(const std::vector<double>& v) { return stats(v).median; }

// Ends the run at once with a message. _Exit, not exit: after a timed-out wait, GPU work may
// still be pending on objects whose destructors would block on it.
[[noreturn]] inline void fatal(const char* what, const char* detail) {
  std::fflush(stdout);
  std::fprintf(stderr, "baton-interop-bench: %s: %s\n", what, detail);
  std::_Exit(1);
}

// The signaller sleeps this long before each signal so that the waiter is blocked, not spinning
// (and, for GPU-side signals, so that the held work is running).
constexpr auto kSettle = std::chrono::microseconds(300);

// One-way hand-off, `rounds` samples of value base+1, base+2, ...: `arm(v)` here (prepare what
// will signal v, e.g. submit work held by a gate), then `wait(v)` on a second thread, then
// `signal(v)` here once the waiter is asleep. Returns µs from just before `signal` to the
// waiter's return, per sample. The waiter starts waiting only after `arm`, as a host thread that
// waits for submitted work does.
template <class Wait, class Arm, class Signal>
std::vector<double> oneWay(uint32_t rounds, uint64_t base, Wait wait, Arm arm, Signal signal) {
  std::vector<double> out;
  std::atomic<uint32_t> armed{0}, woke{0};
  Clock::time_point wokeAt[2];
  std::thread waiter([&] {
    for (uint32_t i = 1; i <= rounds; ++i) {
      while (armed.load(std::memory_order_acquire) < i) std::this_thread::yield();
      wait(base + i);
      wokeAt[i % 2] = Clock::now();
      woke.store(i, std::memory_order_release);
    }
  });
  for (uint32_t i = 1; i <= rounds; ++i) {
    arm(base + i);
    armed.store(i, std::memory_order_release);
    std::this_thread::sleep_for(kSettle);
    Clock::time_point t0 = Clock::now();
    signal(base + i);
    while (woke.load(std::memory_order_acquire) < i) std::this_thread::yield();
    out.push_back(usBetween(t0, wokeAt[i % 2]));
  }
  waiter.join();
  return out;
}
template <class Wait, class Signal>
std::vector<double> oneWay(uint32_t rounds, uint64_t base, Wait wait, Signal signal) {
  return oneWay(
      rounds, base, wait, [](uint64_t) {}, signal);
}

struct Options {
  uint32_t rounds = 500;          // bridged section: samples per one-way row, rounds per trip
  uint32_t pingPongRounds = 200;  // Vulkan <-> CUDA: rounds per ping-pong run
  uint32_t reps = 7;              // Vulkan <-> CUDA: ping-pong runs (medians over them)
  uint32_t wakeSamples = 100;     // Vulkan <-> CUDA: samples per host-wake row
};

// The Vulkan <-> CUDA half (native and bridged imports on the CUDA device that is the Vulkan
// device). Prints its rows, or "native: skipped: <reason>" where it cannot run.
void runCuda(test::VulkanContext& vk, const Options& options);

}  // namespace baton::bench
