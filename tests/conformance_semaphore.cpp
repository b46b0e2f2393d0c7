// Conformance: semaphore values, host signals and host waits (docs/guide.md, 'The model' and
// 'Host waits').
#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"

namespace baton_test {
namespace {

using baton::Result;
using baton::SemaphoreValue;
using baton::WaitMode;

class SemaphoreTest : public BackendTest {};

TEST_P(SemaphoreTest, InitialValueDefaultsToZero) {
  auto s = makeSemaphore();
  uint64_t value = 1234;
  ASSERT_OK(s->getValue(&value));
  EXPECT_EQ(value, 0u);
}

TEST_P(SemaphoreTest, InitialValueIsKept) {
  for (uint64_t initial : {uint64_t{1}, uint64_t{42}, uint64_t{1} << 40, UINT64_MAX - 1}) {
    auto s = makeSemaphore(initial);
    uint64_t value = 0;
    ASSERT_OK(s->getValue(&value));
    EXPECT_EQ(value, initial);
    // The initial value satisfies waits at or below it at once.
    EXPECT_OK(s->wait(initial, 0));
    EXPECT_OK(s->wait(initial / 2, 0));
    EXPECT_EQ(s->wait(initial + 1, 0), Result::Timeout);
  }
}

TEST_P(SemaphoreTest, SignalAndQuery) {
  auto s = makeSemaphore();
  for (uint64_t v : {uint64_t{1}, uint64_t{2}, uint64_t{10}, uint64_t{1000}, uint64_t{1} << 50}) {
    ASSERT_OK(s->signal(v));
    uint64_t value = 0;
    ASSERT_OK(s->getValue(&value));
    EXPECT_EQ(value, v);
  }
}

TEST_P(SemaphoreTest, SignalUpToMaximum) {
  auto s = makeSemaphore(5);
  ASSERT_OK(s->signal(UINT64_MAX));
  uint64_t value = 0;
  ASSERT_OK(s->getValue(&value));
  EXPECT_EQ(value, UINT64_MAX);
  EXPECT_OK(s->wait(UINT64_MAX, 0));
  EXPECT_EQ(s->signal(UINT64_MAX), Result::ErrorNonIncreasingValue);
}

TEST_P(SemaphoreTest, NonIncreasingSignalIsRejected) {
  auto s = makeSemaphore(10, "non-increasing-probe");
  for (uint64_t v : {uint64_t{10}, uint64_t{9}, uint64_t{0}}) {
    EXPECT_EQ(s->signal(v), Result::ErrorNonIncreasingValue) << "signal(" << v << ")";
    std::string message = lastError();
    EXPECT_FALSE(message.empty());
    // The debug name appears in messages about the semaphore (SemaphoreCreateInfo::debugName).
    EXPECT_TRUE(containsText(message, "non-increasing-probe")) << message;
    uint64_t value = 0;
    ASSERT_OK(s->getValue(&value));
    EXPECT_EQ(value, 10u) << "a rejected signal must change nothing";
  }
  EXPECT_TRUE(sink_.has(baton::MessageSeverity::Error, "non-increasing-probe")) << sink_.dump();
  // The semaphore still works after rejected signals.
  EXPECT_OK(s->signal(11));
  EXPECT_OK(s->wait(11, 0));
}

TEST_P(SemaphoreTest, WaitsAlreadySatisfiedReturnAtOnce) {
  auto s = makeSemaphore();
  ASSERT_OK(s->signal(5));
  const auto start = Clock::now();
  for (uint64_t timeout : {uint64_t{0}, kMs, baton::kWaitForever}) {
    EXPECT_OK(s->wait(0, timeout));
    EXPECT_OK(s->wait(3, timeout));
    EXPECT_OK(s->wait(5, timeout));
    SemaphoreValue entry{*s, 4};
    EXPECT_OK(instance().waitSemaphores(entry, WaitMode::All, timeout));
    EXPECT_OK(instance().waitSemaphores(entry, WaitMode::Any, timeout));
  }
  EXPECT_LT(secondsSince(start), 5.0) << "satisfied waits must not sleep";
}

TEST_P(SemaphoreTest, WaitStaysSatisfiedAfterLaterSignals) {
  auto s = makeSemaphore();
  ASSERT_OK(s->signal(3));
  EXPECT_OK(s->wait(3, 0));
  ASSERT_OK(s->signal(100));
  // A wait for W is satisfied by any value >= W and stays satisfied.
  EXPECT_OK(s->wait(3, 0));
  EXPECT_OK(s->wait(50, 0));
  EXPECT_OK(s->wait(100, 0));
}

TEST_P(SemaphoreTest, PollTimesOutImmediately) {
  auto a = makeSemaphore();
  auto b = makeSemaphore(7);
  const auto start = Clock::now();
  EXPECT_EQ(a->wait(1, 0), Result::Timeout);
  EXPECT_EQ(b->wait(8, 0), Result::Timeout);
  EXPECT_EQ(instance().waitSemaphores({{*a, 1}, {*b, 8}}, WaitMode::All, 0), Result::Timeout);
  EXPECT_EQ(instance().waitSemaphores({{*a, 1}, {*b, 8}}, WaitMode::Any, 0), Result::Timeout);
  EXPECT_EQ(device().waitSemaphores({{*a, 1}}, WaitMode::All, 0), Result::Timeout);
  EXPECT_LT(secondsSince(start), 1.0) << "a poll must not block";
  // A timeout is a result, not an error: the values are untouched and nothing failed.
  uint64_t value = 0;
  EXPECT_OK(b->getValue(&value));
  EXPECT_EQ(value, 7u);
}

TEST_P(SemaphoreTest, FiniteTimeoutExpires) {
  auto s = makeSemaphore();
  const uint64_t timeout = 40 * kMs;
  const auto start = Clock::now();
  EXPECT_EQ(s->wait(1, timeout), Result::Timeout);
  const double elapsed = secondsSince(start);
  // Never return before the timeout (1 ms slack for clock granularity), and not absurdly late.
  EXPECT_GE(elapsed, 0.039);
  EXPECT_LT(elapsed, 5.0);
}

TEST_P(SemaphoreTest, FiniteTimeoutWokenBySignallingThread) {
  auto s = makeSemaphore();
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_OK(s->signal(1));
  });
  const auto start = Clock::now();
  EXPECT_OK(s->wait(1, kLongNs));
  EXPECT_LT(secondsSince(start), 10.0);
  signaller.join();
}

