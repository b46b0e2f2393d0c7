// Helpers of the CUDA-specific tests (and benchmarks): a fixture that skips with the backend's
// reason when CUDA is unavailable, the raw driver (baton's own symbol table, so the test binaries
// run on machines without libcuda too) with a few PTX kernels, and a GPU-side gate: a kernel that
// holds a stream until the host opens it, to observe what baton does while work is pending.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/baton.hpp"
#include "cuda_symbols.hpp"
#include "ptx_kernels.hpp"
#include "test_support.hpp"

namespace baton_test {

// The PTX kernels of ptx_kernels.hpp, loaded into a device's primary context (the one baton's
// queues use).
class Kernels {
 public:
  Kernels() = default;
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;
  ~Kernels() { unload(); }

  // Returns "" on success, else what failed.
  std::string load(int ordinal) {
    const baton::cuda::Symbols& s = baton::cuda::symbols();
    if (CUresult r = s.cuDeviceGet(&device_, ordinal)) return describe(r, "cuDeviceGet");
    if (CUresult r = s.cuDevicePrimaryCtxRetain(&context_, device_))
      return describe(r, "cuDevicePrimaryCtxRetain");
    retained_ = true;
    makeCurrent();
    if (!s.cuModuleLoadData || !s.cuModuleGetFunction || !s.cuLaunchKernel)
      return "the driver lacks cuModuleLoadData/cuModuleGetFunction/cuLaunchKernel";
    if (CUresult r = s.cuModuleLoadData(&module_, kPtxKernels))
      return describe(r, "cuModuleLoadData");
    struct {
      CUfunction* fn;
      const char* name;
    } entries[] = {{&waitFlag, "baton_wait_flag"},
                   {&badWrite, "baton_bad_write"},
                   {&spinNs, "baton_spin_ns"},
                   {&empty, "baton_empty"}};
    for (auto& e : entries)
      if (CUresult r = s.cuModuleGetFunction(e.fn, module_, e.name)) return describe(r, e.name);
    return "";
  }

  void unload() {
    const baton::cuda::Symbols& s = baton::cuda::symbols();
    if (module_) {
      makeCurrent();
      (void)s.cuModuleUnload(module_);  // fails harmlessly after a sticky fault
      module_ = nullptr;
    }
    if (retained_) {
      (void)s.cuDevicePrimaryCtxRelease(device_);
      retained_ = false;
    }
  }

  void makeCurrent() const { (void)baton::cuda::symbols().cuCtxSetCurrent(context_); }

  // Launches `fn` with one thread on `stream`; `params` as cuLaunchKernel takes them.
  static CUresult launch(CUfunction fn, void* stream, void** params) {
    return baton::cuda::symbols().cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0,
                                                 static_cast<CUstream>(stream), params, nullptr);
  }

  static std::string describe(CUresult r, const char* what) {
    return std::string(what) + ": " + baton::cuda::resultName(r);
  }

  CUcontext context() const { return context_; }

  CUfunction waitFlag = nullptr, badWrite = nullptr, spinNs = nullptr, empty = nullptr;

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  bool retained_ = false;
};

// A native callback that launches one kernel with one 64-bit argument (or none).
struct KernelCall {
  CUfunction function = nullptr;
  uint64_t argument = 0;
  bool hasArgument = true;
  std::atomic<int> issued{0};  // how many times the callback ran (issue time)
  CUresult lastResult = CUDA_SUCCESS;

