// The core objects behind the public handles: Instance, PhysicalDevice, Device, Queue,
// CommandBuffer (and its immutable recording, CommandList) and Buffer. Semaphores are in
// semaphore.hpp. Lifetimes: handles name objects through the handle table; objects hold Refs to
// what they need (a device its instance, a buffer its device, a recording its buffers), so an
// object's memory lives until nothing references it, whatever order handles are destroyed in.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "backend.hpp"
#include "baton/image.hpp"
#include "baton/instance.hpp"
#include "baton/physical_device.hpp"
#include "handle_table.hpp"
#include "mutex.hpp"
#include "object.hpp"
#include "semaphore.hpp"
#include "shared_buffer.hpp"
#include "status.hpp"

namespace baton::core {

// Handles a parent destroys with itself when the user did not.
class ChildSet {
 public:
  void add(uint64_t handle, ObjectType type);
  void remove(uint64_t handle);
  // Removes and returns every child.
  std::vector<std::pair<uint64_t, ObjectType>> takeAll();

 private:
  std::mutex mutex_;
  std::vector<std::pair<uint64_t, ObjectType>> children_;
};

class Instance : public Object {
 public:
  explicit Instance(const InstanceCreateInfo& info);
  ~Instance() override;

  void debug(MessageSeverity severity, const std::string& text) const;
  bool hasCallback() const noexcept { return callback_ != nullptr; }

  std::vector<std::unique_ptr<Backend>> backends;
  BackendInfo backendInfos[kBackendKindCount];
  std::vector<uint64_t> physicalDevices;  // handles, host first
  ChildSet children;                      // devices, semaphores
  uint64_t handle = 0;
  // Numbers the instance's devices from 1 in creation order, so that messages tell two devices
  // of one physical device apart (Device::label).
  std::atomic<uint32_t> deviceSerials{0};

  // Every live semaphore of the instance, for device loss (Device::markLost).
  std::mutex semaphoresMutex;
  std::unordered_set<Semaphore*> semaphores;

 private:
  DebugCallback callback_;
  void* userData_;
};

class PhysicalDevice : public Object {
 public:
  PhysicalDevice(Instance* instance, Backend* backend, uint32_t ordinal)
      : instance(instance),
        backend(backend),
        ordinal(ordinal),
        properties(backend->properties(ordinal)) {}
  Instance* instance;  // the instance owns the physical device's handle and outlives it
  Backend* backend;
  uint32_t ordinal;
  PhysicalDeviceProperties properties;
  uint64_t handle = 0;
};

class Queue;

class Device : public Object {
 public:
  // `debugName` (DeviceCreateInfo::debugName, may be null) is copied into the label.
  Device(Ref<Instance> instance, Ref<PhysicalDevice> physical, const char* debugName);
  ~Device() override;

  Instance* instance() const noexcept { return instance_.get(); }
  PhysicalDevice* physical() const noexcept { return physical_.get(); }
  DeviceImpl* impl() const noexcept { return impl_.get(); }
  BackendKind backend() const noexcept { return physical_->properties.backend; }
  // How messages name the device: "device #2 'physics' (cuda:0)", or "device #2 (cuda:0)"
  // without a debug name; #2 is its serial among the instance's devices, cuda:0 its physical
  // device. Queues are "queue 1 of <label>".
  const std::string& label() const noexcept { return label_; }

  Status init(uint32_t queueCount);
  // Fails held submissions, drains issued work, destroys child handles. Returns how many
  // children were still alive.
  size_t shutdown();

  // Device loss (docs/architecture.md, 'Failure and device loss'): later submissions return
  // ErrorDeviceLost; held submissions fail; every semaphore with a pending timepoint of this device
  // fails with `reason`. Idempotent; callable from any thread without locks held (backend
  // completion threads, waiters).
  void markLost(const std::string& reason);
  bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }
  Status lostStatus() const;

  std::vector<Ref<Queue>> queues;
  std::vector<uint64_t> queueHandles;
  ChildSet children;  // command buffers, buffers, images
  uint64_t handle = 0;

 private:
  Ref<Instance> instance_;
  Ref<PhysicalDevice> physical_;
  std::unique_ptr<DeviceImpl> impl_;
  std::string label_;
  std::atomic<bool> lost_{false};
  mutable std::mutex lostMutex_;
  std::string lostReason_;
};

class Queue : public Object, private Waiter {
 public:
  Queue(Device* device, uint32_t index);
  ~Queue() override;

  Device* device() const noexcept { return device_; }
  uint32_t index() const noexcept { return index_; }
  QueueImpl* impl() const noexcept { return impl_.get(); }
  void setImpl(std::unique_ptr<QueueImpl> impl) { impl_ = std::move(impl); }
  const std::string& label() const noexcept { return label_; }