TEST_P(SemaphoreTest, InfiniteTimeoutWokenBySignallingThread) {
  auto s = makeSemaphore();
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // Jump past the waited value: any value >= W satisfies the wait.
    EXPECT_OK(s->signal(5));
  });
  EXPECT_OK(s->wait(3, baton::kWaitForever));
  signaller.join();
}

TEST_P(SemaphoreTest, WaitWokenOnlyWhenValueReached) {
  auto s = makeSemaphore();
  std::atomic<bool> done{false};
  Result result = Result::ErrorDriver;
  std::thread waiter([&] {
    result = s->wait(10, kLongNs);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_OK(s->signal(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(done.load()) << "a signal below the waited value woke the waiter";
  ASSERT_OK(s->signal(10));
  waiter.join();
  EXPECT_EQ(result, Result::Success);
}

TEST_P(SemaphoreTest, WaitAllOverMixedSemaphores) {
  auto ready = makeSemaphore(5);
  auto pending = makeSemaphore(0);
  const std::vector<SemaphoreValue> waits{{*ready, 3}, {*pending, 1}};
  EXPECT_EQ(instance().waitSemaphores(waits, WaitMode::All, 0), Result::Timeout);
  EXPECT_EQ(instance().waitSemaphores(waits, WaitMode::All, kShortNs), Result::Timeout);
  ASSERT_OK(pending->signal(1));
  EXPECT_OK(instance().waitSemaphores(waits, WaitMode::All, 0));
  EXPECT_OK(instance().waitSemaphores(waits, WaitMode::All, kLongNs));
}

TEST_P(SemaphoreTest, WaitAnyOverMixedSemaphores) {
  auto ready = makeSemaphore(5);
  auto pending = makeSemaphore(0);
  EXPECT_OK(instance().waitSemaphores({{*pending, 1}, {*ready, 3}}, WaitMode::Any, 0));
  EXPECT_OK(instance().waitSemaphores({{*ready, 5}, {*pending, 1}}, WaitMode::Any, kLongNs));
  // Every entry unsatisfied: Any times out too.
  EXPECT_EQ(instance().waitSemaphores({{*ready, 6}, {*pending, 1}}, WaitMode::Any, 0),
            Result::Timeout);
  EXPECT_EQ(instance().waitSemaphores({{*ready, 6}, {*pending, 1}}, WaitMode::Any, kShortNs),
            Result::Timeout);
}

TEST_P(SemaphoreTest, WaitAnyWokenByOneOfMany) {
  auto sems = makeSemaphores(16);
  std::vector<SemaphoreValue> waits;
  for (auto& s : sems) waits.push_back({*s, 1});
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_OK(sems[11]->signal(1));
  });
  EXPECT_OK(instance().waitSemaphores(waits, WaitMode::Any, kLongNs));
  signaller.join();
  // Only the one was signalled: All is still unmet.
  EXPECT_EQ(instance().waitSemaphores(waits, WaitMode::All, 0), Result::Timeout);
}

TEST_P(SemaphoreTest, WaitAllWokenBySeveralThreads) {
  auto sems = makeSemaphores(4);
  std::vector<SemaphoreValue> waits;
  for (size_t i = 0; i < sems.size(); ++i) waits.push_back({*sems[i], i + 1});
  std::vector<std::thread> signallers;
  for (size_t i = 0; i < sems.size(); ++i)
    signallers.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + 10 * i));
      EXPECT_OK(sems[i]->signal(i + 1));
    });
  EXPECT_OK(instance().waitSemaphores(waits, WaitMode::All, kLongNs));
  for (auto& t : signallers) t.join();
}

