// The fixture and recording machinery of the bad-input tests (docs/testing.md, 'Bad input'), shared
// by the tests/bad_input_*.cpp files: BadInputTest makes a host-backend instance with two devices
// (deviceA_, unnamed, two queues; deviceB_, named "device-b", one queue), and expectError /
// EXPECT_REJECTED check the whole error contract of one call — its Result, lastErrorMessage()
// naming the problem, and the same text at the debug callback with Error severity — and record what
// was observed under the call's row id of docs/bad-input.md, for the table check in
// bad_input_table.cpp.
//
// The files, by theme: bad_input_handles.cpp (null, destroyed, wrong-type and forged handles),
// bad_input_arguments.cpp (counts, null outputs, enums, objects of another device or instance,
// alloca), bad_input_commands.cpp (recording ranges, limits and command buffer state),
// bad_input_failures.cpp (non-increasing signals, failed semaphores, destroy with work pending,
// re-entrant waits from callbacks), bad_input_reporting.cpp (enumeration, names, the per-thread
// last error, errors of worker threads), bad_input_table.cpp (the table check and main()).
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace baton_test {

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
// What the cases observed, by table id (docs/bad-input.md). One record for the whole binary
// (inline: every file that includes this header shares it).

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

inline ObservedCases& observed() {
  static ObservedCases cases;
  return cases;
}

inline std::string currentTestName() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("?");
}

inline void recordObservation(const char* id, const char* text, Result result,
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
    info.debugName = "device-b";  // deviceA_ has none: messages show both forms of a label
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

}  // namespace baton_test
