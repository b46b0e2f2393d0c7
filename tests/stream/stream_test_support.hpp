// Helpers of the tests that CUDA and HIP share (they run on the same stream machinery, impl/stream,
// so one test says what both must do): a fixture parameterised by backend that skips with the
// backend's reason when it is unavailable, the PTX test kernels loaded through the backend's own
// module API, and a GPU-side gate: a kernel that holds a stream until the host opens it, to
// observe what baton does while work is pending.
//
// What a test needs beyond baton's public API — loading and launching kernels, a raw copy on
// baton's stream, fault injection at the backend's one wrapper around driver calls, the names its
// messages use — comes from a small hook table per backend (StreamHooks), defined next to that
// backend's own tests (tests/cuda/cuda_hooks.cpp, tests/hip/hip_hooks.cpp) and registered by
// linking it in. A test binary runs the shared tests on the backends whose hooks it links.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend_fixture.hpp"
#include "baton/baton.hpp"
#include "test_support.hpp"

namespace baton_test {

// The kernels of tests/cuda/ptx_kernels.hpp, as the backend's opaque function handles.
struct KernelSet {
  void* waitFlag = nullptr;  // baton_wait_flag(u32* flag): spins until *flag != 0
  void* badWrite = nullptr;  // baton_bad_write(u32* address): an invalid address faults
  void* spinNs = nullptr;    // baton_spin_ns(u64 ns)
  void* empty = nullptr;     // baton_empty()
  void* state = nullptr;     // the backend's module (and context), freed by unloadKernels
};

// The kernels' names in ptx_kernels.hpp and where KernelSet keeps them.
struct KernelEntry {
  void* KernelSet::*slot;
  const char* name;
};
inline constexpr KernelEntry kKernelEntries[] = {{&KernelSet::waitFlag, "baton_wait_flag"},
                                                 {&KernelSet::badWrite, "baton_bad_write"},
                                                 {&KernelSet::spinNs, "baton_spin_ns"},
                                                 {&KernelSet::empty, "baton_empty"}};

// Injected driver errors, as the backend's own codes.
enum class Fault {
  InvalidValue,    // CUDA_ERROR_INVALID_VALUE / hipErrorInvalidValue: fails one call
  IllegalAddress,  // CUDA_ERROR_ILLEGAL_ADDRESS / hipErrorIllegalAddress: sticky, device lost
};

struct StreamHooks {
  baton::BackendKind kind;
  // Loads the kernels for device `ordinal` into the context baton's queues use. Returns "" on
  // success, else what failed; `set->state` is released by unloadKernels in both cases.
  std::string (*loadKernels)(int ordinal, KernelSet* set);
  void (*unloadKernels)(KernelSet* set);
  // Launches `function` with one thread on `stream` (NativeQueue::stream; the device is current
  // in native callbacks). Returns the driver's result code, 0 on success.
  int (*launch)(void* function, void* stream, void** params);
  // Enqueues a copy between device addresses on `stream`; the driver's result code.
  int (*copyAsync)(uint64_t dst, uint64_t src, uint64_t size, void* stream);
  // Fault injection at the backend's wrapper around every driver call (cuda::injectFault,
  // hip::injectFault): the next call of `api` returns `fault`.
  bool (*injectFault)(const char* api, Fault fault);
  void (*clearFaults)();
  uint64_t (*faultsFired)();
  // What messages must name.
  const char* invalidValueName;    // CUDA_ERROR_INVALID_VALUE / hipErrorInvalidValue
  const char* illegalAddressName;  // CUDA_ERROR_ILLEGAL_ADDRESS / hipErrorIllegalAddress
  const char* launchFailedName;    // CUDA_ERROR_LAUNCH_FAILED / hipErrorLaunchFailure
  const char* memsetApi;           // cuMemsetD32Async / hipMemsetD32Async
  const char* eventRecordApi;      // cuEventRecord / hipEventRecord
  // Graph command buffers: a stream synchronisation (which stream capture does not allow), and
  // the graph launch entry point's name.
  int (*synchronize)(void* stream);
  const char* graphLaunchApi;  // cuGraphLaunch / hipGraphLaunch
  const char* endCaptureApi;   // cuStreamEndCapture / hipStreamEndCapture
};

// The hooks linked into this executable, registered by static objects in the hooks files
// (linked whole, so that the registration is not dropped).
inline std::vector<const StreamHooks*>& linkedStreamHooks() {
  static std::vector<const StreamHooks*> hooks;
  return hooks;
}
struct RegisterStreamHooks {
  explicit RegisterStreamHooks(const StreamHooks& hooks) { linkedStreamHooks().push_back(&hooks); }
};
inline const StreamHooks* findStreamHooks(baton::BackendKind kind) {
  for (const StreamHooks* h : linkedStreamHooks())
    if (h->kind == kind) return h;
  return nullptr;
}
// The backends the shared tests are instantiated for: those whose hooks are linked in. gtest
// evaluates the generator in InitGoogleTest, after every static registration ran.
inline std::vector<baton::BackendKind> linkedStreamBackends() {
  std::vector<baton::BackendKind> kinds;
  for (const StreamHooks* h : linkedStreamHooks()) kinds.push_back(h->kind);
  return kinds;
}

// Instantiates a StreamBackendTest-derived suite for every backend whose hooks are linked in.
#define BATON_INSTANTIATE_FOR_STREAM_BACKENDS(Suite)                                           \
  INSTANTIATE_TEST_SUITE_P(, Suite, ::testing::ValuesIn(::baton_test::linkedStreamBackends()), \
                           ::baton_test::BackendParamName())

// The PTX kernels, loaded into the context of a device's queues.
class Kernels {
 public:
  Kernels() = default;
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;
  ~Kernels() { unload(); }