TEST_P(SemaphoreTest, WaitAllTimesOutWhenOnlySomeAreSignalled) {
  auto a = makeSemaphore();
  auto b = makeSemaphore();
  std::thread signaller([&] { EXPECT_OK(a->signal(1)); });
  EXPECT_EQ(instance().waitSemaphores({{*a, 1}, {*b, 1}}, WaitMode::All, kShortNs),
            Result::Timeout);
  signaller.join();
}

TEST_P(SemaphoreTest, EmptyWaitListIsSatisfied) {
  const baton::Span<const SemaphoreValue> empty;
  for (WaitMode mode : {WaitMode::All, WaitMode::Any}) {
    for (uint64_t timeout : {uint64_t{0}, kMs, baton::kWaitForever}) {
      EXPECT_OK(instance().waitSemaphores(empty, mode, timeout));
      EXPECT_OK(device().waitSemaphores(empty, mode, timeout));
    }
  }
}

TEST_P(SemaphoreTest, DuplicateEntriesOfOneSemaphore) {
  auto s = makeSemaphore();
  const std::vector<SemaphoreValue> waits{{*s, 1}, {*s, 2}, {*s, 1}};
  ASSERT_OK(s->signal(1));
  EXPECT_EQ(instance().waitSemaphores(waits, WaitMode::All, 0), Result::Timeout);
  EXPECT_OK(instance().waitSemaphores(waits, WaitMode::Any, 0));
  ASSERT_OK(s->signal(2));
  EXPECT_OK(instance().waitSemaphores(waits, WaitMode::All, 0));
}

