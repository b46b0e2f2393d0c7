// Conformance: destroying objects while work is pending (a clear result, no crash, nothing left
// hanging), and queue-ordered allocation (alloca/dealloca).
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"

namespace baton_test {
namespace {

using baton::CommandBuffer;
using baton::MemoryKind;
using baton::Result;
using baton::SemaphoreValue;
using baton::WaitMode;

class LifetimeTest : public BackendTest {
 protected:
  std::string reasonOf(baton::Semaphore s) {
    char buffer[1024] = {};
    EXPECT_OK(s.getFailureReason(buffer, sizeof buffer));
    return buffer;
  }
  // A second device on the fixture's physical device, for tests that destroy a device.
  baton::Device makeExtraDevice(uint32_t queues = 2) {
    baton::DeviceCreateInfo info;
    info.queueCount = queues;
    baton::Device d;
    EXPECT_OK(instance().createDevice(physical_, info, &d));
    return d;
  }
};

TEST_P(LifetimeTest, DestroySemaphoreWaitedOnByAQueuedSubmission) {
  baton::Semaphore in;
  ASSERT_OK(instance().createSemaphore({}, &in));
  auto out = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{in, 1}}, {}, {{*out, 1}}));
  EXPECT_EQ(in.destroy(), Result::ErrorObjectInUse);
  EXPECT_TRUE(containsText(lastError(), "destroy")) << lastError();
  // The waiting batch fails its signals instead of hanging.
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(reasonOf(*out), "destroyed")) << reasonOf(*out);
  // The handle is invalid afterwards.
  uint64_t value = 0;
  EXPECT_EQ(in.getValue(&value), Result::ErrorInvalidHandle);
  EXPECT_EQ(in.destroy(), Result::ErrorInvalidHandle);
  EXPECT_OK(queue(0).waitIdle(kLongNs));
}

TEST_P(LifetimeTest, DestroySemaphoreWithABlockedHostWaiter) {
  baton::Semaphore s;
  ASSERT_OK(instance().createSemaphore({}, &s));
  Result waitResult = Result::Success;
  std::thread waiter([&] { waitResult = s.wait(1, kLongNs); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const Result destroyResult = s.destroy();
  waiter.join();
  // The waiter almost surely blocked before the destroy: it must then be woken with a failure.
  // If it lost the race and called wait() afterwards, it sees a destroyed handle.
  EXPECT_TRUE(waitResult == Result::ErrorSemaphoreFailed ||
              waitResult == Result::ErrorInvalidHandle)
      << resultName(waitResult);
  if (waitResult == Result::ErrorSemaphoreFailed) {
    EXPECT_EQ(destroyResult, Result::ErrorObjectInUse);
  } else {
    EXPECT_EQ(destroyResult, Result::Success);
  }
}

TEST_P(LifetimeTest, DestroySignalSemaphoreOfAPendingSubmission) {
  auto gate = makeSemaphore();
  baton::Semaphore out;
  ASSERT_OK(instance().createSemaphore({}, &out));
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, {{out, 1}}));
  const Result r = out.destroy();
  EXPECT_TRUE(r == Result::Success || r == Result::ErrorObjectInUse) << resultName(r);
  // Running the batch afterwards signals a semaphore whose handle is gone: no crash.
  ASSERT_OK(gate->signal(1));
  EXPECT_OK(queue(0).waitIdle(kLongNs));
}

TEST_P(LifetimeTest, DestroyBufferWhileARecordedCommandBufferIsPending) {
  constexpr uint64_t kSize = 256;
  baton::Buffer src;
  baton::BufferCreateInfo info;
  info.size = kSize;
  info.memory = MemoryKind::HostPinned;
  ASSERT_OK(device().createBuffer(info, &src));
  auto dst = makeBuffer(kSize);
  std::memset(map(*dst), 0, kSize);
  std::vector<uint8_t> data(kSize);
  for (size_t i = 0; i < kSize; ++i) data[i] = static_cast<uint8_t>(255 - i);
  auto gate = makeSemaphore();
  auto done = makeSemaphore();
  baton::CommandBuffer cb;
  ASSERT_OK(device().createCommandBuffer(&cb));
  ASSERT_OK(cb.begin());
  ASSERT_OK(cb.updateBuffer(src, 0, kSize, data.data()));
  ASSERT_OK(cb.copyBuffer(src, 0, *dst, 0, kSize));
  ASSERT_OK(cb.end());
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {cb}, {{*done, 1}}));
  // Both the buffer and the command buffer go away while the submission is held.
  EXPECT_OK(src.destroy());
  EXPECT_OK(cb.destroy());
  uint64_t size = 0;
  EXPECT_EQ(src.getSize(&size), Result::ErrorInvalidHandle);
  EXPECT_EQ(cb.begin(), Result::ErrorInvalidHandle);
  // The recording keeps the memory alive until it ran (ASan would catch a use after free).
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(done->wait(1, kLongNs));
  EXPECT_EQ(std::memcmp(map(*dst), data.data(), kSize), 0);
}

