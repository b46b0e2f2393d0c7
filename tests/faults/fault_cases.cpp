// Focused fault cases next to the sweep (fault_sweep.cpp): one injected driver failure each, at a
// chosen call, and exactly what must follow. Each pins a rule the sweep checks only in aggregate:
//   - a failed capability or memory-pool query (cuDeviceGetAttribute, cuMemPoolCreate,
//     cuMemPoolSetAttribute / hipDeviceGetAttribute, hipDeviceGetDefaultMemPool) fails the
//     enumeration or the device's creation, naming the call and its error; it does not leave a
//     device with a capability silently missing (cuda_backend.cpp and hip_backend.cpp, describe);
//   - a failed context switch (cuCtxSetCurrent / cuCtxGetCurrent, hipSetDevice / hipGetDevice)
//     fails the operation that needed the context, naming the call; on the issuing thread, the
//     submission whose work would have run without it, whose signal fails with that message;
//     releases go ahead and warn; a failed restore warns (stream_driver.hpp, ContextScope);
//   - a failed queue-ordered free (cuMemFreeAsync / hipFreeAsync) after deallocaBuffer returned
//     Success: the handle is consumed, the signal fails naming the call, and the memory is still
//     released (the fake driver counts its live allocations, so a leak fails here without a leak
//     checker too); a deallocaBuffer that returns an error consumed nothing (queue.hpp);
//   - Semaphore::fail on a semaphore that device loss failed returns ErrorDeviceLost, as
//     semaphore.hpp documents;
//   - after device loss, a queue whose waitIdle returned holds no semaphore: the submissions the
//     issuing thread fails from then on are let go before they count as finished, so that
//     Semaphore::destroy right after succeeds.
// Written once for CUDA and HIP (both on impl/stream and the same wrapper), on the backends whose
// fault hooks are linked in, like the sweep; on the fake driver of tests/cuda with two devices.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"
#include "collectives.hpp"
#include "fake_cuda.hpp"
#include "fault_hooks.hpp"
#include "stream_backend.hpp"
#include "test_support.hpp"

namespace baton_test {
namespace {

using baton::Result;

// A counter of the fake module that the environment variable `env` names (the one baton loaded):
// `field` of what its `symbol` fills in; -1 where that module is not the fake (a real driver).
template <class Stats>
int64_t fakeCounter(const char* env, const char* symbol, uint64_t Stats::*field) {
  const char* path = std::getenv(env);
  if (!path || !*path) return -1;
  void* library = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!library) return -1;
  auto* stats = reinterpret_cast<void (*)(Stats*)>(dlsym(library, symbol));
  Stats st{};
  if (stats) stats(&st);
  dlclose(library);
  return stats ? static_cast<int64_t>(st.*field) : -1;
}

// Allocations the fake driver holds (BatonFakeCudaStats::allocationsLive); -1 with a real driver.
int64_t driverAllocations(const FaultHooks& hooks) {
  return fakeCounter(hooks.driverEnv, "batonFakeCudaStats", &BatonFakeCudaStats::allocationsLive);
}

// Whether `message` names the call and the error.
::testing::AssertionResult names(const std::string& message, const char* api, const char* error) {
  if (containsText(message, api) && containsText(message, error))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the message does not name " << api << " and " << error << ": \"" << message << "\"";
}

class FaultCaseTest : public ::testing::TestWithParam<baton::BackendKind> {
 protected:
  void SetUp() override {
    for (const FaultHooks* h : linkedFaultHooks())
      if (h->kind == GetParam()) hooks_ = h;
    ASSERT_NE(hooks_, nullptr);
    hooks_->clear();
    baton::UniqueInstance probe;
    ASSERT_OK(baton::createInstance(baton::InstanceCreateInfo(), probe.put()));
    const baton::BackendInfo info = backendInfo(*probe);
    if (!info.available || info.deviceCount == 0) {
      if (backendRequired(GetParam()))
        FAIL() << backendName() << " unavailable: " << info.reason
               << " (required by BATON_TEST_REQUIRE_BACKENDS)";
      GTEST_SKIP() << backendName() << " unavailable: " << info.reason;
    }
  }
  void TearDown() override {
    if (hooks_) hooks_->clear();
  }

