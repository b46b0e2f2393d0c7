// The backend interface: the frontend validates, backends trust (docs/architecture.md, 'Layers
// and files').
//
// The core owns everything that is backend-independent: validation, handles, the semaphore
// timeline, host waits, the deferred-submission scheduler, failure propagation and device loss.
// A backend supplies devices, queues that execute released submissions in order, memory, and —
// for device signals that complete asynchronously — Timepoints attached to semaphores.
//
// Contract of a released submission (QueueImpl::issue): every wait left in it carries a timepoint
// the queue accepted (canWait) or an external semaphore its device imported (Wait::external);
// waits already reached have been removed. The backend must, in
// queue order, wait for those timepoints, execute the commands, and then either complete every
// signal (Semaphore::reach, directly or through a timepoint it attaches with addTimepoint and
// later observes) or fail every signal (failSignals) with the reason. Nothing may be dropped:
// a signal that is neither reached nor failed leaves its waiters hanging.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "baton/buffer.hpp"
#include "baton/command_buffer.hpp"
#include "baton/communicator.hpp"
#include "baton/physical_device.hpp"
#include "clock.hpp"
#include "cpu.hpp"
#include "object.hpp"
#include "semaphore.hpp"
#include "status.hpp"

namespace baton::core {

class Device;
class Queue;
class Buffer;
class Image;
class CommandList;
class SharedMemory;   // shared_buffer.hpp
struct SharedImport;  // shared_buffer.hpp

// Memory a backend allocated for a Buffer.
struct Allocation {
  void* host = nullptr;        // host-visible address, or null
  uint64_t deviceAddress = 0;  // address device work uses
  uint64_t size = 0;
  void* native = nullptr;  // backend-private
};

// A vector with room for N elements inside the object: a submission's waits, signals and command
// lists are almost always one or two each, and three heap allocations per submit were a measurable
// share of its cost. Grows onto the heap beyond N. Not copyable or movable: submissions travel by
// unique_ptr.
template <class T, size_t N>
class InlineVector {
 public:
  InlineVector() noexcept = default;
  ~InlineVector() {
    clear();
    if (data_ != inlineData()) ::operator delete(data_);
  }
  InlineVector(const InlineVector&) = delete;
  InlineVector& operator=(const InlineVector&) = delete;

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  T& front() noexcept { return data_[0]; }
  T& back() noexcept { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void push_back(const T& v) { emplace_back(v); }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) grow(capacity_ * 2);
    T* p = new (data_ + size_) T(std::forward<Args>(args)...);
    ++size_;
    return *p;
  }
  T* erase(T* pos) {
    for (T* p = pos; p + 1 < end(); ++p) *p = std::move(p[1]);
    --size_;
    data_[size_].~T();
    return pos;
  }
  void clear() noexcept {
    for (size_t i = 0; i < size_; ++i) data_[i].~T();
    size_ = 0;
  }

 private:
  T* inlineData() noexcept { return reinterpret_cast<T*>(storage_); }
  void grow(size_t n) {
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T)));
    for (size_t i = 0; i < size_; ++i) {
      new (fresh + i) T(std::move(data_[i]));
      data_[i].~T();
    }
    if (data_ != inlineData()) ::operator delete(data_);
    data_ = fresh;
    capacity_ = n;
  }

  T* data_ = inlineData();
  size_t size_ = 0;
  size_t capacity_ = N;
  alignas(T) unsigned char storage_[N * sizeof(T)];
};

