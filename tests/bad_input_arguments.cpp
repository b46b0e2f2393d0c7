// Bad input, arguments: zero and huge counts (wait lists, submissions, queues), null output
// pointers, out-of-range enums and fields, objects of another device or instance (and the device
// labels that tell the two devices apart in those messages), and misuse of queue-ordered
// allocation. The fixture and EXPECT_REJECTED are in bad_input.hpp; the table these cases record
// for is docs/bad-input.md.
#include <string>
#include <vector>

#include "bad_input.hpp"

namespace baton_test {
namespace {

// ---------------------------------------------------------------------------------------------
// Zero and huge counts

TEST_F(BadInputTest, WaitListCounts) {
  auto s = makeSemaphore(1);
  std::vector<SemaphoreValue> waits(baton::kMaxWaitCount + 1, SemaphoreValue{*s, 1});
  EXPECT_REJECTED("instance.waitSemaphores.too-many-waits",
                  instance_->waitSemaphores(waits, WaitMode::All, 0), Result::ErrorInvalidArgument,
                  "kMaxWaitCount");
  EXPECT_REJECTED("device.waitSemaphores.too-many-waits",
                  deviceA_->waitSemaphores(waits, WaitMode::Any, baton::kWaitForever),
                  Result::ErrorInvalidArgument, "kMaxWaitCount");
  // Exactly the limit is accepted (and satisfied: every entry is reached).
  waits.pop_back();
  EXPECT_OK(instance_->waitSemaphores(waits, WaitMode::All, 0));
  // A non-empty list with a null pointer.
  const baton::Span<const SemaphoreValue> broken(nullptr, 3);
  EXPECT_REJECTED("instance.waitSemaphores.null-list",
                  instance_->waitSemaphores(broken, WaitMode::All, 0), Result::ErrorInvalidArgument,
                  "null");
}

TEST_F(BadInputTest, SubmitCounts) {
  auto s = makeSemaphore();
  auto marker = makeSemaphore();
  const SemaphoreValue markerSignal{*marker, 1};
  // kMaxSubmitInfos + 1 batches, the first of which would signal the marker.
  std::vector<SubmitInfo> infos(baton::kMaxSubmitInfos + 1);
  infos[0].signals = markerSignal;
  EXPECT_REJECTED("queue.submit.too-many-submit-infos", queueA_.submit(infos),
                  Result::ErrorInvalidArgument, "kMaxSubmitInfos");
  // One list of a batch too long: waits, command buffers, signals.
  std::vector<SemaphoreValue> entries(baton::kMaxSubmitEntries + 1, SemaphoreValue{*s, 0});
  std::vector<CommandBuffer> cbs(baton::kMaxSubmitEntries + 1);
  SubmitInfo pair[2];
  pair[0].signals = markerSignal;
  pair[1].waits = entries;
  EXPECT_REJECTED("queue.submit.too-many-waits", queueA_.submit(pair), Result::ErrorInvalidArgument,
                  "kMaxSubmitEntries", "wait");
  pair[1] = SubmitInfo();
  pair[1].commandBuffers = cbs;
  EXPECT_REJECTED("queue.submit.too-many-command-buffers", queueA_.submit(pair),
                  Result::ErrorInvalidArgument, "kMaxSubmitEntries");
  pair[1] = SubmitInfo();
  pair[1].signals = entries;
  EXPECT_REJECTED("queue.submit.too-many-signals", queueA_.submit(pair),
                  Result::ErrorInvalidArgument, "kMaxSubmitEntries", "signal");
  // A non-empty span with a null pointer.
  const baton::Span<const SubmitInfo> brokenInfos(nullptr, 2);
  EXPECT_REJECTED("queue.submit.null-list", queueA_.submit(brokenInfos),
                  Result::ErrorInvalidArgument, "null");
  // Validation is all-or-nothing: the valid first batch of each call did not run.
  EXPECT_OK(queueA_.waitIdle(kLongNs));
  uint64_t value = 99;
  ASSERT_OK(marker->getValue(&value));
  EXPECT_EQ(value, 0u) << "a rejected submit executed part of its batches";
}

TEST_F(BadInputTest, QueueCounts) {
  Device d;
  baton::DeviceCreateInfo info;
  info.queueCount = 0;
  EXPECT_REJECTED("instance.createDevice.zero-queues", instance_->createDevice(physical_, info, &d),
                  Result::ErrorInvalidArgument, "queueCount");
  EXPECT_FALSE(d) << "a failed create must leave a null handle";
  info.queueCount = baton::kMaxQueues + 1;
  EXPECT_REJECTED("instance.createDevice.too-many-queues",
                  instance_->createDevice(physical_, info, &d), Result::ErrorInvalidArgument,
                  "queueCount");
  info.queueCount = props_.maxQueues + 1;
  EXPECT_REJECTED("instance.createDevice.too-many-queues",
                  instance_->createDevice(physical_, info, &d), Result::ErrorInvalidArgument,
                  "queueCount");
  info.queueCount = UINT32_MAX;
  EXPECT_REJECTED("instance.createDevice.too-many-queues",
                  instance_->createDevice(physical_, info, &d), Result::ErrorInvalidArgument,
                  "queueCount");
  // The largest accepted count works.
  info.queueCount = std::min(props_.maxQueues, baton::kMaxQueues);
  ASSERT_OK(instance_->createDevice(physical_, info, &d));
  Queue q;
  EXPECT_REJECTED("device.getQueue.index-out-of-range", d.getQueue(info.queueCount, &q),
                  Result::ErrorInvalidArgument, "index");
  EXPECT_REJECTED("device.getQueue.index-out-of-range", d.getQueue(UINT32_MAX, &q),
                  Result::ErrorInvalidArgument, "index");
  EXPECT_OK(d.getQueue(info.queueCount - 1, &q));
  EXPECT_OK(d.destroy());
}

// ---------------------------------------------------------------------------------------------
// Null output pointers and out-of-range enums

TEST_F(BadInputTest, NullOutputPointers) {
  auto s = makeSemaphore();
  auto buf = makeBuffer(*deviceA_, 64);
  EXPECT_REJECTED("instance.createInstance.null-output", baton::createInstance({}, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("instance.createSemaphore.null-output", instance_->createSemaphore({}, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("instance.createDevice.null-output",
                  instance_->createDevice(physical_, {}, nullptr), Result::ErrorInvalidArgument,
                  "null");
  EXPECT_REJECTED("instance.enumerateBackends.null-count",
                  instance_->enumerateBackends(nullptr, nullptr), Result::ErrorInvalidArgument,
                  "null");
  EXPECT_REJECTED("instance.enumeratePhysicalDevices.null-count",
                  instance_->enumeratePhysicalDevices(nullptr, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("physicalDevice.getProperties.null-output", physical_.getProperties(nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("device.getQueue.null-output", deviceA_->getQueue(0, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("device.getQueueCount.null-output", deviceA_->getQueueCount(nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("device.getPhysicalDevice.null-output", deviceA_->getPhysicalDevice(nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("device.createCommandBuffer.null-output", deviceA_->createCommandBuffer(nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("device.createBuffer.null-output",
                  deviceA_->createBuffer({64, MemoryKind::HostPinned}, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("queue.getDevice.null-output", queueA_.getDevice(nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("semaphore.getValue.null-output", s->getValue(nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("semaphore.getFailureReason.null-buffer", s->getFailureReason(nullptr, 16),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("buffer.getSize.null-output", buf->getSize(nullptr), Result::ErrorInvalidArgument,
                  "null");
  EXPECT_REJECTED("buffer.map.null-output", buf->map(nullptr), Result::ErrorInvalidArgument,
                  "null");
  EXPECT_REJECTED("buffer.getDeviceAddress.null-output", buf->getDeviceAddress(nullptr),
                  Result::ErrorInvalidArgument, "null");
}

TEST_F(BadInputTest, OutOfRangeEnumsAndFields) {
  auto s = makeSemaphore();
  Instance other;
  baton::InstanceCreateInfo info = sink_.instanceInfo();
  info.backendMask = 1u << 31;
  EXPECT_REJECTED("instance.createInstance.unknown-backend-bits",
                  baton::createInstance(info, &other), Result::ErrorInvalidArgument, "backendMask");
  EXPECT_FALSE(other);
  EXPECT_REJECTED("instance.waitSemaphores.unknown-mode",
                  instance_->waitSemaphores({{*s, 0}}, static_cast<WaitMode>(7), 0),
                  Result::ErrorInvalidArgument, "mode");
  Buffer b;
  EXPECT_REJECTED("device.createBuffer.zero-size",
                  deviceA_->createBuffer({0, MemoryKind::HostPinned}, &b),
                  Result::ErrorInvalidArgument, "size");
  // device.hpp documents ErrorInvalidArgument for a value that is no MemoryKind (ErrorNotSupported
  // is for a kind the device lacks).
  EXPECT_REJECTED("device.createBuffer.unknown-memory-kind",
                  deviceA_->createBuffer({64, static_cast<MemoryKind>(9)}, &b),
                  Result::ErrorInvalidArgument, "unknown memory kind");
  EXPECT_FALSE(b);
}

// ---------------------------------------------------------------------------------------------
// Mismatched devices and instances

TEST_F(BadInputTest, CommandBufferOfAnotherDevice) {
  auto cb = makeEnded(*deviceA_);
  auto out = makeSemaphore();
  const CommandBuffer handle = *cb;
  const SemaphoreValue signal{*out, 1};
  SubmitInfo info;
  info.commandBuffers = handle;
  info.signals = signal;
  EXPECT_REJECTED("queue.submit.command-buffer-of-another-device", queueB_.submit(info),
                  Result::ErrorDeviceMismatch, "command buffer");
  EXPECT_OK(queueB_.waitIdle(kLongNs));
  EXPECT_EQ(out->wait(1, 0), Result::Timeout) << "a rejected submit signalled";
}

TEST_F(BadInputTest, BufferOfAnotherDeviceInARecording) {
  auto bufA = makeBuffer(*deviceA_, 64);
  auto bufB = makeBuffer(*deviceB_, 64);
  auto rec = makeRecording(*deviceB_);
  uint32_t word = 0;
  EXPECT_REJECTED("commandBuffer.copyBuffer.source-of-another-device",
                  rec->copyBuffer(*bufA, 0, *bufB, 0, 16), Result::ErrorDeviceMismatch, "source");
  EXPECT_REJECTED("commandBuffer.copyBuffer.destination-of-another-device",
                  rec->copyBuffer(*bufB, 0, *bufA, 0, 16), Result::ErrorDeviceMismatch,
                  "destination");
  EXPECT_REJECTED("commandBuffer.fillBuffer.buffer-of-another-device",
                  rec->fillBuffer(*bufA, 0, 16, 1), Result::ErrorDeviceMismatch, "belongs");
  EXPECT_REJECTED("commandBuffer.updateBuffer.buffer-of-another-device",
                  rec->updateBuffer(*bufA, 0, 4, &word), Result::ErrorDeviceMismatch, "belongs");
  // The failed records left the recording usable and empty.
  EXPECT_OK(rec->copyBuffer(*bufB, 0, *bufB, 32, 16));
  EXPECT_OK(rec->end());
}

// Two devices on one physical device must not look alike in messages: a device is named by its
// serial in the instance, its debug name when it has one, and its physical device (device.hpp,
// DeviceCreateInfo::debugName).
TEST_F(BadInputTest, MessagesTellTwoDevicesApart) {
  Device third;  // unnamed, like deviceA_
  ASSERT_OK(instance_->createDevice(physical_, {}, &third));
  auto bufA = makeBuffer(*deviceA_, 64);
  auto bufB = makeBuffer(*deviceB_, 64);
  auto bufThird = makeBuffer(third, 64);
  auto recB = makeRecording(*deviceB_);
  auto recThird = makeRecording(third);
  EXPECT_EQ(recB->copyBuffer(*bufA, 0, *bufB, 0, 16), Result::ErrorDeviceMismatch);
  EXPECT_TRUE(containsText(lastError(),
                           "source buffer belongs to device #1 (host:0), the command "
                           "buffer to device #2 'device-b' (host:0)"))
      << lastError();
  // Two unnamed devices: told apart by their serials.
  EXPECT_EQ(recThird->fillBuffer(*bufA, 0, 16, 1), Result::ErrorDeviceMismatch);
  EXPECT_TRUE(containsText(lastError(),
                           "destination buffer belongs to device #1 (host:0), the "
                           "command buffer to device #3 (host:0)"))
      << lastError();
  // Queues are named after their device.
  auto failed = makeSemaphore(0, "upstream");
  auto out = makeSemaphore(0, "downstream");
  ASSERT_OK(failed->fail("decoder crashed"));
  Queue thirdQueue;
  ASSERT_OK(third.getQueue(0, &thirdQueue));
  const SemaphoreValue wait{*failed, 1};
  const SemaphoreValue signal{*out, 1};
  SubmitInfo info;
  info.waits = wait;
  info.signals = signal;
  ASSERT_OK(thirdQueue.submit(info));
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "a submission on queue 0 of device #3 (host:0) waited"))
      << lastError();
  EXPECT_OK(recB->end());
  EXPECT_OK(recThird->end());
  recThird.reset();
  bufThird.reset();
  EXPECT_OK(third.destroy());
}

TEST_F(BadInputTest, ObjectsOfAnotherInstance) {
  MessageSink otherSink;
  baton::UniqueInstance other;
  ASSERT_OK(baton::createInstance(otherSink.instanceInfo(), other.put()));
  baton::UniqueSemaphore foreign;
  ASSERT_OK(other->createSemaphore({}, foreign.put()));
  const SemaphoreValue entry{*foreign, 1};
  EXPECT_REJECTED("instance.waitSemaphores.semaphore-of-another-instance",
                  instance_->waitSemaphores(entry, WaitMode::All, 0), Result::ErrorDeviceMismatch,
                  "another instance");
  SubmitInfo info;
  info.signals = entry;
  EXPECT_REJECTED("queue.submit.semaphore-of-another-instance", queueA_.submit(info),
                  Result::ErrorDeviceMismatch, "another instance");
  uint32_t count = 0;
  ASSERT_OK(other->enumeratePhysicalDevices(&count, nullptr));
  std::vector<PhysicalDevice> physicals(count);
  ASSERT_OK(other->enumeratePhysicalDevices(&count, physicals.data()));
  Device d;
  EXPECT_REJECTED("instance.createDevice.physical-device-of-another-instance",
                  instance_->createDevice(physicals[0], {}, &d), Result::ErrorDeviceMismatch,
                  "another instance");
  foreign.reset();
  EXPECT_OK(other.release().destroy());
}

// ---------------------------------------------------------------------------------------------
// Queue-ordered allocation misuse

TEST_F(BadInputTest, AllocaMisuse) {
  if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc))
    GTEST_SKIP() << "the host device has no stream-ordered allocation";
  Buffer b;
  EXPECT_REJECTED("queue.allocaBuffer.zero-size",
                  queueA_.allocaBuffer({}, {0, MemoryKind::Device}, {}, &b),
                  Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED("queue.allocaBuffer.null-output",
                  queueA_.allocaBuffer({}, {64, MemoryKind::Device}, {}, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("queue.deallocaBuffer.null-buffer", queueA_.deallocaBuffer({}, Buffer(), {}),
                  Result::ErrorInvalidHandle, "null");
  auto plain = makeBuffer(*deviceA_, 64);
  EXPECT_REJECTED("queue.deallocaBuffer.not-an-alloca-buffer",
                  queueA_.deallocaBuffer({}, *plain, {}), Result::ErrorInvalidArgument, "alloca");
  // An alloca buffer of device A freed on device B's queue.
  ASSERT_OK(queueA_.allocaBuffer({}, {64, MemoryKind::Device}, {}, &b));
  EXPECT_REJECTED("queue.deallocaBuffer.buffer-of-another-device",
                  queueB_.deallocaBuffer({}, b, {}), Result::ErrorDeviceMismatch, "buffer");
  EXPECT_OK(queueA_.deallocaBuffer({}, b, {}));
  EXPECT_OK(queueA_.waitIdle(kLongNs));
}

TEST_F(BadInputTest, DeallocaTwice) {
  if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc))
    GTEST_SKIP() << "the host device has no stream-ordered allocation";
  Buffer b;
  ASSERT_OK(queueA_.allocaBuffer({}, {64, MemoryKind::Device}, {}, &b));
  ASSERT_OK(queueA_.deallocaBuffer({}, b, {}));
  EXPECT_REJECTED("queue.deallocaBuffer.twice", queueA_.deallocaBuffer({}, b, {}),
                  Result::ErrorInvalidHandle, "destroyed");
  EXPECT_OK(queueA_.waitIdle(kLongNs));
}

}  // namespace
}  // namespace baton_test
