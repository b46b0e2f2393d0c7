// StreamDevice: the core::DeviceImpl of a CUDA or HIP device (createDevice, stream_backend.cpp,
// makes it). It owns the device's issuing thread (issue_thread.hpp), creates queues (a stream
// each, stream_queue.hpp), allocates memory and imports native interop objects
// (stream_interop.hpp).
//
// Threads: the core calls it on any thread; each call makes the device's context current for its
// driver calls, and fails with the driver's error when it cannot (ContextScope).
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <pthread.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "backend.hpp"
#include "collectives.hpp"
#include "device_shared.hpp"
#include "graphs.hpp"
#include "issue_thread.hpp"
#include "objects.hpp"
#include "queue_shared.hpp"
#include "shared_memory.hpp"
#include "stream_driver.hpp"
#include "stream_interop.hpp"
#include "stream_queue.hpp"
#include "trace.hpp"

namespace baton::stream {
namespace {

class StreamDevice final : public core::DeviceImpl {
 public:
  StreamDevice(core::Device& device, std::shared_ptr<DeviceShared> shared)
      : device_(device), shared_(std::move(shared)), issuer_(std::make_shared<DeviceIssuer>()) {
    thread_ = std::thread([i = issuer_, d = shared_] { IssueThread(i, d).run(); });
    pthread_setname_np(thread_.native_handle(), "baton-issue");  // for profilers, debuggers
    issuer_->threadId = thread_.get_id();
  }

  // The queues are gone (the core Device destroys them first): the issuing thread exits. It can
  // be this thread (see ~StreamQueue); then it exits after the call that destroyed the device.
  ~StreamDevice() override {
    if (captureStream_) {
      ContextScope scope(shared_->driver, shared_->config.context, ContextScope::kRelease,
                         "destroying the capture stream");
      (void)shared_->driver.streamDestroy(captureStream_);
    }
    issuer_->stop.store(true, std::memory_order_seq_cst);
    issuer_->parker.unpark();
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();
    else
      thread_.join();
  }

  Status createQueue(uint32_t index, core::Queue& queue,
                     std::unique_ptr<core::QueueImpl>* out) override {
    const DriverTable& d = shared_->driver;
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    auto q = std::make_shared<QueueShared>(shared_, &device_, index, queue.label());
    q->issuer = issuer_;
    BATON_TRY(d.streamCreate(&q->stream).context("creating the stream of " + queue.label()));
    if (!shared_->config.blockingSyncEvents)
      BATON_TRY(d.eventCreate(&q->sleepEvent, true).context("creating a blocking-sync event"));
    *out = std::make_unique<StreamQueue>(std::move(q));
    return Status();
  }

  Status allocate(const BufferCreateInfo& info, core::Allocation* out) override {
    const DriverTable& d = shared_->driver;
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    core::Allocation a;
    a.size = info.size;
    if (info.memory == MemoryKind::HostPinned) {
      BATON_TRY(d.hostAlloc(&a.host, &a.deviceAddress, info.size));
      a.native = tagOf(MemoryTag::HostPinned);
    } else {
      BATON_TRY(d.memAlloc(&a.deviceAddress, info.size));
      a.native = tagOf(MemoryTag::Device);
    }
    *out = a;
    return Status();
  }

  void free(const core::Allocation& allocation) override { shared_->freeAllocation(allocation); }

  // Shared memory (shared_memory.hpp): virtual memory management where the driver has it, else
  // IPC memory handles.
  Status allocateShareable(const BufferCreateInfo& info, core::Allocation* out,
                           Ref<core::SharedMemory>* memory) override {
    const DriverTable& d = shared_->driver;
    if (info.memory != MemoryKind::Device)
      return Status(Result::ErrorNotSupported,
                    core::format("%s shares device memory only (a HostPinned buffer is shareable "
                                 "on the host backend)",
                                 device_.label().c_str()));
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    if (d.vmmCreate) return VmmMemory::create(shared_, info.size, out, memory);
    if (d.ipcGetHandle) return IpcExport::create(shared_, *device_.physical(), info, out, memory);
    return Status(Result::ErrorNotSupported,
                  core::format("the %s driver shares no memory across processes", d.name));
  }