// Recycles the memory of one class's objects. Submissions and recorded timepoints are made by the
// submitting thread and freed by a completion or worker thread, so the allocator's per-thread
// caches never serve them and every submit paid for a trip into the shared heap. Each thread keeps
// up to kLocal free blocks of its own; a thread that frees more than it allocates (a completion
// thread) passes them to a process-wide cache kBatch at a time, and a thread that runs out takes
// kBatch at once. The cache's lock and lines then move between the two threads once per kBatch
// objects instead of once per object. Bounded (kLocal per thread, kCapacity shared); beyond that,
// memory goes back to the heap. Off under AddressSanitizer, which must see each object's own
// allocation to report a use after free. With the prefetch of the next block (operator new) and of
// the next issue-ring slot and outbox record, the CUDA submit got cheaper, and cheaper again once
// those prefetches were PREFETCHW (prefetchForWrite) rather than read prefetches
// (docs/performance.md, 'Measurements behind design choices').
template <class T>
class Recycled {
 public:
  static void* operator new(size_t size) {
#ifndef __SANITIZE_ADDRESS__
    if (size == sizeof(T)) {
      if (Local* l = local(); l && (l->count || cache_.take(*l))) {
        void* p = l->blocks[--l->count];
        // The block the next allocation returns was last written by the thread that freed it
        // (a completion thread): start moving its lines to this core now, so that constructing
        // the next object does not stall on them.
        if (l->count) prefetchBlock(l->blocks[l->count - 1]);
        return p;
      }
    }
#endif
    return ::operator new(size);
  }
  static void operator delete(void* p, size_t size) noexcept {
#ifndef __SANITIZE_ADDRESS__
    if (size == sizeof(T)) {
      if (Local* l = local()) {
        if (l->count == kLocal) cache_.give(*l);
        l->blocks[l->count++] = p;
        return;
      }
    }
#else
    (void)size;  // ASan sees every block: no recycling
#endif
    ::operator delete(p);
  }

 private:
  static constexpr uint32_t kLocal = 64, kBatch = 32, kCapacity = 512;
  static void prefetchBlock(const void* block) noexcept {
    for (size_t line = 0; line < sizeof(T); line += 64)
      core::prefetchForWrite(static_cast<const char*>(block) + line);
  }
  struct Local {
    uint32_t count = 0;
    void* blocks[kLocal];
  };
  struct Cache {
    std::atomic_flag busy;
    uint32_t count = 0;
    void* blocks[kCapacity] = {};

    void lock() noexcept {
      while (busy.test_and_set(std::memory_order_acquire))
        while (busy.test(std::memory_order_relaxed)) {
        }
    }
    void unlock() noexcept { busy.clear(std::memory_order_release); }
    // Moves up to kBatch blocks to an empty `l`; false when there were none.
    bool take(Local& l) noexcept {
      lock();
      uint32_t n = count < kBatch ? count : kBatch;
      count -= n;
      for (uint32_t i = 0; i < n; ++i) l.blocks[i] = blocks[count + i];
      unlock();
      l.count = n;
      return n != 0;
    }
    // Moves kBatch blocks of a full `l` here, or to the heap what does not fit.
    void give(Local& l) noexcept {
      l.count -= kBatch;
      lock();
      uint32_t n = kCapacity - count < kBatch ? kCapacity - count : kBatch;
      for (uint32_t i = 0; i < n; ++i) blocks[count++] = l.blocks[l.count + i];
      unlock();
      for (uint32_t i = n; i < kBatch; ++i) ::operator delete(l.blocks[l.count + i]);
    }
  };
  // The thread's blocks, through a trivial pointer in the initial-exec TLS model (see
  // notifier.cpp: one load, no __tls_get_addr). Null once the thread's thread_local objects are
  // destroyed: objects freed later go to the heap.
  struct Owner {
    Local local;
    ~Owner() {
      tLocal_ = nullptr;
      tGone_ = true;
      for (uint32_t i = 0; i < local.count; ++i) ::operator delete(local.blocks[i]);
    }
  };
  static Local* local() noexcept {
    if (Local* l = tLocal_) [[likely]]
      return l;
    return tGone_ ? nullptr : makeLocal();
  }
  [[gnu::noinline]] static Local* makeLocal() noexcept {
    thread_local Owner owner;
    tLocal_ = &owner.local;
    return tLocal_;
  }

  static inline Cache cache_;
  static inline thread_local Local* tLocal_ __attribute__((tls_model("initial-exec"))) = nullptr;
  static inline thread_local bool tGone_ __attribute__((tls_model("initial-exec"))) = false;
};

