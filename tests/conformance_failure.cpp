// Conformance: semaphore failure and its propagation to host waiters, queued submissions and
// their signals (docs/guide.md, 'Failure and device loss').
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"

namespace baton_test {
namespace {

using baton::CommandBuffer;
using baton::Result;
using baton::SemaphoreValue;
using baton::WaitMode;

class FailureTest : public BackendTest {
 protected:
  std::string reasonOf(baton::Semaphore s) {
    char buffer[1024] = {};
    EXPECT_OK(s.getFailureReason(buffer, sizeof buffer));
    return buffer;
  }
};

TEST_P(FailureTest, WaitOnFailedSemaphoreReturnsTheReason) {
  auto s = makeSemaphore(3);
  ASSERT_OK(s->fail("the producer crashed (code 7)"));
  for (uint64_t timeout : {uint64_t{0}, kMs, baton::kWaitForever}) {
    EXPECT_EQ(s->wait(5, timeout), Result::ErrorSemaphoreFailed);
    EXPECT_TRUE(containsText(lastError(), "the producer crashed (code 7)")) << lastError();
  }
  // A wait for a value reached before the failure stays satisfied (semaphore.hpp: "a wait for W
  // is satisfied by any value >= W and stays satisfied").
  EXPECT_OK(instance().waitSemaphores({{*s, 3}}, WaitMode::All, 0));
  EXPECT_EQ(reasonOf(*s), "the producer crashed (code 7)");
  EXPECT_TRUE(sink_.has(baton::MessageSeverity::Error, "the producer crashed")) << sink_.dump();
}

TEST_P(FailureTest, GetValueOfFailedSemaphoreStillWritesTheValue) {
  auto s = makeSemaphore();
  ASSERT_OK(s->signal(4));
  ASSERT_OK(s->fail("gone"));
  uint64_t value = 0;
  EXPECT_EQ(s->getValue(&value), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(value, 4u) << "getValue writes the last value reached even when failed";
  EXPECT_EQ(s->signal(5), Result::ErrorSemaphoreFailed);
  value = 0;
  EXPECT_EQ(s->getValue(&value), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(value, 4u) << "a signal of a failed semaphore must change nothing";
}

TEST_P(FailureTest, FirstFailureWins) {
  auto s = makeSemaphore();
  EXPECT_EQ(reasonOf(*s), "") << "a healthy semaphore has no failure reason";
  ASSERT_OK(s->fail("first reason"));
  EXPECT_EQ(s->fail("second reason"), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(reasonOf(*s), "first reason");
  EXPECT_EQ(s->wait(1, 0), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "first reason")) << lastError();
  EXPECT_FALSE(containsText(lastError(), "second reason")) << lastError();
}

TEST_P(FailureTest, FailWithNullReasonHasADefaultReason) {
  auto s = makeSemaphore();
  ASSERT_OK(s->fail(nullptr));
  EXPECT_EQ(reasonOf(*s), "failed by the host");
}

TEST_P(FailureTest, FailWakesABlockedHostWaiter) {
  auto s = makeSemaphore();
  Result result = Result::Success;
  std::string message;
  double waited = 0;
  std::thread waiter([&] {
    const auto start = Clock::now();
    result = s->wait(1, kLongNs);
    message = lastError();
    waited = secondsSince(start);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_OK(s->fail("disk on fire"));
  waiter.join();
  EXPECT_EQ(result, Result::ErrorSemaphoreFailed);
  // The message is the waiter thread's own last error.
  EXPECT_TRUE(containsText(message, "disk on fire")) << message;
  EXPECT_LT(waited, 10.0);
}

TEST_P(FailureTest, FailWakesManyWaiters) {
  auto s = makeSemaphore();
  constexpr int kThreads = 12;
  std::vector<Result> results(kThreads, Result::Success);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      results[i] = i % 2 ? s->wait(static_cast<uint64_t>(i + 1), baton::kWaitForever)
                         : instance().waitSemaphores({{*s, 1}}, WaitMode::Any, kLongNs);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_OK(s->fail("abort"));
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(results[i], Result::ErrorSemaphoreFailed) << i;
}

TEST_P(FailureTest, FailureReachesMultiWaitAll) {
  auto ok = makeSemaphore(10);
  auto pending = makeSemaphore();
  auto failing = makeSemaphore();
  std::thread failer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_OK(failing->fail("all: one of three failed"));
  });
  EXPECT_EQ(
      instance().waitSemaphores({{*ok, 1}, {*pending, 1}, {*failing, 1}}, WaitMode::All, kLongNs),
      Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "all: one of three failed")) << lastError();
  failer.join();
}

TEST_P(FailureTest, FailureReachesMultiWaitAny) {
  auto pending = makeSemaphores(4);
  auto failing = makeSemaphore();
  std::vector<SemaphoreValue> waits;
  for (auto& p : pending) waits.push_back({*p, 1});
  waits.push_back({*failing, 1});
  std::thread failer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_OK(failing->fail("any: the only candidate failed"));
  });
  EXPECT_EQ(device().waitSemaphores(waits, WaitMode::Any, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "any: the only candidate failed")) << lastError();
  failer.join();
}

TEST_P(FailureTest, FailureReachesAQueuedSubmissionAndItsSignals) {
  auto in = makeSemaphore();
  auto out1 = makeSemaphore();
  auto out2 = makeSemaphore(2);
  std::atomic<bool> ran{false};
  auto cb = makeCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.hostCall(
        [](void* p) {
          static_cast<std::atomic<bool>*>(p)->store(true);
          return Result::Success;
        },
        &ran));
  });
  ASSERT_OK(submit(queue(0), {{*in, 1}}, {*cb}, {{*out1, 1}, {*out2, 5}}));
  ASSERT_OK(in->fail("upstream decode error"));
  EXPECT_EQ(out1->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "upstream decode error")) << lastError();
  EXPECT_EQ(out2->wait(5, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(reasonOf(*out1), "upstream decode error")) << reasonOf(*out1);
  EXPECT_TRUE(containsText(reasonOf(*out2), "upstream decode error")) << reasonOf(*out2);
  EXPECT_OK(queue(0).waitIdle(kLongNs));
  EXPECT_FALSE(ran.load()) << "a batch whose wait failed must not execute";
}

