// Bad input on the host backend (DESIGN §7): null, destroyed and wrong-type handles, zero and
// huge counts, null outputs, mismatched devices, out-of-range commands, misuse of command buffer
// state and of failed semaphores. Each call must return its documented Result, explain itself in
// lastErrorMessage() (naming the problem) and send the same text to the debug callback with
// Error severity. Nothing may crash, hang or change state.
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace baton_test {
namespace {

using baton::Buffer;
using baton::BufferCreateInfo;
using baton::CommandBuffer;
using baton::Device;
using baton::Instance;
using baton::MemoryKind;
using baton::MessageSeverity;
using baton::PhysicalDevice;
using baton::Queue;
using baton::Result;
using baton::Semaphore;
using baton::SemaphoreValue;
using baton::SubmitInfo;
using baton::WaitMode;

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(baton::createInstance(sink_.instanceInfo(baton::backendBit(baton::BackendKind::Host)),
                                    instance_.put()));
    uint32_t count = 0;
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> physicals(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, physicals.data()));
    for (uint32_t i = 0; i < count && !physical_; ++i) {
      baton::PhysicalDeviceProperties p;
      ASSERT_OK(physicals[i].getProperties(&p));
      if (p.backend == baton::BackendKind::Host) {
        physical_ = physicals[i];
        props_ = p;
      }
    }
    ASSERT_TRUE(physical_) << "no host physical device";
    baton::DeviceCreateInfo info;
    info.queueCount = 2;
    ASSERT_OK(instance_->createDevice(physical_, info, deviceA_.put()));
    info.queueCount = 1;
    ASSERT_OK(instance_->createDevice(physical_, info, deviceB_.put()));
    ASSERT_OK(deviceA_->getQueue(0, &queueA_));
    ASSERT_OK(deviceB_->getQueue(0, &queueB_));
  }

  void TearDown() override {
    if (deviceB_) {
      EXPECT_OK(deviceB_.release().destroy()) << sink_.dump();
    }
    if (deviceA_) {
      EXPECT_OK(deviceA_.release().destroy()) << sink_.dump();
    }
    if (instance_) {
      EXPECT_OK(instance_.release().destroy()) << sink_.dump();
    }
  }

  // Runs `call` and checks the whole error contract: the Result is one of `expected`, the
  // thread's last error is non-empty and contains every needle (case-insensitive), and the debug
  // callback received the same text with Error severity.
  template <class Call>
  void expectError(const char* text, Call&& call, std::initializer_list<Result> expected,
                   std::initializer_list<const char*> needles) {
    sink_.clear();
    const Result got = call();
    const std::string message = lastError();
    bool allowed = false;
    for (Result e : expected) allowed = allowed || got == e;
    std::string want;
    for (Result e : expected) want += std::string(want.empty() ? "" : " or ") + resultName(e);
    EXPECT_TRUE(allowed) << text << "\n  returned " << resultName(got) << ", expected " << want
                         << "\n  message: " << message;
    EXPECT_FALSE(message.empty()) << text << ": no lastErrorMessage()";
    for (const char* needle : needles)
      EXPECT_TRUE(containsText(message, needle))
          << text << ": the message does not mention \"" << needle << "\": " << message;
    EXPECT_TRUE(sink_.has(MessageSeverity::Error, message))
        << text << ": the debug callback did not get the error \"" << message << "\"\n"
        << sink_.dump();
  }

  baton::UniqueSemaphore makeSemaphore(uint64_t initial = 0, const char* name = nullptr) {
    baton::SemaphoreCreateInfo info;
    info.initialValue = initial;
    info.debugName = name;
    baton::UniqueSemaphore s;
    EXPECT_OK(instance_->createSemaphore(info, s.put()));
    return s;
  }
  baton::UniqueBuffer makeBuffer(Device device, uint64_t size) {
    BufferCreateInfo info;
    info.size = size;
    info.memory = MemoryKind::HostPinned;
    baton::UniqueBuffer b;
    EXPECT_OK(device.createBuffer(info, b.put()));
    return b;
  }
  baton::UniqueCommandBuffer makeRecording(Device device) {
    baton::UniqueCommandBuffer cb;
    EXPECT_OK(device.createCommandBuffer(cb.put()));
    EXPECT_OK(cb->begin());
    return cb;
  }
  baton::UniqueCommandBuffer makeEnded(Device device) {
    auto cb = makeRecording(device);
    EXPECT_OK(cb->end());
    return cb;
  }

  MessageSink sink_;
  baton::UniqueInstance instance_;
  PhysicalDevice physical_;
  baton::PhysicalDeviceProperties props_;
  baton::UniqueDevice deviceA_, deviceB_;
  Queue queueA_, queueB_;
};

