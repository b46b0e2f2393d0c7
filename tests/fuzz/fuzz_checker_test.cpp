// The fuzzer's invariant checker, checked: a checker that never reports anything passes every
// fuzz run, so each invariant it enforces is fed here a history that breaks it — a value going
// backwards, a value reached that nobody signalled, a failed semaphore that recovers or changes
// its reason, a wait that succeeds for a value never signalled or times out on one already
// reached, a lost signal, a waiter that never returns — and must be reported; a valid history,
// made of real calls on the host backend, must be accepted. Findings reach the test through
// setFindingHandler instead of aborting the process (fuzz_checker.hpp).
#include "fuzz_checker.hpp"

#include <gtest/gtest.h>

#include <baton/baton.hpp>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace baton_fuzz {
namespace {

using baton::Result;
using baton::Semaphore;
using baton::WaitMode;

// What the handler throws for a violation, so that the check that found it unwinds.
struct Reported {
  std::string text;
};

std::mutex gHangsMutex;
std::vector<std::string> gHangs;

void recordFinding(Finding finding, const std::string& text) {
  if (finding == Finding::Violation) throw Reported{text};
  std::lock_guard<std::mutex> lock(gHangsMutex);
  gHangs.push_back(text);
}

// The text of the violation `check` reports, or "" when it reports none.
template <class Check>
std::string violationOf(Check&& check) {
  try {
    check();
  } catch (const Reported& r) {
    return r.text;
  }
  return "";
}

#define EXPECT_REPORTED(check, needle)                                                  \
  do {                                                                                  \
    const std::string text = violationOf([&] { check; });                               \
    EXPECT_FALSE(text.empty()) << #check << ": not reported";                           \
    EXPECT_NE(text.find(needle), std::string::npos) << #check << " reported: " << text; \
  } while (0)

class CheckerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setFindingHandler(&recordFinding);
    {
      std::lock_guard<std::mutex> lock(gHangsMutex);
      gHangs.clear();
    }
    baton::InstanceCreateInfo info;
    info.backendMask = baton::backendBit(baton::BackendKind::Host);
    ASSERT_EQ(baton::createInstance(info, &instance_), Result::Success);
    // checkDefined() wants a message with every error result: the synthetic error results below
    // come after a real error, which leaves one on this thread.
    ASSERT_EQ(Semaphore().signal(1), Result::ErrorInvalidHandle);
  }
  void TearDown() override {
    watchdogEnd();
    setHangLimitMs(20000);
    setFindingHandler(nullptr);
    for (Semaphore s : created_) (void)s.destroy();  // those a test did not destroy itself
    EXPECT_EQ(instance_.destroy(), Result::Success) << baton::lastErrorMessage();
  }

  // A model of a semaphore that only the model knows (its handle names nothing).
  SemaphoreModel model(uint64_t initial) {
    SemaphoreModel m;
    m.created(Semaphore(0xABCD00000001ull), 1, initial);
    return m;
  }
  // A real host-backend semaphore and its model.
  SemaphoreModel real(uint64_t initial) {
    baton::SemaphoreCreateInfo info;
    info.initialValue = initial;
    Semaphore s;
    EXPECT_EQ(instance_.createSemaphore(info, &s), Result::Success);
    created_.push_back(s);
    SemaphoreModel m;
    m.created(s, static_cast<uint32_t>(created_.size() + 1), initial);
    return m;
  }

  baton::Instance instance_;
  std::vector<Semaphore> created_;
};

// ---- results of any call ----------------------------------------------------------------------

TEST_F(CheckerTest, ReportsAnUndefinedResult) {
  EXPECT_REPORTED(checkDefined(static_cast<Result>(-99), "op"), "undefined Result -99");
  EXPECT_REPORTED(checkDefined(static_cast<Result>(3), "op"), "undefined Result 3");
}

TEST_F(CheckerTest, ReportsAnErrorWithoutAMessage) {
  // A fresh thread has no last error message.
  std::string text;
  std::thread([&] {
    text = violationOf([] { checkDefined(Result::ErrorInvalidArgument, "op"); });
  }).join();
  EXPECT_NE(text.find("without an error message"), std::string::npos) << text;
}