  Status importShared(const core::SharedImport& in, core::Allocation* out,
                      Ref<core::SharedMemory>* memory) override {
    const DriverTable& d = shared_->driver;
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    if (d.vmmImport)
      return VmmMemory::import(shared_, *device_.physical(), device_.label(), in, out, memory);
    if (d.ipcOpenHandle)
      return IpcImport::import(shared_, *device_.physical(), device_.label(), in, out, memory);
    return Status(Result::ErrorNotSupported,
                  core::format("the %s driver shares no memory across processes", d.name));
  }

  void setHostWaitSpin(uint64_t spinNs) override {
    shared_->hostWaitSpinNs.store(spinNs, std::memory_order_relaxed);
  }

  bool importsTimelineFd() const override { return shared_->driver.importTimelineFd != nullptr; }
  bool importsMemoryFd() const override { return shared_->driver.importMemoryFd != nullptr; }

  Status importTimelineFd(int fd, uint64_t deviceHandle, Ref<core::DeviceTimeline>* out) override {
    const DriverTable& d = shared_->driver;
    if (!d.importTimelineFd)
      return Status(Result::ErrorNotSupported,
                    core::format("the %s driver cannot import external semaphores", d.name));
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    void* handle = nullptr;
    BATON_TRY(d.importTimelineFd(fd, &handle));
    *out = Ref<core::DeviceTimeline>::adopt(
        new StreamExternalSemaphore(shared_, deviceHandle, handle));
    return Status();
  }

  Status importSharedWord(int fd, uint64_t size, uint64_t offset, uint64_t deviceHandle,
                          Ref<core::DeviceTimeline>* out) override {
    const DriverTable& d = shared_->driver;
    if (!d.hostRegister ||
        !(device_.physical()->properties.capabilities & kCapabilityStreamMemOps64))
      return Status(Result::ErrorNotSupported,
                    core::format("%s has no 64-bit stream memory operations",
                                 device_.physical()->properties.name));
    void* mapping = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapping == MAP_FAILED)
      return core::error(Result::ErrorOutOfHostMemory, "mapping a shared timeline's page: %s",
                         std::strerror(errno));
    ContextScope context(d, shared_->config.context);
    uint64_t address = 0;
    Status st = context.status();
    if (st.ok()) st = d.hostRegister(mapping, size, &address);
    if (!st.ok()) {
      munmap(mapping, size);
      return st.context("registering a shared timeline's page with " +
                        std::string(device_.physical()->properties.name));
    }
    *out = Ref<core::DeviceTimeline>::adopt(
        new StreamSharedWord(shared_, deviceHandle, mapping, size, address + offset));
    return Status();
  }

  bool importsImageFd() const override { return shared_->driver.importImage != nullptr; }

  Status importImageFd(const core::ImageFdImport& in, core::Image& image) override {
    const DriverTable& d = shared_->driver;
    if (!d.importImage)
      return Status(Result::ErrorNotSupported,
                    core::format("the %s driver cannot map image memory as arrays", d.name));
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    ImageImport import;
    import.fd = in.fd;
    import.allocationSize = in.allocationSize;
    import.offset = in.offset;
    import.dedicated = in.dedicated;
    import.colorAttachment = in.colorAttachment;
    import.format = image.info.format;
    import.width = image.info.width;
    import.height = image.info.height;
    import.levels = image.info.mipLevels;
    import.layers = image.info.arrayLayers;
    ImageObjects objects;
    BATON_TRY(d.importImage(import, &objects));
    // The fd is the driver's now; from here on the image's memory releases everything.
    auto owner = Ref<StreamImage>::adopt(new StreamImage(shared_, std::move(objects)));
    const ImageObjects& o = owner->objects();
    for (uint32_t level = 0; level < image.info.mipLevels; ++level) {
      core::Image::Level l;
      l.width = std::max(1u, image.info.width >> level);
      l.height = std::max(1u, image.info.height >> level);
      l.array = o.arrays[level];
      l.surface = o.surfaces[level];
      image.levels.push_back(l);
    }
    image.mipmappedArray = o.mipmap;
    image.texture = o.texture;
    image.memory = std::move(owner);
    return Status();
  }