TEST_P(FailureTest, FailureBeforeSubmitReachesTheSubmission) {
  auto in = makeSemaphore();
  auto out = makeSemaphore();
  ASSERT_OK(in->fail("already dead"));
  // Submitting against a failed semaphore is accepted; the batch fails its signals.
  ASSERT_OK(submit(queue(0), {{*in, 1}}, {}, {{*out, 1}}));
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(reasonOf(*out), "already dead")) << reasonOf(*out);
}

TEST_P(FailureTest, FailurePropagatesAlongAChain) {
  // root -> hop1 (queue 1) -> hop2 (queue 2) -> hop3 (queue 3) -> host waiter.
  auto sems = makeSemaphores(4);
  for (uint32_t hop = 1; hop < 4; ++hop)
    ASSERT_OK(submit(queue(hop), {{*sems[hop - 1], 1}}, {}, {{*sems[hop], 1}}));
  ASSERT_OK(sems[0]->fail("root cause: bad input file"));
  for (uint32_t hop = 1; hop < 4; ++hop) {
    EXPECT_EQ(sems[hop]->wait(1, kLongNs), Result::ErrorSemaphoreFailed) << "hop " << hop;
    // The first reason travels the whole chain.
    EXPECT_TRUE(containsText(reasonOf(*sems[hop]), "root cause: bad input file"))
        << "hop " << hop << ": " << reasonOf(*sems[hop]);
  }
}

