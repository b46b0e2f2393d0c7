// The host backend (docs/architecture.md, 'Layers and files'): each queue is a worker thread that
// executes released submissions in order. It is the reference implementation of the semantics and
// the CI target. Semaphores are pure core objects, so host queues interoperate with every backend:
// a wait on a recorded device signal (a Timepoint) is accepted and waited for on the worker thread.
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "backend.hpp"
#include "baton/device.hpp"
#include "callback_scope.hpp"
#include "notifier.hpp"
#include "objects.hpp"
#include "report.hpp"
#include "shared_buffer.hpp"
#include "trace.hpp"

namespace baton::core {
namespace {

constexpr uint64_t kAlignment = 64;

class HostQueue final : public QueueImpl {
 public:
  HostQueue(Device& device, uint32_t index) : device_(device), index_(index) {
    worker_ = std::thread([this] { run(); });
    // For profilers, debuggers and the timeline trace's track names (as the stream backends do).
    pthread_setname_np(worker_.native_handle(), "baton-host");
  }
  ~HostQueue() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_.notify_one();
    worker_.join();
  }

  bool canWait(const Timepoint&) const override { return true; }

  void issue(std::unique_ptr<Submission> submission) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fifo_.push_back(std::move(submission));
      ++issued_;
    }
    ready_.notify_one();
  }

  Status waitIdle(Deadline deadline) override {
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t target = issued_;
    while (completed_ < target) {
      if (deadline.isNever()) {
        idle_.wait(lock);
      } else {
        uint64_t left = deadline.remaining();
        if (left == 0) return Status(Result::Timeout);
        idle_.wait_for(lock, std::chrono::nanoseconds(left));
      }
    }
    return Status();
  }

  NativeQueue native() const override {
    NativeQueue q;
    q.backend = BackendKind::Host;
    q.queueIndex = index_;
    return q;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return stop_ || !fifo_.empty(); });
      if (fifo_.empty()) return;  // stop_ with nothing left
      std::unique_ptr<Submission> sub = std::move(fifo_.front());
      fifo_.pop_front();
      lock.unlock();
      execute(*sub);
      sub.reset();  // drop references (semaphores, buffers) before reporting idle
      lock.lock();
      ++completed_;
      idle_.notify_all();
    }
  }

  // No Notifier::Scope here: user callbacks run inside, and a callback that signals a semaphore
  // and then waits for work that signal releases must see that release happen on return from
  // its signal call, not when execute() ends (that would deadlock). reach/fail open their own.
  void execute(Submission& sub) {
    for (Submission::Wait& w : sub.waits) {
      if (!w.timepoint) continue;
      Status s = w.timepoint->wait(Deadline::never());
      if (!s.ok()) {
        w.timepoint->device()->markLost(s.message());
        failSignals(sub, s.context(format("host queue %u waiting for semaphore '%s' >= %llu",
                                          index_, w.semaphore->name().c_str(),
                                          static_cast<unsigned long long>(w.value))));
        trace::completed(sub.traceId);
        return;
      }
    }
    trace::issued(sub.traceId);  // executes from here: the trace's slice of the submission
    Status s = run(sub);
    trace::completed(sub.traceId);  // before the signals: what they release comes after it
    if (!s.ok()) {
      failSignals(sub, s);
      return;
    }
    reachSignals(sub);
  }

  static void* hostPointer(const Buffer& b, uint64_t offset) {
    return static_cast<uint8_t*>(b.allocation.host) + offset;
  }

  Status run(Submission& sub) {
    switch (sub.kind) {
      case Submission::Kind::Alloca: {
        Status s = device_.impl()->allocate(sub.buffer->info, &sub.buffer->allocation);
        if (!s.ok()) return s.context("queue-ordered allocation");
        sub.buffer->backed.store(true, std::memory_order_release);
        return Status();
      }
      case Submission::Kind::Dealloca:
        if (sub.buffer->backed.exchange(false, std::memory_order_acq_rel))
          device_.impl()->free(sub.buffer->allocation);
        return Status();
      case Submission::Kind::Commands: break;
    }
    for (const Ref<CommandList>& list : sub.commandLists) {
      for (const Command& c : list->commands) {
        if (!c.buffersBacked())
          return Status(Result::ErrorInvalidState,
                        "a command used a buffer whose queue-ordered allocation had not run "
                        "(or that was already freed): order it after the alloca's signal");
        switch (c.kind) {
          case Command::Kind::Copy:
            std::memmove(hostPointer(*c.dst, c.dstOffset), hostPointer(*c.src, c.srcOffset),
                         c.size);
            break;
          case Command::Kind::Fill: {
            auto* p = static_cast<uint32_t*>(hostPointer(*c.dst, c.dstOffset));
            for (uint64_t i = 0; i < c.size / 4; ++i) p[i] = c.pattern;
            break;
          }
          case Command::Kind::Update:
            std::memcpy(hostPointer(*c.dst, c.dstOffset), c.data.data(), c.size);
            break;
          case Command::Kind::HostCall: {
            Result r;
            {
              CallbackScope running(&device_, index_, CallbackScope::kHostCall, sub.traceId);
              r = c.hostCallback(c.userData);
            }
            if (isError(r) && (c.flags & kHostCallInfallible)) {
              message(device_.instance(), MessageSeverity::Warning,
                      format("an infallible hostCall on host queue %u returned %s; the "
                             "submission goes on (kHostCallInfallible)",
                             index_, resultName(r)));
            } else if (isError(r)) {
              return error(Result::ErrorHostCallFailed, "hostCall on host queue %u returned %s",
                           index_, resultName(r));
            }
            break;
          }
          case Command::Kind::Native: {
            Result r;
            {
              CallbackScope running(&device_, index_, CallbackScope::kNative, sub.traceId);
              r = c.nativeCallback(native(), c.userData);
            }
            if (isError(r))
              return error(Result::ErrorHostCallFailed,
                           "native callback on host queue %u returned %s", index_, resultName(r));
            break;
          }
          case Command::Kind::Collective:
            // Unreachable: a host device makes no communicator, and a command buffer records
            // only its own device's.
            return Status(Result::ErrorNotSupported, "the host backend has no collective engine");
          case Command::Kind::CopyBufferToImage:
          case Command::Kind::CopyImageToBuffer: copyImage(c); break;
        }
      }
    }
    return Status();
  }

  // A copy between a buffer and a host-mapped image (the bridged import of a linear image):
  // row by row, with the image's pitches (core::Image::Level) and the region's buffer layout.
  void copyImage(const Command& c) {
    const bool toImage = c.kind == Command::Kind::CopyBufferToImage;
    const core::Buffer& buffer = toImage ? *c.src : *c.dst;
    const uint32_t texel = c.image->texelBytes;
    for (const BufferImageCopy& r : c.regions) {
      const core::Image::Level& level = c.image->levels[r.mipLevel];
      const uint64_t bufferPitch = core::regionRowLength(r) * texel;
      const uint64_t bufferRows = core::regionImageHeight(r);
      const size_t rowBytes = size_t(r.width) * texel;
      auto* first = static_cast<uint8_t*>(hostPointer(buffer, r.bufferOffset));
      for (uint32_t layer = 0; layer < r.layerCount; ++layer) {
        for (uint32_t row = 0; row < r.height; ++row) {
          uint8_t* inBuffer = first + (layer * bufferRows + row) * bufferPitch;
          uint8_t* inImage = level.host + (r.baseArrayLayer + layer) * level.layerPitch +
                             (r.y + row) * level.rowPitch + size_t(r.x) * texel;
          if (toImage)
            std::memcpy(inImage, inBuffer, rowBytes);
          else
            std::memcpy(inBuffer, inImage, rowBytes);
        }
      }
    }
  }

  Device& device_;
  uint32_t index_;
  std::mutex mutex_;
  std::condition_variable ready_, idle_;
  std::deque<std::unique_ptr<Submission>> fifo_;
  uint64_t issued_ = 0, completed_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

