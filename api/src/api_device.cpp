// Public entry points of Device.
#include "api_entry.hpp"
#include "baton/device.hpp"
#include "callback_scope.hpp"
#include "trace.hpp"

namespace baton {

namespace core {
Status waitEntries(const core::Instance* instance, Span<const SemaphoreValue> waits, WaitMode mode,
                   uint64_t timeoutNs);
}

static Ref<core::Device> findDevice(uint64_t h, Status* st) {
  return find<core::Device>(h, ObjectType::Device, "device", st);
}

Result Device::destroy() const noexcept {
  // The destroyed object may hold the last reference to its instance: keep the instance
  // alive until entry() has reported through its callback.
  Ref<core::Instance> keepAlive;
  return entry("Device::destroy", [&](const core::Instance*& owner) -> Status {
    Status st;
    {
      Ref<core::Device> dev = findDevice(handle_, &st);
      if (!dev) return st;
      owner = dev->instance();
      BATON_TRY(core::refuseInsideOwnCallback("Device::destroy", dev.get()));
    }
    Ref<Object> o = HandleTable::get().remove(handle_, ObjectType::Device, "device", &st);
    if (!o) return st;
    auto* dev = static_cast<core::Device*>(o.get());
    keepAlive = Ref<core::Instance>(dev->instance());
    owner = keepAlive.get();
    dev->instance()->children.remove(handle_);
    size_t live = dev->shutdown();
    if (live)
      return error(
          Result::ErrorObjectInUse,
          "%s destroyed with %zu live command buffer(s)/buffer(s)/image(s); they were destroyed too",
          dev->label().c_str(), live);
    return Status();
  });
}

Result Device::getQueue(uint32_t index, Queue* queue) const noexcept {
  return entry("Device::getQueue", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(queue, "queue output pointer");
    *queue = Queue();
    if (index >= dev->queueHandles.size())
      return error(Result::ErrorInvalidArgument, "queue index %u out of range: %s has %zu queue(s)",
                   index, dev->label().c_str(), dev->queueHandles.size());
    *queue = Queue(dev->queueHandles[index]);
    return Status();
  });
}

Result Device::getQueueCount(uint32_t* count) const noexcept {
  return entry("Device::getQueueCount", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(count, "count");
    *count = static_cast<uint32_t>(dev->queueHandles.size());
    return Status();
  });
}

Result Device::setHostWaitSpin(uint64_t spinNs) const noexcept {
  return entry("Device::setHostWaitSpin", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    dev->impl()->setHostWaitSpin(spinNs);
    return Status();
  });
}

Result Device::getPhysicalDevice(PhysicalDevice* physicalDevice) const noexcept {
  return entry("Device::getPhysicalDevice", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(physicalDevice, "physical device output pointer");
    *physicalDevice = PhysicalDevice(dev->physical()->handle);
    return Status();
  });
}

Result Device::createCommandBuffer(CommandBuffer* commandBuffer) const noexcept {
  return createCommandBuffer(CommandBufferCreateInfo(), commandBuffer);
}

Result Device::createCommandBuffer(const CommandBufferCreateInfo& info,
                                   CommandBuffer* commandBuffer) const noexcept {
  return entry("Device::createCommandBuffer", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(commandBuffer, "command buffer output pointer");
    *commandBuffer = CommandBuffer();
    if (info.usage != CommandBufferUsage::Replay && info.usage != CommandBufferUsage::Graph)
      return error(Result::ErrorInvalidArgument, "unknown command buffer usage %u",
                   static_cast<unsigned>(info.usage));
    // The host backend replays graph command buffers (command_buffer.hpp); a GPU device without
    // the driver's graph entry points cannot build them.
    if (info.usage == CommandBufferUsage::Graph && dev->backend() != BackendKind::Host &&
        !(dev->physical()->properties.capabilities & kCapabilityGraphCommandBuffers))
      return error(Result::ErrorNotSupported,
                   "%s cannot build graph command buffers: its driver lacks the graph entry "
                   "points (kCapabilityGraphCommandBuffers is clear)",
                   dev->label().c_str());
    if (dev->lost()) return dev->lostStatus();
    std::string label = "command buffer";
    if (info.debugName && info.debugName[0]) label += core::format(" '%s'", info.debugName);
    Ref<core::CommandBuffer> cb = makeRef<core::CommandBuffer>(dev, info.usage, std::move(label));
    uint64_t h = HandleTable::get().insert(cb, ObjectType::CommandBuffer);
    if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
    cb->handle = h;
    dev->children.add(h, ObjectType::CommandBuffer);
    *commandBuffer = CommandBuffer(h);
    return Status();
  });
}