TEST_P(LifetimeTest, DestroyCommandBufferWhileSubmitted) {
  std::atomic<int> runs{0};
  auto gate = makeSemaphore();
  auto done = makeSemaphore();
  baton::CommandBuffer cb;
  ASSERT_OK(device().createCommandBuffer(&cb));
  ASSERT_OK(cb.begin());
  ASSERT_OK(cb.hostCall(
      [](void* p) {
        static_cast<std::atomic<int>*>(p)->fetch_add(1);
        return Result::Success;
      },
      &runs));
  ASSERT_OK(cb.end());
  for (uint64_t i = 1; i <= 3; ++i) ASSERT_OK(submit(queue(0), {{*gate, 1}}, {cb}, {{*done, i}}));
  EXPECT_OK(cb.destroy());
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(done->wait(3, kLongNs));
  EXPECT_EQ(runs.load(), 3) << "pending submissions keep their recording";
}

TEST_P(LifetimeTest, DestroyDeviceWithHeldSubmissionsFailsTheirSignals) {
  baton::Device extra = makeExtraDevice();
  ASSERT_TRUE(extra);
  baton::Queue q0, q1;
  ASSERT_OK(extra.getQueue(0, &q0));
  ASSERT_OK(extra.getQueue(1, &q1));
  auto gate = makeSemaphore();
  auto out0 = makeSemaphore();
  auto out1 = makeSemaphore();
  auto issued = makeSemaphore();
  ASSERT_OK(submit(q0, {{*gate, 1}}, {}, {{*out0, 1}}));
  ASSERT_OK(submit(q0, {}, {}, {{*out0, 2}}));  // behind the held one
  ASSERT_OK(submit(q1, {{*gate, 1}}, {}, {{*out1, 1}}));
  ASSERT_OK(submit(q1, {}, {}, {{*issued, 1}}));  // nothing to wait for; may or may not have run
  const auto start = Clock::now();
  EXPECT_OK(extra.destroy());
  EXPECT_LT(secondsSince(start), 10.0);
  EXPECT_EQ(out0->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(reasonOf(*out0), "destroyed")) << reasonOf(*out0);
  EXPECT_EQ(out1->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  // The queue handles died with the device.
  EXPECT_EQ(submit(q0, {}, {}, {}), Result::ErrorInvalidHandle);
  EXPECT_EQ(q1.waitIdle(0), Result::ErrorInvalidHandle);
  // Signalling the gate now reaches nobody and crashes nothing.
  EXPECT_OK(gate->signal(1));
}

TEST_P(LifetimeTest, DestroyDeviceWaitsForIssuedWork) {
  baton::Device extra = makeExtraDevice();
  baton::Queue q;
  ASSERT_OK(extra.getQueue(0, &q));
  std::atomic<int> finished{0};
  baton::CommandBuffer cb;
  ASSERT_OK(extra.createCommandBuffer(&cb));
  ASSERT_OK(cb.begin());
  ASSERT_OK(cb.hostCall(
      [](void* p) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        static_cast<std::atomic<int>*>(p)->fetch_add(1);
        return Result::Success;
      },
      &finished));
  ASSERT_OK(cb.end());
  ASSERT_OK(submit(q, {}, {cb}, {}));
  ASSERT_OK(submit(q, {}, {cb}, {}));
  ASSERT_OK(cb.destroy());
  EXPECT_OK(extra.destroy());
  // Issued work is waited for (device.hpp), so no callback runs after destroy returned.
  EXPECT_EQ(finished.load(), 2);
}

TEST_P(LifetimeTest, DestroyDeviceWithLiveChildrenReportsThem) {
  baton::Device extra = makeExtraDevice();
  baton::CommandBuffer cb;
  baton::Buffer buf;
  ASSERT_OK(extra.createCommandBuffer(&cb));
  baton::BufferCreateInfo info;
  info.size = 64;
  info.memory = MemoryKind::HostPinned;
  ASSERT_OK(extra.createBuffer(info, &buf));
  sink_.clear();
  EXPECT_EQ(extra.destroy(), Result::ErrorObjectInUse);
  EXPECT_TRUE(sink_.has(baton::MessageSeverity::Warning)) << sink_.dump();
  // The children were destroyed with the device.
  uint64_t size = 0;
  EXPECT_EQ(buf.getSize(&size), Result::ErrorInvalidHandle);
  EXPECT_EQ(cb.begin(), Result::ErrorInvalidHandle);
  EXPECT_EQ(extra.destroy(), Result::ErrorInvalidHandle);
}