struct Submission : Recycled<Submission> {
  enum class Kind { Commands, Alloca, Dealloca };
  struct Wait {
    Ref<Semaphore> semaphore;
    uint64_t value;
    Ref<Timepoint> timepoint;  // set by the scheduler when a recorded signal covers the wait
    // Set by the scheduler instead when nothing covers the wait yet but the semaphore has an
    // external counterpart this queue's device waits for GPU-side (Semaphore::deviceTimeline).
    DeviceTimeline* external = nullptr;  // kept alive by `semaphore` (its counterpart)
  };
  struct Signal {
    Ref<Semaphore> semaphore;
    uint64_t value;
  };
  Kind kind = Kind::Commands;
  InlineVector<Wait, 2> waits;
  InlineVector<Ref<CommandList>, 2> commandLists;
  InlineVector<Signal, 2> signals;
  Ref<Buffer> buffer;    // Alloca, Dealloca
  uint64_t traceId = 0;  // its id in the timeline trace (trace.hpp); 0: not traced
};

// Completes every signal of `sub` (value reached).
void reachSignals(Submission& sub);
// Fails every signal of `sub` with ErrorSemaphoreFailed (or `why`'s code when it is
// ErrorDeviceLost) and a reason built from `why`.
void failSignals(Submission& sub, const Status& why);
// Why a submission on `queueLabel` cannot run: its wait `w` is on a failed semaphore. Names the
// hop and the root cause only, so that messages stay bounded along chains; carries `code`
// (ErrorSemaphoreFailed or ErrorDeviceLost).
Status failedWait(const std::string& queueLabel, const Submission::Wait& w, Result code);

// What DeviceImpl::importMemoryFd maps.
struct MemoryFdImport {
  int fd = -1;                  // taken by the backend on success only
  uint64_t allocationSize = 0;  // the whole exported allocation
  uint64_t offset = 0, size = 0;
  bool dedicated = false;  // a dedicated allocation (the driver must be told)
};

// What DeviceImpl::importImageFd maps: memory exported as OPAQUE_FD holding an image of `info`
// (an optimal-tiled Vulkan image) whose first level starts at `offset`.
struct ImageFdImport {
  int fd = -1;                  // taken by the backend on success only
  uint64_t allocationSize = 0;  // the whole exported allocation
  uint64_t offset = 0;
  bool dedicated = false;        // a dedicated allocation (the driver must be told)
  bool colorAttachment = false;  // the other API renders to it (the driver must be told)
};

// Collectives (baton/communicator.hpp): what a backend's collective engine needs to make one
// rank of a communicator group.
struct CommunicatorSetup {
  CommunicatorId id;
  uint32_t rank = 0, rankCount = 0;
  uint64_t timeoutNs = 0;  // resolved (never 0)
  std::string label;       // how messages name the communicator
};

enum class CollectiveOp : uint8_t;  // objects.hpp

// One rank's communicator, as the backend made it; core::Communicator owns it. The backend's
// queues execute its collective commands (Command::Kind::Collective) and watch it while they run.
class CommunicatorImpl : public Object {
 public:
  // Whether its library takes a call of `op` on `type` (with `reduce`, for the reducing calls)
  // from this rank: ErrorNotSupported naming the operation, the type and the library where the
  // library is known to refuse it, checked when the command is recorded; Success where it is
  // not known to (the call's result then decides, when the submission runs). Arguments are valid
  // enumerators. Thread safe.
  virtual Status supports(CollectiveOp op, ElementType type, ReduceOp reduce) const {
    (void)op, (void)type, (void)reduce;
    return Status();
  }
  // This rank and the group's size, as the library reports them (split and shrink renumber).
  uint32_t rank = 0, rankCount = 0;
  // How messages name it (core::Communicator::label); set before the handle is published, and
  // not changed after.
  std::string label;
  // Whether it failed, and why (a reason naming the communicator, the rank and the error).
  virtual bool failed(std::string* reason) const = 0;
  // ncclCommSplit / ncclCommShrink: *out null for kSplitNoColor.
  virtual Status split(int32_t color, int32_t key, const std::string& label,
                       Ref<CommunicatorImpl>* out) = 0;
  virtual Status shrink(const std::vector<int>& excluded, const std::string& label,
                        Ref<CommunicatorImpl>* out) = 0;
  // Ends the library's communicator: finalize and destroy when it is healthy, abort when it
  // failed (or finalizing took longer than its timeout). Idempotent; the object stays valid.
  virtual Status destroy() = 0;
};