namespace core {
Status validateBufferInfo(const core::Device& dev, const BufferCreateInfo& info) {
  if (info.size == 0) return Status(Result::ErrorInvalidArgument, "buffer size is 0");
  uint64_t caps = dev.physical()->properties.capabilities;
  if (info.memory == MemoryKind::Device && !(caps & kCapabilityDeviceMemory))
    return error(Result::ErrorNotSupported, "%s has no device memory", dev.label().c_str());
  if (info.memory == MemoryKind::HostPinned && !(caps & kCapabilityHostPinnedMemory))
    return error(Result::ErrorNotSupported, "%s has no pinned host memory", dev.label().c_str());
  if (info.memory != MemoryKind::Device && info.memory != MemoryKind::HostPinned)
    return error(Result::ErrorInvalidArgument, "unknown memory kind %u",
                 static_cast<unsigned>(info.memory));
  if (info.flags & ~uint32_t{kBufferShareable})
    return error(Result::ErrorInvalidArgument, "unknown buffer flags 0x%x",
                 static_cast<unsigned>(info.flags & ~uint32_t{kBufferShareable}));
  if ((info.flags & kBufferShareable) && !(caps & kCapabilityShareableMemory))
    return error(Result::ErrorNotSupported,
                 "%s cannot share memory with other processes (kCapabilityShareableMemory is "
                 "clear: its driver lacks %s)",
                 dev.label().c_str(),
                 dev.backend() == BackendKind::Hip
                     ? "the IPC memory handles"
                     : "virtual memory management with POSIX descriptor handles");
  if (info.size > dev.physical()->properties.totalMemory && dev.physical()->properties.totalMemory)
    return error(Result::ErrorOutOfDeviceMemory, "buffer size %llu exceeds the %llu bytes of %s",
                 static_cast<unsigned long long>(info.size),
                 static_cast<unsigned long long>(dev.physical()->properties.totalMemory),
                 dev.label().c_str());
  return Status();
}
}  // namespace core

namespace {
// Publishes a buffer whose memory is backed under a new handle, a child of `dev`.
Status publishBuffer(core::Device& dev, const Ref<core::Buffer>& b, Buffer* out) {
  b->backed.store(true, std::memory_order_release);
  uint64_t h = HandleTable::get().insert(b, ObjectType::Buffer);
  if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
  b->handle = h;
  dev.children.add(h, ObjectType::Buffer);
  *out = Buffer(h);
  return Status();
}
}  // namespace

Result Device::createBuffer(const BufferCreateInfo& info, Buffer* buffer) const noexcept {
  return entry("Device::createBuffer", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(buffer, "buffer output pointer");
    *buffer = Buffer();
    BATON_TRY(validateBufferInfo(*dev, info));
    if (dev->lost()) return dev->lostStatus();
    Ref<core::Buffer> b = makeRef<core::Buffer>(dev, info);
    Status s = info.flags & kBufferShareable
                   ? dev->impl()->allocateShareable(info, &b->allocation, &b->shared)
                   : dev->impl()->allocate(info, &b->allocation);
    if (!s.ok())
      return s.context(format("allocating %llu bytes on %s",
                              static_cast<unsigned long long>(info.size), dev->label().c_str()));
    return publishBuffer(*dev, b, buffer);
  });
}

Result Device::importBuffer(const BufferImportInfo& info, Buffer* buffer) const noexcept {
  return entry("Device::importBuffer", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(buffer, "buffer output pointer");
    *buffer = Buffer();
    if (info.fd < 0)
      return error(Result::ErrorInvalidArgument, "the descriptor %d is not a valid descriptor",
                   info.fd);
    if (info.size == 0) return Status(Result::ErrorInvalidArgument, "buffer size is 0");
    if (info.memory != MemoryKind::Device && info.memory != MemoryKind::HostPinned)
      return error(Result::ErrorInvalidArgument, "unknown memory kind %u",
                   static_cast<unsigned>(info.memory));
    BufferCreateInfo created;
    created.size = info.size;
    created.memory = info.memory;
    created.flags = kBufferShareable;
    if (!(dev->physical()->properties.capabilities & kCapabilityShareableMemory))
      BATON_TRY(validateBufferInfo(*dev, created));  // says why it cannot
    if (dev->lost()) return dev->lostStatus();
    core::SharedImport in;
    in.fd = info.fd;
    in.size = info.size;
    in.memory = info.memory;
    Ref<core::Buffer> b = makeRef<core::Buffer>(dev, created);
    Status s = dev->impl()->importShared(in, &b->allocation, &b->shared);
    if (!s.ok())
      return s.context(format("importing a shared buffer of %llu bytes into %s",
                              static_cast<unsigned long long>(info.size), dev->label().c_str()));
    return publishBuffer(*dev, b, buffer);
  });
}

Result Device::waitIdle(uint64_t timeoutNs) const noexcept {
  return entry("Device::waitIdle", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_TRY(core::refuseInsideOwnCallback("Device::waitIdle", dev.get()));
    Deadline deadline = Deadline::after(timeoutNs);
    core::trace::WaitIdleSlice traced(dev->label());
    for (Ref<core::Queue>& q : dev->queues) {
      Status s = q->waitIdle(deadline);
      traced.setResult(s.code());
      BATON_TRY(s);
    }
    return Status();
  });
}

Result Device::waitSemaphores(Span<const SemaphoreValue> waits, WaitMode mode,
                              uint64_t timeoutNs) const noexcept {
  return entry("Device::waitSemaphores", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = findDevice(handle_, &st);
    if (!dev) return st;
    owner = dev->instance();
    if (dev->lost()) return dev->lostStatus();
    Status s = waitEntries(dev->instance(), waits, mode, timeoutNs);
    if (s.isError() && dev->lost()) return dev->lostStatus();
    return s;
  });
}

}  // namespace baton