// ---- one semaphore's values -------------------------------------------------------------------

TEST_F(CheckerTest, ReportsAValueGoingBackwards) {
  SemaphoreModel m = model(0);
  m.requested(5);
  m.onGetValue(Result::Success, 5);
  EXPECT_REPORTED(m.onGetValue(Result::Success, 3), "went backwards");
}

TEST_F(CheckerTest, ReportsAValueNobodySignalled) {
  SemaphoreModel m = model(2);
  m.requested(4);
  EXPECT_REPORTED(m.onGetValue(Result::Success, 7), "nobody asked for more than 4");
}

TEST_F(CheckerTest, ReportsASignalAcceptedAtOrBelowTheValue) {
  SemaphoreModel m = model(5);
  EXPECT_REPORTED(m.onSignal(Result::Success, 5), "already 5");
}

TEST_F(CheckerTest, ReportsASignalRefusedAsNonIncreasingAboveEveryRequest) {
  SemaphoreModel m = model(1);
  m.requested(3);
  EXPECT_REPORTED(m.onSignal(Result::ErrorNonIncreasingValue, 10), "refused as non-increasing");
}

TEST_F(CheckerTest, ReportsAnUnexpectedResult) {
  SemaphoreModel m = model(0);
  EXPECT_REPORTED(m.onGetValue(Result::ErrorInvalidArgument, 0), "returned ErrorInvalidArgument");
  EXPECT_REPORTED(m.onSignal(Result::ErrorDeviceMismatch, 1), "returned ErrorDeviceMismatch");
}

TEST_F(CheckerTest, ReportsAStaleHandleThatStillWorks) {
  SemaphoreModel m = model(0);
  m.alive = false;
  EXPECT_REPORTED(m.onGetValue(Result::Success, 0), "not ErrorInvalidHandle");
  EXPECT_REPORTED(m.onSignal(Result::Success, 1), "destroyed/null semaphore");
  EXPECT_REPORTED(m.onFail(Result::Success, "x"), "destroyed/null semaphore");
}

// ---- failure ----------------------------------------------------------------------------------

TEST_F(CheckerTest, ReportsAFailedSemaphoreThatRecovers) {
  SemaphoreModel m = model(0);
  m.onFail(Result::Success, "decoder crashed");
  EXPECT_REPORTED(m.onGetValue(Result::Success, 0), "must stay failed");
}

TEST_F(CheckerTest, ReportsASignalThatSucceedsAfterTheFailure) {
  SemaphoreModel m = model(0);
  m.onFail(Result::Success, "decoder crashed");
  EXPECT_REPORTED(m.onSignal(Result::Success, 1), "succeeded after it failed");
}

TEST_F(CheckerTest, ReportsASecondFailThatSucceeds) {
  SemaphoreModel m = model(0);
  m.onFail(Result::Success, "first");
  EXPECT_REPORTED(m.onFail(Result::Success, "second"), "the first failure wins");
}

TEST_F(CheckerTest, ReportsAFailureReasonThatChanges) {
  SemaphoreModel m = model(0);
  m.onFail(Result::Success, "first");
  m.onFailureReason(Result::Success, "first");
  EXPECT_REPORTED(m.onFailureReason(Result::Success, "second"), "changed from 'first' to 'second'");
}

TEST_F(CheckerTest, ReportsAFailedSemaphoreWithoutAReason) {
  SemaphoreModel m = model(0);
  m.onFail(Result::Success, "first");
  EXPECT_REPORTED(m.onFailureReason(Result::Success, ""), "has no failure reason");
}

TEST_F(CheckerTest, ReportsAFailureCodeThatChanges) {
  SemaphoreModel m = model(0);
  m.onGetValue(Result::ErrorSemaphoreFailed, 0);
  EXPECT_REPORTED(m.onGetValue(Result::ErrorDeviceLost, 0),
                  "failed with ErrorSemaphoreFailed, now reports ErrorDeviceLost");
}

