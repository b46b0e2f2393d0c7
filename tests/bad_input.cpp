// Bad input on the host backend (DESIGN §7): null, destroyed and wrong-type handles, zero and
// huge counts, null outputs, mismatched devices, out-of-range commands, misuse of command buffer
// state and of failed semaphores. Each call must return its documented Result, explain itself in
// lastErrorMessage() (naming the problem) and send the same text to the debug callback with
// Error severity. Nothing may crash, hang or change state.
//
// docs/bad-input.md documents each misuse in a table, one row per id. Every case here records,
// under its row's id, the Result and message it observed; BadInputTable.MatchesBehaviour, at the
// end of this file and so run after the cases, compares the two both ways (see there).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
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

// ---------------------------------------------------------------------------------------------
// What the cases observed, by table id (docs/bad-input.md)

struct Observation {
  std::string where;  // Suite.Test: the call's text
  Result result;
  std::string message;
};

struct ObservedCases {
  std::mutex mutex;
  std::map<std::string, std::vector<Observation>> byId;
  std::set<std::string> testsRun;  // BadInputTest cases that reached SetUp
};

ObservedCases& observed() {
  static ObservedCases cases;
  return cases;
}

std::string currentTestName() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("?");
}

void recordObservation(const char* id, const char* text, Result result,
                       const std::string& message) {
  ObservedCases& cases = observed();
  std::lock_guard<std::mutex> lock(cases.mutex);
  cases.byId[id].push_back({currentTestName() + ": " + text, result, message});
}

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      std::lock_guard<std::mutex> lock(observed().mutex);
      observed().testsRun.insert(currentTestName());
    }
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
  // callback received the same text with Error severity. What it observed is recorded under `id`,
  // the row of docs/bad-input.md that documents this misuse (checked by BadInputTable below).
  template <class Call>
  void expectError(const char* id, const char* text, Call&& call,
                   std::initializer_list<Result> expected,
                   std::initializer_list<const char*> needles) {
    sink_.clear();
    const Result got = call();
    const std::string message = lastError();
    checkError(id, text, got, message, expected, needles);
  }

  // The checks of expectError on a Result and message observed elsewhere (e.g. on a queue's
  // worker thread, inside a host call).
  void checkError(const char* id, const char* text, Result got, const std::string& message,
                  std::initializer_list<Result> expected,
                  std::initializer_list<const char*> needles) {
    recordObservation(id, text, got, message);
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

  // Submits to queueA_ one command buffer that runs `native` (or, when it is null, `hostCall`)
  // with `user`, and then signals `signal` to 1.
  void submitCallback(baton::HostCallback hostCall, baton::NativeCallback native, void* user,
                      Semaphore signal) {
    baton::UniqueCommandBuffer cb;
    ASSERT_OK(deviceA_->createCommandBuffer(cb.put()));
    ASSERT_OK(cb->begin());
    if (native)
      ASSERT_OK(cb->native(native, user));
    else
      ASSERT_OK(cb->hostCall(hostCall, user));
    ASSERT_OK(cb->end());
    const CommandBuffer handle = *cb;
    const SemaphoreValue entry{signal, 1};
    SubmitInfo info;
    info.commandBuffers = handle;
    info.signals = entry;
    ASSERT_OK(queueA_.submit(info));
  }

  // Runs `call` inside a host call (or, with `native`, a native callback) of a submission on
  // queueA_, then checks what it returned there as expectError does.
  void expectErrorInCallback(const char* id, const char* text, bool native,
                             std::function<Result()> call, std::initializer_list<Result> expected,
                             std::initializer_list<const char*> needles) {
    struct Inside {
      std::function<Result()> call;
      Result result = Result::Success;
      std::string message;
      static Result run(void* user) {
        auto* self = static_cast<Inside*>(user);
        self->result = self->call();
        self->message = baton::lastErrorMessage();
        return Result::Success;
      }
      static Result runNative(const baton::NativeQueue&, void* user) { return run(user); }
    } inside{std::move(call), Result::Success, {}};
    auto done = makeSemaphore();
    sink_.clear();
    submitCallback(&Inside::run, native ? &Inside::runNative : nullptr, &inside, *done);
    if (HasFatalFailure()) return;
    ASSERT_OK(done->wait(1, kLongNs))
        << text << ": the submission that made the call lost its signal";
    checkError(id, text, inside.result, inside.message, expected, needles);
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

// expectError for one expected Result, recorded under the table row `id`; needles follow.
#define EXPECT_REJECTED(id, call, code, ...) \
  expectError(id, #call, [&] { return (call); }, {code}, {__VA_ARGS__})

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
  expectError("device.createBuffer.unknown-memory-kind", "createBuffer(unknown memory kind)",
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
// Command ranges and limits

TEST_F(BadInputTest, CopyRangesOutOfBounds) {
  auto src = makeBuffer(*deviceA_, 64);
  auto dst = makeBuffer(*deviceA_, 32);
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED("commandBuffer.copyBuffer.source-out-of-range",
                  rec->copyBuffer(*src, 48, *dst, 0, 32), Result::ErrorInvalidArgument, "source",
                  "outside");
  EXPECT_REJECTED("commandBuffer.copyBuffer.destination-out-of-range",
                  rec->copyBuffer(*src, 0, *dst, 16, 32), Result::ErrorInvalidArgument,
                  "destination", "outside");
  EXPECT_REJECTED("commandBuffer.copyBuffer.zero-size", rec->copyBuffer(*src, 0, *dst, 0, 0),
                  Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED("commandBuffer.copyBuffer.source-out-of-range",
                  rec->copyBuffer(*src, 65, *dst, 0, 1), Result::ErrorInvalidArgument, "outside");
  // Offsets and sizes whose sum wraps around 2^64 must not pass a naive bounds check.
  EXPECT_REJECTED("commandBuffer.copyBuffer.source-range-wraps",
                  rec->copyBuffer(*src, UINT64_MAX - 7, *dst, 0, 16), Result::ErrorInvalidArgument,
                  "outside");
  EXPECT_REJECTED("commandBuffer.copyBuffer.size-wraps",
                  rec->copyBuffer(*src, 8, *dst, 0, UINT64_MAX), Result::ErrorInvalidArgument,
                  "outside");
  EXPECT_REJECTED("commandBuffer.copyBuffer.overlapping-ranges",
                  rec->copyBuffer(*src, 0, *src, 16, 32), Result::ErrorInvalidArgument, "overlap");
  EXPECT_OK(rec->copyBuffer(*src, 32, *dst, 0, 32));  // exactly in bounds
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, UpdateLimits) {
  auto big = makeBuffer(*deviceA_, 4 * baton::kMaxUpdateSize);
  auto rec = makeRecording(*deviceA_);
  std::vector<uint8_t> data(baton::kMaxUpdateSize + 1, 0x5A);
  EXPECT_REJECTED("commandBuffer.updateBuffer.too-large",
                  rec->updateBuffer(*big, 0, baton::kMaxUpdateSize + 1, data.data()),
                  Result::ErrorInvalidArgument, "kMaxUpdateSize");
  EXPECT_REJECTED("commandBuffer.updateBuffer.null-data", rec->updateBuffer(*big, 0, 16, nullptr),
                  Result::ErrorInvalidArgument, "null");
  EXPECT_REJECTED("commandBuffer.updateBuffer.zero-size",
                  rec->updateBuffer(*big, 0, 0, data.data()), Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED("commandBuffer.updateBuffer.out-of-range",
                  rec->updateBuffer(*big, 4 * baton::kMaxUpdateSize - 8, 16, data.data()),
                  Result::ErrorInvalidArgument, "outside");
  EXPECT_OK(rec->updateBuffer(*big, 0, baton::kMaxUpdateSize, data.data()));
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, FillAlignmentAndRange) {
  auto buf = makeBuffer(*deviceA_, 64);
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED("commandBuffer.fillBuffer.unaligned-offset", rec->fillBuffer(*buf, 2, 8, 0),
                  Result::ErrorInvalidArgument, "multiple");
  EXPECT_REJECTED("commandBuffer.fillBuffer.unaligned-size", rec->fillBuffer(*buf, 0, 6, 0),
                  Result::ErrorInvalidArgument, "multiple");
  EXPECT_REJECTED("commandBuffer.fillBuffer.zero-size", rec->fillBuffer(*buf, 0, 0, 0),
                  Result::ErrorInvalidArgument, "size");
  EXPECT_REJECTED("commandBuffer.fillBuffer.out-of-range", rec->fillBuffer(*buf, 60, 8, 0),
                  Result::ErrorInvalidArgument, "outside");
  EXPECT_OK(rec->fillBuffer(*buf, 60, 4, 0));
  EXPECT_OK(rec->end());
}

TEST_F(BadInputTest, NullCallbacks) {
  auto rec = makeRecording(*deviceA_);
  EXPECT_REJECTED("commandBuffer.hostCall.null-callback", rec->hostCall(nullptr, nullptr),
                  Result::ErrorInvalidArgument, "callback", "null");
  EXPECT_REJECTED("commandBuffer.native.null-callback", rec->native(nullptr, nullptr),
                  Result::ErrorInvalidArgument, "callback", "null");
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
    // queue.hpp lists ErrorInvalidState (a command buffer without an ended recording); either
    // code is accepted here, and docs/bad-input.md pins the one returned.
    const char* id = cb.raw() == neverBegun->raw() ? "queue.submit.command-buffer-never-begun"
                                                   : "queue.submit.command-buffer-still-recording";
    expectError(id, "submit(command buffer not ended)", [&] { return queueA_.submit(infos); },
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
  expectError("queue.submit.command-buffer-re-begun", "submit(re-begun command buffer)",
              [&] { return queueA_.submit(info); },
              {Result::ErrorInvalidArgument, Result::ErrorInvalidState}, {"end"});
  EXPECT_OK(ended->end());
}

TEST_F(BadInputTest, RecordingOutsideBeginAndEnd) {
  auto buf = makeBuffer(*deviceA_, 64);
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(deviceA_->createCommandBuffer(cb.put()));
  uint32_t word = 0;
  EXPECT_REJECTED("commandBuffer.fillBuffer.not-recording", cb->fillBuffer(*buf, 0, 4, 0),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.updateBuffer.not-recording", cb->updateBuffer(*buf, 0, 4, &word),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.copyBuffer.not-recording", cb->copyBuffer(*buf, 0, *buf, 32, 4),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.hostCall.not-recording",
                  cb->hostCall([](void*) { return Result::Success; }, nullptr),
                  Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED(
      "commandBuffer.native.not-recording",
      cb->native([](const baton::NativeQueue&, void*) { return Result::Success; }, nullptr),
      Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.end.never-begun", cb->end(), Result::ErrorInvalidState,
                  "recording");
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->end());
  EXPECT_REJECTED("commandBuffer.end.twice", cb->end(), Result::ErrorInvalidState, "recording");
  EXPECT_REJECTED("commandBuffer.fillBuffer.not-recording", cb->fillBuffer(*buf, 0, 4, 0),
                  Result::ErrorInvalidState, "recording");
}

// ---------------------------------------------------------------------------------------------
// Signals: non-increasing values, failed semaphores

TEST_F(BadInputTest, NonIncreasingSignals) {
  auto s = makeSemaphore(5, "frame-counter");
  EXPECT_REJECTED("semaphore.signal.non-increasing", s->signal(5), Result::ErrorNonIncreasingValue,
                  "frame-counter", "5");
  EXPECT_REJECTED("semaphore.signal.non-increasing", s->signal(1), Result::ErrorNonIncreasingValue,
                  "frame-counter");
  EXPECT_REJECTED("semaphore.signal.non-increasing", s->signal(0), Result::ErrorNonIncreasingValue,
                  "frame-counter");
  auto marker = makeSemaphore();
  const SemaphoreValue markerSignal{*marker, 1};
  const SemaphoreValue stale{*s, 4};
  SubmitInfo infos[2];
  infos[0].signals = markerSignal;
  infos[1].signals = stale;
  EXPECT_REJECTED("queue.submit.non-increasing-signal", queueA_.submit(infos),
                  Result::ErrorNonIncreasingValue, "frame-counter");
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
  EXPECT_REJECTED("semaphore.signal.failed", s->signal(3), Result::ErrorSemaphoreFailed,
                  "sensor unplugged");
  uint64_t value = 0;
  EXPECT_REJECTED("semaphore.getValue.failed", s->getValue(&value), Result::ErrorSemaphoreFailed,
                  "sensor unplugged");
  EXPECT_EQ(value, 2u) << "getValue writes the last value even when failed";
  EXPECT_REJECTED("semaphore.wait.failed", s->wait(3, baton::kWaitForever),
                  Result::ErrorSemaphoreFailed, "sensor unplugged");
}

TEST_F(BadInputTest, FailTwice) {
  auto s = makeSemaphore();
  ASSERT_OK(s->fail("first"));
  EXPECT_REJECTED("semaphore.fail.already-failed", s->fail("second"), Result::ErrorSemaphoreFailed,
                  "first");
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

// ---------------------------------------------------------------------------------------------
// Documented in the headers, added for the table (docs/bad-input.md)

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

TEST_F(BadInputTest, FailureReasonIntoZeroCapacity) {
  auto s = makeSemaphore();
  char reason[4] = {'x', 'x', 'x', 'x'};
  EXPECT_REJECTED("semaphore.getFailureReason.zero-capacity", s->getFailureReason(reason, 0),
                  Result::ErrorInvalidArgument, "capacity");
  EXPECT_EQ(reason[0], 'x') << "nothing may be written with capacity 0";
}

TEST_F(BadInputTest, WaitsOnAFailedSemaphore) {
  auto failed = makeSemaphore(1, "failed-input");
  auto fine = makeSemaphore(0);
  ASSERT_OK(failed->fail("decoder crashed"));
  const SemaphoreValue both[2] = {{*fine, 1}, {*failed, 2}};
  // ALL and ANY alike: the failure ends a wait for a value not yet reached at once, even with an
  // infinite timeout. (A wait for a value reached before the failure stays satisfied: Success,
  // conformance_failure.cpp.)
  EXPECT_REJECTED("instance.waitSemaphores.failed-semaphore",
                  instance_->waitSemaphores(both, WaitMode::All, baton::kWaitForever),
                  Result::ErrorSemaphoreFailed, "decoder crashed");
  EXPECT_REJECTED("instance.waitSemaphores.failed-semaphore",
                  instance_->waitSemaphores(both, WaitMode::Any, baton::kWaitForever),
                  Result::ErrorSemaphoreFailed, "decoder crashed");
  EXPECT_REJECTED("device.waitSemaphores.failed-semaphore",
                  deviceA_->waitSemaphores({{*failed, 2}}, WaitMode::All, baton::kWaitForever),
                  Result::ErrorSemaphoreFailed, "decoder crashed");
  // A submission that waits on it does not run; its signal fails in turn, naming the first
  // failure, and a host wait on that signal returns it.
  auto out = makeSemaphore(0, "downstream");
  const SemaphoreValue wait{*failed, 2};
  const SemaphoreValue signal{*out, 1};
  SubmitInfo info;
  info.waits = wait;
  info.signals = signal;
  ASSERT_OK(queueA_.submit(info));
  EXPECT_REJECTED("queue.submit.waits-on-failed-semaphore", out->wait(1, kLongNs),
                  Result::ErrorSemaphoreFailed, "decoder crashed");
}

TEST_F(BadInputTest, CallbacksReturningAnError) {
  for (bool native : {false, true}) {
    auto out = makeSemaphore(0, "callback-output");
    submitCallback(
        [](void*) { return Result::ErrorOutOfDeviceMemory; },
        native ? [](const baton::NativeQueue&, void*) { return Result::ErrorOutOfDeviceMemory; }
               : baton::NativeCallback(nullptr),
        nullptr, *out);
    if (HasFatalFailure()) return;
    EXPECT_REJECTED(native ? "commandBuffer.native.callback-returns-error"
                           : "commandBuffer.hostCall.callback-returns-error",
                    out->wait(1, kLongNs), Result::ErrorSemaphoreFailed, "ErrorOutOfDeviceMemory");
  }
}

TEST_F(BadInputTest, SemaphoreDestroyedWhileWaitedOn) {
  Semaphore input;
  ASSERT_OK(instance_->createSemaphore({0, "input"}, &input));
  auto out = makeSemaphore(0, "after-input");
  const SemaphoreValue wait{input, 1};
  const SemaphoreValue signal{*out, 1};
  SubmitInfo info;
  info.waits = wait;
  info.signals = signal;
  ASSERT_OK(queueA_.submit(info));
  EXPECT_REJECTED("semaphore.destroy.while-waited-on", input.destroy(), Result::ErrorObjectInUse,
                  "input");
  // The held submission does not wait for ever: its signal fails.
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed) << lastError();
  uint64_t value = 0;
  EXPECT_EQ(input.getValue(&value), Result::ErrorInvalidHandle) << "the handle is gone either way";
}

TEST_F(BadInputTest, ParentsDestroyedWithLiveChildren) {
  Device d;
  ASSERT_OK(instance_->createDevice(physical_, {}, &d));
  CommandBuffer cb;
  ASSERT_OK(d.createCommandBuffer(&cb));
  Buffer b;
  ASSERT_OK(d.createBuffer({64, MemoryKind::HostPinned}, &b));
  EXPECT_REJECTED("device.destroy.live-children", d.destroy(), Result::ErrorObjectInUse,
                  "live command buffer");
  uint64_t size = 0;
  EXPECT_EQ(b.getSize(&size), Result::ErrorInvalidHandle) << "the children went with the device";
  EXPECT_EQ(cb.begin(), Result::ErrorInvalidHandle) << "the children went with the device";

  Instance other;
  ASSERT_OK(baton::createInstance(sink_.instanceInfo(), &other));
  Semaphore s;
  ASSERT_OK(other.createSemaphore({}, &s));
  EXPECT_REJECTED("instance.destroy.live-children", other.destroy(), Result::ErrorObjectInUse,
                  "live child");
  EXPECT_TRUE(sink_.has(MessageSeverity::Warning, "live")) << sink_.dump();
  EXPECT_EQ(s.signal(1), Result::ErrorInvalidHandle) << "the semaphore went with its instance";
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

// Calls that would wait for the callback's own device, made from inside a host call and a native
// callback on it: refused at once (callback_scope.hpp; conformance_reentrancy.cpp tests that
// nothing changes and no signal is lost, on every backend).
TEST_F(BadInputTest, WaitingForItsOwnDeviceFromACallback) {
  const Queue own = queueA_;
  Queue sibling;
  ASSERT_OK(deviceA_->getQueue(1, &sibling));
  const Device device = *deviceA_;
  const Instance instance = *instance_;
  for (bool native : {false, true}) {
    expectErrorInCallback("queue.waitIdle.inside-callback-of-its-device", "Queue::waitIdle (own)",
                          native, [own] { return own.waitIdle(baton::kWaitForever); },
                          {Result::ErrorInvalidState}, {"Queue::waitIdle"});
    expectErrorInCallback("queue.waitIdle.inside-callback-of-its-device",
                          "Queue::waitIdle (sibling)", native,
                          [sibling] { return sibling.waitIdle(baton::kWaitForever); },
                          {Result::ErrorInvalidState}, {"Queue::waitIdle"});
    expectErrorInCallback("device.waitIdle.inside-own-callback", "Device::waitIdle", native,
                          [device] { return device.waitIdle(baton::kWaitForever); },
                          {Result::ErrorInvalidState}, {"Device::waitIdle"});
    expectErrorInCallback("device.destroy.inside-own-callback", "Device::destroy", native,
                          [device] { return device.destroy(); }, {Result::ErrorInvalidState},
                          {"Device::destroy"});
    expectErrorInCallback("instance.destroy.inside-own-callback", "Instance::destroy", native,
                          [instance] { return instance.destroy(); }, {Result::ErrorInvalidState},
                          {"Instance::destroy"});
  }
  // Both still work.
  uint32_t count = 0;
  EXPECT_OK(deviceA_->getQueueCount(&count));
  EXPECT_OK(instance_->enumerateBackends(&count, nullptr));
}

// ---------------------------------------------------------------------------------------------
// The table in docs/bad-input.md against what the cases above observed.
//
// Each row of the table is `| `id` | call | misuse | `Result` | `piece` … `piece` |`. This test
// fails when a row's id was observed by no case, when a case recorded an id that has no row, or
// when an observation's Result differs from the row's or its message does not contain the row's
// pieces in order (exactly, case included). It runs after the BadInputTest cases because it is
// registered after them; when some of them did not run (a --gtest_filter, a skip), rows without
// observations are listed but not failed, and under --gtest_shuffle it skips if it ran first.
// meson passes the table's path (BATON_BAD_INPUT_TABLE); the environment variable of the same
// name overrides it. BATON_BAD_INPUT_PRINT=1 prints every observation (id | Result | message).

struct TableRow {
  int line = 0;
  std::string id, call, misuse, result;
  std::vector<std::string> message;  // the pieces the message contains, in this order
};

std::string trim(std::string_view text) {
  size_t b = text.find_first_not_of(" \t\r");
  size_t e = text.find_last_not_of(" \t\r");
  return b == std::string_view::npos ? std::string() : std::string(text.substr(b, e - b + 1));
}

// The content of a cell that is one code span (`text`).
bool codeSpan(const std::string& cell, std::string* content) {
  if (cell.size() < 2 || cell.front() != '`' || cell.back() != '`') return false;
  *content = cell.substr(1, cell.size() - 2);
  return content->find('`') == std::string::npos;
}

// The contents of a cell made of one or more non-empty code spans, separated by spaces or "…".
bool codeSpans(const std::string& cell, std::vector<std::string>* spans) {
  spans->clear();
  size_t i = 0;
  while (i < cell.size()) {
    if (cell[i] == '`') {
      size_t end = cell.find('`', i + 1);
      if (end == std::string::npos || end == i + 1) return false;
      spans->push_back(cell.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (cell[i] == ' ') {
      ++i;
    } else if (cell.compare(i, 3, "\xE2\x80\xA6") == 0) {  // …
      i += 3;
    } else {
      return false;
    }
  }
  return !spans->empty();
}

// Whether `message` contains every piece, in order.
bool containsInOrder(const std::string& message, const std::vector<std::string>& pieces) {
  size_t at = 0;
  for (const std::string& piece : pieces) {
    at = message.find(piece, at);
    if (at == std::string::npos) return false;
    at += piece.size();
  }
  return true;
}

std::string quotePieces(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& piece : pieces) out += (out.empty() ? "\"" : " ... \"") + piece + "\"";
  return out;
}

// Reads the rows of every table whose first cell is a code span; header and separator rows
// (whose first cell is not) are skipped. Malformed rows are reported in *errors.
std::vector<TableRow> readTable(const std::string& path, std::vector<std::string>* errors) {
  std::vector<TableRow> rows;
  std::ifstream in(path);
  if (!in) {
    errors->push_back("cannot open " + path);
    return rows;
  }
  std::set<std::string> resultNames;
  for (int32_t code = -64; code <= 64; ++code)
    resultNames.insert(baton::resultName(static_cast<Result>(code)));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string text = trim(line);
    if (text.empty() || text.front() != '|') continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < text.size(); ++i) {
      if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '|') {
        cell += '|';
        ++i;
      } else if (text[i] == '|') {
        cells.push_back(trim(cell));
        cell.clear();
      } else {
        cell += text[i];
      }
    }
    if (!trim(cell).empty()) cells.push_back(trim(cell));  // a row without its closing '|'
    if (cells.empty() || cells[0].empty() || cells[0].front() != '`') continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    TableRow row;
    row.line = number;
    if (cells.size() != 5 || !codeSpan(cells[0], &row.id) || !codeSpan(cells[3], &row.result) ||
        !codeSpans(cells[4], &row.message)) {
      errors->push_back(where +
                        "a row must be | `id` | call | misuse | `Result` | `piece` … `piece` |");
      continue;
    }
    row.call = cells[1];
    row.misuse = cells[2];
    if (!resultNames.count(row.result) || row.result.rfind("Result(", 0) == 0)
      errors->push_back(where + "`" + row.id + "`: \"" + row.result + "\" is not a Result name");
    rows.push_back(row);
  }
  return rows;
}

TEST(BadInputTable, MatchesBehaviour) {
  std::string path = BATON_BAD_INPUT_TABLE;
  if (const char* env = std::getenv("BATON_BAD_INPUT_TABLE"); env && *env) path = env;

  // Did every BadInputTest case run before this one?
  std::vector<std::string> notRun, notYetRun;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    if (std::string(suite.name()) != "BadInputTest") continue;
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const ::testing::TestInfo& info = *suite.GetTestInfo(j);
      const std::string name = std::string(suite.name()) + "." + info.name();
      bool ran;
      {
        std::lock_guard<std::mutex> lock(observed().mutex);
        ran = observed().testsRun.count(name) > 0;
      }
      if (!info.should_run())
        notRun.push_back(name + " (filtered out)");
      else if (!ran)
        notYetRun.push_back(name);
      else if (info.result()->Skipped())
        notRun.push_back(name + " (skipped)");
    }
  }
  if (!notYetRun.empty())
    GTEST_SKIP() << "this check ran before " << notYetRun.size()
                 << " BadInputTest cases (--gtest_shuffle?); it needs to run after them";

  std::vector<std::string> errors;
  const std::vector<TableRow> rows = readTable(path, &errors);
  for (const std::string& e : errors) ADD_FAILURE() << e;
  ASSERT_FALSE(rows.empty()) << path << " has no rows";

  std::map<std::string, const TableRow*> byId;
  for (const TableRow& row : rows) {
    auto [it, inserted] = byId.emplace(row.id, &row);
    EXPECT_TRUE(inserted) << path << ":" << row.line << ": id `" << row.id
                          << "` is already the row of line " << it->second->line;
  }

  std::map<std::string, std::vector<Observation>> seen;
  {
    std::lock_guard<std::mutex> lock(observed().mutex);
    seen = observed().byId;
  }
  size_t observations = 0;
  for (const auto& [id, list] : seen) {
    observations += list.size();
    auto it = byId.find(id);
    if (it == byId.end()) {
      ADD_FAILURE() << "case `" << id << "` has no row in " << path << "; it observed\n  "
                    << list.front().where << "\n  -> " << resultName(list.front().result) << ": "
                    << list.front().message << "\nadd a row such as:\n| `" << id
                    << "` | call | misuse | `" << resultName(list.front().result)
                    << "` | `a stable piece of the message` |";
      continue;
    }
    const TableRow& row = *it->second;
    for (const Observation& o : list) {
      EXPECT_EQ(row.result, resultName(o.result))
          << path << ":" << row.line << ": row `" << id << "` says " << row.result << ", but "
          << o.where << " returned " << resultName(o.result) << ": " << o.message;
      EXPECT_TRUE(containsInOrder(o.message, row.message))
          << path << ":" << row.line << ": row `" << id << "` says the message contains "
          << quotePieces(row.message) << ", but " << o.where << " got: " << o.message;
    }
  }
  // BATON_BAD_INPUT_PRINT=1 lists every observation, for writing rows.
  if (envUint("BATON_BAD_INPUT_PRINT", 0)) {
    for (const auto& [id, list] : seen)
      for (const Observation& o : list)
        std::cout << id << " | " << resultName(o.result) << " | " << o.message << "\n";
  }
  std::vector<std::string> unobserved;
  for (const TableRow& row : rows)
    if (!seen.count(row.id)) unobserved.push_back(row.id);
  for (const std::string& id : unobserved) {
    if (notRun.empty())
      ADD_FAILURE() << path << ":" << byId[id]->line << ": row `" << id
                    << "` was observed by no case in tests/bad_input.cpp: add a case that "
                       "records it, or remove the row";
  }
  if (!notRun.empty() && !unobserved.empty()) {
    std::string list;
    for (const std::string& n : notRun) list += "\n  " + n;
    std::cout << "[ note     ] " << unobserved.size()
              << " rows not observed, not checked, because these cases did not run:" << list
              << "\n";
  }
  std::cout << "[ table    ] " << path << ": " << rows.size() << " rows, " << seen.size()
            << " ids observed by " << observations << " calls\n";
}

}  // namespace
}  // namespace baton_test