  const FaultHooks& hooks() const { return *hooks_; }
  const char* backendName() const { return baton::backendName(GetParam()); }
  const char* errorName(FaultKind k) const { return hooks_->errorName[static_cast<size_t>(k)]; }
  bool inject(const char* api, FaultKind k, uint32_t skip = 0) {
    return hooks_->inject(api, k, skip, /*afterCall=*/false);
  }

  baton::BackendInfo backendInfo(baton::Instance instance) const {
    uint32_t n = 0;
    EXPECT_OK(instance.enumerateBackends(&n, nullptr));
    std::vector<baton::BackendInfo> infos(n);
    EXPECT_OK(instance.enumerateBackends(&n, infos.data()));
    for (const baton::BackendInfo& b : infos)
      if (b.kind == GetParam()) return b;
    return baton::BackendInfo();
  }

  // The backend's physical devices.
  std::vector<baton::PhysicalDevice> gpus(baton::Instance instance) const {
    uint32_t n = 0;
    EXPECT_OK(instance.enumeratePhysicalDevices(&n, nullptr));
    std::vector<baton::PhysicalDevice> all(n);
    EXPECT_OK(instance.enumeratePhysicalDevices(&n, all.data()));
    std::vector<baton::PhysicalDevice> out;
    for (baton::PhysicalDevice d : all) {
      baton::PhysicalDeviceProperties p;
      if (d.getProperties(&p) == Result::Success && p.backend == GetParam()) out.push_back(d);
    }
    return out;
  }

  // An instance with a device of the backend (2 queues) whose threads have all started and made
  // the device's context current: every queue ran a submission to completion, so that a fault
  // injected afterwards fires on the thread the test means, not on a thread still starting.
  void makeDevice(uint32_t queueCount = 2) {
    ASSERT_OK(baton::createInstance(sink_.instanceInfo(), instance_.put()));
    std::vector<baton::PhysicalDevice> devices = gpus(*instance_);
    ASSERT_FALSE(devices.empty());
    ASSERT_OK(devices[0].getProperties(&props_));
    baton::DeviceCreateInfo info;
    info.queueCount = queueCount;
    ASSERT_OK(instance_->createDevice(devices[0], info, device_.put()));
    for (uint32_t i = 0; i < info.queueCount; ++i) {
      baton::Queue q;
      ASSERT_OK(device_->getQueue(i, &q));
      queues_.push_back(q);
      baton::UniqueSemaphore s = semaphore();
      ASSERT_OK(submit(q, {}, {{*s, 1}}));
      ASSERT_OK(s->wait(1, kLongNs));
      ASSERT_OK(q.waitIdle(kLongNs));
    }
  }

  baton::UniqueSemaphore semaphore() {
    baton::UniqueSemaphore s;
    EXPECT_OK(instance_->createSemaphore(baton::SemaphoreCreateInfo(), s.put()));
    return s;
  }

  Result submit(baton::Queue q, std::vector<baton::CommandBuffer> cbs,
                std::vector<baton::SemaphoreValue> signals) {
    baton::SubmitInfo info;
    info.commandBuffers = cbs;
    info.signals = signals;
    return q.submit({&info, 1});
  }

  std::string failureReason(baton::Semaphore s) {
    char reason[1024] = {};
    EXPECT_OK(s.getFailureReason(reason, sizeof reason));
    return reason;
  }