TEST_P(FailureTest, LongFailureChainKeepsMessagesBounded) {
  // 200 hops, each on its own semaphore, alternating queues; the reason at the end still names
  // the root cause and has not grown with every hop.
  constexpr uint32_t kHops = 200;
  auto sems = makeSemaphores(kHops + 1);
  for (uint32_t k = 1; k <= kHops; ++k)
    ASSERT_OK(submit(queue(k), {{*sems[k - 1], 1}}, {}, {{*sems[k], 1}}));
  ASSERT_OK(sems[0]->fail("root cause"));
  EXPECT_EQ(sems[kHops]->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  const std::string reason = reasonOf(*sems[kHops]);
  EXPECT_TRUE(containsText(reason, "root cause")) << reason;
  EXPECT_LT(reason.size(), 1000u) << reason;
}

TEST_P(FailureTest, QueueKeepsRunningAfterAFailedBatch) {
  auto in = makeSemaphore();
  auto failedOut = makeSemaphore();
  auto laterOut = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*in, 1}}, {}, {{*failedOut, 1}}));
  ASSERT_OK(submit(queue(0), {}, {}, {{*laterOut, 1}}));
  EXPECT_EQ(laterOut->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(in->fail("nope"));
  EXPECT_EQ(failedOut->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  // The failure is the batch's, not the queue's: the batch behind it runs normally.
  EXPECT_OK(laterOut->wait(1, kLongNs));
  auto after = makeSemaphore();
  ASSERT_OK(submit(queue(0), {}, {}, {{*after, 1}}));
  EXPECT_OK(after->wait(1, kLongNs));
}

TEST_P(FailureTest, FailureOfOneWaitAmongSeveralFailsTheBatch) {
  auto ok = makeSemaphore();
  auto bad = makeSemaphore();
  auto out = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*ok, 1}, {*bad, 1}}, {}, {{*out, 1}}));
  ASSERT_OK(ok->signal(1));
  EXPECT_EQ(out->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(bad->fail("second wait failed"));
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(reasonOf(*out), "second wait failed")) << reasonOf(*out);
}

Result returnsDriverError(void*) { return Result::ErrorDriver; }
Result nativeReturnsNotSupported(const baton::NativeQueue&, void*) {
  return Result::ErrorNotSupported;
}

TEST_P(FailureTest, HostCallErrorFailsTheSignals) {
  auto buf = makeBuffer(64);
  std::memset(map(*buf), 0, 64);
  EventLog log;
  LogEntry before{&log, 1}, after{&log, 2};
  auto out = makeSemaphore();
  auto other = makeSemaphore(1);
  auto cb = makeCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.hostCall(appendToLog, &before));
    EXPECT_OK(c.hostCall(returnsDriverError, nullptr));
    // Commands after the failing call in the same submission do not run.
    EXPECT_OK(c.hostCall(appendToLog, &after));
    EXPECT_OK(c.fillBuffer(*buf, 0, 64, 0xFFFFFFFFu));
  });
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*out, 1}, {*other, 2}}));
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(other->wait(2, kLongNs), Result::ErrorSemaphoreFailed);
  // The reason names the code the callback returned.
  EXPECT_TRUE(containsText(reasonOf(*out), "ErrorDriver")) << reasonOf(*out);
  EXPECT_OK(queue(0).waitIdle(kLongNs));
  EXPECT_EQ(log.events(), std::vector<int>{1});
  EXPECT_EQ(map<uint32_t>(*buf)[0], 0u);
  // The queue itself is fine.
  auto next = makeSemaphore();
  ASSERT_OK(submit(queue(0), {}, {}, {{*next, 1}}));
  EXPECT_OK(next->wait(1, kLongNs));
}

TEST_P(FailureTest, HostCallErrorPropagatesToDependentSubmissions) {
  auto mid = makeSemaphore();
  auto out = makeSemaphore();
  auto cb = makeCommandBuffer(
      [&](CommandBuffer c) { EXPECT_OK(c.hostCall(returnsDriverError, nullptr)); });
  ASSERT_OK(submit(queue(1), {{*mid, 1}}, {}, {{*out, 1}}));
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*mid, 1}}));
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(reasonOf(*out), "ErrorDriver")) << reasonOf(*out);
}

TEST_P(FailureTest, NativeCallbackErrorFailsTheSignals) {
  auto out = makeSemaphore();
  auto cb = makeReplayCommandBuffer(
      [&](CommandBuffer c) { EXPECT_OK(c.native(nativeReturnsNotSupported, nullptr)); });
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*out, 1}}));
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(reasonOf(*out), "ErrorNotSupported")) << reasonOf(*out);
}

TEST_P(FailureTest, FailedSemaphoreDoesNotAffectOthers) {
  auto bad = makeSemaphore();
  auto good = makeSemaphore();
  ASSERT_OK(bad->fail("x"));
  EXPECT_OK(good->signal(1));
  EXPECT_OK(good->wait(1, 0));
  EXPECT_EQ(reasonOf(*good), "");
}

BATON_INSTANTIATE_FOR_BACKENDS(FailureTest);

}  // namespace
}  // namespace baton_test
