// Conformance: queue submissions, wait-before-signal, in-order queues, chains, fan-out and
// fan-in, waitIdle (docs/guide.md, 'The model').
#include <atomic>
#include <deque>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"

namespace baton_test {
namespace {

using baton::Result;
using baton::SemaphoreValue;
using baton::SubmitInfo;
using baton::WaitMode;

class QueueTest : public BackendTest {};

TEST_P(QueueTest, SubmissionWithOnlySignals) {
  auto s = makeSemaphore();
  auto t = makeSemaphore(4);
  ASSERT_OK(submit(queue(0), {}, {}, {{*s, 1}, {*t, 9}}));
  EXPECT_OK(s->wait(1, kLongNs));
  EXPECT_OK(t->wait(9, kLongNs));
  uint64_t value = 0;
  ASSERT_OK(s->getValue(&value));
  EXPECT_EQ(value, 1u);
  ASSERT_OK(t->getValue(&value));
  EXPECT_EQ(value, 9u);
}

TEST_P(QueueTest, SubmissionWithNoCommandBuffersWaitsAndSignals) {
  auto in = makeSemaphore();
  auto out = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*in, 1}}, {}, {{*out, 1}}));
  EXPECT_EQ(out->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(in->signal(1));
  EXPECT_OK(out->wait(1, kLongNs));
}

TEST_P(QueueTest, EmptySubmitInfosAreAccepted) {
  // A batch with no waits, no command buffers and no signals is a no-op, as in Vulkan.
  SubmitInfo empty;
  EXPECT_OK(queue(0).submit(empty));
  std::vector<SubmitInfo> several(3);
  EXPECT_OK(queue(1).submit(several));
  EXPECT_OK(queue(0).waitIdle(kLongNs));
  EXPECT_OK(queue(1).waitIdle(kLongNs));
}

TEST_P(QueueTest, WaitAlreadySatisfiedRunsAtOnce) {
  auto in = makeSemaphore(5);
  auto out = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*in, 3}, {*in, 5}}, {}, {{*out, 1}}));
  EXPECT_OK(out->wait(1, kLongNs));
}

TEST_P(QueueTest, WaitBeforeHostSignal) {
  auto in = makeSemaphore();
  auto out = makeSemaphore();
  EventLog log;
  LogEntry entry{&log, 1};
  auto cb = makeCommandBuffer(
      [&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &entry)); });
  ASSERT_OK(submit(queue(0), {{*in, 1}}, {*cb}, {{*out, 1}}));
  EXPECT_EQ(out->wait(1, kShortNs), Result::Timeout);
  EXPECT_TRUE(log.events().empty()) << "commands ran before their wait was satisfied";
  ASSERT_OK(in->signal(1));
  EXPECT_OK(out->wait(1, kLongNs));
  EXPECT_EQ(log.events(), std::vector<int>{1});
}

TEST_P(QueueTest, WaitBeforeSignalAcrossQueuesConsumerSubmittedFirst) {
  auto produced = makeSemaphore();
  auto consumed = makeSemaphore();
  EventLog log;
  LogEntry producerEntry{&log, 1}, consumerEntry{&log, 2};
  auto producer = makeCommandBuffer(
      [&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &producerEntry)); });
  auto consumer = makeCommandBuffer(
      [&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &consumerEntry)); });
  // The consumer is submitted before anyone has submitted the signal it needs.
  ASSERT_OK(submit(queue(1), {{*produced, 1}}, {*consumer}, {{*consumed, 1}}));
  EXPECT_EQ(consumed->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(submit(queue(0), {}, {*producer}, {{*produced, 1}}));
  EXPECT_OK(consumed->wait(1, kLongNs));
  EXPECT_EQ(log.events(), (std::vector<int>{1, 2}));
}