  // Waits (bounded) for the fake driver's live allocations to come back to `count`.
  void expectAllocations(int64_t count) {
    if (count < 0) return;  // a real driver: LeakSanitizer checks instead
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (driverAllocations(hooks()) != count && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(driverAllocations(hooks()), count) << "driver allocations leaked or freed twice";
  }

  const FaultHooks* hooks_ = nullptr;
  MessageSink sink_;
  baton::UniqueInstance instance_;
  baton::PhysicalDeviceProperties props_;
  baton::UniqueDevice device_;
  std::vector<baton::Queue> queues_;
};

// ---- capability and memory-pool queries -----------------------------------------------------

// Every capability query of the enumeration, failed in turn: the backend is unavailable, and
// its reason names the query and the driver's error, rather than the devices losing a capability
// that a later call could only call missing ("has no pinned host memory").
TEST_P(FaultCaseTest, AFailedCapabilityQueryFailsTheEnumerationNamingIt) {
  hooks().record(true);
  {
    baton::UniqueInstance instance;
    ASSERT_OK(baton::createInstance(baton::InstanceCreateInfo(), instance.put()));
  }
  hooks().record(false);
  uint64_t queries = 0;
  for (const baton::stream::CallCount& c : hooks().counts())
    if (std::string(c.api) == hooks().attributeApi) queries = c.calls;
  ASSERT_GT(queries, 0u) << "the enumeration made no " << hooks().attributeApi << " call";
  for (uint32_t k = 0; k < queries; ++k) {
    for (FaultKind fault : {FaultKind::OutOfMemory, FaultKind::InvalidValue}) {
      SCOPED_TRACE(std::string(hooks().attributeApi) + " #" + std::to_string(k) + ", " +
                   errorName(fault));
      hooks().clear();
      ASSERT_TRUE(inject(hooks().attributeApi, fault, k));
      baton::UniqueInstance instance;
      ASSERT_OK(baton::createInstance(baton::InstanceCreateInfo(), instance.put()));
      EXPECT_EQ(hooks().fired(), 1u);
      const baton::BackendInfo info = backendInfo(*instance);
      EXPECT_FALSE(info.available && info.deviceCount > 0)
          << "the devices were enumerated despite a failed query";
      EXPECT_TRUE(names(info.reason, hooks().attributeApi, errorName(fault)));
      EXPECT_TRUE(gpus(*instance).empty());
    }
  }
}

// The memory-pool calls: each failure is reported by the enumeration (HIP's default pool) or by
// the device's creation (CUDA's own pool), naming the call; a device that advertises
// stream-ordered allocation always has its pool.
TEST_P(FaultCaseTest, AFailedMemoryPoolCallFailsEnumerationOrCreationNamingIt) {
  for (const char* api : hooks().poolApis) {
    if (!api) break;
    for (FaultKind fault : {FaultKind::OutOfMemory, FaultKind::InvalidValue}) {
      SCOPED_TRACE(std::string(api) + ", " + errorName(fault));
      hooks().clear();
      ASSERT_TRUE(inject(api, fault));
      baton::UniqueInstance instance;
      ASSERT_OK(baton::createInstance(baton::InstanceCreateInfo(), instance.put()));
      std::vector<baton::PhysicalDevice> devices = gpus(*instance);
      if (hooks().fired() != 0) {  // called by the enumeration, which must then have failed
        EXPECT_TRUE(devices.empty()) << "the devices were enumerated despite a failed " << api;
        EXPECT_TRUE(names(backendInfo(*instance).reason, api, errorName(fault)));
        continue;
      }
      ASSERT_FALSE(devices.empty());
      baton::PhysicalDeviceProperties p;
      ASSERT_OK(devices[0].getProperties(&p));
      if (!(p.capabilities & baton::kCapabilityStreamOrderedAlloc))
        GTEST_SKIP() << p.name << " has no stream-ordered allocation";
      baton::UniqueDevice device;
      Result r = instance->createDevice(devices[0], baton::DeviceCreateInfo(), device.put());
      EXPECT_EQ(hooks().fired(), 1u) << api << " was not called by the enumeration or creation";
      EXPECT_EQ(
          r, fault == FaultKind::OutOfMemory ? Result::ErrorOutOfDeviceMemory : Result::ErrorDriver)
          << lastError();
      EXPECT_TRUE(names(lastError(), api, errorName(fault)));
    }
  }
}

// ---- context switches ----------------------------------------------------------------------

// On a user thread: the operation that needs the device's context fails, naming the call that
// could not make it current (or could not read the current one, without which the thread's own
// could not be restored); the next call succeeds.
TEST_P(FaultCaseTest, AFailedContextSwitchFailsTheOperationNamingIt) {
  makeDevice();
  baton::BufferCreateInfo info;
  info.size = 4096;
  const int64_t allocations = driverAllocations(hooks());
  for (const char* api : {hooks().setCurrentApi, hooks().getCurrentApi}) {
    SCOPED_TRACE(api);
    // Another context current on this thread, so that baton must switch (HIP's default device is
    // the device itself).
    if (!hooks().switchContext()) GTEST_SKIP() << "no other context to switch to";
    hooks().clear();
    ASSERT_TRUE(inject(api, FaultKind::OutOfMemory));
    baton::UniqueBuffer buffer;
    EXPECT_EQ(device_->createBuffer(info, buffer.put()), Result::ErrorOutOfDeviceMemory)
        << lastError();
    EXPECT_EQ(hooks().fired(), 1u);
    EXPECT_TRUE(names(lastError(), api, errorName(FaultKind::OutOfMemory)));
    EXPECT_OK(device_->createBuffer(info, buffer.put()));
  }
  hooks().clear();
  expectAllocations(allocations);
}

// Restoring the thread's own context after the operation, and releases: the operation's result
// stands (Success), and the failure arrives as a warning naming the call; a release still
// releases.
TEST_P(FaultCaseTest, AFailedRestoreOrReleaseSwitchWarnsNamingIt) {
  makeDevice();
  const int64_t allocations = driverAllocations(hooks());
  const char* oom = errorName(FaultKind::OutOfMemory);
  baton::BufferCreateInfo info;
  info.size = 4096;
  baton::UniqueBuffer buffer;
  if (!hooks().switchContext()) GTEST_SKIP() << "no other context to switch to";
  hooks().clear();
  sink_.clear();
  ASSERT_TRUE(inject(hooks().setCurrentApi, FaultKind::OutOfMemory, /*skip=*/1));  // the restore
  ASSERT_OK(device_->createBuffer(info, buffer.put()));
  EXPECT_EQ(hooks().fired(), 1u);
  EXPECT_TRUE(sink_.has(baton::MessageSeverity::Warning, hooks().setCurrentApi) &&
              sink_.has(baton::MessageSeverity::Warning, oom))
      << sink_.dump();

  if (!hooks().switchContext()) GTEST_SKIP() << "no other context to switch to";
  hooks().clear();
  sink_.clear();
  ASSERT_TRUE(inject(hooks().setCurrentApi, FaultKind::OutOfMemory));  // the release's switch
  EXPECT_OK(buffer.release().destroy());
  EXPECT_EQ(hooks().fired(), 1u);
  EXPECT_TRUE(sink_.has(baton::MessageSeverity::Warning, hooks().setCurrentApi) &&
              sink_.has(baton::MessageSeverity::Warning, oom))
      << sink_.dump();
  hooks().clear();
  expectAllocations(allocations);  // freed all the same
}

// The issuing thread: a native callback switches contexts (as cudaSetDevice in user code does),
// and making the device's context current again fails. The submission fails there, and its
// signal with a reason naming the call; the next submission makes the context current again.
struct SwitchAndFail {
  const FaultHooks* hooks = nullptr;
  std::atomic<bool> switched{false};
  static Result run(const baton::NativeQueue&, void* user) {
    auto* self = static_cast<SwitchAndFail*>(user);
    self->switched = self->hooks->switchContext();
    // Armed here, on the issuing thread, so that no other thread's switch takes the fault.
    self->hooks->inject(self->hooks->setCurrentApi, FaultKind::OutOfMemory, 0, false);
    return Result::Success;
  }
};

TEST_P(FaultCaseTest, AFailedContextSwitchOnTheIssuingThreadFailsTheSignalNamingIt) {
  makeDevice();
  SwitchAndFail callback;
  callback.hooks = &hooks();
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(device_->createCommandBuffer(cb.put()));
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->native(&SwitchAndFail::run, &callback));
  ASSERT_OK(cb->end());
  baton::UniqueSemaphore failed = semaphore(), next = semaphore();
  hooks().clear();
  ASSERT_OK(submit(queues_[0], {*cb}, {{*failed, 1}}));
  // No host wait yet: it could switch contexts on this thread while the fault is armed.
  ASSERT_OK(queues_[0].waitIdle(kLongNs));
  if (!callback.switched) GTEST_SKIP() << "no other context to switch to";
  EXPECT_EQ(hooks().fired(), 1u);
  hooks().clear();
  EXPECT_EQ(failed->wait(1, kLongNs), Result::ErrorSemaphoreFailed) << lastError();
  EXPECT_TRUE(
      names(failureReason(*failed), hooks().setCurrentApi, errorName(FaultKind::OutOfMemory)));
  // The queue goes on: the next submission makes the context current again.
  ASSERT_OK(submit(queues_[0], {}, {{*next, 1}}));
  EXPECT_OK(next->wait(1, kLongNs)) << lastError();
}

// ---- queue-ordered free --------------------------------------------------------------------

// deallocaBuffer returned Success, then the driver's queue-ordered free fails on the queue: the
// handle is consumed all the same (a second dealloca or a destroy answers ErrorInvalidHandle),
// the signal fails naming the call, and the memory is released (synchronously, once the work
// before the dealloca finished). With a sticky error, the device is lost and the memory is
// released too.
TEST_P(FaultCaseTest, AFailedQueueOrderedFreeConsumesTheHandleAndReleasesTheMemory) {
  for (FaultKind fault : {FaultKind::OutOfMemory, FaultKind::IllegalAddress}) {
    SCOPED_TRACE(errorName(fault));
    hooks().clear();
    instance_.reset();
    device_.reset();
    queues_.clear();
    makeDevice();
    if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc))
      GTEST_SKIP() << props_.name << " has no stream-ordered allocation";
    const int64_t allocations = driverAllocations(hooks());
    baton::UniqueSemaphore allocated = semaphore(), freed = semaphore();
    baton::BufferCreateInfo info;
    info.size = 4096;
    baton::Buffer buffer;
    ASSERT_OK(queues_[0].allocaBuffer({}, info, std::vector<baton::SemaphoreValue>{{*allocated, 1}},
                                      &buffer));
    ASSERT_OK(allocated->wait(1, kLongNs));
    ASSERT_TRUE(inject(hooks().freeAsyncApi, fault));
    ASSERT_OK(
        queues_[0].deallocaBuffer({}, buffer, std::vector<baton::SemaphoreValue>{{*freed, 1}}));
    const Result expected =
        fault == FaultKind::IllegalAddress ? Result::ErrorDeviceLost : Result::ErrorSemaphoreFailed;
    EXPECT_EQ(freed->wait(1, kLongNs), expected) << lastError();
    EXPECT_EQ(hooks().fired(), 1u);
    EXPECT_TRUE(names(failureReason(*freed), hooks().freeAsyncApi, errorName(fault)));
    EXPECT_EQ(queues_[0].deallocaBuffer({}, buffer, {}), Result::ErrorInvalidHandle);
    EXPECT_EQ(buffer.destroy(), Result::ErrorInvalidHandle);
    hooks().clear();
    expectAllocations(allocations);  // the alloca's memory is released
  }
}