TEST_P(LifetimeTest, DestroyInstanceWithLiveChildrenReportsThem) {
  MessageSink sink;
  baton::Instance other;
  ASSERT_OK(baton::createInstance(sink.instanceInfo(backendBit(backend())), &other));
  uint32_t count = 0;
  ASSERT_OK(other.enumeratePhysicalDevices(&count, nullptr));
  std::vector<baton::PhysicalDevice> physicals(count);
  ASSERT_OK(other.enumeratePhysicalDevices(&count, physicals.data()));
  baton::PhysicalDevice mine;
  for (uint32_t i = 0; i < count; ++i) {
    baton::PhysicalDeviceProperties p;
    ASSERT_OK(physicals[i].getProperties(&p));
    if (p.backend == backend()) {
      mine = physicals[i];
      break;
    }
  }
  ASSERT_TRUE(mine);
  baton::Device dev;
  ASSERT_OK(other.createDevice(mine, {}, &dev));
  baton::Queue q;
  ASSERT_OK(dev.getQueue(0, &q));
  baton::Semaphore gate, out;
  ASSERT_OK(other.createSemaphore({}, &gate));
  ASSERT_OK(other.createSemaphore({}, &out));
  ASSERT_OK(submit(q, {{gate, 1}}, {}, {{out, 1}}));
  EXPECT_EQ(other.destroy(), Result::ErrorObjectInUse);
  EXPECT_TRUE(sink.has(baton::MessageSeverity::Warning)) << sink.dump();
  uint64_t value = 0;
  EXPECT_EQ(gate.getValue(&value), Result::ErrorInvalidHandle);
  EXPECT_EQ(dev.waitIdle(0), Result::ErrorInvalidHandle);
  baton::PhysicalDeviceProperties props;
  EXPECT_EQ(mine.getProperties(&props), Result::ErrorInvalidHandle);
  EXPECT_EQ(other.destroy(), Result::ErrorInvalidHandle);
}

TEST_P(LifetimeTest, StaleHandleIsRejectedAfterSlotReuse) {
  baton::Semaphore first;
  ASSERT_OK(instance().createSemaphore({}, &first));
  ASSERT_OK(first.destroy());
  // Create enough new objects that the old slot is surely reused.
  std::vector<baton::UniqueSemaphore> fresh;
  for (int i = 0; i < 64; ++i) fresh.push_back(makeSemaphore(static_cast<uint64_t>(i)));
  uint64_t value = 0;
  EXPECT_EQ(first.getValue(&value), Result::ErrorInvalidHandle);
  EXPECT_EQ(first.signal(100), Result::ErrorInvalidHandle);
  for (int i = 0; i < 64; ++i) {
    ASSERT_OK(fresh[i]->getValue(&value));
    EXPECT_EQ(value, static_cast<uint64_t>(i)) << "a stale handle changed a new semaphore";
  }
}

TEST_P(LifetimeTest, UniqueWrappersDestroyInAnyOrder) {
  // Children outliving their handles' scope order: the buffer's Unique is reset after the
  // command buffer that recorded it was submitted and destroyed.
  auto done = makeSemaphore();
  auto buf = makeBuffer(64);
  {
    auto cb = makeCommandBuffer([&](CommandBuffer c) { EXPECT_OK(c.fillBuffer(*buf, 0, 64, 7)); });
    ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  }
  buf.reset();
  EXPECT_OK(done->wait(1, kLongNs));
}

class AllocaTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc)) {
      // The capability is absent: alloca must say so rather than pretend.
      baton::BufferCreateInfo info;
      info.size = 64;
      baton::Buffer b;
      EXPECT_EQ(queue(0).allocaBuffer({}, info, {}, &b), Result::ErrorNotSupported);
      GTEST_SKIP() << "no stream-ordered allocation on this device";
    }
  }
};