// A shareable buffer's memory on the host backend: the whole envelope memfd (header page, then the
// bytes) mapped shared, so that every process that maps it sees the same bytes. The memfd lives
// as long as a mapping or a descriptor of it does, in any process: the kernel's rule, which is the
// lifetime kBufferShareable promises.
class HostSharedMemory final : public SharedMemory {
 public:
  HostSharedMemory(Envelope envelope, void* mapping, uint64_t bytes)
      : envelope_(std::move(envelope)), mapping_(mapping), bytes_(bytes) {}
  ~HostSharedMemory() override { munmap(mapping_, bytes_); }
  Status exportFd(int* fd) override { return envelope_.exportFd(fd); }
  void* data() const noexcept { return static_cast<char*>(mapping_) + kEnvelopeHeaderSize; }

  // Maps the envelope's bytes after the header page.
  static Status map(Envelope envelope, Ref<SharedMemory>* out, void** data) {
    const uint64_t bytes = kEnvelopeHeaderSize + envelope.header()->dataBytes;
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, envelope.fd(), 0);
    if (m == MAP_FAILED)
      return error(Result::ErrorOutOfHostMemory, "mapping a shared buffer's %llu bytes: %s",
                   static_cast<unsigned long long>(bytes), std::strerror(errno));
    auto memory = makeRef<HostSharedMemory>(std::move(envelope), m, bytes);
    *data = memory->data();
    *out = std::move(memory);
    return Status();
  }

 private:
  Envelope envelope_;
  void* mapping_;
  uint64_t bytes_;
};