TEST_P(QueueTest, HeldSubmissionBlocksLaterSubmissionsOnItsQueueOnly) {
  auto gate = makeSemaphore();
  auto first = makeSemaphore();
  auto behind = makeSemaphore();
  auto other = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, {{*first, 1}}));
  ASSERT_OK(submit(queue(0), {}, {}, {{*behind, 1}}));
  // A queue is in-order: the batch behind the held one waits too ...
  EXPECT_EQ(behind->wait(1, kShortNs), Result::Timeout);
  // ... but other queues do not.
  ASSERT_OK(submit(queue(1), {}, {}, {{*other, 1}}));
  EXPECT_OK(other->wait(1, kLongNs));
  EXPECT_EQ(behind->wait(1, 0), Result::Timeout);
  ASSERT_OK(gate->signal(1));
  EXPECT_OK(instance().waitSemaphores({{*first, 1}, {*behind, 1}}, WaitMode::All, kLongNs));
}

TEST_P(QueueTest, InQueueOrderIsKeptAcrossHeldSubmissions) {
  auto gate = makeSemaphore();
  auto done = makeSemaphore();
  EventLog log;
  std::deque<LogEntry> entries;
  std::vector<baton::UniqueCommandBuffer> cbs;
  constexpr int kBatches = 50;
  for (int i = 0; i < kBatches; ++i) {
    entries.push_back({&log, i});
    cbs.push_back(makeCommandBuffer(
        [&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &entries.back())); }));
  }
  // The first batch waits; the rest have no waits of their own but must run after it, in order.
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {*cbs[0]}, {{*done, 1}}));
  for (int i = 1; i < kBatches; ++i)
    ASSERT_OK(submit(queue(0), {}, {*cbs[i]}, {{*done, static_cast<uint64_t>(i + 1)}}));
  EXPECT_EQ(done->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(gate->signal(1));
  EXPECT_OK(done->wait(kBatches, kLongNs));
  std::vector<int> expected;
  for (int i = 0; i < kBatches; ++i) expected.push_back(i);
  EXPECT_EQ(log.events(), expected);
}

TEST_P(QueueTest, WaitOnSmallerValueBeforeItIsSignalled) {
  auto in = makeSemaphore();
  auto out = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*in, 2}}, {}, {{*out, 1}}));
  ASSERT_OK(in->signal(1));
  EXPECT_EQ(out->wait(1, kShortNs), Result::Timeout) << "released by a value below the wait";
  // The signal overshoots the waited value: any value >= W satisfies W.
  ASSERT_OK(in->signal(7));
  EXPECT_OK(out->wait(1, kLongNs));
}

TEST_P(QueueTest, WaitOnSmallerValueAfterItIsSignalled) {
  auto in = makeSemaphore();
  auto out = makeSemaphore();
  ASSERT_OK(in->signal(7));
  ASSERT_OK(submit(queue(0), {{*in, 2}}, {}, {{*out, 1}}));
  ASSERT_OK(submit(queue(1), {{*in, 7}}, {}, {{*out, 2}}));
  EXPECT_OK(out->wait(1, kLongNs));
  // Wait for the queue-1 batch too (it signals 2 whenever it runs).
  EXPECT_OK(queue(1).waitIdle(kLongNs));
  EXPECT_OK(out->wait(2, kLongNs));
}

TEST_P(QueueTest, QueueSignalSatisfiesLaterQueueWaitOnSameQueue) {
  auto gate = makeSemaphore();
  auto mid = makeSemaphore();
  auto out = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, {{*mid, 1}}));
  ASSERT_OK(submit(queue(0), {{*mid, 1}}, {}, {{*out, 1}}));
  ASSERT_OK(gate->signal(1));
  EXPECT_OK(out->wait(1, kLongNs));
}