  // Returns "" on success, else what failed.
  std::string load(const StreamHooks& hooks, int ordinal) {
    unload();
    hooks_ = &hooks;
    return hooks.loadKernels(ordinal, &set_);
  }
  void unload() {
    if (hooks_) hooks_->unloadKernels(&set_);  // fails harmlessly after a sticky fault
    set_ = KernelSet();
    hooks_ = nullptr;
  }

  const StreamHooks* hooks() const { return hooks_; }
  const KernelSet& functions() const { return set_; }

 private:
  const StreamHooks* hooks_ = nullptr;
  KernelSet set_;
};

// Host calls that write a word and read one (of pinned memory, in stream order).
struct HostWrite {
  uint32_t* target;
  uint32_t value;
  static baton::Result run(void* user) {
    auto* self = static_cast<HostWrite*>(user);
    __atomic_store_n(self->target, self->value, __ATOMIC_SEQ_CST);
    return baton::Result::Success;
  }
};

struct HostRead {
  const uint32_t* source;
  std::atomic<uint32_t> seen{0};
  static baton::Result run(void* user) {
    auto* self = static_cast<HostRead*>(user);
    self->seen = __atomic_load_n(self->source, __ATOMIC_SEQ_CST);
    return baton::Result::Success;
  }
};

// A native callback that launches one kernel with one 64-bit argument (or none).
struct KernelCall {
  const StreamHooks* hooks = nullptr;
  void* function = nullptr;
  uint64_t argument = 0;
  bool hasArgument = true;
  std::atomic<int> issued{0};  // how many times the callback ran (issue time)
  int lastResult = 0;          // the driver's result code

  static baton::Result native(const baton::NativeQueue& q, void* userData) {
    auto* self = static_cast<KernelCall*>(userData);
    self->issued.fetch_add(1);
    void* params[] = {&self->argument};
    self->lastResult =
        self->hooks->launch(self->function, q.stream, self->hasArgument ? params : nullptr);
    return self->lastResult == 0 ? baton::Result::Success : baton::Result::ErrorDriver;
  }
};

// A GPU-side gate: submissions recorded with gate.record(cb) hold their queue's stream (a kernel
// spins on a mapped host word) until open(). A watchdog opens it after `limit` so that a failing
// test cannot hang the run.
class Gate {
 public:
  Gate(baton::Device device, const Kernels& kernels,
       std::chrono::milliseconds limit = std::chrono::milliseconds(20000)) {
    baton::BufferCreateInfo info;
    info.size = 4;
    info.memory = baton::MemoryKind::HostPinned;
    EXPECT_OK(device.createBuffer(info, buffer_.put()));
    void* host = nullptr;
    EXPECT_OK(buffer_->map(&host));
    flag_ = static_cast<uint32_t*>(host);
    if (flag_) __atomic_store_n(flag_, 0u, __ATOMIC_SEQ_CST);
    EXPECT_OK(buffer_->getDeviceAddress(&call_.argument));
    call_.hooks = kernels.hooks();
    call_.function = kernels.functions().waitFlag;
    watchdog_ = std::thread([this, limit] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, limit, [&] { return opened_; })) {
        std::fprintf(stderr, "gate watchdog: opening the gate after %lld ms\n",
                     static_cast<long long>(limit.count()));
        if (flag_) __atomic_store_n(flag_, 1u, __ATOMIC_SEQ_CST);
      }
    });
  }
  ~Gate() {
    open();
    watchdog_.join();
  }

  // Records the gate kernel into a command buffer being recorded.
  // Capturable: a graph command buffer replays the kernel on every submission.
  void record(baton::CommandBuffer cb) {
    EXPECT_OK(cb.native(&KernelCall::native, &call_, baton::kNativeCapturable));
  }

  void open() {
    if (flag_) __atomic_store_n(flag_, 1u, __ATOMIC_SEQ_CST);
    std::lock_guard<std::mutex> lock(mutex_);
    opened_ = true;
    cv_.notify_all();
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (flag_) __atomic_store_n(flag_, 0u, __ATOMIC_SEQ_CST);
  }

 private:
  baton::UniqueBuffer buffer_;
  uint32_t* flag_ = nullptr;
  KernelCall call_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool opened_ = false;
  std::thread watchdog_;
};