class HostDevice final : public DeviceImpl {
 public:
  explicit HostDevice(Device& device) : device_(device) {}

  Status createQueue(uint32_t index, Queue&, std::unique_ptr<QueueImpl>* out) override {
    *out = std::make_unique<HostQueue>(device_, index);
    return Status();
  }

  Status allocate(const BufferCreateInfo& info, Allocation* out) override {
    uint64_t size = (info.size + kAlignment - 1) / kAlignment * kAlignment;
    void* p = size >= info.size ? std::aligned_alloc(kAlignment, size) : nullptr;
    if (!p)
      return error(Result::ErrorOutOfDeviceMemory, "host allocation of %llu bytes failed",
                   static_cast<unsigned long long>(info.size));
    std::memset(p, 0, size);
    out->host = p;
    out->deviceAddress = reinterpret_cast<uintptr_t>(p);
    out->size = info.size;
    return Status();
  }

  void free(const Allocation& allocation) override { std::free(allocation.host); }

  Status allocateShareable(const BufferCreateInfo& info, Allocation* out,
                           Ref<SharedMemory>* memory) override {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t bytes = (info.size + page - 1) / page * page;
    if (bytes < info.size)
      return error(Result::ErrorOutOfDeviceMemory, "a shared buffer of %llu bytes",
                   static_cast<unsigned long long>(info.size));
    EnvelopeInfo e;
    e.layout = EnvelopeLayout::HostMemory;
    e.device = &device_.physical()->properties;
    e.size = info.size;
    e.memory = info.memory;
    e.dataBytes = bytes;
    Envelope envelope;
    BATON_TRY(createEnvelope(e, &envelope));
    publishEnvelope(envelope);
    void* data = nullptr;
    BATON_TRY(HostSharedMemory::map(std::move(envelope), memory, &data));
    setAllocation(data, info.size, out);
    return Status();
  }

  Status importShared(const SharedImport& in, Allocation* out, Ref<SharedMemory>* memory) override {
    Envelope envelope;
    BATON_TRY(openEnvelope(in, device_.physical()->properties, device_.label(),
                           EnvelopeLayout::HostMemory, &envelope));
    void* data = nullptr;
    BATON_TRY(HostSharedMemory::map(std::move(envelope), memory, &data));
    setAllocation(data, in.size, out);
    return Status();
  }

 private:
  static void setAllocation(void* data, uint64_t size, Allocation* out) {
    out->host = data;
    out->deviceAddress = reinterpret_cast<uintptr_t>(data);
    out->size = size;
  }

  Device& device_;
};

class HostBackend final : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::Host; }
  Status load() override { return Status(); }
  uint32_t deviceCount() const override { return 1; }

  PhysicalDeviceProperties properties(uint32_t) const override {
    PhysicalDeviceProperties p;
    p.backend = BackendKind::Host;
    std::snprintf(p.name, sizeof p.name, "host (%u CPU threads)",
                  std::max(1u, std::thread::hardware_concurrency()));
    static const char kUuid[16] = {'b', 'a', 't', 'o', 'n', '-', 'h', 'o',
                                   's', 't', '-', 'd', 'e', 'v', '0', '1'};
    std::memcpy(p.uuid, kUuid, sizeof p.uuid);
    long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    p.totalMemory = pages > 0 && pageSize > 0 ? static_cast<uint64_t>(pages) * pageSize : 0;
    p.maxQueues = kMaxQueues;
    p.capabilities = kCapabilityDeviceMemory | kCapabilityHostPinnedMemory |
                     kCapabilityStreamOrderedAlloc | kCapabilityHostMappedDeviceMemory |
                     kCapabilityShareableMemory;
    return p;
  }

  Status createDevice(uint32_t, Device& device, std::unique_ptr<DeviceImpl>* out) override {
    *out = std::make_unique<HostDevice>(device);
    return Status();
  }
};

}  // namespace

std::unique_ptr<Backend> createHostBackend() { return std::make_unique<HostBackend>(); }

}  // namespace baton::core