TEST_P(AllocaTest, AddressNotReadyBeforeTheAllocationRan) {
  auto gate = makeSemaphore();
  auto allocated = makeSemaphore();
  baton::BufferCreateInfo info;
  info.size = 4096;
  info.memory = MemoryKind::Device;
  baton::Buffer buf;
  const SemaphoreValue wait{*gate, 1}, signal{*allocated, 1};
  ASSERT_OK(queue(0).allocaBuffer(wait, info, signal, &buf));
  ASSERT_TRUE(buf);
  uint64_t address = 0;
  EXPECT_EQ(buf.getDeviceAddress(&address), Result::NotReady);
  EXPECT_EQ(allocated->wait(1, kShortNs), Result::Timeout);
  EXPECT_EQ(buf.getDeviceAddress(&address), Result::NotReady);
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(allocated->wait(1, kLongNs));
  ASSERT_OK(buf.getDeviceAddress(&address));
  EXPECT_NE(address, 0u);
  uint64_t size = 0;
  ASSERT_OK(buf.getSize(&size));
  EXPECT_EQ(size, 4096u);
  // Usable by work ordered after the signal: fill it, copy it out, read it back.
  auto readback = makeBuffer(4096);
  auto done = makeSemaphore();
  auto cb = makeCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(buf, 0, 4096, 0x5EED5EEDu));
    EXPECT_OK(c.copyBuffer(buf, 0, *readback, 0, 4096));
  });
  ASSERT_OK(submit(queue(1), {{*allocated, 1}}, {*cb}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs));
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(map<uint32_t>(*readback)[i], 0x5EED5EEDu) << i;
  auto freed = makeSemaphore();
  const SemaphoreValue afterUse{*done, 1}, freedSignal{*freed, 1};
  ASSERT_OK(queue(1).deallocaBuffer(afterUse, buf, freedSignal));
  EXPECT_OK(freed->wait(1, kLongNs));
  EXPECT_EQ(buf.getSize(&size), Result::ErrorInvalidHandle) << "the handle dies with dealloca";
}

TEST_P(AllocaTest, AllocaIsOrderedBehindEarlierWorkOnItsQueue) {
  auto gate = makeSemaphore();
  auto allocated = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, {}));
  baton::BufferCreateInfo info;
  info.size = 256;
  baton::Buffer buf;
  const SemaphoreValue signal{*allocated, 1};
  // No waits of its own, but the queue is in-order: it runs after the held batch.
  ASSERT_OK(queue(0).allocaBuffer({}, info, signal, &buf));
  uint64_t address = 0;
  EXPECT_EQ(allocated->wait(1, kShortNs), Result::Timeout);
  EXPECT_EQ(buf.getDeviceAddress(&address), Result::NotReady);
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(allocated->wait(1, kLongNs));
  EXPECT_OK(buf.getDeviceAddress(&address));
  ASSERT_OK(queue(0).deallocaBuffer({}, buf, {}));
  EXPECT_OK(queue(0).waitIdle(kLongNs));
}

TEST_P(AllocaTest, DeallocaWaitsForItsWaits) {
  auto allocated = makeSemaphore();
  auto inUse = makeSemaphore();
  auto freed = makeSemaphore();
  baton::BufferCreateInfo info;
  info.size = 1024;
  baton::Buffer buf;
  const SemaphoreValue allocSignal{*allocated, 1}, useDone{*inUse, 1}, freedSignal{*freed, 1};
  ASSERT_OK(queue(0).allocaBuffer({}, info, allocSignal, &buf));
  ASSERT_OK(allocated->wait(1, kLongNs));
  // The free waits on the host's "done using it" signal.
  ASSERT_OK(queue(0).deallocaBuffer(useDone, buf, freedSignal));
  EXPECT_EQ(freed->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(inUse->signal(1));
  EXPECT_OK(freed->wait(1, kLongNs));
}

TEST_P(AllocaTest, DestroyingAnAllocaBufferBeforeItRanIsSafe) {
  auto gate = makeSemaphore();
  auto allocated = makeSemaphore();
  baton::BufferCreateInfo info;
  info.size = 512;
  baton::Buffer buf;
  const SemaphoreValue wait{*gate, 1}, signal{*allocated, 1};
  ASSERT_OK(queue(0).allocaBuffer(wait, info, signal, &buf));
  const Result r = buf.destroy();
  EXPECT_TRUE(r == Result::Success || r == Result::ErrorObjectInUse) << resultName(r);
  ASSERT_OK(gate->signal(1));
  // Whatever the handle's fate, the queue's signal is not lost.
  EXPECT_OK(allocated->wait(1, kLongNs));
  EXPECT_OK(queue(0).waitIdle(kLongNs));
}

BATON_INSTANTIATE_FOR_BACKENDS(LifetimeTest);
BATON_INSTANTIATE_FOR_BACKENDS(AllocaTest);

}  // namespace
}  // namespace baton_test