  Status importMemoryFd(const core::MemoryFdImport& in, core::Allocation* out,
                        Ref<core::Object>* keep) override {
    const DriverTable& d = shared_->driver;
    if (!d.importMemoryFd)
      return Status(Result::ErrorNotSupported,
                    core::format("the %s driver cannot import external memory", d.name));
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    void* memory = nullptr;
    BATON_TRY(d.importMemoryFd(in.fd, in.allocationSize, in.dedicated, &memory));
    // The fd is the driver's now; from here on the import object releases everything.
    auto imported = Ref<StreamExternalMemory>::adopt(new StreamExternalMemory(shared_, memory));
    uint64_t address = 0;
    BATON_TRY(d.mapExternalMemory(memory, in.offset, in.size, &address));
    imported->setAddress(address);
    core::Allocation a;
    a.deviceAddress = address;
    a.size = in.size;
    *out = a;
    *keep = std::move(imported);
    return Status();
  }

  Status prepareGraph(core::CommandList& list, Ref<core::Object>* cacheRef) override {
    const DriverTable& d = shared_->driver;
    if (!d.graphCreate)  // Device::createCommandBuffer refuses graph usage then
      return Status(Result::ErrorNotSupported,
                    core::format("the %s driver has no graph entry points", d.name));
    ContextScope context(d, shared_->config.context);
    BATON_TRY(context.status());
    if (!*cacheRef) *cacheRef = core::makeRef<GraphCache>(shared_);
    auto* cache = static_cast<GraphCache*>(cacheRef->get());
    auto program = core::makeRef<GraphProgram>(shared_, Ref<GraphCache>(cache));
    bool natives = false;
    for (const core::Command& c : list.commands) natives |= c.kind == core::Command::Kind::Native;
    // One capture at a time per device: the capture stream is the device's.
    std::unique_lock<std::mutex> lock(captureMutex_, std::defer_lock);
    if (natives) {
      lock.lock();
      if (!captureStream_)
        BATON_TRY(d.streamCreate(&captureStream_).context("creating the capture stream"));
    }
    const uint64_t traceBegin = core::trace::on() ? core::nowNs() : 0;
    GraphBuilder builder(*shared_, list, *program, *cache);
    Status built = builder.build(natives ? captureStream_ : nullptr);
    if (builder.captureBroken()) {  // a stream that may still capture: a new one next time
      (void)d.streamDestroy(captureStream_);
      captureStream_ = nullptr;
    }
    BATON_TRY(std::move(built));
    if (traceBegin)
      core::trace::span(core::trace::kGraphBuild, 0, traceBegin, list.commands.size());
    list.program = std::move(program);
    return Status();
  }

  Status createCommunicator(const core::CommunicatorSetup& setup,
                            Ref<core::CommunicatorImpl>* out) override {
    return stream::createCommunicator(collectiveDevice(), setup, out);
  }
  CollectiveDevice collectiveDevice() const {
    return CollectiveDevice{&shared_->driver, shared_->config.context, &device_};
  }

 private:
  core::Device& device_;
  std::shared_ptr<DeviceShared> shared_;
  std::shared_ptr<DeviceIssuer> issuer_;
  std::thread thread_;  // the device's issuing thread
  // Graph command buffers: the stream end() captures capturable native callbacks on.
  std::mutex captureMutex_;
  void* captureStream_ = nullptr;
};

}  // namespace
}  // namespace baton::stream