TEST_F(CheckerTest, ReportsAValueThatMovesAfterTheFailure) {
  SemaphoreModel m = model(0);
  m.requested(3);
  m.onGetValue(Result::ErrorSemaphoreFailed, 1);
  EXPECT_REPORTED(m.onGetValue(Result::ErrorSemaphoreFailed, 2), "moved from 1 to 2");
}

// ---- host waits -------------------------------------------------------------------------------

TEST_F(CheckerTest, ReportsAWaitThatSucceedsForAValueNeverSignalled) {
  SemaphoreModel a = model(0), b = model(0);
  a.requested(3);
  EXPECT_REPORTED(checkWaitResult(Result::Success, {{&a, 5}}, WaitMode::All, true),
                  "never signalled");
  EXPECT_REPORTED(checkWaitResult(Result::Success, {{&a, 3}, {&b, 1}}, WaitMode::All, true),
                  "(ALL) succeeded");
  EXPECT_REPORTED(checkWaitResult(Result::Success, {{&a, 4}, {&b, 1}}, WaitMode::Any, true),
                  "(ANY) succeeded");
}

TEST_F(CheckerTest, ReportsAWaitThatTimesOutOnAValueReached) {
  SemaphoreModel a = model(5), b = model(0);
  EXPECT_REPORTED(checkWaitResult(Result::Timeout, {{&a, 3}}, WaitMode::All, true),
                  "stays satisfied");
  // ANY: one reached entry is enough.
  EXPECT_REPORTED(checkWaitResult(Result::Timeout, {{&b, 1}, {&a, 5}}, WaitMode::Any, true),
                  "stays satisfied");
}

TEST_F(CheckerTest, ReportsAWaitThatTimesOutOnAKnownFailure) {
  SemaphoreModel m = model(0);
  m.requested(2);
  m.onGetValue(Result::ErrorSemaphoreFailed, 2);  // failed at 2
  EXPECT_REPORTED(checkWaitResult(Result::Timeout, {{&m, 4}}, WaitMode::All, true),
                  "known to have failed");
}

TEST_F(CheckerTest, ReportsAWaitFailureWhenNothingFailed) {
  SemaphoreModel m = real(0);  // alive and not failed: refresh() reads Success
  EXPECT_REPORTED(checkWaitResult(Result::ErrorSemaphoreFailed, {{&m, 1}}, WaitMode::All, true),
                  "none of its semaphores is failed");
}

TEST_F(CheckerTest, ReportsWaitsWithWrongResultsForTheirLists) {
  SemaphoreModel m = model(0);
  EXPECT_REPORTED(checkWaitResult(Result::Success, {{&m, 0}}, WaitMode::All, false),
                  "destroyed/null semaphore returned Success");
  EXPECT_REPORTED(checkWaitResult(Result::Timeout, {}, WaitMode::All, true),
                  "empty host wait returned Timeout");
  EXPECT_REPORTED(checkWaitResult(Result::ErrorInvalidState, {{&m, 1}}, WaitMode::Any, true),
                  "a host wait returned ErrorInvalidState");
}

// ---- the end of an input: lost signals and hangs ----------------------------------------------

TEST_F(CheckerTest, ReportsALostSignal) {
  // An accepted submission was to signal 5; its queue is idle, but the value is 2.
  SemaphoreModel m = real(0);
  ASSERT_EQ(m.handle.signal(2), Result::Success);
  m.requested(2);
  m.requested(5);
  EXPECT_REPORTED(m.checkSignalSettled(5, "after the drain"), "a lost signal");
}

TEST_F(CheckerTest, ReportsAQueueStillBusyAfterTheDrain) {
  EXPECT_REPORTED(checkDrained(Result::Timeout, "Queue::waitIdle"), "a lost signal or a hang");
}

TEST_F(CheckerTest, ReportsAWaiterThatNeverReturns) {
  setHangLimitMs(200);
  watchdogBegin("Semaphore::wait");  // and it never ends
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<std::string> hangs;
  while (hangs.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard<std::mutex> lock(gHangsMutex);
    hangs = gHangs;
  }
  watchdogEnd();
  ASSERT_EQ(hangs.size(), 1u) << "the watchdog did not report the operation within 10 s";
  EXPECT_NE(hangs[0].find("Semaphore::wait has not returned after"), std::string::npos) << hangs[0];
}

