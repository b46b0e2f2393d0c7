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
#include <mutex>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "device_shared.hpp"
#include "object.hpp"
#include "stream_driver.hpp"
#include "watchdog.hpp"

namespace baton::stream {
namespace {

// A timeline semaphore imported from another API (Vulkan) into one device (native interop). Its
// last reference goes with the baton semaphore's counterpart (VulkanMirror, VulkanFdTimeline) or
// with the last submission that waits for or signals it, or the last watch, whichever is later:
// the driver requires outstanding waits and signals to be done before the object is destroyed.
//
// Host access (DeviceTimeline::hostSignal, watch), for a counterpart that has no Vulkan device to
// ask: host signals go through one stream of its own, in order; each watch takes an idle stream
// of a pool (or makes one), waits there for its value and then runs a host function that reports
// it. A stream goes back to the pool when its watch ends; the pool is destroyed with the object,
// when no watch is pending (each holds a reference).
class StreamExternalSemaphore final : public core::DeviceTimeline {
 public:
  StreamExternalSemaphore(std::shared_ptr<DeviceShared> shared, uint64_t deviceHandle, void* handle)
      : DeviceTimeline(deviceHandle), shared_(std::move(shared)), handle_(handle) {}
  ~StreamExternalSemaphore() override {
    ContextScope scope(shared_->driver, shared_->config.context, ContextScope::kRelease,
                       "destroying an imported semaphore");
    const DriverTable& d = shared_->driver;
    // The driver must be done with the host signals before the semaphore goes.
    if (signalStream_) {
      (void)d.streamSynchronize(signalStream_);
      (void)d.streamDestroy(signalStream_);
    }
    for (void* stream : idleStreams_) (void)d.streamDestroy(stream);
    (void)d.destroyExternalSemaphore(handle_);
  }
  void* handle() const noexcept { return handle_; }
  Status enqueueWait(void* stream, uint64_t value) override {
    return shared_->driver.waitExternal(handle_, value, stream);
  }
  Status enqueueSignal(void* stream, uint64_t value) override {
    return shared_->driver.signalExternal(handle_, value, stream);
  }

  Status hostSignal(uint64_t value) override {
    const DriverTable& d = shared_->driver;
    std::lock_guard<std::mutex> lock(signalMutex_);
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    if (!signalStream_) BATON_TRY(d.streamCreate(&signalStream_));
    return d.signalExternal(handle_, value, signalStream_);
  }

  Status watch(uint64_t value, core::WatchSink* sink, Ref<Object> keep) override {
    const DriverTable& d = shared_->driver;
    if (!d.launchHostFunc)
      return Status(Result::ErrorNotSupported,
                    core::format("the %s driver has no host functions", d.name));
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    void* stream = nullptr;
    {
      std::lock_guard<std::mutex> lock(poolMutex_);
      if (!idleStreams_.empty()) {
        stream = idleStreams_.back();
        idleStreams_.pop_back();
      }
    }
    if (!stream) BATON_TRY(d.streamCreate(&stream));
    auto* w = new Watch{Ref<StreamExternalSemaphore>(this), stream, value, sink, std::move(keep)};
    Status st = d.waitExternal(handle_, value, stream);
    if (st.ok()) st = d.launchHostFunc(stream, &StreamExternalSemaphore::watched, w);
    if (!st.ok()) {
      // Whatever was enqueued before the failure stays with the stream, which is not reused.
      (void)d.streamDestroy(stream);
      delete w;
    }
    return st;
  }

 private:
  struct Watch {
    Ref<StreamExternalSemaphore> self;
    void* stream;
    uint64_t value;
    core::WatchSink* sink;
    Ref<Object> keep;
  };
  // On a driver thread: no driver call here, and the references go on the release thread (the
  // last one destroys streams and the import).
  static void watched(void* userData) {
    auto* w = static_cast<Watch*>(userData);
    w->sink->reached(w->value);
    {
      std::lock_guard<std::mutex> lock(w->self->poolMutex_);
      w->self->idleStreams_.push_back(w->stream);
    }
    core::Watchdog::releaseLater([w] { delete w; });
  }

  std::shared_ptr<DeviceShared> shared_;
  void* handle_;
  std::mutex signalMutex_;  // orders host signals; guards signalStream_
  void* signalStream_ = nullptr;
  std::mutex poolMutex_;  // a leaf lock; guards idleStreams_
  std::vector<void*> idleStreams_;
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

// What an image of this device is made of (DriverTable::importImage): released with the core
// Image's last reference (command lists that copy it hold it), in the device's context.
class StreamImage final : public core::Object {
 public:
  StreamImage(std::shared_ptr<DeviceShared> shared, ImageObjects objects)
      : shared_(std::move(shared)), objects_(std::move(objects)) {}
  ~StreamImage() override {
    ContextScope scope(shared_->driver, shared_->config.context, ContextScope::kRelease,
                       "releasing an imported image");
    shared_->driver.releaseImage(objects_);
  }
  const ImageObjects& objects() const noexcept { return objects_; }

 private:
  std::shared_ptr<DeviceShared> shared_;
  ImageObjects objects_;
};

}  // namespace
}  // namespace baton::stream
