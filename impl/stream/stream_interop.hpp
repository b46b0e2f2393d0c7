// Native interop objects (docs/architecture.md, 'Vulkan interop: native and bridged'): a timeline
// semaphore and memory imported from another API (Vulkan) into one device, made by
// StreamDevice::importTimelineFd and importMemoryFd. The issuing thread waits for and signals
// imported semaphores GPU-side (Issuer); each object is destroyed on whichever thread drops its
// last reference, in the device's context.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "backend.hpp"
#include "device_shared.hpp"
#include "object.hpp"
#include "stream_driver.hpp"
#include "watchdog.hpp"

namespace baton::stream {
namespace {

// A timeline semaphore imported from another API (Vulkan) into one device (native interop). Its
// last reference goes with the baton semaphore's counterpart (VulkanMirror) or with the last
// submission that waits for or signals it, whichever is later: the driver requires outstanding
// waits and signals to be done before the object is destroyed.
class StreamExternalSemaphore final : public core::DeviceTimeline {
 public:
  StreamExternalSemaphore(std::shared_ptr<DeviceShared> shared, uint64_t deviceHandle, void* handle)
      : DeviceTimeline(deviceHandle), shared_(std::move(shared)), handle_(handle) {}
  ~StreamExternalSemaphore() override {
    ContextScope scope(shared_->driver, shared_->config.context, ContextScope::kRelease,
                       "destroying an imported semaphore");
    (void)shared_->driver.destroyExternalSemaphore(handle_);
  }
  void* handle() const noexcept { return handle_; }
  Status enqueueWait(void* stream, uint64_t value) override {
    return shared_->driver.waitExternal(handle_, value, stream);
  }
  Status enqueueSignal(void* stream, uint64_t value) override {
    return shared_->driver.signalExternal(handle_, value, stream);
  }

 private:
  std::shared_ptr<DeviceShared> shared_;
  void* handle_;
};

// A timeline shared with other processes, as one device's queues see it (shared_timeline.hpp):
// the shared page mapped once more, for this device alone (each device registers its own
// mapping, so registrations never collide), page-locked with its device address; queues wait for
// the 64-bit value word and write it with stream memory operations. Released with its last
// reference, after every submission that used it finished (their records hold the semaphore).
class StreamSharedWord final : public core::DeviceTimeline {
 public:
  StreamSharedWord(std::shared_ptr<DeviceShared> shared, uint64_t deviceHandle, void* mapping,
                   uint64_t size, uint64_t address)
      : DeviceTimeline(deviceHandle),
        shared_(std::move(shared)),
        mapping_(mapping),
        size_(size),
        address_(address) {}
  // Unregistering synchronizes with the device's work, which may wait for what the thread
  // dropping this (a completion thread, the watchdog) would release: so on the release thread.
  ~StreamSharedWord() override {
    core::Watchdog::releaseLater([shared = std::move(shared_), mapping = mapping_, size = size_] {
      {
        ContextScope scope(shared->driver, shared->config.context, ContextScope::kRelease,
                           "unregistering a shared timeline's page");
        (void)shared->driver.hostUnregister(mapping);
      }
      munmap(mapping, size);
    });
  }
  Status enqueueWait(void* stream, uint64_t value) override {
    return shared_->driver.streamWaitValue64(stream, address_, value);
  }
  Status enqueueSignal(void* stream, uint64_t value) override {
    return shared_->driver.streamWriteValue64(stream, address_, value);
  }

 private:
  std::shared_ptr<DeviceShared> shared_;
  void* mapping_;
  uint64_t size_;
  uint64_t address_;  // the device address of the value word
};

// Memory imported from another API and mapped into the device: the mapping and the import are
// released with the last reference (the Buffer's, which submissions using it hold).
class StreamExternalMemory final : public core::Object {
 public:
  StreamExternalMemory(std::shared_ptr<DeviceShared> shared, void* memory)
      : shared_(std::move(shared)), memory_(memory) {}
  // Through the device, which holds the release while one of its captures is in progress (HIP's
  // hipFree synchronizes the device: DeviceShared::CaptureScope).
  ~StreamExternalMemory() override { shared_->releaseExternalMemory(memory_, address_); }
  void setAddress(uint64_t address) noexcept { address_ = address; }

 private:
  std::shared_ptr<DeviceShared> shared_;
  void* memory_;
  uint64_t address_ = 0;
};

}  // namespace
}  // namespace baton::stream