// The fixture: the conformance fixture's device (the first of the backend, 4 queues; skips with
// the backend's reason where it is unavailable), plus every physical device of the backend, the
// host backend's, and the PTX kernels in the device's context.
class StreamBackendTest : public BackendTest {
 protected:
  static constexpr uint32_t kQueues = 4;

  void SetUp() override {
    hooks_ = findStreamHooks(backend());
    ASSERT_NE(hooks_, nullptr) << baton::backendName(backend()) << ": no test hooks linked in";
    BackendTest::SetUp();  // fails instead of skipping where BATON_TEST_REQUIRE_BACKENDS says
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(queueCount(), kQueues) << props_.name << " offers " << props_.maxQueues << " queues";

    using namespace baton;
    uint32_t count = 0;
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> all(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, all.data()));
    for (uint32_t i = 0; i < count; ++i) {
      PhysicalDeviceProperties p;
      ASSERT_OK(all[i].getProperties(&p));
      if (p.backend == backend()) {
        gpus_.push_back(all[i]);
        gpuProps_.push_back(p);
      } else if (p.backend == BackendKind::Host && !hostPhysical_) {
        hostPhysical_ = all[i];
      }
    }
    // Tests that launch kernels skip without them (the fake driver of CI has no modules).
    kernelsMissing_ = kernels_.load(*hooks_, static_cast<int>(props_.ordinal));
  }

  // Skips the calling test when the PTX kernels could not be loaded.
#define BATON_REQUIRE_KERNELS()                 \
  if (!kernelsMissing_.empty())                 \
  GTEST_SKIP() << baton::backendName(backend()) \
               << ": PTX test kernels unavailable: " << kernelsMissing_

  void TearDown() override {
    // The device first: destroying it waits for its work, which may still run the kernels.
    BackendTest::TearDown();
    kernels_.unload();
  }

  const StreamHooks& hooks() const { return *hooks_; }
  const KernelSet& kernels() const { return kernels_.functions(); }

  using BackendTest::makeSemaphore;
  baton::UniqueSemaphore makeSemaphore(const char* name) { return makeSemaphore(0, name); }

  using BackendTest::makeBuffer;
  baton::UniqueBuffer makeBuffer(baton::Device device, uint64_t size, baton::MemoryKind memory) {
    baton::BufferCreateInfo info;
    info.size = size;
    info.memory = memory;
    baton::UniqueBuffer b;
    EXPECT_OK(device.createBuffer(info, b.put()));
    return b;
  }

  template <class Record>
  baton::UniqueCommandBuffer makeCommands(
      baton::Device device, Record&& record,
      baton::CommandBufferCreateInfo info = testCommandBufferInfo()) {
    baton::UniqueCommandBuffer cb;
    EXPECT_OK(device.createCommandBuffer(info, cb.put()));
    EXPECT_OK(cb->begin());
    record(*cb);
    EXPECT_OK(cb->end());
    return cb;
  }
  template <class Record>
  baton::UniqueCommandBuffer makeCommands(Record&& record) {
    return makeCommands(*device_, std::forward<Record>(record));
  }
  // Always replayed (see testCommandBufferInfo).
  template <class Record>
  baton::UniqueCommandBuffer makeReplayCommands(baton::Device device, Record&& record) {
    return makeCommands(device, std::forward<Record>(record), baton::CommandBufferCreateInfo());
  }
  template <class Record>
  baton::UniqueCommandBuffer makeReplayCommands(Record&& record) {
    return makeReplayCommands(*device_, std::forward<Record>(record));
  }

  const StreamHooks* hooks_ = nullptr;
  std::vector<baton::PhysicalDevice> gpus_;                // every device of the backend
  std::vector<baton::PhysicalDeviceProperties> gpuProps_;  // gpuProps_[0] == props_
  baton::PhysicalDevice hostPhysical_;
  Kernels kernels_;
  std::string kernelsMissing_;
};

}  // namespace baton_test