class QueueImpl {
 public:
  virtual ~QueueImpl() = default;
  // Whether this queue can wait for `timepoint` itself (GPU-side or on its own thread), so that
  // a submission waiting on it may be issued before the value is reached.
  virtual bool canWait(const Timepoint& timepoint) const = 0;
  // Takes a released submission; see the contract above. Called in submission order, never
  // concurrently for one queue, under the core queue's lock and inside a Notifier::Scope.
  virtual void issue(std::unique_ptr<Submission> submission) = 0;
  // Direct issue (optional): the submitting thread makes the driver calls itself. Called in
  // place of issue(), with the same contract, for a released submission on a user thread (the
  // thread of a submit(), or of the signal that released a held submission, Queue::evaluate):
  // returns false, leaving `submission` untouched, when the backend cannot issue it here now;
  // returns true once it took the submission and its place in the queue's order. Then the
  // caller releases the core queue's lock and calls finishDirect() at once, on the same thread
  // and inside the same Notifier::Scope: the driver calls (and native callbacks) run there,
  // without the core queue's lock, so that a callback may submit to its own queue.
  virtual bool startDirect(std::unique_ptr<Submission>& submission) {
    (void)submission;
    return false;
  }
  virtual void finishDirect() {}
  // Blocks until everything issued so far has finished, or the deadline (Timeout).
  virtual Status waitIdle(Deadline deadline) = 0;
  // What native callbacks receive.
  virtual NativeQueue native() const = 0;
};

class DeviceImpl {
 public:
  virtual ~DeviceImpl() = default;
  virtual Status createQueue(uint32_t index, Queue& queue, std::unique_ptr<QueueImpl>* out) = 0;
  // Blocking allocation (Device::createBuffer).
  virtual Status allocate(const BufferCreateInfo& info, Allocation* out) = 0;
  // Frees memory of allocate() or of an executed Alloca.
  virtual void free(const Allocation& allocation) = 0;

  // Memory shared with other processes (shared_buffer.hpp): a kBufferShareable buffer's
  // (Device::createBuffer), and the mapping of one another buffer exported (Device::importBuffer,
  // `in` validated). *memory owns the memory, the mapping and the descriptor, and releases them
  // with its last reference (never free()). Both ErrorNotSupported, naming the device and what it
  // lacks, where the device has no kCapabilityShareableMemory.
  virtual Status allocateShareable(const BufferCreateInfo& info, Allocation* out,
                                   Ref<SharedMemory>* memory) {
    (void)info, (void)out, (void)memory;
    return Status(Result::ErrorNotSupported, "this backend shares no memory across processes");
  }
  virtual Status importShared(const SharedImport& in, Allocation* out, Ref<SharedMemory>* memory) {
    (void)in, (void)out, (void)memory;
    return Status(Result::ErrorNotSupported, "this backend shares no memory across processes");
  }

  // Graph command buffers (CommandBufferUsage::Graph): builds what submissions of the ended
  // recording `list` launch, into list.program, reusing what *cache keeps of the command buffer's
  // earlier recordings (backend-private; null the first time). Called by CommandBuffer::end on
  // the recording thread, with no lock held; the list is not yet visible to submit. The default
  // (the host backend) builds nothing: the list is replayed.
  virtual Status prepareGraph(CommandList& list, Ref<Object>* cache) {
    (void)list, (void)cache;
    return Status();
  }

  // Device::setHostWaitSpin: how long a host wait for one of this device's recorded signals
  // spins before it sleeps (kHostWaitSpinForever: the whole wait). Thread safe. A backend whose
  // waiters never spin ignores it.
  virtual void setHostWaitSpin(uint64_t spinNs) { (void)spinNs; }