  // Queues validated submissions in order: issues those whose waits can be met now, holds the
  // rest (and everything behind them).
  Status submit(std::vector<std::unique_ptr<Submission>>& submissions);
  // The same for one submission (the common case): when nothing is held, a submission that can
  // be issued now goes straight to the backend, without passing through held_.
  Status submit(std::unique_ptr<Submission> submission);
  // One scheduler pass: releases held submissions whose waits can now be met. Runs on the
  // thread whose signal decided them (Notifier): a submission released alone may be issued
  // there (QueueImpl::startDirect), as a submit() would issue it.
  void evaluate();
  Status waitIdle(Deadline deadline);
  // Fails every held submission with `why` (device destroyed or lost).
  void failHeld(const Status& why);

  // The queue's track in the timeline trace (trace.cpp), 0 until it is first traced.
  std::atomic<uint32_t> traceTrack{0};

 private:
  enum class Resolution { Ready, Failed, Blocked };
  // Blocked: *blocking is the semaphore of the first wait that cannot be met yet, and node_'s
  // value and wantsTimepoints describe that wait (node_ is never linked while this runs).
  Resolution resolve(Submission& sub, Status* failure, Semaphore** blocking);
  // Whether the backend waits for `w` on the external semaphore its device imported (sets
  // w.external).
  bool waitExternally(Submission::Wait& w) const;
  // Issues or fails the held submissions that can be decided now, in order. With `direct`, a
  // submission released alone may be issued on this thread (QueueImpl::startDirect): then it
  // returns true, and the caller releases mutex_ and calls impl_->finishDirect() at once.
  bool releaseLocked(bool direct = false);
  bool onSemaphoreEvent(WaitNode& node, SemaphoreEvent event, Timepoint* timepoint) override;

  Device* device_;  // the device owns its queues
  uint32_t index_;
  std::string label_;
  std::unique_ptr<QueueImpl> impl_;
  Mutex mutex_;
  std::condition_variable_any heldDrained_;  // held_ became empty; notified only with waiters
  uint32_t drainWaiters_ = 0;                // threads in waitIdle() waiting on heldDrained_
  std::deque<std::unique_ptr<Submission>> held_;
  WaitNode node_;  // linked while the head of held_ is blocked
};

// One rank of a communicator group (baton/communicator.hpp): the public handle's object. The
// backend's CommunicatorImpl does the work; this keeps what the frontend validates against.
class Communicator : public Object {
 public:
  Communicator(Ref<Device> device, Ref<CommunicatorImpl> impl, uint32_t rank, uint32_t rankCount,
               uint64_t timeoutNs, std::string name, std::string label)
      : device(std::move(device)),
        impl(std::move(impl)),
        rank(rank),
        rankCount(rankCount),
        timeoutNs(timeoutNs),
        name(std::move(name)),
        label(std::move(label)) {}
  ~Communicator() override;
  // ErrorInvalidState naming the communicator and its failure, or Success while it is ready.
  Status usable() const;

  Ref<Device> device;
  Ref<CommunicatorImpl> impl;
  const uint32_t rank, rankCount;
  const uint64_t timeoutNs;
  const std::string
      name;  // CommunicatorCreateInfo::debugName ("" without); split and shrink keep it
  const std::string label;  // "communicator 'grads' (rank 1 of 4, device #1 (cuda:0))"
  uint64_t handle = 0;
};

// What a Collective command does (CommandBuffer::allReduce ...).
enum class CollectiveOp : uint8_t {
  AllReduce,
  Broadcast,
  Reduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Send,
  Recv
};
const char* collectiveOpName(CollectiveOp op) noexcept;

class Image;

struct Command {
  enum class Kind {
    Copy,
    Fill,
    Update,
    HostCall,
    Native,
    Collective,
    CopyBufferToImage,  // src -> image, `regions`
    CopyImageToBuffer,  // image -> dst, `regions`
  };
  explicit Command(Kind k) : kind(k) {}
  Kind kind;
  Ref<Buffer> src, dst;
  uint64_t srcOffset = 0, dstOffset = 0, size = 0;
  uint32_t pattern = 0;
  std::vector<uint8_t> data;
  HostCallback hostCallback = nullptr;
  NativeCallback nativeCallback = nullptr;
  uint32_t flags = 0;  // Native: kNativeCapturable; HostCall: kHostCallInfallible
  void* userData = nullptr;
  // Collective: the operation, its communicator and arguments; src/dst and their offsets above
  // (Send: src only; Recv: dst only); `size` is the count in elements.
  Ref<Communicator> communicator;
  CollectiveOp collective = CollectiveOp::AllReduce;
  ElementType elementType = ElementType::Float32;
  ReduceOp reduceOp = ReduceOp::Sum;
  uint32_t peer = 0;  // Broadcast, Reduce: the root; Send, Recv: the peer
  // CopyBufferToImage, CopyImageToBuffer: the image and the regions (checked at record time).
  Ref<Image> image;
  std::vector<BufferImageCopy> regions;

