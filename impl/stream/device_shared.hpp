// DeviceShared: the state of one device that its queues, timepoints and imported objects share,
// and that outlives the core Device as long as any of them is alive (the configuration: driver
// table, context, memory pool; and the event pool). MemoryTag: how an Allocation says which
// driver call releases it.
//
// Threads: any. The fields are set at creation and only read after (the pool locks itself). The
// last reference (the StreamDevice's, each QueueShared's, the issuing thread's, each imported
// object's) can drop on any thread, which then destroys the pooled events and calls
// DeviceConfig::release.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "event_pool.hpp"
#include "stream_backend.hpp"
#include "stream_driver.hpp"
#include "stream_tuning.hpp"

namespace baton::stream {
namespace {

// What Allocation::native says about where memory came from, so that free() and dealloca pick
// the matching release.
enum class MemoryTag : uintptr_t { Device = 1, HostPinned = 2, StreamOrdered = 3 };

void* tagOf(MemoryTag tag) { return reinterpret_cast<void*>(static_cast<uintptr_t>(tag)); }
MemoryTag tagOf(const core::Allocation& a) {
  return static_cast<MemoryTag>(reinterpret_cast<uintptr_t>(a.native));
}

// State of one device that outlives the core objects as long as anything uses it: timepoints
// (held by semaphores and host waiters) need the event pool and the context after the device's
// handle, or even the core Device, is gone.
struct DeviceShared {
  explicit DeviceShared(DeviceConfig c)
      : config(std::move(c)), driver(*config.driver), pool(driver, config.blockingSyncEvents) {}
  ~DeviceShared() {
    {
      ContextScope scope(driver, config.context, ContextScope::kRelease,
                         "destroying the device's events");
      pool.destroyAll();
    }
    if (config.release) config.release();
  }

  // Releases memory that no pending work uses any more; while a capture is in progress on the
  // device, once the last one ended (CaptureScope).
  void freeAllocation(const core::Allocation& a) {
    std::lock_guard<std::mutex> lock(captureMutex_);
    if (captures_ > 0) {
      held_.push_back(Held{a, nullptr, 0, {}});
      return;
    }
    freeNow(a);
  }
  // Releases imported memory (`memory`, from importMemoryFd) and its mapping at `address` (0:
  // none); the same way: its mapping is freed as device memory is.
  void releaseExternalMemory(void* memory, uint64_t address) {
    std::lock_guard<std::mutex> lock(captureMutex_);
    if (captures_ > 0) {
      held_.push_back(Held{core::Allocation{}, memory, address, {}});
      return;
    }
    releaseNow(memory, address);
  }

  // Runs `release` (the unmapping and release of a shared buffer's memory: shared_memory.hpp) the
  // same way: now, or once the last capture in progress ended.
  void releaseMemory(std::function<void()> release) {
    std::lock_guard<std::mutex> lock(captureMutex_);
    if (captures_ > 0) {
      held_.push_back(Held{core::Allocation{}, nullptr, 0, std::move(release)});
      return;
    }
    release();
  }

  // A stream capture on this device, from its begin to its end. HIP's hipFree and hipHostFree
  // synchronize the device, and a device synchronization while a stream captures ends that
  // capture invalidated (seen with NCCL captured through HIP names on the H200): frees wait for
  // the last capture to end, and a capture begins once a free in progress returned.
  class CaptureScope {
   public:
    explicit CaptureScope(DeviceShared& d) : d_(d) {
      std::lock_guard<std::mutex> lock(d_.captureMutex_);
      ++d_.captures_;
    }
    ~CaptureScope() {
      std::lock_guard<std::mutex> lock(d_.captureMutex_);
      if (--d_.captures_ > 0) return;
      for (const Held& h : d_.held_) {
        if (h.release)
          h.release();
        else if (h.memory)
          d_.releaseNow(h.memory, h.address);
        else
          d_.freeNow(h.allocation);
      }
      d_.held_.clear();
    }
    CaptureScope(const CaptureScope&) = delete;
    CaptureScope& operator=(const CaptureScope&) = delete;

   private:
    DeviceShared& d_;
  };

  DeviceConfig config;
  const DriverTable& driver;
  EventPool pool;
  // Device::setHostWaitSpin: how long a host wait for one of this device's recorded signals
  // spins on its event before it sleeps (StreamTimepoint::wait); baton::kHostWaitSpinForever
  // spins for the whole wait. Read once per wait.
  std::atomic<uint64_t> hostWaitSpinNs{kHostWaitSpinNs};

 private:
  // captureMutex_ held.
  void freeNow(const core::Allocation& a) {
    ContextScope scope(driver, config.context, ContextScope::kRelease, "freeing memory");
    switch (tagOf(a)) {
      case MemoryTag::Device:
      case MemoryTag::StreamOrdered:
        // cuMemFree accepts pool memory too; its users are done (the caller guarantees it).
        (void)driver.memFree(a.deviceAddress);
        break;
      case MemoryTag::HostPinned: (void)driver.hostFree(a.host); break;
    }
  }
  // captureMutex_ held.
  void releaseNow(void* memory, uint64_t address) {
    ContextScope scope(driver, config.context, ContextScope::kRelease, "releasing imported memory");
    if (address) (void)driver.memFree(address);
    (void)driver.destroyExternalMemory(memory);
  }
  // A release held during a capture: `allocation`, or imported `memory` and its mapping, or
  // `release` (releaseMemory).
  struct Held {
    core::Allocation allocation;
    void* memory;
    uint64_t address;
    std::function<void()> release;
  };
  std::mutex captureMutex_;
  int captures_ = 0;        // captureMutex_
  std::vector<Held> held_;  // captureMutex_
};

}  // namespace
}  // namespace baton::stream