// A deallocaBuffer that returns an error consumed nothing: here the device was lost first. The
// buffer is still the caller's; destroying it releases the memory.
TEST_P(FaultCaseTest, ADeallocaThatFailsLeavesTheBufferTheCallers) {
  makeDevice();
  if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc))
    GTEST_SKIP() << props_.name << " has no stream-ordered allocation";
  const int64_t allocations = driverAllocations(hooks());
  baton::UniqueSemaphore allocated = semaphore(), lost = semaphore();
  baton::BufferCreateInfo info;
  info.size = 4096;
  baton::Buffer buffer;
  ASSERT_OK(queues_[0].allocaBuffer({}, info, std::vector<baton::SemaphoreValue>{{*allocated, 1}},
                                    &buffer));
  ASSERT_OK(allocated->wait(1, kLongNs));
  ASSERT_TRUE(inject(hooks().eventRecordApi, FaultKind::IllegalAddress));
  ASSERT_OK(submit(queues_[1], {}, {{*lost, 1}}));
  EXPECT_EQ(lost->wait(1, kLongNs), Result::ErrorDeviceLost) << lastError();
  hooks().clear();
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (submit(queues_[1], {}, {}) != Result::ErrorDeviceLost && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(queues_[0].deallocaBuffer({}, buffer, {}), Result::ErrorDeviceLost);
  uint64_t size = 0;
  EXPECT_OK(buffer.getSize(&size)) << "the failed dealloca consumed the handle";
  EXPECT_OK(buffer.destroy());
  expectAllocations(allocations);
}