  // Whether the buffers it uses have memory (a queue-ordered alloca ran and no dealloca did):
  // backends check it before they execute the command. Defined after Buffer.
  bool buffersBacked() const noexcept;
};

// An ended recording; immutable once end() returned, shared by every submission of it.
class CommandList : public Object {
 public:
  std::vector<Command> commands;
  // The communicators its collective commands use, each once (submit checks they are usable).
  std::vector<Ref<Communicator>> communicators;
  // Counted by end(), for the backends' release paths: every host call, and those whose error
  // fails the submission (without kHostCallInfallible).
  uint32_t hostCalls = 0, fallibleHostCalls = 0, collectives = 0;
  // Graph command buffers (CommandBufferUsage::Graph): what the backend built at end() for its
  // submissions to launch (DeviceImpl::prepareGraph); null when the list is replayed.
  Ref<Object> program;
};

class CommandBuffer : public Object {
 public:
  CommandBuffer(Ref<Device> device, CommandBufferUsage usage, std::string label)
      : device(std::move(device)), usage(usage), label(std::move(label)) {}
  Ref<Device> device;
  const CommandBufferUsage usage;
  const std::string label;  // "command buffer 'frame'", or "command buffer" without a name
  std::mutex mutex;         // recording is externally synchronised; this keeps submit's read safe
  Ref<CommandList> recording;  // between begin and end
  Ref<CommandList> ended;      // what submit takes
  // Graph command buffers: what the backend keeps from one recording to the next (executable
  // graphs to update in place; DeviceImpl::prepareGraph). Touched only by end().
  Ref<Object> graphCache;
  uint64_t handle = 0;
};

class Buffer : public Object {
 public:
  Buffer(Ref<Device> device, const BufferCreateInfo& info)
      : device(std::move(device)), info(info) {}
  ~Buffer() override;
  Ref<Device> device;
  BufferCreateInfo info;
  Allocation allocation;
  std::atomic<bool> backed{false};  // memory present (always, except alloca before it ran)
  bool queueOrdered = false;        // made by alloca
  // Memory imported from another API (interop/): owned by this object, released with the last
  // reference to the buffer instead of being freed by the backend.
  Ref<Object> imported;
  // Memory shared with other processes (kBufferShareable, Device::importBuffer): likewise owned
  // and released with the last reference; it also makes the buffer's descriptors.
  Ref<SharedMemory> shared;
  uint64_t handle = 0;
};

// An image (baton/image.hpp): texel memory shared with another API, made by an import
// (interop/). What the backend executes copies with: per level, the driver's array and surface
// (GPU backends) or the host mapping and its pitches (the host backend). `memory` owns the
// import and everything made from it (driver objects, the other API's mapping), released with
// the last reference, which command lists that use the image hold.
class Image : public Object {
 public:
  Image(Ref<Device> device, const ImageInfo& info, std::string label)
      : device(std::move(device)),
        info(info),
        texelBytes(imageFormatTexelBytes(info.format)),
        label(std::move(label)) {}
  struct Level {
    uint32_t width = 0, height = 0;
    void* array = nullptr;    // CUarray (layered with layers)
    uint64_t surface = 0;     // CUsurfObject
    uint8_t* host = nullptr;  // host backend: layer 0's first texel
    uint64_t rowPitch = 0, layerPitch = 0;
  };
  Ref<Device> device;
  const ImageInfo info;
  const uint32_t texelBytes;
  const std::string label;  // "image 'frame' (R16G16B16A16_SFLOAT 3840x2160, 1 level, 1 layer)"
  std::vector<Level> levels;
  void* mipmappedArray = nullptr;  // CUmipmappedArray
  uint64_t texture = 0;            // CUtexObject
  Ref<Object> memory;
  uint64_t handle = 0;
};

// How a region's texels lie in its buffer (BufferImageCopy): texels from one row's start to the
// next's, and rows from one layer's start to the next's (0 in the region: tightly).
inline uint64_t regionRowLength(const BufferImageCopy& r) noexcept {
  return r.bufferRowLength ? r.bufferRowLength : r.width;
}
inline uint64_t regionImageHeight(const BufferImageCopy& r) noexcept {
  return r.bufferImageHeight ? r.bufferImageHeight : r.height;
}

// The bytes a region spans in its buffer, from bufferOffset: through the last texel of the last
// row of the last layer. Regions are checked (CommandBuffer::copyBufferToImage) before this.
inline uint64_t regionBufferSpan(const BufferImageCopy& r, uint32_t texelBytes) noexcept {
  return ((uint64_t(r.layerCount) - 1) * regionImageHeight(r) + (r.height - 1)) *
             regionRowLength(r) * texelBytes +
         uint64_t(r.width) * texelBytes;
}

inline bool Command::buffersBacked() const noexcept {
  for (const Ref<Buffer>* b : {&src, &dst})
    if (*b && !(*b)->backed.load(std::memory_order_acquire)) return false;
  return true;
}

}  // namespace baton::core