// ---- a valid history --------------------------------------------------------------------------

// Real calls on the host backend, each checked as the harness checks it: nothing is reported.
TEST_F(CheckerTest, AcceptsAValidHistory) {
  setHangLimitMs(2000);
  const std::string text = violationOf([&] {
    SemaphoreModel s = real(1), t = real(0);
    uint64_t value = 0;
    s.onSignal(s.handle.signal(3), 3);
    Result r = s.handle.getValue(&value);  // before `value` is read
    s.onGetValue(r, value);
    checkWaitResult(instance_.waitSemaphores({{s.handle, 3}}, WaitMode::All, 0), {{&s, 3}},
                    WaitMode::All, true);
    checkWaitResult(instance_.waitSemaphores({{s.handle, 9}, {t.handle, 1}}, WaitMode::Any, 1000),
                    {{&s, 9}, {&t, 1}}, WaitMode::Any, true);
    s.onSignal(s.handle.signal(2), 2);  // refused: non-increasing
    checkWaitResult(instance_.waitSemaphores({}, WaitMode::All, 0), {}, WaitMode::All, true);

    // A submission that signals t; once its queue is idle the signal is settled.
    baton::PhysicalDevice physical;
    uint32_t count = 1;
    const Result enumerated = instance_.enumeratePhysicalDevices(&count, &physical);
    ASSERT_TRUE(enumerated == Result::Success || enumerated == Result::NotReady);
    baton::Device device;
    ASSERT_EQ(instance_.createDevice(physical, {}, &device), Result::Success);
    baton::Queue queue;
    ASSERT_EQ(device.getQueue(0, &queue), Result::Success);
    const baton::SemaphoreValue signal{t.handle, 4};
    baton::SubmitInfo info;
    info.signals = signal;
    watchdogBegin("Queue::submit");
    const Result submitted = queue.submit(info);
    watchdogEnd();
    checkDefined(submitted, "Queue::submit");
    t.requested(4);
    checkDrained(queue.waitIdle(10'000'000'000ull), "Queue::waitIdle");
    t.checkSignalSettled(4, "after waitIdle");

    // Failure: the first reason stays, the value stays, waits return the failure.
    s.onFail(s.handle.fail("decoder crashed"), "decoder crashed");
    char reason[64] = {};
    s.onFailureReason(s.handle.getFailureReason(reason, sizeof reason), reason);
    s.onFail(s.handle.fail("again"), "again");  // refused: already failed
    r = s.handle.getValue(&value);
    s.onGetValue(r, value);
    checkWaitResult(s.handle.wait(10, baton::kWaitForever), {{&s, 10}}, WaitMode::All, true);
    s.checkSignalSettled(10, "after the failure");  // failed: settled

    // A destroyed semaphore's stale handle.
    checkDefined(t.handle.destroy(), "Semaphore::destroy");
    t.alive = false;
    r = t.handle.getValue(&value);
    t.onGetValue(r, value);
    t.onSignal(t.handle.signal(9), 9);
    checkWaitResult(instance_.waitSemaphores({{t.handle, 1}}, WaitMode::All, 0), {{&t, 1}},
                    WaitMode::All, false);

    // An operation that ends within the watchdog's limit is no hang.
    watchdogBegin("Semaphore::wait");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    checkWaitResult(s.handle.wait(20, 1'000'000), {{&s, 20}}, WaitMode::All, true);
    watchdogEnd();
    checkDefined(device.destroy(), "Device::destroy");
    checkDefined(s.handle.destroy(), "Semaphore::destroy");
  });
  EXPECT_EQ(text, "") << "a valid history was reported";
  std::lock_guard<std::mutex> lock(gHangsMutex);
  EXPECT_TRUE(gHangs.empty()) << gHangs.front();
}

}  // namespace
}  // namespace baton_fuzz
