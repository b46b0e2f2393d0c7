// What the stream benchmarks (cuda_bench, frame_bench, shared_bench) share: their statistics and
// BATON_BENCH_SCALE, and the device each runs on, found the same way by each: an instance that
// loads only the backend under test, and that backend's first device (or the one with a given
// ordinal). Where there is none, the reason says why (the backend not compiled in, its driver
// missing, no device), for the benchmark to skip with.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "baton/baton.hpp"

namespace baton_bench {

inline double nsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
// The p-th percentile (0-100) of v, nearest rank.
inline double percentile(std::vector<double> v, int p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * static_cast<size_t>(p) / 100)];
}
// BATON_BENCH_SCALE: the benchmarks' repetitions are divided by it (at least 1).
inline int scale() {
  const char* s = std::getenv("BATON_BENCH_SCALE");
  int v = s ? std::atoi(s) : 1;
  return v > 0 ? v : 1;
}

// Creates *instance (only `kind`'s backend) and finds the device: *physical and *props, or a null
// *physical and *why. Returns the first error of a baton call (the benchmark's BATON_OK reports
// it).
inline baton::Result findBenchDevice(baton::BackendKind kind, int ordinal,
                                     baton::Instance* instance, baton::PhysicalDevice* physical,
                                     baton::PhysicalDeviceProperties* props, std::string* why) {
  *physical = baton::PhysicalDevice();
  const std::string name = kind == baton::BackendKind::Hip ? "HIP" : "CUDA";
  baton::InstanceCreateInfo instanceInfo;
  instanceInfo.backendMask = baton::backendBit(kind);
  baton::Result r = baton::createInstance(instanceInfo, instance);
  if (r != baton::Result::Success) return r;
  uint32_t count = 0;
  if ((r = instance->enumerateBackends(&count, nullptr)) != baton::Result::Success) return r;
  std::vector<baton::BackendInfo> infos(count);
  if ((r = instance->enumerateBackends(&count, infos.data())) != baton::Result::Success) return r;
  *why = name + " is not compiled into this build of baton";
  for (const baton::BackendInfo& b : infos) {
    if (b.kind != kind) continue;
    if (!b.compiled) return baton::Result::Success;
    if (!b.available) {
      *why = name + " unavailable: " + b.reason;
      return baton::Result::Success;
    }
    if (b.deviceCount == 0) {
      *why = "no " + name + " device" + (b.reason[0] ? ": " + std::string(b.reason) : "");
      return baton::Result::Success;
    }
    *why = "no " + name + " device";
  }
  if ((r = instance->enumeratePhysicalDevices(&count, nullptr)) != baton::Result::Success) return r;
  std::vector<baton::PhysicalDevice> all(count);
  if ((r = instance->enumeratePhysicalDevices(&count, all.data())) != baton::Result::Success)
    return r;
  for (baton::PhysicalDevice p : all) {
    if ((r = p.getProperties(props)) != baton::Result::Success) return r;
    if (props->backend == kind && (ordinal < 0 || props->ordinal == uint32_t(ordinal))) {
      *physical = p;
      why->clear();
      return baton::Result::Success;
    }
  }
  return baton::Result::Success;
}

}  // namespace baton_bench