// ---- Semaphore::fail after device loss ------------------------------------------------------

// A semaphore that device loss failed keeps that failure: failing it again changes nothing and
// returns the first failure's result, ErrorDeviceLost (semaphore.hpp). One the host failed
// answers ErrorSemaphoreFailed.
TEST_P(FaultCaseTest, FailingASemaphoreThatDeviceLossFailedReturnsDeviceLost) {
  makeDevice();
  baton::UniqueSemaphore lost = semaphore(), host = semaphore();
  ASSERT_TRUE(inject(hooks().eventRecordApi, FaultKind::IllegalAddress));
  ASSERT_OK(submit(queues_[0], {}, {{*lost, 1}}));
  EXPECT_EQ(lost->wait(1, kLongNs), Result::ErrorDeviceLost) << lastError();
  hooks().clear();
  const std::string reason = failureReason(*lost);
  EXPECT_TRUE(names(reason, hooks().eventRecordApi, errorName(FaultKind::IllegalAddress)));
  EXPECT_EQ(lost->fail("too late"), Result::ErrorDeviceLost) << lastError();
  EXPECT_EQ(failureReason(*lost), reason) << "the first failure must win";
  ASSERT_OK(host->fail("first"));
  EXPECT_EQ(host->fail("second"), Result::ErrorSemaphoreFailed);
}