// expectError for one expected Result; needles follow.
#define EXPECT_REJECTED(call, code, ...) \
  expectError(#call, [&] { return (call); }, {code}, {__VA_ARGS__})

// ---------------------------------------------------------------------------------------------
// Null handles

TEST_F(BadInputTest, NullSemaphoreHandle) {
  const Semaphore null;
  uint64_t value = 0;
  char reason[16];
  EXPECT_REJECTED(null.signal(1), Result::ErrorInvalidHandle, "semaphore", "null");
  EXPECT_REJECTED(null.getValue(&value), Result::ErrorInvalidHandle, "semaphore", "null");
  EXPECT_REJECTED(null.wait(1, 0), Result::ErrorInvalidHandle, "semaphore", "null");
  EXPECT_REJECTED(null.fail("x"), Result::ErrorInvalidHandle, "semaphore", "null");
  EXPECT_REJECTED(null.getFailureReason(reason, sizeof reason), Result::ErrorInvalidHandle,
                  "semaphore", "null");
  EXPECT_REJECTED(null.destroy(), Result::ErrorInvalidHandle, "semaphore", "null");
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
  EXPECT_REJECTED(Buffer().getSize(&u64), Result::ErrorInvalidHandle, "buffer", "null");
  EXPECT_REJECTED(Buffer().map(&ptr), Result::ErrorInvalidHandle, "buffer", "null");
  EXPECT_REJECTED(Buffer().getDeviceAddress(&u64), Result::ErrorInvalidHandle, "buffer", "null");
  EXPECT_REJECTED(Buffer().destroy(), Result::ErrorInvalidHandle, "buffer", "null");
  EXPECT_REJECTED(CommandBuffer().begin(), Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED(CommandBuffer().end(), Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED(CommandBuffer().hostCall([](void*) { return Result::Success; }, nullptr),
                  Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED(CommandBuffer().destroy(), Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED(Queue().submit({}), Result::ErrorInvalidHandle, "queue", "null");
  EXPECT_REJECTED(Queue().waitIdle(0), Result::ErrorInvalidHandle, "queue", "null");
  EXPECT_REJECTED(Queue().getDevice(&d), Result::ErrorInvalidHandle, "queue", "null");
  EXPECT_REJECTED(Device().getQueue(0, &q), Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED(Device().getQueueCount(&u32), Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED(Device().createCommandBuffer(&cb), Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED(Device().createBuffer({64, MemoryKind::HostPinned}, &b),
                  Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED(Device().waitIdle(0), Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED(Device().destroy(), Result::ErrorInvalidHandle, "device", "null");
  EXPECT_REJECTED(Instance().createSemaphore({}, nullptr), Result::ErrorInvalidHandle, "instance",
                  "null");
  EXPECT_REJECTED(Instance().enumerateBackends(&u32, nullptr), Result::ErrorInvalidHandle,
                  "instance", "null");
  EXPECT_REJECTED(Instance().waitSemaphores({}, WaitMode::All, 0), Result::ErrorInvalidHandle,
                  "instance", "null");
  EXPECT_REJECTED(Instance().destroy(), Result::ErrorInvalidHandle, "instance", "null");
  EXPECT_REJECTED(PhysicalDevice().getProperties(&props), Result::ErrorInvalidHandle,
                  "physical device", "null");
  EXPECT_REJECTED(instance_->createDevice(PhysicalDevice(), {}, &d), Result::ErrorInvalidHandle,
                  "physical device", "null");
}

TEST_F(BadInputTest, NullHandlesInsideLists) {
  auto s = makeSemaphore();
  auto buf = makeBuffer(*deviceA_, 64);
  auto rec = makeRecording(*deviceA_);
  const SemaphoreValue nullEntry{Semaphore(), 1};
  const SemaphoreValue good{*s, 1};
  EXPECT_REJECTED(instance_->waitSemaphores({good, nullEntry}, WaitMode::Any, 0),
                  Result::ErrorInvalidHandle, "semaphore", "null");
  EXPECT_REJECTED(deviceA_->waitSemaphores({nullEntry}, WaitMode::All, 0),
                  Result::ErrorInvalidHandle, "semaphore", "null");
  SubmitInfo info;
  info.waits = nullEntry;
  EXPECT_REJECTED(queueA_.submit(info), Result::ErrorInvalidHandle, "semaphore", "null", "wait");
  info = SubmitInfo();
  info.signals = nullEntry;
  EXPECT_REJECTED(queueA_.submit(info), Result::ErrorInvalidHandle, "semaphore", "null", "signal");
  info = SubmitInfo();
  const CommandBuffer nullCb;
  info.commandBuffers = nullCb;
  EXPECT_REJECTED(queueA_.submit(info), Result::ErrorInvalidHandle, "command buffer", "null");
  EXPECT_REJECTED(rec->copyBuffer(Buffer(), 0, *buf, 0, 4), Result::ErrorInvalidHandle, "null");
  EXPECT_REJECTED(rec->copyBuffer(*buf, 0, Buffer(), 0, 4), Result::ErrorInvalidHandle, "null");
  EXPECT_REJECTED(rec->fillBuffer(Buffer(), 0, 4, 0), Result::ErrorInvalidHandle, "null");
  uint32_t word = 0;
  EXPECT_REJECTED(rec->updateBuffer(Buffer(), 0, 4, &word), Result::ErrorInvalidHandle, "null");
  EXPECT_OK(rec->end());
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
  EXPECT_REJECTED(s.signal(1), Result::ErrorInvalidHandle, "semaphore", "destroyed");
  EXPECT_REJECTED(s.getValue(&value), Result::ErrorInvalidHandle, "semaphore", "destroyed");
  EXPECT_REJECTED(s.wait(0, 0), Result::ErrorInvalidHandle, "semaphore", "destroyed");
  EXPECT_REJECTED(s.destroy(), Result::ErrorInvalidHandle, "semaphore", "destroyed");
  EXPECT_REJECTED(b.getSize(&value), Result::ErrorInvalidHandle, "buffer", "destroyed");
  EXPECT_REJECTED(b.destroy(), Result::ErrorInvalidHandle, "buffer", "destroyed");
  EXPECT_REJECTED(cb.begin(), Result::ErrorInvalidHandle, "command buffer", "destroyed");
  EXPECT_REJECTED(cb.destroy(), Result::ErrorInvalidHandle, "command buffer", "destroyed");
  EXPECT_REJECTED(d.waitIdle(0), Result::ErrorInvalidHandle, "device", "destroyed");
  EXPECT_REJECTED(d.destroy(), Result::ErrorInvalidHandle, "device", "destroyed");
  EXPECT_REJECTED(q.submit({}), Result::ErrorInvalidHandle, "queue", "destroyed");
  EXPECT_REJECTED(other.createSemaphore({}, &s), Result::ErrorInvalidHandle, "instance",
                  "destroyed");
  EXPECT_REJECTED(other.destroy(), Result::ErrorInvalidHandle, "instance", "destroyed");
  // A destroyed semaphore inside a wait list or a submission.
  const SemaphoreValue stale{s, 1};
  EXPECT_REJECTED(instance_->waitSemaphores(stale, WaitMode::All, 0), Result::ErrorInvalidHandle,
                  "semaphore", "destroyed");
  SubmitInfo info;
  info.signals = stale;
  EXPECT_REJECTED(queueA_.submit(info), Result::ErrorInvalidHandle, "semaphore", "destroyed");
}

TEST_F(BadInputTest, WrongTypeHandles) {
  auto s = makeSemaphore();
  auto buf = makeBuffer(*deviceA_, 64);
  auto cb = makeEnded(*deviceA_);
  uint64_t value = 0;
  // A semaphore's handle passed as a buffer, and so on: the handle table knows the type.
  EXPECT_REJECTED(Buffer(s->raw()).getSize(&value), Result::ErrorInvalidHandle, "buffer",
                  "semaphore");
  EXPECT_REJECTED(Semaphore(buf->raw()).signal(1), Result::ErrorInvalidHandle, "semaphore",
                  "buffer");
  EXPECT_REJECTED(CommandBuffer(buf->raw()).begin(), Result::ErrorInvalidHandle, "buffer",
                  "command buffer");
  EXPECT_REJECTED(Queue(deviceA_->raw()).waitIdle(0), Result::ErrorInvalidHandle, "queue",
                  "device");
  EXPECT_REJECTED(Device(queueA_.raw()).waitIdle(0), Result::ErrorInvalidHandle, "device", "queue");
  EXPECT_REJECTED(Instance(s->raw()).createSemaphore({}, nullptr), Result::ErrorInvalidHandle,
                  "instance", "semaphore");
  baton::PhysicalDeviceProperties props;
  EXPECT_REJECTED(PhysicalDevice(instance_->raw()).getProperties(&props),
                  Result::ErrorInvalidHandle, "physical device", "instance");
  // Wrong types inside lists and recordings.
  const SemaphoreValue wrong{Semaphore(cb->raw()), 1};
  EXPECT_REJECTED(instance_->waitSemaphores(wrong, WaitMode::All, 0), Result::ErrorInvalidHandle,
                  "semaphore", "CommandBuffer");
  SubmitInfo info;
  const CommandBuffer notACommandBuffer(s->raw());
  info.commandBuffers = notACommandBuffer;
  EXPECT_REJECTED(queueA_.submit(info), Result::ErrorInvalidHandle, "command buffer", "semaphore");
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED(rec->fillBuffer(Buffer(s->raw()), 0, 4, 0), Result::ErrorInvalidHandle,
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
    expectError("Semaphore(forged).getValue", [&] { return Semaphore(raw).getValue(&value); },
                {Result::ErrorInvalidHandle}, {"semaphore"});
  }
}

// ---------------------------------------------------------------------------------------------
// Zero and huge counts

TEST_F(BadInputTest, WaitListCounts) {
  auto s = makeSemaphore(1);
  std::vector<SemaphoreValue> waits(baton::kMaxWaitCount + 1, SemaphoreValue{*s, 1});
  EXPECT_REJECTED(instance_->waitSemaphores(waits, WaitMode::All, 0), Result::ErrorInvalidArgument,
                  "kMaxWaitCount");
  EXPECT_REJECTED(deviceA_->waitSemaphores(waits, WaitMode::Any, baton::kWaitForever),
                  Result::ErrorInvalidArgument, "kMaxWaitCount");
  // Exactly the limit is accepted (and satisfied: every entry is reached).
  waits.pop_back();
  EXPECT_OK(instance_->waitSemaphores(waits, WaitMode::All, 0));
  // A non-empty list with a null pointer.
  const baton::Span<const SemaphoreValue> broken(nullptr, 3);
  EXPECT_REJECTED(instance_->waitSemaphores(broken, WaitMode::All, 0), Result::ErrorInvalidArgument,
                  "null");
}

TEST_F(BadInputTest, SubmitCounts) {
  auto s = makeSemaphore();
  auto marker = makeSemaphore();
  const SemaphoreValue markerSignal{*marker, 1};
  // kMaxSubmitInfos + 1 batches, the first of which would signal the marker.
  std::vector<SubmitInfo> infos(baton::kMaxSubmitInfos + 1);
  infos[0].signals = markerSignal;
  EXPECT_REJECTED(queueA_.submit(infos), Result::ErrorInvalidArgument, "kMaxSubmitInfos");
  // One list of a batch too long: waits, command buffers, signals.
  std::vector<SemaphoreValue> entries(baton::kMaxSubmitEntries + 1, SemaphoreValue{*s, 0});
  std::vector<CommandBuffer> cbs(baton::kMaxSubmitEntries + 1);
  SubmitInfo pair[2];
  pair[0].signals = markerSignal;
  pair[1].waits = entries;
  EXPECT_REJECTED(queueA_.submit(pair), Result::ErrorInvalidArgument, "kMaxSubmitEntries", "wait");
  pair[1] = SubmitInfo();
  pair[1].commandBuffers = cbs;
  EXPECT_REJECTED(queueA_.submit(pair), Result::ErrorInvalidArgument, "kMaxSubmitEntries");
  pair[1] = SubmitInfo();
  pair[1].signals = entries;
  EXPECT_REJECTED(queueA_.submit(pair), Result::ErrorInvalidArgument, "kMaxSubmitEntries",
                  "signal");
  // A non-empty span with a null pointer.
  const baton::Span<const SubmitInfo> brokenInfos(nullptr, 2);
  EXPECT_REJECTED(queueA_.submit(brokenInfos), Result::ErrorInvalidArgument, "null");
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
  EXPECT_REJECTED(instance_->createDevice(physical_, info, &d), Result::ErrorInvalidArgument,
                  "queueCount");
  EXPECT_FALSE(d) << "a failed create must leave a null handle";
  info.queueCount = baton::kMaxQueues + 1;
  EXPECT_REJECTED(instance_->createDevice(physical_, info, &d), Result::ErrorInvalidArgument,
                  "queueCount");
  info.queueCount = props_.maxQueues + 1;
  EXPECT_REJECTED(instance_->createDevice(physical_, info, &d), Result::ErrorInvalidArgument,
                  "queueCount");
  info.queueCount = UINT32_MAX;
  EXPECT_REJECTED(instance_->createDevice(physical_, info, &d), Result::ErrorInvalidArgument,
                  "queueCount");
  // The largest accepted count works.
  info.queueCount = std::min(props_.maxQueues, baton::kMaxQueues);
  ASSERT_OK(instance_->createDevice(physical_, info, &d));
  Queue q;
  EXPECT_REJECTED(d.getQueue(info.queueCount, &q), Result::ErrorInvalidArgument, "index");
  EXPECT_REJECTED(d.getQueue(UINT32_MAX, &q), Result::ErrorInvalidArgument, "index");
  EXPECT_OK(d.getQueue(info.queueCount - 1, &q));
  EXPECT_OK(d.destroy());
}

// ---------------------------------------------------------------------------------------------
// Null output pointers and out-of-range enums

TEST_F(BadInputTest, NullOutputPointers) {
  auto s = makeSemaphore();
  auto buf = makeBuffer(*deviceA_, 64);
  EXPECT_REJECTED(baton::createInstance({}, nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(instance_->createSemaphore({}, nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(instance_->createDevice(physical_, {}, nullptr), Result::ErrorInvalidArgument,
                  "null");
  EXPECT_REJECTED(instance_->enumerateBackends(nullptr, nullptr), Result::ErrorInvalidArgument,
                  "null");
  EXPECT_REJECTED(instance_->enumeratePhysicalDevices(nullptr, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(physical_.getProperties(nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(deviceA_->getQueue(0, nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(deviceA_->getQueueCount(nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(deviceA_->getPhysicalDevice(nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(deviceA_->createCommandBuffer(nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(deviceA_->createBuffer({64, MemoryKind::HostPinned}, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(queueA_.getDevice(nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(s->getValue(nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(s->getFailureReason(nullptr, 16), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(buf->getSize(nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(buf->map(nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(buf->getDeviceAddress(nullptr), Result::ErrorInvalidArgument, "null");
}

TEST_F(BadInputTest, OutOfRangeEnumsAndFields) {
  auto s = makeSemaphore();
  Instance other;
  baton::InstanceCreateInfo info = sink_.instanceInfo();
  info.backendMask = 1u << 31;
  EXPECT_REJECTED(baton::createInstance(info, &other), Result::ErrorInvalidArgument, "backendMask");
  EXPECT_FALSE(other);
  EXPECT_REJECTED(instance_->waitSemaphores({{*s, 0}}, static_cast<WaitMode>(7), 0),
                  Result::ErrorInvalidArgument, "mode");
  Buffer b;
  EXPECT_REJECTED(deviceA_->createBuffer({0, MemoryKind::HostPinned}, &b),
                  Result::ErrorInvalidArgument, "size");
  expectError("createBuffer(unknown memory kind)",
              [&] {
                return deviceA_->createBuffer({64, static_cast<MemoryKind>(9)}, &b);
              },
              {Result::ErrorInvalidArgument, Result::ErrorNotSupported}, {"memory"});
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
  EXPECT_REJECTED(queueB_.submit(info), Result::ErrorDeviceMismatch, "command buffer");
  EXPECT_OK(queueB_.waitIdle(kLongNs));
  EXPECT_EQ(out->wait(1, 0), Result::Timeout) << "a rejected submit signalled";
}

TEST_F(BadInputTest, BufferOfAnotherDeviceInARecording) {
  auto bufA = makeBuffer(*deviceA_, 64);
  auto bufB = makeBuffer(*deviceB_, 64);
  auto rec = makeRecording(*deviceB_);
  uint32_t word = 0;
  EXPECT_REJECTED(rec->copyBuffer(*bufA, 0, *bufB, 0, 16), Result::ErrorDeviceMismatch, "source");
  EXPECT_REJECTED(rec->copyBuffer(*bufB, 0, *bufA, 0, 16), Result::ErrorDeviceMismatch,
                  "destination");
  EXPECT_REJECTED(rec->fillBuffer(*bufA, 0, 16, 1), Result::ErrorDeviceMismatch, "belongs");
  EXPECT_REJECTED(rec->updateBuffer(*bufA, 0, 4, &word), Result::ErrorDeviceMismatch, "belongs");
  // The failed records left the recording usable and empty.
  EXPECT_OK(rec->copyBuffer(*bufB, 0, *bufB, 32, 16));
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, ObjectsOfAnotherInstance) {
  MessageSink otherSink;
  baton::UniqueInstance other;
  ASSERT_OK(baton::createInstance(otherSink.instanceInfo(), other.put()));
  baton::UniqueSemaphore foreign;
  ASSERT_OK(other->createSemaphore({}, foreign.put()));
  const SemaphoreValue entry{*foreign, 1};
  EXPECT_REJECTED(instance_->waitSemaphores(entry, WaitMode::All, 0), Result::ErrorDeviceMismatch,
                  "another instance");
  SubmitInfo info;
  info.signals = entry;
  EXPECT_REJECTED(queueA_.submit(info), Result::ErrorDeviceMismatch, "another instance");
  uint32_t count = 0;
  ASSERT_OK(other->enumeratePhysicalDevices(&count, nullptr));
  std::vector<PhysicalDevice> physicals(count);
  ASSERT_OK(other->enumeratePhysicalDevices(&count, physicals.data()));
  Device d;
  EXPECT_REJECTED(instance_->createDevice(physicals[0], {}, &d), Result::ErrorDeviceMismatch,
                  "another instance");
  foreign.reset();
  EXPECT_OK(other.release().destroy());
}

// ---------------------------------------------------------------------------------------------
// Command ranges and limits

TEST_F(BadInputTest, CopyRangesOutOfBounds) {
  auto src = makeBuffer(*deviceA_, 64);
  auto dst = makeBuffer(*deviceA_, 32);
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED(rec->copyBuffer(*src, 48, *dst, 0, 32), Result::ErrorInvalidArgument, "source",
                  "outside");
  EXPECT_REJECTED(rec->copyBuffer(*src, 0, *dst, 16, 32), Result::ErrorInvalidArgument,
                  "destination", "outside");
  EXPECT_REJECTED(rec->copyBuffer(*src, 0, *dst, 0, 0), Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED(rec->copyBuffer(*src, 65, *dst, 0, 1), Result::ErrorInvalidArgument, "outside");
  // Offsets and sizes whose sum wraps around 2^64 must not pass a naive bounds check.
  EXPECT_REJECTED(rec->copyBuffer(*src, UINT64_MAX - 7, *dst, 0, 16), Result::ErrorInvalidArgument,
                  "outside");
  EXPECT_REJECTED(rec->copyBuffer(*src, 8, *dst, 0, UINT64_MAX), Result::ErrorInvalidArgument,
                  "outside");
  EXPECT_REJECTED(rec->copyBuffer(*src, 0, *src, 16, 32), Result::ErrorInvalidArgument, "overlap");
  EXPECT_OK(rec->copyBuffer(*src, 32, *dst, 0, 32));  // exactly in bounds
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, UpdateLimits) {
  auto big = makeBuffer(*deviceA_, 4 * baton::kMaxUpdateSize);
  auto rec = makeRecording(*deviceA_);
  std::vector<uint8_t> data(baton::kMaxUpdateSize + 1, 0x5A);
  EXPECT_REJECTED(rec->updateBuffer(*big, 0, baton::kMaxUpdateSize + 1, data.data()),
                  Result::ErrorInvalidArgument, "kMaxUpdateSize");
  EXPECT_REJECTED(rec->updateBuffer(*big, 0, 16, nullptr), Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(rec->updateBuffer(*big, 0, 0, data.data()), Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED(rec->updateBuffer(*big, 4 * baton::kMaxUpdateSize - 8, 16, data.data()),
                  Result::ErrorInvalidArgument, "outside");
  EXPECT_OK(rec->updateBuffer(*big, 0, baton::kMaxUpdateSize, data.data()));
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, FillAlignmentAndRange) {
  auto buf = makeBuffer(*deviceA_, 64);
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED(rec->fillBuffer(*buf, 2, 8, 0), Result::ErrorInvalidArgument, "multiple");
  EXPECT_REJECTED(rec->fillBuffer(*buf, 0, 6, 0), Result::ErrorInvalidArgument, "multiple");
  EXPECT_REJECTED(rec->fillBuffer(*buf, 0, 0, 0), Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED(rec->fillBuffer(*buf, 60, 8, 0), Result::ErrorInvalidArgument, "outside");
  EXPECT_OK(rec->fillBuffer(*buf, 60, 4, 0));
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, NullCallbacks) {
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED(rec->hostCall(nullptr, nullptr), Result::ErrorInvalidArgument, "callback",
                  "null");
  EXPECT_REJECTED(rec->native(nullptr, nullptr), Result::ErrorInvalidArgument, "callback", "null");
  EXPECT_OK(rec->end());
}

// ---------------------------------------------------------------------------------------------
// Command buffer state

TEST_F(BadInputTest, SubmittingACommandBufferThatWasNotEnded) {
  auto out = makeSemaphore();
  const SemaphoreValue signal{*out, 1};
  baton::UniqueCommandBuffer neverBegun;
  ASSERT_OK(deviceA_->createCommandBuffer(neverBegun.put()));
  auto recording = makeRecording(*deviceA_);
  for (CommandBuffer cb : {*neverBegun, *recording}) {
    SubmitInfo infos[2];
    infos[0].signals = signal;  // valid on its own; must not run either
    infos[1].commandBuffers = cb;
    // queue.hpp lists ErrorInvalidArgument ("a command buffer not ended"); ErrorInvalidState is
    // the code of the other command-buffer state errors. Either names the problem.
    expectError("submit(command buffer not ended)", [&] { return queueA_.submit(infos); },
                {Result::ErrorInvalidArgument, Result::ErrorInvalidState}, {"end"});
  }
  EXPECT_OK(queueA_.waitIdle(kLongNs));
  EXPECT_EQ(out->wait(1, 0), Result::Timeout) << "a rejected submit ran its valid batch";
  // A re-begun command buffer has no ended recording any more either.
  auto ended = makeEnded(*deviceA_);
  ASSERT_OK(ended->begin());
  const CommandBuffer handle = *ended;
  SubmitInfo info;
  info.commandBuffers = handle;
  expectError("submit(re-begun command buffer)", [&] { return queueA_.submit(info); },
              {Result::ErrorInvalidArgument, Result::ErrorInvalidState}, {"end"});
  EXPECT_OK(ended->end());
}

TEST_F(BadInputTest, RecordingOutsideBeginAndEnd) {
  auto buf = makeBuffer(*deviceA_, 64);
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(deviceA_->createCommandBuffer(cb.put()));
  uint32_t word = 0;
  EXPECT_REJECTED(cb->fillBuffer(*buf, 0, 4, 0), Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED(cb->updateBuffer(*buf, 0, 4, &word), Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED(cb->copyBuffer(*buf, 0, *buf, 32, 4), Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED(cb->hostCall([](void*) { return Result::Success; }, nullptr),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED(
      cb->native([](const baton::NativeQueue&, void*) { return Result::Success; }, nullptr),
      Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED(cb->end(), Result::ErrorInvalidState, "recording");
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->end());
  EXPECT_REJECTED(cb->end(), Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED(cb->fillBuffer(*buf, 0, 4, 0), Result::ErrorInvalidState, "recording");
}

// ---------------------------------------------------------------------------------------------
// Signals: non-increasing values, failed semaphores

TEST_F(BadInputTest, NonIncreasingSignals) {
  auto s = makeSemaphore(5, "frame-counter");
  EXPECT_REJECTED(s->signal(5), Result::ErrorNonIncreasingValue, "frame-counter", "5");
  EXPECT_REJECTED(s->signal(1), Result::ErrorNonIncreasingValue, "frame-counter");
  EXPECT_REJECTED(s->signal(0), Result::ErrorNonIncreasingValue, "frame-counter");
  auto marker = makeSemaphore();
  const SemaphoreValue markerSignal{*marker, 1};
  const SemaphoreValue stale{*s, 4};
  SubmitInfo infos[2];
  infos[0].signals = markerSignal;
  infos[1].signals = stale;
  EXPECT_REJECTED(queueA_.submit(infos), Result::ErrorNonIncreasingValue, "frame-counter");
  EXPECT_OK(queueA_.waitIdle(kLongNs));
  uint64_t value = 0;
  ASSERT_OK(s->getValue(&value));
  EXPECT_EQ(value, 5u);
  ASSERT_OK(marker->getValue(&value));
  EXPECT_EQ(value, 0u) << "a rejected submit executed part of its batches";
}

TEST_F(BadInputTest, SignalsOnAFailedSemaphore) {
  auto s = makeSemaphore(2);
  ASSERT_OK(s->fail("sensor unplugged"));
  EXPECT_REJECTED(s->signal(3), Result::ErrorSemaphoreFailed, "sensor unplugged");
  uint64_t value = 0;
  EXPECT_REJECTED(s->getValue(&value), Result::ErrorSemaphoreFailed, "sensor unplugged");
  EXPECT_EQ(value, 2u) << "getValue writes the last value even when failed";
  EXPECT_REJECTED(s->wait(3, baton::kWaitForever), Result::ErrorSemaphoreFailed,
                  "sensor unplugged");
}

TEST_F(BadInputTest, FailTwice) {
  auto s = makeSemaphore();
  ASSERT_OK(s->fail("first"));
  EXPECT_REJECTED(s->fail("second"), Result::ErrorSemaphoreFailed, "first");
  char reason[64];
  ASSERT_OK(s->getFailureReason(reason, sizeof reason));
  EXPECT_STREQ(reason, "first");
}

TEST_F(BadInputTest, GetFailureReason) {
  auto s = makeSemaphore();
  char reason[64];
  std::memset(reason, 'x', sizeof reason);
  ASSERT_OK(s->getFailureReason(reason, sizeof reason));
  EXPECT_STREQ(reason, "") << "no reason before a failure";
  ASSERT_OK(s->fail("a rather long failure reason"));
  // Truncated to the capacity, always NUL-terminated.
  char small[8];
  std::memset(small, 'x', sizeof small);
  ASSERT_OK(s->getFailureReason(small, sizeof small));
  EXPECT_STREQ(small, "a rathe");
  ASSERT_OK(s->getFailureReason(reason, sizeof reason));
  EXPECT_STREQ(reason, "a rather long failure reason");
}

// ---------------------------------------------------------------------------------------------
// Queue-ordered allocation misuse

TEST_F(BadInputTest, AllocaMisuse) {
  if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc))
    GTEST_SKIP() << "the host device has no stream-ordered allocation";
  Buffer b;
  EXPECT_REJECTED(queueA_.allocaBuffer({}, {0, MemoryKind::Device}, {}, &b),
                  Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED(queueA_.allocaBuffer({}, {64, MemoryKind::Device}, {}, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED(queueA_.deallocaBuffer({}, Buffer(), {}), Result::ErrorInvalidHandle, "null");
  auto plain = makeBuffer(*deviceA_, 64);
  EXPECT_REJECTED(queueA_.deallocaBuffer({}, *plain, {}), Result::ErrorInvalidArgument, "alloca");
  // An alloca buffer of device A freed on device B's queue.
  ASSERT_OK(queueA_.allocaBuffer({}, {64, MemoryKind::Device}, {}, &b));
  EXPECT_REJECTED(queueB_.deallocaBuffer({}, b, {}), Result::ErrorDeviceMismatch, "buffer");
  EXPECT_OK(queueA_.deallocaBuffer({}, b, {}));
  EXPECT_OK(queueA_.waitIdle(kLongNs));
}

// ---------------------------------------------------------------------------------------------
// Enumeration, names and the per-thread last error

TEST_F(BadInputTest, EnumerationWithTooSmallArrays) {
  uint32_t count = 0;
  ASSERT_OK(instance_->enumerateBackends(&count, nullptr));
  EXPECT_EQ(count, baton::kBackendKindCount);
  baton::BackendInfo one;
  uint32_t capacity = 1;
  // Too small is NotReady, not an error; the array is filled as far as it goes.
  EXPECT_EQ(instance_->enumerateBackends(&capacity, &one), Result::NotReady);
  EXPECT_EQ(capacity, 1u);
  EXPECT_EQ(one.kind, baton::BackendKind::Host);
  EXPECT_TRUE(one.compiled);
  EXPECT_TRUE(one.available) << one.reason;
  std::vector<baton::BackendInfo> all(count);
  ASSERT_OK(instance_->enumerateBackends(&count, all.data()));
  for (const baton::BackendInfo& b : all) {
    if (!b.available) {
      EXPECT_NE(b.reason[0], '\0') << baton::backendName(b.kind) << ": no reason";
    }
  }
  uint32_t devices = 0;
  ASSERT_OK(instance_->enumeratePhysicalDevices(&devices, nullptr));
  ASSERT_GE(devices, 1u);
  PhysicalDevice first;
  capacity = 0;
  EXPECT_EQ(instance_->enumeratePhysicalDevices(&capacity, &first), Result::NotReady);
  EXPECT_EQ(capacity, 0u);
}

TEST_F(BadInputTest, ResultAndBackendNames) {
  EXPECT_STREQ(baton::resultName(Result::Success), "Success");
  EXPECT_STREQ(baton::resultName(Result::Timeout), "Timeout");
  EXPECT_STREQ(baton::resultName(Result::ErrorSemaphoreFailed), "ErrorSemaphoreFailed");
  EXPECT_STREQ(baton::resultName(Result::ErrorInvalidState), "ErrorInvalidState");
  EXPECT_STREQ(baton::resultName(static_cast<Result>(-99)), "Result(-99)");
  for (int32_t code = -14; code <= 2; ++code) {
    const char* name = baton::resultName(static_cast<Result>(code));
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(std::string(name).rfind("Result(", 0), std::string::npos)
        << "no name for code " << code;
  }
  EXPECT_FALSE(baton::isError(Result::NotReady));
  EXPECT_FALSE(baton::isError(Result::Timeout));
  EXPECT_TRUE(baton::isError(Result::ErrorDriver));
  EXPECT_STREQ(baton::backendName(baton::BackendKind::Host), "host");
  EXPECT_STREQ(baton::backendName(baton::BackendKind::Cuda), "cuda");
  EXPECT_STREQ(baton::backendName(baton::BackendKind::Hip), "hip");
}

TEST_F(BadInputTest, LastErrorIsPerThread) {
  EXPECT_EQ(Semaphore().signal(1), Result::ErrorInvalidHandle);
  const std::string mine = lastError();
  EXPECT_FALSE(mine.empty());
  std::string theirs = "unset";
  std::thread other([&] { theirs = baton::lastErrorMessage(); });
  other.join();
  EXPECT_EQ(theirs, "") << "a fresh thread has no last error";
  EXPECT_EQ(lastError(), mine);
}

TEST_F(BadInputTest, ErrorsOfWorkerThreadsReachTheCallback) {
  // A host call failing on a queue's worker thread is reported through the debug callback,
  // not only through the failed semaphore.
  auto out = makeSemaphore(0, "worker-failure");
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(deviceA_->createCommandBuffer(cb.put()));
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->hostCall([](void*) { return Result::ErrorOutOfHostMemory; }, nullptr));
  ASSERT_OK(cb->end());
  const CommandBuffer handle = *cb;
  const SemaphoreValue signal{*out, 1};
  SubmitInfo info;
  info.commandBuffers = handle;
  info.signals = signal;
  sink_.clear();
  ASSERT_OK(queueA_.submit(info));
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "ErrorOutOfHostMemory")) << lastError();
  EXPECT_TRUE(sink_.has(MessageSeverity::Error, "ErrorOutOfHostMemory")) << sink_.dump();
}

}  // namespace
}  // namespace baton_test