TEST_P(QueueTest, ChainAcrossQueuesConsumersSubmittedFirst) {
  // Step k runs on queue k % n, waits for s >= k and signals s = k + 1 (step 0 just signals 1).
  // Queues are filled last-first, each in step order (a queue is in-order, so a step must not
  // sit behind a later one), so nearly every step is a wait-before-signal when submitted.
  auto s = makeSemaphore();
  EventLog log;
  const int n = static_cast<int>(queueCount());
  constexpr int kSteps = 24;
  std::deque<LogEntry> entries;
  std::vector<baton::UniqueCommandBuffer> cbs;
  for (int k = 0; k < kSteps; ++k) {
    entries.push_back({&log, k});
    cbs.push_back(makeCommandBuffer(
        [&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &entries.back())); }));
  }
  for (int q = n - 1; q >= 0; --q) {
    if (q == 0) {
      // Nothing could run yet: every step on queues 1..n-1 waits on queue 0's steps.
      EXPECT_EQ(s->wait(1, kShortNs), Result::Timeout);
      EXPECT_TRUE(log.events().empty());
    }
    for (int k = q; k < kSteps; k += n) {
      std::vector<SemaphoreValue> waits;
      if (k > 0) waits.push_back({*s, static_cast<uint64_t>(k)});
      ASSERT_OK(submit(queue(static_cast<uint32_t>(q)), waits, {*cbs[k]},
                       {{*s, static_cast<uint64_t>(k + 1)}}));
    }
  }
  EXPECT_OK(s->wait(kSteps, kLongNs));
  std::vector<int> expected;
  for (int k = 0; k < kSteps; ++k) expected.push_back(k);
  EXPECT_EQ(log.events(), expected);
}

TEST_P(QueueTest, ChainOfSemaphoresAcrossQueues) {
  // sems[0] -> sems[1] -> ... one hop per queue, each hop on its own queue and semaphore,
  // submitted from the last hop back.
  const uint32_t hops = queueCount();
  auto sems = makeSemaphores(hops + 1);
  for (uint32_t hop = hops; hop >= 1; --hop)
    ASSERT_OK(submit(queue(hop), {{*sems[hop - 1], 1}}, {}, {{*sems[hop], 1}}));
  EXPECT_EQ(sems[hops]->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(sems[0]->signal(1));
  EXPECT_OK(sems[hops]->wait(1, kLongNs));
  for (auto& s : sems) EXPECT_OK(s->wait(1, 0));
}

TEST_P(QueueTest, FanOutToSeveralValues) {
  auto go = makeSemaphore();
  auto s = makeSemaphore();
  auto outs = makeSemaphores(4);
  // Consumers first, each waiting for a different value of `s`, on queues other than the
  // producer's; the last one waits for a value the producer never signals.
  for (uint32_t i = 0; i < 4; ++i)
    ASSERT_OK(submit(queue(1 + i % (queueCount() - 1)), {{*s, i + 1}}, {}, {{*outs[i], 1}}));
  // The producer jumps straight to 3, after a host go-ahead.
  ASSERT_OK(submit(queue(0), {{*go, 1}}, {}, {{*s, 3}}));
  EXPECT_EQ(outs[0]->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(go->signal(1));
  EXPECT_OK(instance().waitSemaphores({{*outs[0], 1}, {*outs[1], 1}, {*outs[2], 1}}, WaitMode::All,
                                      kLongNs));
  EXPECT_EQ(outs[3]->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(s->signal(4));
  EXPECT_OK(outs[3]->wait(1, kLongNs));
}

TEST_P(QueueTest, FanOutOneSubmissionSignalsSeveralSemaphores) {
  auto gate = makeSemaphore();
  auto sems = makeSemaphores(6);
  std::vector<SemaphoreValue> signals;
  for (size_t i = 0; i < sems.size(); ++i) signals.push_back({*sems[i], 10 * (i + 1)});
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, signals));
  EXPECT_EQ(instance().waitSemaphores(signals, WaitMode::Any, kShortNs), Result::Timeout);
  ASSERT_OK(gate->signal(1));
  EXPECT_OK(instance().waitSemaphores(signals, WaitMode::All, kLongNs));
  for (size_t i = 0; i < sems.size(); ++i) {
    uint64_t value = 0;
    ASSERT_OK(sems[i]->getValue(&value));
    EXPECT_EQ(value, 10 * (i + 1));
  }
}

TEST_P(QueueTest, FanInFromSeveralQueuesAndTheHost) {
  const uint32_t producers = std::max(2u, queueCount() - 1);
  auto fromHost = makeSemaphore();
  auto out = makeSemaphore();
  auto inputs = makeSemaphores(producers);
  auto gate = makeSemaphore();
  std::vector<SemaphoreValue> waits{{*fromHost, 1}};
  for (auto& in : inputs) waits.push_back({*in, 1});
  // Consumer first: waits on every producer queue and on the host.
  ASSERT_OK(submit(queue(0), waits, {}, {{*out, 1}}));
  for (uint32_t i = 0; i < producers; ++i)
    ASSERT_OK(submit(queue(1 + i % (queueCount() - 1)), {{*gate, 1}}, {}, {{*inputs[i], 1}}));
  ASSERT_OK(gate->signal(1));
  for (auto& in : inputs) EXPECT_OK(in->wait(1, kLongNs));
  // Every queue producer has signalled; the host has not.
  EXPECT_EQ(out->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(fromHost->signal(1));
  EXPECT_OK(out->wait(1, kLongNs));
}

TEST_P(QueueTest, SeveralSubmitInfosInOneCall) {
  auto s = makeSemaphore();
  auto gate = makeSemaphore();
  EventLog log;
  LogEntry e0{&log, 0}, e1{&log, 1}, e2{&log, 2};
  auto c0 =
      makeCommandBuffer([&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &e0)); });
  auto c1 =
      makeCommandBuffer([&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &e1)); });
  auto c2 =
      makeCommandBuffer([&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &e2)); });
  const baton::CommandBuffer h0 = *c0, h1 = *c1, h2 = *c2;
  const SemaphoreValue w0{*gate, 1}, s1{*s, 1}, s2{*s, 2}, s3{*s, 3};
  SubmitInfo infos[3];
  infos[0].waits = w0;
  infos[0].commandBuffers = h0;
  infos[0].signals = s1;
  infos[1].waits = s1;  // satisfied by the batch before it in the same call
  infos[1].commandBuffers = h1;
  infos[1].signals = s2;
  infos[2].waits = s2;
  infos[2].commandBuffers = h2;
  infos[2].signals = s3;
  ASSERT_OK(queue(0).submit(infos));
  EXPECT_EQ(s->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(gate->signal(1));
  EXPECT_OK(s->wait(3, kLongNs));
  EXPECT_EQ(log.events(), (std::vector<int>{0, 1, 2}));
}