// ---- what a queue holds once it is idle after device loss ------------------------------------

// A callback that blocks the thread running it (a host call: the stream's driver thread; a native
// callback: the device's issuing thread) until the test opens it. Opened at the latest when the
// test ends, so that a failed expectation cannot leave a thread blocked.
struct Latch {
  std::mutex mutex;
  std::condition_variable cv;
  bool entered = false, open = false;
  void enter() {
    std::unique_lock<std::mutex> lock(mutex);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  bool waitEntered() {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return entered; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    cv.notify_all();
  }
  static Result hostCall(void* user) {
    static_cast<Latch*>(user)->enter();
    return Result::Success;
  }
  static Result native(const baton::NativeQueue&, void* user) {
    static_cast<Latch*>(user)->enter();
    return Result::Success;
  }
};

// The device is lost while a deallocaBuffer waits for the issuing thread. That thread then fails
// the dealloca without enqueueing it, and letting it go frees the buffer synchronously, which
// (like cuMemFree, hipFree) waits for the device's streams: here a stream held by a host call.
// The queue must not count the dealloca finished before it has let go of it: a waitIdle that
// returned, then Semaphore::destroy of the dealloca's signal, must find nothing holding the
// semaphore. (Counted first, the waitIdle returned while the issuing thread still held the
// semaphore in the free, and the destroy returned ErrorObjectInUse: the fault sweep's
// "destroyed while pending work used it" after device loss, under load.)
TEST_P(FaultCaseTest, AQueueIdleAfterDeviceLossNoLongerHoldsItsSemaphores) {
  makeDevice(2);
  if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc))
    GTEST_SKIP() << props_.name << " has no stream-ordered allocation";
  const char* queryApi = GetParam() == baton::BackendKind::Hip ? "hipEventQuery" : "cuEventQuery";
  // Every submission goes to the issuing thread, which runs the native callback below.
  baton::stream::setIssueMode(baton::stream::IssueMode::IssuingThread);
  Latch stream, issuer;
  struct Cleanup {
    Latch &stream, &issuer;
    ~Cleanup() {
      stream.release();
      issuer.release();
      baton::stream::resetIssueMode();
    }
  } cleanup{stream, issuer};

  baton::UniqueSemaphore allocated = semaphore(), pending = semaphore(), freed = semaphore();
  baton::BufferCreateInfo info;
  info.size = 4096;
  baton::Buffer buffer;
  ASSERT_OK(queues_[0].allocaBuffer({}, info, std::vector<baton::SemaphoreValue>{{*allocated, 1}},
                                    &buffer));
  ASSERT_OK(allocated->wait(1, kLongNs));
  ASSERT_OK(queues_[0].waitIdle(kLongNs));

  // Queue 1: a host call holds its stream (infallible, so that what follows is published as a
  // recorded signal: `pending`, whose event then stays incomplete), then a native callback holds
  // the issuing thread.
  baton::UniqueCommandBuffer hold, block;
  ASSERT_OK(device_->createCommandBuffer(hold.put()));
  ASSERT_OK(hold->begin());
  ASSERT_OK(hold->hostCall(&Latch::hostCall, &stream, baton::kHostCallInfallible));
  ASSERT_OK(hold->end());
  ASSERT_OK(device_->createCommandBuffer(block.put()));
  ASSERT_OK(block->begin());
  ASSERT_OK(block->native(&Latch::native, &issuer));
  ASSERT_OK(block->end());
  ASSERT_OK(submit(queues_[1], {*hold}, {}));
  ASSERT_OK(submit(queues_[1], {}, {{*pending, 1}}));
  ASSERT_OK(submit(queues_[1], {*block}, {}));
  ASSERT_TRUE(issuer.waitEntered()) << "the native callback did not run";
  ASSERT_TRUE(stream.waitEntered()) << "the host call did not run";

  // The dealloca waits in the issuing thread's ring; the device is lost meanwhile (a sticky error
  // from the query of `pending`'s event; a completion thread may take the fault first).
  ASSERT_OK(queues_[0].deallocaBuffer({}, buffer, std::vector<baton::SemaphoreValue>{{*freed, 1}}));
  ASSERT_TRUE(inject(queryApi, FaultKind::IllegalAddress));
  uint64_t value = 0;
  (void)pending->getValue(&value);
  EXPECT_EQ(pending->wait(1, kLongNs), Result::ErrorDeviceLost) << lastError();
  hooks().clear();
  EXPECT_EQ(freed->wait(1, kLongNs), Result::ErrorDeviceLost) << lastError();

  // The issuing thread goes on: it fails the dealloca, whose free then waits for the host call.
  issuer.release();
  std::atomic<bool> idle{false};
  Result idleResult = Result::Success;
  std::thread waiter([&] {
    idleResult = queues_[0].waitIdle(kLongNs);
    idle = true;
  });
  const auto until = Clock::now() + std::chrono::milliseconds(500);
  while (!idle && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Whenever the queue says it is idle, nothing of its work holds the semaphore any more.
  Result destroyed = Result::Success;
  bool destroyedEarly = false;
  if (idle) {
    destroyedEarly = true;
    destroyed = freed.release().destroy();
  }
  stream.release();
  waiter.join();
  EXPECT_EQ(idleResult, Result::ErrorDeviceLost) << lastError();
  if (!destroyedEarly) destroyed = freed.release().destroy();
  EXPECT_EQ(destroyed, Result::Success)
      << (destroyedEarly ? "destroyed right after waitIdle returned, " : "") << lastError();
  EXPECT_EQ(queues_[1].waitIdle(kLongNs), Result::ErrorDeviceLost) << lastError();
}