TEST_P(SemaphoreTest, ManyThreadsWaitOnOneValue) {
  auto s = makeSemaphore();
  constexpr int kThreads = 24;
  std::vector<Result> results(kThreads, Result::ErrorDriver);
  std::atomic<int> finished{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kThreads; ++i)
    waiters.emplace_back([&, i] {
      // A third wait for a lower value, a third for the value, a third through a wait-ANY.
      const uint64_t want = i % 3 == 0 ? 3 : 7;
      results[i] = i % 3 == 2 ? instance().waitSemaphores({{*s, want}}, WaitMode::Any, kLongNs)
                              : s->wait(want, kLongNs);
      finished++;
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(finished.load(), 0);
  ASSERT_OK(s->signal(3));
  // Wait for the low-value waiters (those with i % 3 == 0) only.
  // Generous bound: 8 threads must wake, which can be slow under a sanitizer on a loaded machine.
  const auto until = Clock::now() + std::chrono::nanoseconds(kLongNs);
  while (finished.load() < kThreads / 3 && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(finished.load(), kThreads / 3) << "waiters for 7 woke at 3";
  ASSERT_OK(s->signal(7));
  for (auto& t : waiters) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(results[i], Result::Success) << "waiter " << i;
}

TEST_P(SemaphoreTest, ConcurrentSignalsKeepTheValueMonotonic) {
  auto s = makeSemaphore();
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 2000;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> regressions{0};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load()) {
      uint64_t v = 0;
      if (s->getValue(&v) != Result::Success || v < last) regressions++;
      last = std::max(last, v);
    }
  });
  std::vector<std::thread> signallers;
  std::atomic<uint64_t> unexpected{0};
  for (int t = 0; t < kThreads; ++t)
    signallers.emplace_back([&, t] {
      // Interleaved distinct values: thread t signals t+1, t+1+kThreads, ... Collisions with
      // other threads make some signals non-increasing, which must be the only error.
      for (uint64_t i = 0; i < kPerThread; ++i) {
        Result r = s->signal(1 + static_cast<uint64_t>(t) + i * kThreads);
        if (r != Result::Success && r != Result::ErrorNonIncreasingValue) unexpected++;
      }
    });
  for (auto& t : signallers) t.join();
  stop = true;
  reader.join();
  uint64_t value = 0;
  ASSERT_OK(s->getValue(&value));
  // The largest value any thread signalled cannot have been rejected.
  EXPECT_EQ(value, static_cast<uint64_t>(kThreads) * kPerThread);
  EXPECT_EQ(regressions.load(), 0u);
  EXPECT_EQ(unexpected.load(), 0u);
}

TEST_P(SemaphoreTest, DeviceWaitSemaphoresMatchesInstance) {
  auto a = makeSemaphore(2);
  auto b = makeSemaphore();
  EXPECT_OK(device().waitSemaphores({{*a, 2}, {*b, 1}}, WaitMode::Any, 0));
  EXPECT_EQ(device().waitSemaphores({{*a, 2}, {*b, 1}}, WaitMode::All, 0), Result::Timeout);
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_OK(b->signal(1));
  });
  EXPECT_OK(device().waitSemaphores({{*a, 2}, {*b, 1}}, WaitMode::All, kLongNs));
  signaller.join();
}

TEST_P(SemaphoreTest, SemaphoresAreIndependent) {
  auto a = makeSemaphore();
  auto b = makeSemaphore();
  ASSERT_OK(a->signal(9));
  uint64_t value = 123;
  ASSERT_OK(b->getValue(&value));
  EXPECT_EQ(value, 0u);
  EXPECT_EQ(b->wait(1, 0), Result::Timeout);
}

BATON_INSTANTIATE_FOR_BACKENDS(SemaphoreTest);

}  // namespace
}  // namespace baton_test