TEST_P(QueueTest, SeveralCommandBuffersInOneBatchRunInOrder) {
  auto done = makeSemaphore();
  EventLog log;
  std::deque<LogEntry> entries;
  std::vector<baton::UniqueCommandBuffer> owned;
  std::vector<baton::CommandBuffer> cbs;
  for (int i = 0; i < 8; ++i) {
    entries.push_back({&log, i});
    owned.push_back(makeCommandBuffer(
        [&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &entries.back())); }));
    cbs.push_back(*owned.back());
  }
  ASSERT_OK(submit(queue(0), {}, cbs, {{*done, 1}}));
  EXPECT_OK(done->wait(1, kLongNs));
  EXPECT_EQ(log.events(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST_P(QueueTest, OneSignalReleasesSubmissionsHeldOnSeveralQueues) {
  auto s = makeSemaphore();
  auto outs = makeSemaphores(queueCount());
  for (uint32_t i = 0; i < queueCount(); ++i)
    ASSERT_OK(submit(queue(i), {{*s, i + 1}}, {}, {{*outs[i], 1}}));
  ASSERT_OK(s->signal(100));
  std::vector<SemaphoreValue> all;
  for (auto& o : outs) all.push_back({*o, 1});
  EXPECT_OK(instance().waitSemaphores(all, WaitMode::All, kLongNs));
}

TEST_P(QueueTest, ManySubmissionsBehindAHeldOne) {
  auto gate = makeSemaphore();
  auto out = makeSemaphore();
  constexpr uint64_t kCount = 2000;
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, {{*out, 1}}));
  for (uint64_t i = 2; i <= kCount; ++i) ASSERT_OK(submit(queue(0), {}, {}, {{*out, i}}));
  EXPECT_EQ(out->wait(1, kShortNs), Result::Timeout);
  ASSERT_OK(gate->signal(1));
  EXPECT_OK(out->wait(kCount, kLongNs));
  EXPECT_OK(queue(0).waitIdle(kLongNs));
  uint64_t value = 0;
  ASSERT_OK(out->getValue(&value));
  EXPECT_EQ(value, kCount);
}

