// Bad input, semaphore values and failures: non-increasing signals, signals, queries and waits on
// failed semaphores, failing twice, failure reasons, host waits and submissions that wait on a
// failed semaphore, callbacks that return an error, a semaphore destroyed while pending work uses
// it, parents destroyed with live children, and calls from inside a callback that would wait for
// the callback's own device. The fixture and EXPECT_REJECTED are in bad_input.hpp; the table
// these cases record for is docs/bad-input.md.
#include <cstring>

#include "bad_input.hpp"

namespace baton_test {
namespace {

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

TEST_F(BadInputTest, FailureReasonIntoZeroCapacity) {
  auto s = makeSemaphore();
  char reason[4] = {'x', 'x', 'x', 'x'};
  EXPECT_REJECTED("semaphore.getFailureReason.zero-capacity", s->getFailureReason(reason, 0),
                  Result::ErrorInvalidArgument, "capacity");
  EXPECT_EQ(reason[0], 'x') << "nothing may be written with capacity 0";
}

// ---------------------------------------------------------------------------------------------
// Failures reaching waiters, destroyed objects, re-entrant calls

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
  // The held submission does not wait for ever: its signal fails, with the reason
  // semaphore.hpp quotes.
  EXPECT_REJECTED("semaphore.destroy.while-waited-on-downstream", out->wait(1, kLongNs),
                  Result::ErrorSemaphoreFailed, "destroyed while pending work used it");
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

}  // namespace
}  // namespace baton_test