  static baton::Result native(const baton::NativeQueue& q, void* userData) {
    auto* self = static_cast<KernelCall*>(userData);
    self->issued.fetch_add(1);
    void* params[] = {&self->argument};
    self->lastResult =
        Kernels::launch(self->function, q.stream, self->hasArgument ? params : nullptr);
    return self->lastResult == CUDA_SUCCESS ? baton::Result::Success : baton::Result::ErrorDriver;
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
    call_.function = kernels.waitFlag;
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
  void record(baton::CommandBuffer cb) { EXPECT_OK(cb.native(&KernelCall::native, &call_)); }

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

// The fixture: an instance, the CUDA physical devices, a device on the first with 4 queues and
// the PTX kernels in its context. Skips (with the reason) when CUDA is not available.
class CudaTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kQueues = 4;

  void SetUp() override {
    using namespace baton;
    ASSERT_OK(createInstance(sink_.instanceInfo(), instance_.put()));
    uint32_t count = 0;
    ASSERT_OK(instance_->enumerateBackends(&count, nullptr));
    std::vector<BackendInfo> infos(count);
    ASSERT_OK(instance_->enumerateBackends(&count, infos.data()));
    const BackendInfo* cuda = nullptr;
    for (uint32_t i = 0; i < count; ++i)
      if (infos[i].kind == BackendKind::Cuda) cuda = &infos[i];
    if (!cuda || !cuda->compiled) GTEST_SKIP() << "cuda: not compiled into this build";
    if (!cuda->available) GTEST_SKIP() << "cuda: unavailable: " << cuda->reason;
    if (cuda->deviceCount == 0) GTEST_SKIP() << "cuda: no devices";

    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> all(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, all.data()));
    for (uint32_t i = 0; i < count; ++i) {
      PhysicalDeviceProperties p;
      ASSERT_OK(all[i].getProperties(&p));
      if (p.backend == BackendKind::Cuda) {
        cudaDevices_.push_back(all[i]);
        cudaProps_.push_back(p);
      } else if (p.backend == BackendKind::Host && !hostPhysical_) {
        hostPhysical_ = all[i];
      }
    }
    ASSERT_FALSE(cudaDevices_.empty());
    DeviceCreateInfo info;
    info.queueCount = kQueues;
    ASSERT_OK(instance_->createDevice(cudaDevices_[0], info, device_.put()));
    for (uint32_t i = 0; i < kQueues; ++i) {
      Queue q;
      ASSERT_OK(device_->getQueue(i, &q));
      queues_.push_back(q);
    }
    // Tests that launch kernels skip without them (the fake driver of CI has no modules).
    kernelsMissing_ = kernels_.load(static_cast<int>(cudaProps_[0].ordinal));
  }

  // Skips the calling test when the PTX kernels could not be loaded.
#define BATON_REQUIRE_KERNELS() \
  if (!kernelsMissing_.empty()) GTEST_SKIP() << "PTX test kernels unavailable: " << kernelsMissing_

  void TearDown() override {
    // The device first: destroying it waits for its work, which may still run the kernels.
    if (device_) {
      EXPECT_OK(device_.release().destroy()) << "\n" << sink_.dump();
    }
    if (instance_) {
      EXPECT_OK(instance_.release().destroy()) << "\n" << sink_.dump();
    }
    kernels_.unload();
  }

  baton::Queue queue(uint32_t i) const { return queues_[i % queues_.size()]; }

  baton::UniqueSemaphore makeSemaphore(const char* name = nullptr, uint64_t initial = 0) {
    baton::SemaphoreCreateInfo info;
    info.initialValue = initial;
    info.debugName = name;
    baton::UniqueSemaphore s;
    EXPECT_OK(instance_->createSemaphore(info, s.put()));
    return s;
  }

  baton::UniqueBuffer makeBuffer(baton::Device device, uint64_t size, baton::MemoryKind memory) {
    baton::BufferCreateInfo info;
    info.size = size;
    info.memory = memory;
    baton::UniqueBuffer b;
    EXPECT_OK(device.createBuffer(info, b.put()));
    return b;
  }
  baton::UniqueBuffer makeBuffer(uint64_t size, baton::MemoryKind memory) {
    return makeBuffer(*device_, size, memory);
  }

  template <class Record>
  baton::UniqueCommandBuffer makeCommands(baton::Device device, Record&& record) {
    baton::UniqueCommandBuffer cb;
    EXPECT_OK(device.createCommandBuffer(cb.put()));
    EXPECT_OK(cb->begin());
    record(*cb);
    EXPECT_OK(cb->end());
    return cb;
  }
  template <class Record>
  baton::UniqueCommandBuffer makeCommands(Record&& record) {
    return makeCommands(*device_, std::forward<Record>(record));
  }

  static baton::Result submit(baton::Queue q, std::vector<baton::SemaphoreValue> waits,
                              std::vector<baton::CommandBuffer> commandBuffers,
                              std::vector<baton::SemaphoreValue> signals) {
    baton::SubmitInfo info;
    info.waits = waits;
    info.commandBuffers = commandBuffers;
    info.signals = signals;
    return q.submit(info);
  }

  static void* mapped(baton::Buffer b) {
    void* p = nullptr;
    EXPECT_OK(b.map(&p));
    return p;
  }

  MessageSink sink_;
  baton::UniqueInstance instance_;
  std::vector<baton::PhysicalDevice> cudaDevices_;
  std::vector<baton::PhysicalDeviceProperties> cudaProps_;
  baton::PhysicalDevice hostPhysical_;
  baton::UniqueDevice device_;
  std::vector<baton::Queue> queues_;
  Kernels kernels_;
  std::string kernelsMissing_;
};

}  // namespace baton_test