TEST_P(QueueTest, ConcurrentSubmittersOnOneQueue) {
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 500;
  auto sems = makeSemaphores(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t v = 1; v <= kPerThread; ++v)
        if (submit(queue(0), {}, {}, {{*sems[t], v}}) != Result::Success) errors++;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  for (auto& s : sems) {
    EXPECT_OK(s->wait(kPerThread, kLongNs));
    uint64_t value = 0;
    ASSERT_OK(s->getValue(&value));
    EXPECT_EQ(value, kPerThread);
  }
}

TEST_P(QueueTest, QueueWaitIdleWaitsForExecution) {
  std::atomic<int> ran{0};
  auto cb = makeCommandBuffer([&](baton::CommandBuffer c) {
    EXPECT_OK(c.hostCall(
        [](void* p) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          static_cast<std::atomic<int>*>(p)->fetch_add(1);
          return Result::Success;
        },
        &ran));
  });
  for (int i = 0; i < 10; ++i) ASSERT_OK(submit(queue(0), {}, {*cb}, {}));
  EXPECT_OK(queue(0).waitIdle(kLongNs));
  EXPECT_EQ(ran.load(), 10);
  for (int i = 0; i < 5; ++i) ASSERT_OK(submit(queue(1), {}, {*cb}, {}));
  EXPECT_OK(device().waitIdle(kLongNs));
  EXPECT_EQ(ran.load(), 15);
}

TEST_P(QueueTest, WaitIdleTimesOutOnHeldSubmission) {
  auto gate = makeSemaphore();
  auto out = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, {{*out, 1}}));
  // Batches held on unmet waits count as unfinished.
  const auto start = Clock::now();
  EXPECT_EQ(queue(0).waitIdle(kShortNs), Result::Timeout);
  EXPECT_EQ(queue(0).waitIdle(0), Result::Timeout);
  EXPECT_EQ(device().waitIdle(kShortNs), Result::Timeout);
  EXPECT_GE(secondsSince(start), 2 * kShortNs / 1e9 - 0.002);
  // Other queues are idle.
  EXPECT_OK(queue(1).waitIdle(kLongNs));
  ASSERT_OK(gate->signal(1));
  EXPECT_OK(queue(0).waitIdle(kLongNs));
  EXPECT_OK(device().waitIdle(kLongNs));
  EXPECT_OK(out->wait(1, 0));
}

TEST_P(QueueTest, WaitIdleReturnsWhenReleasedByAnotherThread) {
  auto gate = makeSemaphore();
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, {}));
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_OK(gate->signal(1));
  });
  EXPECT_OK(queue(0).waitIdle(kLongNs));
  releaser.join();
}

TEST_P(QueueTest, GetDeviceOfQueue) {
  for (uint32_t i = 0; i < queueCount(); ++i) {
    baton::Device d;
    ASSERT_OK(queue(i).getDevice(&d));
    EXPECT_EQ(d, device());
  }
  uint32_t count = 0;
  ASSERT_OK(device().getQueueCount(&count));
  EXPECT_EQ(count, queueCount());
}

BATON_INSTANTIATE_FOR_BACKENDS(QueueTest);

}  // namespace
}  // namespace baton_test