  // Native interop. Whether this device imports OPAQUE_FD timeline semaphores and memory; the
  // import calls below return ErrorNotSupported when it does not.
  virtual bool importsTimelineFd() const { return false; }
  virtual bool importsMemoryFd() const { return false; }
  // Imports a timeline semaphore's OPAQUE_FD. The backend owns `fd` after success; on failure
  // the caller still does.
  virtual Status importTimelineFd(int fd, uint64_t deviceHandle, Ref<DeviceTimeline>* out) {
    (void)fd, (void)deviceHandle, (void)out;
    return Status(Result::ErrorNotSupported, "this backend imports no external semaphores");
  }
  // Timelines shared with other processes (shared_timeline.hpp): maps the shared page `fd`
  // (borrowed; `size` bytes) for this device and makes the primitive through which its queues
  // wait for and write the 64-bit word at `offset` GPU-side. ErrorNotSupported where the device
  // has no 64-bit stream memory operations: its queues then wait for such values on the host.
  virtual Status importSharedWord(int fd, uint64_t size, uint64_t offset, uint64_t deviceHandle,
                                  Ref<DeviceTimeline>* out) {
    (void)fd, (void)size, (void)offset, (void)deviceHandle, (void)out;
    return Status(Result::ErrorNotSupported,
                  "this backend's queues wait for shared timelines "
                  "on the host");
  }
  // Imports memory exported as OPAQUE_FD and maps [offset, offset + size) of it: *allocation
  // receives the device address; *keep owns the import (the mapping and the driver object are
  // released with its last reference).
  virtual Status importMemoryFd(const MemoryFdImport& import, Allocation* allocation,
                                Ref<Object>* keep) {
    (void)import, (void)allocation, (void)keep;
    return Status(Result::ErrorNotSupported, "this backend imports no external memory");
  }

  // Images (baton/image.hpp, importVulkanImage's native mode). Whether this device maps
  // exported image memory as its own image objects; importImageFd makes them for `image` (whose
  // info and label are set): image.levels (one per mip level, with the driver's array and
  // surface), image.mipmappedArray, image.texture, and image.memory, which owns them all and the
  // import. ErrorNotSupported where the backend or driver cannot (the message says why).
  virtual bool importsImageFd() const { return false; }
  virtual Status importImageFd(const ImageFdImport& import, Image& image) {
    (void)import, (void)image;
    return Status(Result::ErrorNotSupported, "this backend imports no images");
  }

  // Collectives: this device's rank of a communicator group. Blocks until the group is
  // initialised or setup.timeoutNs passed.
  virtual Status createCommunicator(const CommunicatorSetup& setup, Ref<CommunicatorImpl>* out) {
    (void)setup, (void)out;
    return Status(Result::ErrorNotSupported,
                  "the host backend has no collective engine (collectives need the CUDA or HIP "
                  "backend with NCCL or RCCL)");
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  // Loads the driver and enumerates devices. Success, or ErrorBackendUnavailable with the
  // reason (paths tried, the driver's error).
  virtual Status load() = 0;
  virtual uint32_t deviceCount() const = 0;
  // When load() succeeded with no devices: why, in the driver's own words (HIP's runtime loads
  // on a machine without an AMD GPU and answers hipErrorNoDevice). "" when there are devices.
  virtual std::string noDevicesReason() const { return {}; }
  virtual PhysicalDeviceProperties properties(uint32_t ordinal) const = 0;
  virtual Status createDevice(uint32_t ordinal, Device& device,
                              std::unique_ptr<DeviceImpl>* out) = 0;

  // Collectives: the library (loaded on first use), a fresh group id, and a whole group of this
  // process's devices at once (setups[i] for devices[i]; all of this backend).
  virtual CollectiveSupport collectiveSupport() {
    CollectiveSupport s;
    s.backend = kind();
    snprintf(s.reason, sizeof(s.reason), "%s",
             "the host backend has no collective engine (collectives need the CUDA or HIP backend "
             "with NCCL or RCCL)");
    return s;
  }
  virtual Status createCommunicatorId(CommunicatorId* id) {
    (void)id;
    return Status(Result::ErrorNotSupported, collectiveSupport().reason);
  }
  virtual Status createCommunicators(const std::vector<DeviceImpl*>& devices,
                                     const std::vector<CommunicatorSetup>& setups,
                                     std::vector<Ref<CommunicatorImpl>>* out) {
    (void)devices, (void)setups, (void)out;
    return Status(Result::ErrorNotSupported, collectiveSupport().reason);
  }
};

// The backends built into this library, host first. Defined in registry.cpp.
std::vector<std::unique_ptr<Backend>> createBackends();
// Whether a backend kind is compiled in.
bool backendCompiled(BackendKind kind);

}  // namespace baton::core