// ---- collectives captured in graph command buffers -------------------------------------------

// The emulated NCCL's captures still held by graphs (BatonFakeNcclStats::persistentLive), or -1.
int64_t capturesHeld(baton::BackendKind kind) {
  return fakeCounter(kind == baton::BackendKind::Hip ? "BATON_RCCL_LIBRARY" : "BATON_NCCL_LIBRARY",
                     "batonFakeNcclStats", &BatonFakeNcclStats::persistentLive);
}

// A graph command buffer with a collective is built at its first submission (the collective
// captured then, collectives.hpp). A driver failure there — the capture's begin, the
// instantiation, or the launch — fails that submission's signal naming the call, leaves the
// communicator healthy and nothing captured behind, and the next submission of the same command
// buffer builds (or launches) it and meets the peer's collective, which waited: the result is
// right, and once the command buffers and communicators are gone, no capture is held and no
// driver allocation is left.
TEST_P(FaultCaseTest, AGraphWithACollectiveWhoseFirstBuildFailsRunsAtTheNextSubmission) {
  const bool hip = GetParam() == baton::BackendKind::Hip;
  const char* apis[] = {hip ? "hipStreamBeginCapture" : "cuStreamBeginCapture",
                        hip ? "hipGraphInstantiateWithFlags" : "cuGraphInstantiate",
                        hip ? "hipGraphLaunch" : "cuGraphLaunch"};
  ASSERT_OK(baton::createInstance(sink_.instanceInfo(), instance_.put()));
  baton::CollectiveSupport support;
  ASSERT_OK(instance_->getCollectiveSupport(GetParam(), &support));
  std::vector<baton::PhysicalDevice> physical = gpus(*instance_);
  if (!support.available || physical.size() < 2)
    GTEST_SKIP() << "needs the emulated NCCL and two devices: " << support.reason;
  // Two ranks of this process in graphs: the emulated NCCL captures them (NCCL 2.28 did not:
  // stream::checkGraphCapture).
  baton::stream::setInProcessGraphCaptureAllowedForTests(true);
  struct Refuse {
    ~Refuse() { baton::stream::setInProcessGraphCaptureAllowedForTests(false); }
  } refuseAgain;
  const int64_t allocations = driverAllocations(hooks());
  constexpr uint64_t kCount = 64, kBytes = kCount * 4;
  for (const char* api : apis) {
    SCOPED_TRACE(api);
    std::vector<baton::UniqueDevice> devices(2);
    std::vector<baton::Queue> queues(2);
    for (size_t r = 0; r < 2; ++r) {
      baton::DeviceCreateInfo info;
      info.queueCount = 1;
      ASSERT_OK(instance_->createDevice(physical[r], info, devices[r].put()));
      ASSERT_OK(devices[r]->getQueue(0, &queues[r]));
    }
    std::vector<baton::Communicator> made(2);
    baton::CommunicatorGroupCreateInfo group;
    group.timeoutNs = 10'000 * kMs;
    const baton::Device devs[] = {*devices[0], *devices[1]};
    ASSERT_OK(instance_->createCommunicators(devs, group, made.data()));
    std::vector<baton::UniqueCommunicator> comms(2);
    std::vector<baton::UniqueBuffer> src(2), dst(2), out(2);
    std::vector<baton::UniqueCommandBuffer> cbs(2);
    for (size_t r = 0; r < 2; ++r) {
      comms[r].reset(made[r]);
      baton::BufferCreateInfo b;
      b.size = kBytes;
      ASSERT_OK(devices[r]->createBuffer(b, src[r].put()));
      ASSERT_OK(devices[r]->createBuffer(b, dst[r].put()));
      b.memory = baton::MemoryKind::HostPinned;
      ASSERT_OK(devices[r]->createBuffer(b, out[r].put()));
      baton::CommandBufferCreateInfo graph;
      graph.usage = baton::CommandBufferUsage::Graph;
      ASSERT_OK(devices[r]->createCommandBuffer(graph, cbs[r].put()));
      ASSERT_OK(cbs[r]->begin());
      ASSERT_OK(cbs[r]->fillBuffer(*src[r], 0, kBytes, static_cast<uint32_t>(r + 1)));
      ASSERT_OK(cbs[r]->allReduce(*comms[r], *src[r], 0, *dst[r], 0, kCount,
                                  baton::ElementType::Uint32, baton::ReduceOp::Sum));
      ASSERT_OK(cbs[r]->copyBuffer(*dst[r], 0, *out[r], 0, kBytes));
      ASSERT_OK(cbs[r]->end());
    }
    ASSERT_TRUE(inject(api, FaultKind::InvalidValue));
    std::vector<baton::UniqueSemaphore> first(2);
    for (size_t r = 0; r < 2; ++r) {
      first[r] = semaphore();
      ASSERT_OK(submit(queues[r], {*cbs[r]}, {{*first[r], 1}}));
    }
    // One rank's submission failed at the call; the other's collective waits for its peer.
    size_t failed = 2;
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (failed == 2 && Clock::now() < until) {
      for (size_t r = 0; r < 2 && failed == 2; ++r)
        if (first[r]->wait(1, 0) == Result::ErrorSemaphoreFailed) failed = r;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_LT(failed, 2u) << "no submission failed";
    EXPECT_EQ(hooks().fired(), 1u);
    hooks().clear();
    EXPECT_TRUE(names(failureReason(*first[failed]), api, errorName(FaultKind::InvalidValue)));
    baton::CommunicatorState state;
    ASSERT_OK(comms[failed]->getState(&state));
    EXPECT_EQ(state, baton::CommunicatorState::Ready) << "a driver failure is not the library's";
    baton::UniqueSemaphore again = semaphore();
    ASSERT_OK(submit(queues[failed], {*cbs[failed]}, {{*again, 1}}));
    ASSERT_OK(again->wait(1, kLongNs)) << lastError();
    ASSERT_OK(first[1 - failed]->wait(1, kLongNs)) << lastError();
    for (size_t r = 0; r < 2; ++r) {
      void* p = nullptr;
      ASSERT_OK(out[r]->map(&p));
      EXPECT_EQ(static_cast<const uint32_t*>(p)[kCount - 1], 3u) << "rank " << r;
    }
    for (size_t r = 0; r < 2; ++r) ASSERT_OK(queues[r].waitIdle(kLongNs));
    cbs.clear();
    comms.clear();
    if (capturesHeld(GetParam()) >= 0) {
      EXPECT_EQ(capturesHeld(GetParam()), 0);
    }
  }
  expectAllocations(allocations);
}

INSTANTIATE_TEST_SUITE_P(, FaultCaseTest, ::testing::ValuesIn(linkedFaultBackends()),
                         BackendParamName());

}  // namespace
}  // namespace baton_test
