// Bad input, handles: null handles (of every call, and inside wait lists, submissions and
// recordings), destroyed (stale) handles, handles of the wrong type and handles baton never made.
// Each gets ErrorInvalidHandle with a message naming the kind of handle and what is wrong with it,
// and leaves the object behind a misused handle untouched. The fixture and EXPECT_REJECTED are in
// bad_input.hpp; the table these cases record for is docs/bad-input.md.
#include "bad_input.hpp"

namespace baton_test {
namespace {

// ---------------------------------------------------------------------------------------------
// Null handles

TEST_F(BadInputTest, NullSemaphoreHandle) {
  const Semaphore null;
  uint64_t value = 0;
  char reason[16];
  EXPECT_REJECTED("semaphore.signal.null-handle", null.signal(1), Result::ErrorInvalidHandle,
                  "semaphore", "null");
  EXPECT_REJECTED("semaphore.getValue.null-handle", null.getValue(&value),
                  Result::ErrorInvalidHandle, "semaphore", "null");
  EXPECT_REJECTED("semaphore.wait.null-handle", null.wait(1, 0), Result::ErrorInvalidHandle,
                  "semaphore", "null");
  EXPECT_REJECTED("semaphore.fail.null-handle", null.fail("x"), Result::ErrorInvalidHandle,
                  "semaphore", "null");
  EXPECT_REJECTED("semaphore.getFailureReason.null-handle",
                  null.getFailureReason(reason, sizeof reason), Result::ErrorInvalidHandle,
                  "semaphore", "null");
  EXPECT_REJECTED("semaphore.destroy.null-handle", null.destroy(), Result::ErrorInvalidHandle,
                  "semaphore", "null");
}

TEST_F(BadInputTest, NullObjectHandles) {
  uint64_t u64 = 0;
  uint32_t u32 = 0;
  void* ptr = nullptr;
  Queue q;
  Device d;
  CommandBuffer cb;
  Buffer b;
  baton::PhysicalDeviceProperties props;
  EXPECT_REJECTED("buffer.getSize.null-handle", Buffer().getSize(&u64), Result::ErrorInvalidHandle,
                  "buffer", "null");
  EXPECT_REJECTED("buffer.map.null-handle", Buffer().map(&ptr), Result::ErrorInvalidHandle,
                  "buffer", "null");
  EXPECT_REJECTED("buffer.getDeviceAddress.null-handle", Buffer().getDeviceAddress(&u64),
                  Result::ErrorInvalidHandle, "buffer", "null");
  EXPECT_REJECTED("buffer.destroy.null-handle", Buffer().destroy(), Result::ErrorInvalidHandle,
                  "buffer", "null");
  EXPECT_REJECTED("commandBuffer.begin.null-handle", CommandBuffer().begin(),
                  Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED("commandBuffer.end.null-handle", CommandBuffer().end(),
                  Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED("commandBuffer.hostCall.null-handle",
                  CommandBuffer().hostCall([](void*) { return Result::Success; }, nullptr),
                  Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED("commandBuffer.destroy.null-handle", CommandBuffer().destroy(),
                  Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED("queue.submit.null-handle", Queue().submit({}), Result::ErrorInvalidHandle,
                  "queue", "null");
  EXPECT_REJECTED("queue.waitIdle.null-handle", Queue().waitIdle(0), Result::ErrorInvalidHandle,
                  "queue", "null");
  EXPECT_REJECTED("queue.getDevice.null-handle", Queue().getDevice(&d), Result::ErrorInvalidHandle,
                  "queue", "null");
  EXPECT_REJECTED("device.getQueue.null-handle", Device().getQueue(0, &q),
                  Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED("device.getQueueCount.null-handle", Device().getQueueCount(&u32),
                  Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED("device.createCommandBuffer.null-handle", Device().createCommandBuffer(&cb),
                  Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED("device.createBuffer.null-handle",
                  Device().createBuffer({64, MemoryKind::HostPinned}, &b),
                  Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED("device.waitIdle.null-handle", Device().waitIdle(0), Result::ErrorInvalidHandle,
                  "device", "null");
  EXPECT_REJECTED("device.setHostWaitSpin.null-handle", Device().setHostWaitSpin(0),
                  Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED("device.destroy.null-handle", Device().destroy(), Result::ErrorInvalidHandle,
                  "device", "null");
  EXPECT_REJECTED("instance.createSemaphore.null-handle", Instance().createSemaphore({}, nullptr),
                  Result::ErrorInvalidHandle, "instance", "null");
  EXPECT_REJECTED("instance.enumerateBackends.null-handle",
                  Instance().enumerateBackends(&u32, nullptr), Result::ErrorInvalidHandle,
                  "instance", "null");
  EXPECT_REJECTED("instance.waitSemaphores.null-handle",
                  Instance().waitSemaphores({}, WaitMode::All, 0), Result::ErrorInvalidHandle,
                  "instance", "null");
  EXPECT_REJECTED("instance.destroy.null-handle", Instance().destroy(), Result::ErrorInvalidHandle,
                  "instance", "null");
  EXPECT_REJECTED("physicalDevice.getProperties.null-handle",
                  PhysicalDevice().getProperties(&props), Result::ErrorInvalidHandle,
                  "physical device", "null");
  EXPECT_REJECTED("instance.createDevice.null-physical-device",
                  instance_->createDevice(PhysicalDevice(), {}, &d), Result::ErrorInvalidHandle,
                  "physical device", "null");
}

TEST_F(BadInputTest, NullHandlesInsideLists) {
  auto s = makeSemaphore();
  auto buf = makeBuffer(*deviceA_, 64);
  auto rec = makeRecording(*deviceA_);
  const SemaphoreValue nullEntry{Semaphore(), 1};
  const SemaphoreValue good{*s, 1};
  EXPECT_REJECTED("instance.waitSemaphores.null-semaphore",
                  instance_->waitSemaphores({good, nullEntry}, WaitMode::Any, 0),
                  Result::ErrorInvalidHandle, "semaphore", "null");
  EXPECT_REJECTED("device.waitSemaphores.null-semaphore",
                  deviceA_->waitSemaphores({nullEntry}, WaitMode::All, 0),
                  Result::ErrorInvalidHandle, "semaphore", "null");
  SubmitInfo info;
  info.waits = nullEntry;
  EXPECT_REJECTED("queue.submit.null-wait-semaphore", queueA_.submit(info),
                  Result::ErrorInvalidHandle, "semaphore", "null", "wait");
  info = SubmitInfo();
  info.signals = nullEntry;
  EXPECT_REJECTED("queue.submit.null-signal-semaphore", queueA_.submit(info),
                  Result::ErrorInvalidHandle, "semaphore", "null", "signal");
  info = SubmitInfo();
  const CommandBuffer nullCb;
  info.commandBuffers = nullCb;
  EXPECT_REJECTED("queue.submit.null-command-buffer", queueA_.submit(info),
                  Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED("commandBuffer.copyBuffer.null-source", rec->copyBuffer(Buffer(), 0, *buf, 0, 4),
                  Result::ErrorInvalidHandle, "null");
  EXPECT_REJECTED("commandBuffer.copyBuffer.null-destination",
                  rec->copyBuffer(*buf, 0, Buffer(), 0, 4), Result::ErrorInvalidHandle, "null");
  EXPECT_REJECTED("commandBuffer.fillBuffer.null-buffer", rec->fillBuffer(Buffer(), 0, 4, 0),
                  Result::ErrorInvalidHandle, "null");
  uint32_t word = 0;
  EXPECT_REJECTED("commandBuffer.updateBuffer.null-buffer",
                  rec->updateBuffer(Buffer(), 0, 4, &word), Result::ErrorInvalidHandle, "null");
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, NullHandlesOfTheRemainingCalls) {
  auto buf = makeBuffer(*deviceA_, 64);
  uint32_t u32 = 0;
  uint32_t word = 0;
  PhysicalDevice pd;
  Device d;
  Buffer b;
  EXPECT_REJECTED("device.getPhysicalDevice.null-handle", Device().getPhysicalDevice(&pd),
                  Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED("device.waitSemaphores.null-handle",
                  Device().waitSemaphores({}, WaitMode::All, 0), Result::ErrorInvalidHandle,
                  "device", "null");
  EXPECT_REJECTED("instance.enumeratePhysicalDevices.null-handle",
                  Instance().enumeratePhysicalDevices(&u32, nullptr), Result::ErrorInvalidHandle,
                  "instance", "null");
  EXPECT_REJECTED("instance.createDevice.null-handle", Instance().createDevice(physical_, {}, &d),
                  Result::ErrorInvalidHandle, "instance", "null");
  EXPECT_REJECTED("queue.allocaBuffer.null-handle",
                  Queue().allocaBuffer({}, {64, MemoryKind::Device}, {}, &b),
                  Result::ErrorInvalidHandle, "queue", "null");
  EXPECT_REJECTED("queue.deallocaBuffer.null-handle", Queue().deallocaBuffer({}, *buf, {}),
                  Result::ErrorInvalidHandle, "queue", "null");
  EXPECT_REJECTED("commandBuffer.copyBuffer.null-handle",
                  CommandBuffer().copyBuffer(*buf, 0, *buf, 32, 4), Result::ErrorInvalidHandle,
                  "command buffer", "null");
  EXPECT_REJECTED("commandBuffer.fillBuffer.null-handle", CommandBuffer().fillBuffer(*buf, 0, 4, 0),
                  Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED("commandBuffer.updateBuffer.null-handle",
                  CommandBuffer().updateBuffer(*buf, 0, 4, &word), Result::ErrorInvalidHandle,
                  "command buffer", "null");
  EXPECT_REJECTED("commandBuffer.native.null-handle",
                  CommandBuffer().native(
                      [](const baton::NativeQueue&, void*) { return Result::Success; }, nullptr),
                  Result::ErrorInvalidHandle, "command buffer", "null");
}

// ---------------------------------------------------------------------------------------------
// Destroyed (stale) and wrong-type handles

TEST_F(BadInputTest, DestroyedHandles) {
  Semaphore s;
  ASSERT_OK(instance_->createSemaphore({}, &s));
  ASSERT_OK(s.destroy());
  Buffer b;
  ASSERT_OK(deviceA_->createBuffer({64, MemoryKind::HostPinned}, &b));
  ASSERT_OK(b.destroy());
  CommandBuffer cb;
  ASSERT_OK(deviceA_->createCommandBuffer(&cb));
  ASSERT_OK(cb.destroy());
  Device d;
  ASSERT_OK(instance_->createDevice(physical_, {}, &d));
  Queue q;
  ASSERT_OK(d.getQueue(0, &q));
  ASSERT_OK(d.destroy());
  Instance other;
  ASSERT_OK(baton::createInstance(sink_.instanceInfo(), &other));
  ASSERT_OK(other.destroy());

  uint64_t value = 0;
  EXPECT_REJECTED("semaphore.signal.destroyed-handle", s.signal(1), Result::ErrorInvalidHandle,
                  "semaphore", "destroyed");
  EXPECT_REJECTED("semaphore.getValue.destroyed-handle", s.getValue(&value),
                  Result::ErrorInvalidHandle, "semaphore", "destroyed");
  EXPECT_REJECTED("semaphore.wait.destroyed-handle", s.wait(0, 0), Result::ErrorInvalidHandle,
                  "semaphore", "destroyed");
  EXPECT_REJECTED("semaphore.destroy.destroyed-handle", s.destroy(), Result::ErrorInvalidHandle,
                  "semaphore", "destroyed");
  EXPECT_REJECTED("buffer.getSize.destroyed-handle", b.getSize(&value), Result::ErrorInvalidHandle,
                  "buffer", "destroyed");
  EXPECT_REJECTED("buffer.destroy.destroyed-handle", b.destroy(), Result::ErrorInvalidHandle,
                  "buffer", "destroyed");
  EXPECT_REJECTED("commandBuffer.begin.destroyed-handle", cb.begin(), Result::ErrorInvalidHandle,
                  "command buffer", "destroyed");
  EXPECT_REJECTED("commandBuffer.destroy.destroyed-handle", cb.destroy(),
                  Result::ErrorInvalidHandle, "command buffer", "destroyed");
  EXPECT_REJECTED("device.waitIdle.destroyed-handle", d.waitIdle(0), Result::ErrorInvalidHandle,
                  "device", "destroyed");
  EXPECT_REJECTED("device.setHostWaitSpin.destroyed-handle", d.setHostWaitSpin(0),
                  Result::ErrorInvalidHandle, "device", "destroyed");
  EXPECT_REJECTED("device.destroy.destroyed-handle", d.destroy(), Result::ErrorInvalidHandle,
                  "device", "destroyed");
  EXPECT_REJECTED("queue.submit.queue-of-destroyed-device", q.submit({}),
                  Result::ErrorInvalidHandle, "queue", "destroyed");
  EXPECT_REJECTED("instance.createSemaphore.destroyed-handle", other.createSemaphore({}, &s),
                  Result::ErrorInvalidHandle, "instance", "destroyed");
  EXPECT_REJECTED("instance.destroy.destroyed-handle", other.destroy(), Result::ErrorInvalidHandle,
                  "instance", "destroyed");
  // A destroyed semaphore inside a wait list or a submission.
  const SemaphoreValue stale{s, 1};
  EXPECT_REJECTED("instance.waitSemaphores.destroyed-semaphore",
                  instance_->waitSemaphores(stale, WaitMode::All, 0), Result::ErrorInvalidHandle,
                  "semaphore", "destroyed");
  SubmitInfo info;
  info.signals = stale;
  EXPECT_REJECTED("queue.submit.destroyed-signal-semaphore", queueA_.submit(info),
                  Result::ErrorInvalidHandle, "semaphore", "destroyed");
}

TEST_F(BadInputTest, WrongTypeHandles) {
  auto s = makeSemaphore();
  auto buf = makeBuffer(*deviceA_, 64);
  auto cb = makeEnded(*deviceA_);
  uint64_t value = 0;
  // A semaphore's handle passed as a buffer, and so on: the handle table knows the type.
  EXPECT_REJECTED("buffer.getSize.wrong-type-handle", Buffer(s->raw()).getSize(&value),
                  Result::ErrorInvalidHandle, "buffer", "semaphore");
  EXPECT_REJECTED("semaphore.signal.wrong-type-handle", Semaphore(buf->raw()).signal(1),
                  Result::ErrorInvalidHandle, "semaphore", "buffer");
  EXPECT_REJECTED("commandBuffer.begin.wrong-type-handle", CommandBuffer(buf->raw()).begin(),
                  Result::ErrorInvalidHandle, "buffer", "command buffer");
  EXPECT_REJECTED("queue.waitIdle.wrong-type-handle", Queue(deviceA_->raw()).waitIdle(0),
                  Result::ErrorInvalidHandle, "queue", "device");
  EXPECT_REJECTED("device.waitIdle.wrong-type-handle", Device(queueA_.raw()).waitIdle(0),
                  Result::ErrorInvalidHandle, "device", "queue");
  EXPECT_REJECTED("instance.createSemaphore.wrong-type-handle",
                  Instance(s->raw()).createSemaphore({}, nullptr), Result::ErrorInvalidHandle,
                  "instance", "semaphore");
  baton::PhysicalDeviceProperties props;
  EXPECT_REJECTED("physicalDevice.getProperties.wrong-type-handle",
                  PhysicalDevice(instance_->raw()).getProperties(&props),
                  Result::ErrorInvalidHandle, "physical device", "instance");
  // Wrong types inside lists and recordings.
  const SemaphoreValue wrong{Semaphore(cb->raw()), 1};
  EXPECT_REJECTED("instance.waitSemaphores.wrong-type-semaphore",
                  instance_->waitSemaphores(wrong, WaitMode::All, 0), Result::ErrorInvalidHandle,
                  "semaphore", "CommandBuffer");
  SubmitInfo info;
  const CommandBuffer notACommandBuffer(s->raw());
  info.commandBuffers = notACommandBuffer;
  EXPECT_REJECTED("queue.submit.wrong-type-command-buffer", queueA_.submit(info),
                  Result::ErrorInvalidHandle, "command buffer", "semaphore");
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED("commandBuffer.fillBuffer.wrong-type-buffer",
                  rec->fillBuffer(Buffer(s->raw()), 0, 4, 0), Result::ErrorInvalidHandle,
                  "semaphore");
  EXPECT_OK(rec->end());
  // The object behind the misused handle is untouched.
  ASSERT_OK(s->getValue(&value));
  EXPECT_EQ(value, 0u);
}

TEST_F(BadInputTest, ForgedHandles) {
  uint64_t value = 0;
  // Handles baton never made: a huge slot index, a zero generation, random bits.
  for (uint64_t raw : {uint64_t{0xFFFFFFFFull}, uint64_t{1}, uint64_t{0xDEADBEEF12345678ull},
                       uint64_t{0x0000000100000000ull}}) {
    expectError("semaphore.getValue.forged-handle", "Semaphore(forged).getValue",
                [&] { return Semaphore(raw).getValue(&value); }, {Result::ErrorInvalidHandle},
                {"semaphore"});
  }
}

}  // namespace
}  // namespace baton_test
