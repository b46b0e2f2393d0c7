// Tests of the GPU stream backends, written once for CUDA and HIP: what the conformance suite
// cannot observe on every backend — submissions released when their signal is recorded (not
// completed), chains across the host backend and the GPU one, two GPUs, queue-ordered allocation
// through memory pools, host-call failures stopping GPU-side waiters, driver errors, and a bounded
// event pool. They run on every backend whose hooks the binary links (tests/cuda/cuda_hooks.cpp,
// tests/hip/hip_hooks.cpp), as StreamBackendTest.<test>/cuda and /hip; each skips, with the reason,
// without a device of its backend. What only one backend has lives next to its hooks
// (tests/cuda/cuda_tests.cpp, tests/hip/hip_tests.cpp). Device loss poisons the context for the
// whole process, so it has its own executables (stream_device_lost_tests.cpp).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "stream_backend.hpp"
#include "stream_test_support.hpp"

namespace baton_test {
namespace {

using baton::MemoryKind;
using baton::Result;

constexpr uint32_t kPattern = 0xC0DA5EEDu;

// Counts how often it ran: proves a submission was *issued* (natives run at issue time).
baton::Result countIssue(const baton::NativeQueue&, void* userData) {
  static_cast<std::atomic<int>*>(userData)->fetch_add(1);
  return Result::Success;
}

// What every GPU device reports; backend-specific properties are checked by CudaTest and HipTest.
TEST_P(StreamBackendTest, PhysicalDeviceProperties) {
  for (const baton::PhysicalDeviceProperties& p : gpuProps_) {
    EXPECT_EQ(p.backend, backend());
    EXPECT_NE(p.name[0], '\0');
    bool uuidSet = false;
    for (uint8_t b : p.uuid) uuidSet |= b != 0;
    EXPECT_TRUE(uuidSet) << "UUID (matches VkPhysicalDeviceIDProperties::deviceUUID) is zero";
    EXPECT_GT(p.totalMemory, 0u);
    EXPECT_GE(p.maxQueues, kQueues);
    EXPECT_TRUE(p.capabilities & baton::kCapabilityDeviceMemory);
    EXPECT_TRUE(p.capabilities & baton::kCapabilityNativeTimepointWaits);
    char names[512];
    baton::capabilityNames(p.capabilities, names, sizeof names);
    std::printf("%s:%u %s, arch %s, compute %u.%u, %.1f GiB, capabilities: %s\n",
                baton::backendName(p.backend), p.ordinal, p.name, p.arch, p.computeMajor,
                p.computeMinor, p.totalMemory / 1073741824.0, names);
  }
}

TEST_P(StreamBackendTest, NativeQueueDescribesTheStream) {
  struct Seen {
    baton::NativeQueue q;
    int calls = 0;
  } seen[2];
  auto capture = [](const baton::NativeQueue& q, void* user) {
    auto* s = static_cast<Seen*>(user);
    s->q = q;
    ++s->calls;
    return Result::Success;
  };
  auto cb0 =
      makeReplayCommands([&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(capture, &seen[0])); });
  auto cb1 =
      makeReplayCommands([&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(capture, &seen[1])); });
  ASSERT_OK(submit(queue(0), {}, {*cb0}, {}));
  ASSERT_OK(submit(queue(1), {}, {*cb1}, {}));
  ASSERT_OK(device_->waitIdle());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(seen[i].calls, 1);
    EXPECT_EQ(seen[i].q.backend, backend());
    EXPECT_NE(seen[i].q.stream, nullptr);
    EXPECT_EQ(seen[i].q.deviceOrdinal, static_cast<int32_t>(props_.ordinal));
    EXPECT_EQ(seen[i].q.queueIndex, static_cast<uint32_t>(i));
  }
  EXPECT_NE(seen[0].q.stream, seen[1].q.stream) << "each queue is its own stream";
}

// Direct issue (Queue::submit, NativeCallback): a submission that nothing holds back may be
// enqueued by the submitting thread inside the submit call, so its native callback has run, on
// this thread, when submit returns; one held by a wait-before-signal is enqueued by the device's
// issuing thread once released, and its callback runs there. A callback of a direct issue may
// submit to its own queue (the core queue's lock is not held while it runs); what it submits
// runs after it. BATON_STREAM_DIRECT_ISSUE says when (impl/stream/stream_tuning.hpp): unset, by
// default, when the queue's earlier submissions are all known to have completed (so the first
// submission to a queue); 1 whenever nothing holds it back; 0 never (every callback runs on the
// issuing thread). The fake-driver registrations run the suite all three ways.
struct ThreadSeen {
  std::atomic<int> calls{0};
  std::thread::id thread;
};
baton::Result recordThread(const baton::NativeQueue&, void* userData) {
  auto* seen = static_cast<ThreadSeen*>(userData);
  seen->thread = std::this_thread::get_id();
  seen->calls.fetch_add(1);
  return Result::Success;
}
bool directIssueOn() {
  return baton::stream::issueMode() != baton::stream::IssueMode::IssuingThread;
}

// Native callbacks run on the thread that makes the submission's driver calls: with direct issue
// on, the submitting thread inside submit() and, for a held submission, the thread whose signal
// released it, inside Semaphore::signal, when nothing else of its queue is pending (no hand-off to
// a thread that must wake or poll for it); the device's issuing thread otherwise.
TEST_P(StreamBackendTest, NativeCallbacksRunOnTheThreadThatIssues) {
  ThreadSeen direct, held;
  auto cbDirect = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &direct)); });
  auto cbHeld = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &held)); });
  auto gate = makeSemaphore("gate"), done = makeSemaphore("done");

  ASSERT_OK(submit(queue(0), {}, {*cbDirect}, {{*done, 1}}));
  if (directIssueOn()) {
    EXPECT_EQ(direct.calls.load(), 1) << "not issued inside submit";
    EXPECT_EQ(direct.thread, std::this_thread::get_id());
  }
  ASSERT_OK(submit(queue(1), {{*gate, 1}}, {*cbHeld}, {{*done, 2}}));
  EXPECT_EQ(held.calls.load(), 0) << "issued before its wait was met";
  std::thread::id signaller;
  int callsAfterSignal = -1;
  std::thread other([&] {
    signaller = std::this_thread::get_id();
    EXPECT_OK(gate->signal(1));
    callsAfterSignal = held.calls.load();
  });
  other.join();
  ASSERT_OK(done->wait(2, kLongNs));
  EXPECT_EQ(direct.calls.load(), 1);
  EXPECT_EQ(held.calls.load(), 1);
  EXPECT_NE(held.thread, std::this_thread::get_id()) << "a held submission ran on the submitter";
  if (directIssueOn()) {
    EXPECT_EQ(callsAfterSignal, 1) << "not issued inside the signal that released it";
    EXPECT_EQ(held.thread, signaller);
  } else {
    EXPECT_NE(held.thread, signaller);
    EXPECT_NE(direct.thread, std::this_thread::get_id());
  }
}

// One signal releasing several held submissions of a queue: they are handed to the issuing
// thread, in the queue's order. A direct issue of the first would hold the queue's place while
// the others wait for room behind it on the same thread (1024 of them deadlocked: see
// core::Queue::releaseLocked), so only a submission released alone is issued on the signalling
// thread (NativeCallbacksRunOnTheThreadThatIssues).
struct OrderSeen {
  std::atomic<int> next{0};
  int order[3] = {-1, -1, -1};
  std::thread::id thread[3];
};
struct OrderSlot {
  OrderSeen* seen;
  int index;
};
Result recordOrder(const baton::NativeQueue&, void* userData) {
  auto* slot = static_cast<OrderSlot*>(userData);
  const int at = slot->seen->next.fetch_add(1);
  if (at < 3) {
    slot->seen->order[at] = slot->index;
    slot->seen->thread[slot->index] = std::this_thread::get_id();
  }
  return Result::Success;
}

TEST_P(StreamBackendTest, ASignalReleasingSeveralHandsThemOnInOrder) {
  OrderSeen seen;
  OrderSlot slots[3] = {{&seen, 0}, {&seen, 1}, {&seen, 2}};
  auto gate = makeSemaphore("gate"), done = makeSemaphore("done");
  for (uint64_t i = 0; i < 3; ++i) {
    auto cb = makeReplayCommands(
        [&](baton::CommandBuffer c) { EXPECT_OK(c.native(recordOrder, &slots[i])); });
    ASSERT_OK(submit(queue(1), {{*gate, 1}}, {*cb}, {{*done, i + 1}}));
  }
  EXPECT_EQ(seen.next.load(), 0) << "issued before the wait was met";
  std::thread::id signaller;
  std::thread other([&] {
    signaller = std::this_thread::get_id();
    EXPECT_OK(gate->signal(1));
  });
  other.join();
  ASSERT_OK(done->wait(3, kLongNs)) << sink_.dump();
  ASSERT_EQ(seen.next.load(), 3);
  EXPECT_EQ(seen.order[0], 0);
  EXPECT_EQ(seen.order[1], 1);
  EXPECT_EQ(seen.order[2], 2);
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(seen.thread[i], signaller) << "submission " << i << " was issued by the signal";
}

// The default issue mode (docs/architecture.md, 'Direct issue and the issuing thread'): a
// submission to a queue whose earlier submissions are all known to have completed (a host wait saw
// them, or the completion thread) is issued by the submitting thread, inside submit, so a submit +
// wait pays no hand-off to the issuing thread.
// StreamBusyTest.ASubmissionBehindUnfinishedWorkGoesToTheIssuingThread has the other half.
TEST_P(StreamBackendTest, SubmissionsToAnIdleQueueAreIssuedOnTheSubmittingThread) {
  baton::stream::setIssueMode(baton::stream::IssueMode::WhenIdle);
  struct Reset {
    ~Reset() { baton::stream::resetIssueMode(); }
  } reset;
  ThreadSeen first, afterWait;
  auto cbFirst = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &first)); });
  auto cbAfter = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &afterWait)); });
  auto done = makeSemaphore("done");
  const baton::stream::Stats before = baton::stream::stats();
  // The queue's first submission: nothing before it.
  ASSERT_OK(submit(queue(0), {}, {*cbFirst}, {{*done, 1}}));
  EXPECT_EQ(first.calls.load(), 1) << "the first submission was not issued inside submit";
  EXPECT_EQ(first.thread, std::this_thread::get_id());
  ASSERT_OK(done->wait(1, kLongNs));
  ASSERT_OK(submit(queue(0), {}, {*cbAfter}, {{*done, 2}}));
  EXPECT_EQ(afterWait.calls.load(), 1) << "a submission after a wait was not issued inside submit";
  EXPECT_EQ(afterWait.thread, std::this_thread::get_id());
  ASSERT_OK(done->wait(2, kLongNs));
  EXPECT_EQ(baton::stream::stats().directIssued - before.directIssued, 2u);
  // Never: every submission goes to the issuing thread.
  baton::stream::setIssueMode(baton::stream::IssueMode::IssuingThread);
  ThreadSeen never;
  auto cbNever = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &never)); });
  ASSERT_OK(submit(queue(1), {}, {*cbNever}, {{*done, 3}}));
  ASSERT_OK(done->wait(3, kLongNs));
  EXPECT_NE(never.thread, std::this_thread::get_id());
}

// stream::threadIds lists the backend's own threads, by kernel thread id: the device's issuing
// thread and one completion thread per queue, each under its own name (benchmarks tell a driver
// thread that inherited such a name apart by it).
TEST_P(StreamBackendTest, ThreadIdsNameTheBackendsOwnThreads) {
  // A thread is listed once it runs: a queue's completion thread may not have started yet when
  // the device is made, so this looks again for up to 10 s.
  int issuing = 0, completion = 0;
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int round = 0;; ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    issuing = completion = 0;
    for (int tid : baton::stream::threadIds()) {
      char path[64], comm[32] = {};
      std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
      FILE* f = std::fopen(path, "r");
      ASSERT_NE(f, nullptr) << "thread " << tid << " is not a thread of this process";
      if (std::fgets(comm, sizeof comm, f)) comm[std::strcspn(comm, "\n")] = 0;
      std::fclose(f);
      const std::string name = comm;
      issuing += name == "baton-issue";
      completion += name == "baton-complete";
      ASSERT_TRUE(name == "baton-issue" || name == "baton-complete") << tid << ": " << name;
    }
    if ((issuing >= 1 && completion >= static_cast<int>(queueCount())) ||
        std::chrono::steady_clock::now() >= limit)
      break;
  }
  // This test's device (and any other device alive in the process) has them.
  EXPECT_GE(issuing, 1);
  EXPECT_GE(completion, static_cast<int>(queueCount()));
}

// Completed records are retired by the thread that issued them directly, once enough of them
// wait (Completion::retireOnSubmit): that thread made their submissions, timepoints and semaphore
// references, which then stay on its core. Records of the issuing thread are the completion
// thread's. Rounds of kPerRound signals on one queue, each round seen complete with getValue
// (which queries the events itself: a sleeping host wait would make the completion thread watch,
// and take the records) before the next: the earlier rounds' records are complete when a later
// round's submits look at them. A round holds more records than the first retirement waits for
// (kRetireBatch, 32), so each round can retire some on its own. The completion thread may still
// take them first at its lazy looks, more often when the machine is slow (under ThreadSanitizer on
// a loaded CI machine, 200 rounds of 24 once retired only 48), so direct issue runs until 64 were
// retired on submit, for at most 2000 rounds (each a few milliseconds at worst). The values are
// all reached, in order, either way.
TEST_P(StreamBackendTest, CompletedRecordsAreRetiredOnTheSubmittingThread) {
  struct Reset {
    ~Reset() { baton::stream::resetIssueMode(); }
  } reset;
  constexpr int kPerRound = 40;
  auto s = makeSemaphore("retired");
  uint64_t v = 0;
  const char* env = std::getenv("BATON_STREAM_RETIRE_ON_SUBMIT");
  const bool off = env && env[0] == '0';
  for (baton::stream::IssueMode mode :
       {baton::stream::IssueMode::Direct, baton::stream::IssueMode::IssuingThread}) {
    const bool direct = mode == baton::stream::IssueMode::Direct;
    baton::stream::setIssueMode(mode);
    const baton::stream::Stats before = baton::stream::stats();
    uint64_t retired = 0;
    int rounds = 0;
    for (; rounds < (direct && !off ? 2000 : 20); ++rounds) {
      for (int i = 0; i < kPerRound; ++i) ASSERT_OK(submit(queue(0), {}, {}, {{*s, ++v}}));
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      for (uint64_t reached = 0; reached < v;) {
        ASSERT_OK(s->getValue(&reached));
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "value " << v << " not reached";
        if (reached < v) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      retired = baton::stream::stats().retiredOnSubmit - before.retiredOnSubmit;
      if (direct && retired >= 64) {
        ++rounds;
        break;
      }
    }
    ASSERT_OK(device_->waitIdle());
    const baton::stream::Stats after = baton::stream::stats();
    const uint64_t records = after.recordsIssued - before.recordsIssued;
    retired = after.retiredOnSubmit - before.retiredOnSubmit;
    std::printf("%s: %llu of %llu records retired by the submitting thread (%d rounds)\n",
                direct ? "direct issue" : "issuing thread",
                static_cast<unsigned long long>(retired), static_cast<unsigned long long>(records),
                rounds);
    EXPECT_EQ(records, uint64_t{kPerRound} * static_cast<uint64_t>(rounds));
    if (!direct || off)
      EXPECT_EQ(retired, 0u);
    else
      EXPECT_GE(retired, 64u) << "the submitting thread retired (almost) no records";
    EXPECT_EQ(after.recordsInFlight, 0u);
    uint64_t reached = 0;
    ASSERT_OK(s->getValue(&reached));
    EXPECT_EQ(reached, v);
  }
}

// setIssueTiming (for benchmarks): while on, the device's issuing thread counts the submissions
// it starts and times its passes and its driver calls; while off, it counts nothing.
TEST_P(StreamBackendTest, IssueTimingCountsOnlyWhileOnAndOnlyTheIssuingThread) {
  struct Reset {
    ~Reset() {
      baton::stream::setIssueTiming(false);
      baton::stream::resetIssueMode();
    }
  } reset;
  auto s = makeSemaphore("timed");
  auto t = makeSemaphore("timed-other");
  uint64_t v = 0, w = 0;
  auto run = [&](int n) {
    for (int i = 0; i < n; ++i) {
      // a GPU-side wait for the other queue's signal, then a signal: two driver calls or more
      ASSERT_OK(submit(
          queue(0),
          w ? std::vector<baton::SemaphoreValue>{{*t, w}} : std::vector<baton::SemaphoreValue>{},
          {}, {{*s, ++v}}));
      ASSERT_OK(submit(queue(1), {{*s, v}}, {}, {{*t, ++w}}));
    }
    ASSERT_OK(t->wait(w, UINT64_MAX));
    ASSERT_OK(device_->waitIdle());
  };
  baton::stream::setIssueMode(baton::stream::IssueMode::IssuingThread);
  const baton::stream::Stats off0 = baton::stream::stats();
  run(50);
  const baton::stream::Stats off1 = baton::stream::stats();
  EXPECT_EQ(off1.issueTimed, off0.issueTimed);
  EXPECT_EQ(off1.issueDriverCalls, off0.issueDriverCalls);
  EXPECT_EQ(off1.issueBusyNs, off0.issueBusyNs);

  baton::stream::setIssueTiming(true);
  run(50);
  baton::stream::setIssueTiming(false);
  const baton::stream::Stats on = baton::stream::stats();
  const uint64_t timed = on.issueTimed - off1.issueTimed;
  const uint64_t calls = on.issueDriverCalls - off1.issueDriverCalls;
  const uint64_t busy = on.issueBusyNs - off1.issueBusyNs;
  const uint64_t driver = on.issueDriverNs - off1.issueDriverNs;
  std::printf("timed: %llu submissions, %llu driver calls, %llu ns busy, %llu ns in the driver\n",
              static_cast<unsigned long long>(timed), static_cast<unsigned long long>(calls),
              static_cast<unsigned long long>(busy), static_cast<unsigned long long>(driver));
  // Every submission went to the issuing thread; the first pass of the loop may still have been
  // untimed when setIssueTiming(true) returned (it is read once per pass).
  EXPECT_GE(timed, 98u);
  EXPECT_LE(timed, 100u);
  // Each records an event; all but the first of queue 1's wait GPU-side, unless the wait was
  // reached by the time it was issued.
  EXPECT_GE(calls, timed);
  EXPECT_LE(calls, 2 * timed);
  EXPECT_GT(driver, 0u);
  EXPECT_GE(busy, driver);

  // Direct issue: the submitting thread issues, and is not timed. One submission that finds the
  // issuing thread busy with the queue (its lock tried while it hands records over, say) goes to
  // that thread, and so do the ones after it while it has not caught up: under ThreadSanitizer
  // on a loaded machine, all 40 of a run(20) once did. So the 20 rounds each start from an idle
  // device (run waits for it).
  baton::stream::setIssueMode(baton::stream::IssueMode::Direct);
  baton::stream::setIssueTiming(true);
  const baton::stream::Stats d0 = baton::stream::stats();
  for (int i = 0; i < 20; ++i) run(1);
  const baton::stream::Stats d1 = baton::stream::stats();
  const uint64_t posted = d1.postedToIssuer - d0.postedToIssuer;
  const uint64_t timedDirect = d1.issueTimed - d0.issueTimed;
  std::printf("direct issue: %llu of 40 submissions posted to the issuing thread, %llu timed\n",
              static_cast<unsigned long long>(posted),
              static_cast<unsigned long long>(timedDirect));
  // Only what was posted to the issuing thread is timed (a pass that began before the switch may
  // take one submission per queue untimed).
  EXPECT_LE(timedDirect, posted);
  EXPECT_GE(timedDirect + 2, posted);
  EXPECT_LT(posted, 40u) << "direct issue posted every submission";
}

TEST_P(StreamBackendTest, ADirectlyIssuedCallbackSubmitsToItsOwnQueue) {
  struct Nested {
    baton::Queue queue;
    baton::Semaphore done;
    ThreadSeen inner;
    baton::CommandBuffer innerCommands;
    Result submitted = Result::ErrorInvalidState;  // until the callback ran
    std::atomic<int> innerCallsAtOuterEnd{-1};
  } n;
  auto inner = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &n.inner)); });
  auto done = makeSemaphore("done");
  n.queue = queue(0);
  n.done = *done;
  n.innerCommands = *inner;
  auto outer = makeReplayCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.native(
        [](const baton::NativeQueue&, void* user) {
          auto* n = static_cast<Nested*>(user);
          baton::SubmitInfo info;
          baton::SemaphoreValue signal{n->done, 2};
          info.commandBuffers = {&n->innerCommands, 1};
          info.signals = {&signal, 1};
          n->submitted = n->queue.submit({&info, 1});
          n->innerCallsAtOuterEnd = n->inner.calls.load();
          return Result::Success;
        },
        &n));
  });
  ASSERT_OK(submit(queue(0), {}, {*outer}, {{*done, 1}}));
  ASSERT_OK(done->wait(2, kLongNs));
  EXPECT_EQ(n.submitted, Result::Success) << lastError();
  EXPECT_EQ(n.innerCallsAtOuterEnd.load(), 0) << "the nested submission ran inside the outer one";
  EXPECT_EQ(n.inner.calls.load(), 1);
}

// Consumers on queues 3, 2, 1 are submitted before the producer on queue 0, whose work is held
// on the GPU by a gate. All of them must be issued (GPU-side waits) as soon as the producer's
// signal is recorded — while the gate is still closed, so with no host round trip — and the
// data must flow through the chain once the gate opens.
TEST_P(StreamBackendTest, WaitBeforeSignalChainIsReleasedWhenTheSignalIsRecorded) {
  BATON_REQUIRE_KERNELS();
  const uint64_t size = 1 << 20;
  auto a = makeBuffer(size, MemoryKind::Device);
  auto b = makeBuffer(size, MemoryKind::Device);
  auto c = makeBuffer(size, MemoryKind::Device);
  auto out = makeBuffer(size, MemoryKind::HostPinned);
  std::memset(map(*out), 0, size);
  auto s0 = makeSemaphore("s0"), s1 = makeSemaphore("s1"), s2 = makeSemaphore("s2"),
       s3 = makeSemaphore("s3");
  std::atomic<int> issued[3] = {0, 0, 0};
  Gate gate(*device_, kernels_);

  auto c1 = makeReplayCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.native(countIssue, &issued[0]));
    EXPECT_OK(cb.copyBuffer(*a, 0, *b, 0, size));
  });
  auto c2 = makeReplayCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.native(countIssue, &issued[1]));
    EXPECT_OK(cb.copyBuffer(*b, 0, *c, 0, size));
  });
  auto c3 = makeReplayCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.native(countIssue, &issued[2]));
    EXPECT_OK(cb.copyBuffer(*c, 0, *out, 0, size));
  });
  ASSERT_OK(submit(queue(3), {{*s2, 1}}, {*c3}, {{*s3, 1}}));
  ASSERT_OK(submit(queue(2), {{*s1, 1}}, {*c2}, {{*s2, 1}}));
  ASSERT_OK(submit(queue(1), {{*s0, 1}}, {*c1}, {{*s1, 1}}));
  // Issuing is asynchronous (each queue's issuing thread): give a wrongly released consumer
  // time to show.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (auto& i : issued) EXPECT_EQ(i.load(), 0) << "held until the producer's signal exists";

  auto producer = makeReplayCommands([&](baton::CommandBuffer cb) {
    gate.record(cb);
    EXPECT_OK(cb.fillBuffer(*a, 0, size, kPattern));
  });
  ASSERT_OK(submit(queue(0), {}, {*producer}, {{*s0, 1}}));

  // Released when submit() published the producer's signal, and issued by the queues' issuing
  // threads (GPU-side waits) while the GPU is still gated.
  for (auto& i : issued) {
    auto start = Clock::now();
    while (i.load() == 0 && secondsSince(start) < 5.0) std::this_thread::yield();
    EXPECT_EQ(i.load(), 1) << "released when the signal was recorded";
  }
  uint64_t v = 99;
  EXPECT_EQ(s3->getValue(&v), Result::Success);
  EXPECT_EQ(v, 0u) << "nothing completed yet: the gate is closed";
  EXPECT_EQ(s3->wait(1, 2 * kMs), Result::Timeout);

  gate.open();
  ASSERT_OK(s3->wait(1, kLongNs));
  auto* words = map<uint32_t>(*out);
  for (uint64_t i = 0; i < size / 4; i += 4099) ASSERT_EQ(words[i], kPattern) << "word " << i;
  EXPECT_EQ(words[size / 4 - 1], kPattern);
}

// Many queues ping-ponging through two semaphores, all submitted up front from one thread.
TEST_P(StreamBackendTest, MultiQueuePingPongChain) {
  auto s = makeSemaphore("ping");
  const int kRounds = 200;
  // The chain itself is the test: step i, on queue i % 4, waits for i and signals i + 1.
  for (int i = 0; i < kRounds; ++i)
    ASSERT_OK(submit(queue(static_cast<uint32_t>(i)), {{*s, static_cast<uint64_t>(i)}}, {},
                     {{*s, static_cast<uint64_t>(i + 1)}}));
  ASSERT_OK(s->wait(kRounds, kLongNs));
  uint64_t v = 0;
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, static_cast<uint64_t>(kRounds));
}

// The same chain with every consumer submitted before its producer: queue q runs steps
// q+1, q+5, q+9, ... (in order, as a queue must), and the queues are submitted last to first,
// so each step waits for a value whose signal is submitted later, on another queue.
TEST_P(StreamBackendTest, MultiQueueWaitBeforeSignalConsumersFirst) {
  auto s = makeSemaphore("consumers-first");
  const uint32_t kPerQueue = 32;
  for (uint32_t q = kQueues; q-- > 0;) {
    for (uint32_t k = 0; k < kPerQueue; ++k) {
      uint64_t step = 1 + q + k * kQueues;
      ASSERT_OK(submit(queue(q), {{*s, step - 1}}, {}, {{*s, step}}));
    }
  }
  ASSERT_OK(s->wait(kPerQueue * kQueues, kLongNs));
}

baton::UniqueDevice makeHostDevice(baton::Instance instance, baton::PhysicalDevice physical) {
  baton::DeviceCreateInfo info;
  info.queueCount = 2;
  baton::UniqueDevice d;
  EXPECT_OK(instance.createDevice(physical, info, d.put()));
  return d;
}

// Host queue produces (a host call writes pinned memory), the GPU backend consumes (copies it) —
// the GPU consumer submitted first; and back: the GPU produces, a host queue consumes. Nobody
// waits on the host for the GPU signal: the completion thread must publish it for the host queue
// to run. (Chains between CUDA and HIP: stream_cross_backend_tests.cpp.)
TEST_P(StreamBackendTest, CrossBackendChainsInBothDirections) {
  ASSERT_TRUE(hostPhysical_);
  baton::UniqueDevice host = makeHostDevice(*instance_, hostPhysical_);
  baton::Queue hq, hq2;  // consumer and producer: on one in-order queue they would deadlock
  ASSERT_OK(host->getQueue(0, &hq));
  ASSERT_OK(host->getQueue(1, &hq2));
  auto in = makeBuffer(4, MemoryKind::HostPinned);
  auto mid = makeBuffer(4, MemoryKind::Device);
  auto out = makeBuffer(4, MemoryKind::HostPinned);
  auto* inWord = map<uint32_t>(*in);
  auto* outWord = map<uint32_t>(*out);
  *inWord = 0;
  *outWord = 0;
  auto toGpu = makeSemaphore("host->gpu"), toHost = makeSemaphore("gpu->host"),
       done = makeSemaphore("done");

  // GPU consumer first (held: nothing signals toGpu yet).
  auto gpuWork = makeCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.copyBuffer(*in, 0, *mid, 0, 4));
    EXPECT_OK(cb.copyBuffer(*mid, 0, *out, 0, 4));
  });
  ASSERT_OK(submit(queue(1), {{*toGpu, 1}}, {*gpuWork}, {{*toHost, 1}}));
  // Host queue consumer of the GPU signal, also before its producer exists.
  HostRead reader{outWord};
  auto hostRead = makeCommands(
      *host, [&](baton::CommandBuffer cb) { EXPECT_OK(cb.hostCall(&HostRead::run, &reader)); });
  ASSERT_OK(submit(hq, {{*toHost, 1}}, {*hostRead}, {{*done, 1}}));
  // Producer on the host queue.
  HostWrite writer{inWord, 0xFEEDu};
  auto hostWrite = makeCommands(
      *host, [&](baton::CommandBuffer cb) { EXPECT_OK(cb.hostCall(&HostWrite::run, &writer)); });
  ASSERT_OK(submit(hq2, {}, {*hostWrite}, {{*toGpu, 1}}));

  ASSERT_OK(done->wait(1, kLongNs)) << sink_.dump();
  EXPECT_EQ(reader.seen.load(), 0xFEEDu);
  EXPECT_OK(host->waitIdle());
}

// getValue observes device signals as they complete (without a host wait).
TEST_P(StreamBackendTest, GetValueObservesDeviceSignals) {
  auto s = makeSemaphore("no-waiter");
  ASSERT_OK(submit(queue(0), {}, {}, {{*s, 5}}));
  auto start = Clock::now();
  uint64_t v = 0;
  while (v < 5 && secondsSince(start) < 10) {
    ASSERT_OK(s->getValue(&v));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  EXPECT_EQ(v, 5u);
}

// A failed host call must fail the submission's signals, and a GPU-side waiter on another queue
// must not run: the signals of a submission with host calls are not GPU-waitable events.
TEST_P(StreamBackendTest, FailedHostCallKeepsGpuWaitersFromRunning) {
  auto out = makeBuffer(4, MemoryKind::HostPinned);
  auto* word = map<uint32_t>(*out);
  *word = 0;
  auto s = makeSemaphore("host-call"), t = makeSemaphore("after");
  auto failing = makeCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.hostCall([](void*) { return Result::ErrorInvalidState; }, nullptr));
  });
  auto consumer = makeCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.fillBuffer(*out, 0, 4, kPattern)); });
  ASSERT_OK(submit(queue(1), {{*s, 1}}, {*consumer}, {{*t, 1}}));
  ASSERT_OK(submit(queue(0), {}, {*failing}, {{*s, 1}}));
  EXPECT_EQ(t->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "ErrorInvalidState")) << lastError();
  EXPECT_OK(device_->waitIdle());
  EXPECT_EQ(*word, 0u) << "the consumer ran although the host call failed";
  // A successful host call releases its waiters.
  auto s2 = makeSemaphore("host-call-ok"), t2 = makeSemaphore("after-ok");
  auto ok = makeCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.hostCall([](void*) { return Result::Success; }, nullptr));
  });
  ASSERT_OK(submit(queue(1), {{*s2, 1}}, {*consumer}, {{*t2, 1}}));
  ASSERT_OK(submit(queue(0), {}, {*ok}, {{*s2, 1}}));
  ASSERT_OK(t2->wait(1, kLongNs));
  EXPECT_EQ(*word, kPattern);
}

// GPU work after a host call in the same submission runs after it (and only when it succeeded);
// a submission behind it on the queue keeps its place.
TEST_P(StreamBackendTest, CommandsAfterAHostCallRunAfterIt) {
  auto buf = makeBuffer(4096, MemoryKind::HostPinned);
  auto other = makeBuffer(4096, MemoryKind::HostPinned);
  auto* words = map<uint32_t>(*buf);
  auto* otherWords = map<uint32_t>(*other);
  std::memset(words, 0, 4096);
  std::memset(otherWords, 0, 4096);
  HostWrite first{words, 7};    // runs first: the fill below must overwrite it
  HostRead seen{words + 1023};  // runs after the fill
  auto s = makeSemaphore("after-host-call"), t = makeSemaphore("behind");
  auto a = makeCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.hostCall(&HostWrite::run, &first));
    EXPECT_OK(cb.fillBuffer(*buf, 0, 4096, kPattern));
    EXPECT_OK(cb.hostCall(&HostRead::run, &seen));
  });
  auto b = makeCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.fillBuffer(*other, 0, 4096, kPattern + 1)); });
  for (int round = 0; round < 10; ++round) {
    seen.seen = 0;
    ASSERT_OK(submit(queue(0), {}, {*a}, {{*s, static_cast<uint64_t>(round + 1)}}));
    ASSERT_OK(submit(queue(0), {}, {*b}, {{*t, static_cast<uint64_t>(round + 1)}}));
    ASSERT_OK(t->wait(round + 1, kLongNs));
    uint64_t v = 0;
    ASSERT_OK(s->getValue(&v));
    EXPECT_EQ(v, static_cast<uint64_t>(round + 1)) << "the later submission finished first";
    EXPECT_EQ(seen.seen.load(), kPattern);
    EXPECT_EQ(words[0], kPattern);
    EXPECT_EQ(otherWords[1023], kPattern + 1);
  }
  EXPECT_OK(queue(0).waitIdle(kLongNs));
}

TEST_P(StreamBackendTest, HostWaitTimesOutOnGatedWorkThenSucceeds) {
  BATON_REQUIRE_KERNELS();
  Gate gate(*device_, kernels_);
  auto s = makeSemaphore("gated");
  auto gated = makeCommands([&](baton::CommandBuffer cb) { gate.record(cb); });
  ASSERT_OK(submit(queue(0), {}, {*gated}, {{*s, 1}}));
  EXPECT_EQ(s->wait(1, 0), Result::Timeout);
  auto start = Clock::now();
  EXPECT_EQ(s->wait(1, 20 * kMs), Result::Timeout);
  EXPECT_GE(secondsSince(start), 0.019);
  baton::SemaphoreValue entries[] = {{*s, 1}};
  EXPECT_EQ(instance_->waitSemaphores(entries, baton::WaitMode::Any, 5 * kMs), Result::Timeout);
  uint64_t v = 9;
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, 0u);
  // A waiter blocked (past its spin, asleep) is woken when the GPU completes.
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    gate.open();
  });
  start = Clock::now();
  EXPECT_OK(s->wait(1, kLongNs));
  double waited = secondsSince(start);
  opener.join();
  EXPECT_GE(waited, 0.02);
  EXPECT_LT(waited, 5.0);
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, 1u);
}

// A host thread asleep on an older signal wakes when that signal completes, not when the work
// queued behind it on the same stream does (the completion thread must not sleep until the
// stream's last work).
TEST_P(StreamBackendTest, SleepingHostWaitWakesBeforeLaterWorkOnTheQueue) {
  BATON_REQUIRE_KERNELS();
  Gate first(*device_, kernels_), second(*device_, kernels_);
  auto s = makeSemaphore("in order");
  auto a = makeCommands([&](baton::CommandBuffer cb) { first.record(cb); });
  auto b = makeCommands([&](baton::CommandBuffer cb) { second.record(cb); });
  ASSERT_OK(submit(queue(0), {}, {*a}, {{*s, 1}}));
  ASSERT_OK(submit(queue(0), {}, {*b}, {{*s, 2}}));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the waiter is asleep by then
    first.open();
  });
  // The second gate stays closed until this wait returned (its watchdog opens it after 20 s).
  EXPECT_OK(s->wait(1, 10'000 * kMs)) << "the wait for 1 did not return while 2 was pending";
  uint64_t v = 0;
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, 1u);
  opener.join();
  second.open();
  EXPECT_OK(s->wait(2, kLongNs));
}

// alloca held on a host-signalled wait, then used on another queue and freed by dealloca on a
// third; the address is NotReady until the allocation ran. Repeated to exercise the pool.
TEST_P(StreamBackendTest, QueueOrderedAllocationIsOrderedByItsWaitsAndSignals) {
  // Replayed: a graph command buffer needs its buffers' memory at end(), before the alloca ran
  // here (stream_graph_tests.cpp: ABufferWithoutMemoryAtEndIsRefused).
  if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc))
    GTEST_SKIP() << "no memory pools on " << props_.name;
  const uint64_t size = 256 << 10;
  auto out = makeBuffer(size, MemoryKind::HostPinned);
  auto* words = map<uint32_t>(*out);
  for (int round = 0; round < 20; ++round) {
    std::memset(words, 0, size);
    auto go = makeSemaphore("go"), allocated = makeSemaphore("allocated"),
         used = makeSemaphore("used"), freed = makeSemaphore("freed");
    baton::BufferCreateInfo info;
    info.size = size;
    baton::Buffer b;
    ASSERT_OK(queue(0).allocaBuffer({{*go, 1}}, info, {{*allocated, 1}}, &b));
    uint64_t address = 0;
    EXPECT_EQ(b.getDeviceAddress(&address), Result::NotReady) << "allocated before its wait";
    const uint32_t pattern = kPattern + static_cast<uint32_t>(round);
    auto use = makeReplayCommands([&](baton::CommandBuffer cb) {
      EXPECT_OK(cb.fillBuffer(b, 0, size, pattern));
      EXPECT_OK(cb.copyBuffer(b, 0, *out, 0, size));
    });
    ASSERT_OK(submit(queue(1), {{*allocated, 1}}, {*use}, {{*used, 1}}));
    ASSERT_OK(queue(2).deallocaBuffer({{*used, 1}}, b, {{*freed, 1}}));
    EXPECT_EQ(freed->wait(1, 5 * kMs), Result::Timeout);
    ASSERT_OK(go->signal(1));
    ASSERT_OK(freed->wait(1, kLongNs));
    EXPECT_EQ(words[0], pattern);
    EXPECT_EQ(words[size / 4 - 1], pattern);
  }
}

// A semaphore signalled on one GPU and waited for on another, released on record (gated). The
// data crosses through pinned host memory: the second GPU's native callback copies the first
// GPU's buffer (a command buffer may only name buffers of its own device).
struct CrossDeviceCopy {
  const StreamHooks* hooks = nullptr;
  uint64_t dst = 0, src = 0, size = 0;
  std::atomic<int> issued{0};
  static Result run(const baton::NativeQueue& q, void* user) {
    auto* self = static_cast<CrossDeviceCopy*>(user);
    self->issued.fetch_add(1);
    int r = self->hooks->copyAsync(self->dst, self->src, self->size, q.stream);
    return r == 0 ? Result::Success : Result::ErrorDriver;
  }
};

TEST_P(StreamBackendTest, TwoGpuWait) {
  if (gpus_.size() < 2)
    GTEST_SKIP() << "needs 2 " << baton::backendName(backend()) << " devices, this machine has "
                 << gpus_.size();
  BATON_REQUIRE_KERNELS();
  baton::DeviceCreateInfo info;
  info.queueCount = 2;
  baton::UniqueDevice second;
  ASSERT_OK(instance_->createDevice(gpus_[1], info, second.put()));
  baton::Queue q1;
  ASSERT_OK(second->getQueue(0, &q1));
  auto src = makeBuffer(4096, MemoryKind::Device);
  auto shared = makeBuffer(4096, MemoryKind::HostPinned);  // portable: visible to both GPUs
  auto staging = makeBuffer(*second, 4096, MemoryKind::Device);
  auto out = makeBuffer(*second, 4096, MemoryKind::HostPinned);
  std::memset(map(*shared), 0, 4096);
  std::memset(map(*out), 0, 4096);
  CrossDeviceCopy copy;
  copy.hooks = &hooks();
  copy.size = 4096;
  ASSERT_OK(shared->getDeviceAddress(&copy.src));
  ASSERT_OK(staging->getDeviceAddress(&copy.dst));  // host to device: ordered on the stream
  auto s = makeSemaphore("gpu0->gpu1"), t = makeSemaphore("gpu1 done");
  auto consumer = makeReplayCommands(*second, [&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.native(&CrossDeviceCopy::run, &copy));
    EXPECT_OK(cb.copyBuffer(*staging, 0, *out, 0, 4096));
  });
  ASSERT_OK(submit(q1, {{*s, 1}}, {*consumer}, {{*t, 1}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // issuing is asynchronous
  EXPECT_EQ(copy.issued.load(), 0);
  Gate gate(*device_, kernels_);
  auto producer = makeReplayCommands([&](baton::CommandBuffer cb) {
    gate.record(cb);
    EXPECT_OK(cb.fillBuffer(*src, 0, 4096, kPattern));
    EXPECT_OK(cb.copyBuffer(*src, 0, *shared, 0, 4096));
  });
  ASSERT_OK(submit(queue(0), {}, {*producer}, {{*s, 1}}));
  // Released by the signal's publication; the second device's issuing thread enqueues it once
  // the first device's has recorded the event, while the gate is still closed.
  auto start = Clock::now();
  while (copy.issued.load() == 0 && secondsSince(start) < 5.0) std::this_thread::yield();
  EXPECT_EQ(copy.issued.load(), 1) << "the second GPU waits GPU-side, released on record";
  EXPECT_EQ(t->wait(1, 2 * kMs), Result::Timeout);
  gate.open();
  ASSERT_OK(t->wait(1, kLongNs));
  auto* words = map<uint32_t>(*out);
  EXPECT_EQ(words[0], kPattern);
  EXPECT_EQ(words[1023], kPattern);
  EXPECT_OK(second->waitIdle());
}

// A driver error that is not sticky (injected at the one wrapper around driver calls) fails the
// submission's signals with the driver's name of the error (CUresult, hipError_t) and of the
// call, and the device stays usable.
TEST_P(StreamBackendTest, DriverErrorFailsTheSignalsWithTheDriverErrorName) {
  // Replayed: a graph command buffer makes no memset call of its own (stream_graph_tests.cpp:
  // ALaunchErrorFailsTheSignals).
  auto buffer = makeBuffer(64, MemoryKind::Device);
  auto fill = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.fillBuffer(*buffer, 0, 64, 1)); });
  auto s = makeSemaphore("injected");
  hooks().clearFaults();
  ASSERT_TRUE(hooks().injectFault(hooks().memsetApi, Fault::InvalidValue));
  ASSERT_OK(submit(queue(0), {}, {*fill}, {{*s, 1}}));
  // The queue's issuing thread makes the driver calls: the signal fails once it has.
  EXPECT_EQ(s->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(hooks().faultsFired(), 1u);
  hooks().clearFaults();
  char reason[512];
  ASSERT_OK(s->getFailureReason(reason, sizeof reason));
  EXPECT_TRUE(containsText(reason, hooks().memsetApi)) << reason;
  EXPECT_TRUE(containsText(reason, hooks().invalidValueName)) << reason;
  auto s2 = makeSemaphore("after");
  ASSERT_OK(submit(queue(0), {}, {*fill}, {{*s2, 1}}));
  EXPECT_OK(s2->wait(1, kLongNs));
}

TEST_P(StreamBackendTest, DeviceMemoryIsNotMappable) {
  auto b = makeBuffer(64, MemoryKind::Device);
  void* p = nullptr;
  EXPECT_EQ(b->map(&p), Result::ErrorNotSupported);
  uint64_t address = 0;
  EXPECT_OK(b->getDeviceAddress(&address));
  EXPECT_NE(address, 0u);
}

// Concurrent submitters on every queue, each chaining off the previous queue's semaphore.
// BATON_CUDA_TEST_SUBMISSIONS scales it and EventPoolStaysBounded (on either backend; the name is
// the one gpu_run.sh and earlier runs use).
TEST_P(StreamBackendTest, ConcurrentSubmittersWithCrossQueueWaits) {
  const int kPerThread = static_cast<int>(envUint("BATON_CUDA_TEST_SUBMISSIONS", 8000) / 4);
  std::vector<baton::UniqueSemaphore> sems;
  for (uint32_t i = 0; i < kQueues; ++i) sems.push_back(makeSemaphore());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (uint32_t t = 0; t < kQueues; ++t) {
    threads.emplace_back([&, t] {
      baton::Semaphore mine = *sems[t], theirs = *sems[(t + kQueues - 1) % kQueues];
      for (int i = 1; i <= kPerThread; ++i) {
        // Wait for the neighbour to be at least halfway behind: a real cross-queue dependency
        // that is sometimes recorded, sometimes reached, sometimes not submitted yet.
        Result r = submit(queue(t), {{theirs, static_cast<uint64_t>(i / 2)}}, {},
                          {{mine, static_cast<uint64_t>(i)}});
        if (r != Result::Success) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (auto& s : sems) EXPECT_OK(s->wait(kPerThread, kLongNs));
}

// Steady state: the event pool and the in-flight bookkeeping stay bounded over many submissions.
TEST_P(StreamBackendTest, EventPoolStaysBounded) {
  auto a = makeSemaphore("a"), b = makeSemaphore("b");
  const int kCount = static_cast<int>(envUint("BATON_CUDA_TEST_SUBMISSIONS", 8000) * 6);
  for (int i = 1; i <= kCount; ++i) {
    ASSERT_OK(submit(queue(0), {{*b, static_cast<uint64_t>(i - 1)}}, {},
                     {{*a, static_cast<uint64_t>(i)}}));
    ASSERT_OK(
        submit(queue(1), {{*a, static_cast<uint64_t>(i)}}, {}, {{*b, static_cast<uint64_t>(i)}}));
  }
  ASSERT_OK(b->wait(kCount, kLongNs));
  ASSERT_OK(device_->waitIdle());
  baton::stream::Stats st = baton::stream::stats();
  std::printf("after %d submissions: %llu events created, %llu in use, %llu records in flight\n",
              2 * kCount, static_cast<unsigned long long>(st.eventsCreated),
              static_cast<unsigned long long>(st.eventsInUse),
              static_cast<unsigned long long>(st.recordsInFlight));
  // The bound comes from the GPU pacing the submitter; the fake driver of CI completes
  // everything at once, and then only the completion threads' speed bounds the backlog.
  if (!containsText(props_.name, "fake")) {
    EXPECT_LT(st.eventsCreated, 8192u);
  }
  EXPECT_EQ(st.recordsInFlight, 0u);
  EXPECT_LE(st.eventsInUse, 2u) << "only the last signals of each semaphore may stay pending";
  // Every signal so far was published when its submission was released: an event could always
  // be had then (creating one on the submitting thread needs the device's context).
  EXPECT_EQ(st.timepointsPublishedLate, 0u);
}

// The fake driver's pause (tests/cuda/fake: batonFakeCudaPause), when the backend runs on it:
// holds every stream as a GPU busy with long work would. Null with a real driver.
using FakePause = int (*)(int);
FakePause fakeDriverPause(baton::BackendKind kind) {
  const char* path =
      std::getenv(kind == baton::BackendKind::Hip ? "BATON_HIP_DRIVER" : "BATON_CUDA_DRIVER");
  if (!path || !*path) return nullptr;
  void* library = dlopen(path, RTLD_NOW | RTLD_NOLOAD);  // the one baton loaded
  if (!library) return nullptr;
  auto pause = reinterpret_cast<FakePause>(dlsym(library, "batonFakeCudaPause"));
  dlclose(library);  // baton's reference keeps it loaded
  return pause;
}

// Tests of what baton's threads do while a queue's GPU work is busy: queue 0 is held busy by the
// gate kernel where the test kernels load, else by the fake driver's pause (every stream stops),
// until openGpu() or the end of the test.
class StreamBusyTest : public StreamBackendTest {
 protected:
  // Makes queue 0 busy; false (with skip_ saying why) where neither way is available.
  bool holdGpu() {
    if (kernelsMissing_.empty()) {
      gate_ = std::make_unique<Gate>(*device_, kernels_);
      auto gated = makeCommands([&](baton::CommandBuffer cb) { gate_->record(cb); });
      EXPECT_OK(submit(queue(0), {}, {*gated}, {}));
      return true;
    }
    pause_ = fakeDriverPause(backend());
    if (!pause_) {
      skip_ = "needs the gate kernel (" + kernelsMissing_ + ") or the fake driver's pause";
      return false;
    }
    if (pause_(1) != 1) {
      pause_ = nullptr;
      skip_ = "the fake driver runs in sync mode: its operations run on the calling thread";
      return false;
    }
    return true;
  }
  void openGpu() {
    if (gate_) gate_->open();
    if (pause_) pause_(0);
    pause_ = nullptr;
  }
  void TearDown() override {
    openGpu();  // however the test ended, the streams run again
    if (device_) {
      EXPECT_OK(device_->waitIdle());
    }
    gate_.reset();  // its buffer, before the device goes
    StreamBackendTest::TearDown();
  }

  // Over 100 ms (from 5 ms after now): the completion threads' looks, and how much the Stats
  // counter `parks` grew; printed after `what`.
  std::pair<uint64_t, uint64_t> looksAndParks(uint64_t baton::stream::Stats::*parks,
                                              const char* what) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const baton::stream::Stats before = baton::stream::stats();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const baton::stream::Stats after = baton::stream::stats();
    const uint64_t looks = after.completionLooks - before.completionLooks;
    const uint64_t parked = after.*parks - before.*parks;
    std::printf("%s, 100 ms: %llu looks, %llu parks\n", what,
                static_cast<unsigned long long>(looks), static_cast<unsigned long long>(parked));
    return {looks, parked};
  }

  std::unique_ptr<Gate> gate_;
  FakePause pause_ = nullptr;
  std::string skip_;
};

// No thread polls while the GPU is simply busy: with records in flight and nothing waiting for
// them, the completion thread looks for completions a few times, backing off, not every few
// microseconds. A submission of another backend held until a value of this queue is reached makes
// it watch (it parks lazily no more) until the value is reached.
TEST_P(StreamBusyTest, CompletionsAreLookedForLazilyUnlessSomethingWaits) {
  if (!holdGpu()) GTEST_SKIP() << skip_;
  auto s = makeSemaphore("busy");
  for (uint64_t i = 1; i <= 8; ++i) ASSERT_OK(submit(queue(0), {}, {}, {{*s, i}}));
  auto [looks, parks] =
      looksAndParks(&baton::stream::Stats::lazyParks, "busy GPU, nothing waiting (lazy parks)");
  EXPECT_LE(looks, 20u) << "the completion thread polls while nothing needs it";
  EXPECT_GE(parks, 2u);

  // A host queue's submission held until 8 is reached: the completion thread watches.
  ASSERT_TRUE(hostPhysical_);
  baton::UniqueDevice host = makeHostDevice(*instance_, hostPhysical_);
  baton::Queue hq;
  ASSERT_OK(host->getQueue(0, &hq));
  auto t = makeSemaphore("after busy");
  ASSERT_OK(submit(hq, {{*s, 8}}, {}, {{*t, 1}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past any lazy park
  auto [watchedLooks, watchedParks] = looksAndParks(&baton::stream::Stats::lazyParks,
                                                    "busy GPU, a host queue waiting (lazy parks)");
  (void)watchedLooks;
  EXPECT_EQ(watchedParks, 0u) << "a held submission's value is not watched";
  openGpu();
  ASSERT_OK(t->wait(1, kLongNs)) << sink_.dump();
  uint64_t v = 0;
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, 8u);
  EXPECT_OK(host->waitIdle());
}

// A submission with a host call behind busy GPU work: its signals are published by the
// completion thread once the call ran, so that thread must notice promptly, but it need not poll
// while the GPU works towards the call: the host function wakes it.
Result countCall(void* user) {
  static_cast<std::atomic<int>*>(user)->fetch_add(1);
  return Result::Success;
}

TEST_P(StreamBusyTest, HostCallsAreAwaitedWithoutPolling) {
  if (!holdGpu()) GTEST_SKIP() << skip_;
  auto s = makeSemaphore("after the call");
  std::atomic<int> calls{0};
  auto call =
      makeCommands([&](baton::CommandBuffer cb) { EXPECT_OK(cb.hostCall(countCall, &calls)); });
  ASSERT_OK(submit(queue(0), {}, {*call}, {{*s, 1}}));
  // Work queued behind it, as in a frame: the thread cannot sleep in the driver on the call's
  // own event (sleepOnOldest), which would otherwise hide a poll.
  auto u = makeSemaphore("behind the call");
  for (uint64_t i = 1; i <= 4; ++i) ASSERT_OK(submit(queue(0), {}, {}, {{*u, i}}));
  auto [looks, parks] = looksAndParks(&baton::stream::Stats::hostCallParks,
                                      "busy GPU, a host call pending (host-call parks)");
  EXPECT_LE(looks, 20u) << "the completion thread polls for a host call the GPU has not reached";
  EXPECT_GE(parks, 1u);
  EXPECT_EQ(calls.load(), 0);
  openGpu();
  // Published promptly once the call ran: a host wait sees it well within the bound.
  ASSERT_OK(s->wait(1, kLongNs)) << sink_.dump();
  EXPECT_EQ(calls.load(), 1);
  ASSERT_OK(u->wait(4, kLongNs)) << sink_.dump();
}

// Device::setHostWaitSpin: how long a host wait on a recorded device signal spins on its event
// before it sleeps until the completion thread wakes it. 0 sleeps at once; the default (50 µs)
// spins, then sleeps behind work that takes longer; kHostWaitSpinForever spins (yielding) for the
// whole wait, sees the GPU finish itself, and still times out at its deadline.
TEST_P(StreamBusyTest, HostWaitSpinIsTheDevicesSetting) {
  const uint64_t issued = baton::stream::stats().recordsIssued;
  if (!holdGpu()) GTEST_SKIP() << skip_;
  auto s = makeSemaphore("spin");
  ASSERT_OK(submit(queue(0), {}, {}, {{*s, 1}}));
  // The waits below time out after 5 ms: they must find the signal's event recorded, not wait for
  // the issuing thread to record it (on a loaded machine, under ASan, once longer than that).
  // Records pushed: the gate kernel's submission, if any, and this one.
  const uint64_t want = issued + (gate_ ? 2 : 1);
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (baton::stream::stats().recordsIssued < want && std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(baton::stream::stats().recordsIssued, want) << "the submission was not issued";
  using Stats = baton::stream::Stats;
  auto spinsAndSleeps = [](const Stats& before) {
    const Stats now = baton::stream::stats();
    return std::make_pair(now.hostWaitSpins - before.hostWaitSpins,
                          now.hostWaitSleeps - before.hostWaitSleeps);
  };
  ASSERT_OK(device_->setHostWaitSpin(0));
  Stats before = baton::stream::stats();
  EXPECT_EQ(s->wait(1, 5 * kMs), Result::Timeout);
  auto [spins, sleeps] = spinsAndSleeps(before);
  EXPECT_EQ(spins, 0u) << "a wait spun with a spin of 0";
  EXPECT_GE(sleeps, 1u) << "a wait with a spin of 0 did not sleep";

  ASSERT_OK(device_->setHostWaitSpin(baton::kHostWaitSpinDefaultNs));
  before = baton::stream::stats();
  EXPECT_EQ(s->wait(1, 5 * kMs), Result::Timeout);
  std::tie(spins, sleeps) = spinsAndSleeps(before);
  EXPECT_GE(spins, 1u) << "the default spin did not spin";
  EXPECT_GE(sleeps, 1u) << "the default spin did not end in a sleep behind 5 ms of work";

  ASSERT_OK(device_->setHostWaitSpin(baton::kHostWaitSpinForever));
  before = baton::stream::stats();
  auto start = Clock::now();
  EXPECT_EQ(s->wait(1, 5 * kMs), Result::Timeout);
  EXPECT_GE(secondsSince(start), 0.004);
  std::tie(spins, sleeps) = spinsAndSleeps(before);
  EXPECT_GE(spins, 1u);
  EXPECT_EQ(sleeps, 0u) << "a wait told to spin for the whole wait slept";
  before = baton::stream::stats();
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    openGpu();
  });
  EXPECT_OK(s->wait(1, kLongNs)) << sink_.dump();
  opener.join();
  std::tie(spins, sleeps) = spinsAndSleeps(before);
  EXPECT_GE(spins, 1u);
  EXPECT_EQ(sleeps, 0u) << "a wait told to spin for the whole wait slept";
  uint64_t v = 0;
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, 1u);
  EXPECT_OK(device_->setHostWaitSpin(baton::kHostWaitSpinDefaultNs));
}

// The default issue mode issues a submission on the submitting thread only when the queue's earlier
// work is known to have completed: behind work that has not, it goes to the issuing thread, which
// overlaps its driver calls with what the submitter does next. Once a wait saw that work complete,
// the next submission is direct again.
TEST_P(StreamBusyTest, ASubmissionBehindUnfinishedWorkGoesToTheIssuingThread) {
  baton::stream::setIssueMode(baton::stream::IssueMode::WhenIdle);
  struct Reset {
    ~Reset() { baton::stream::resetIssueMode(); }
  } reset;
  if (!holdGpu()) GTEST_SKIP() << skip_;
  ThreadSeen busy, idle;
  auto cbBusy = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &busy)); });
  auto cbIdle = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &idle)); });
  auto done = makeSemaphore("done");
  // Work of the queue the GPU has not run (with the fake driver's pause, nothing is on the
  // stream yet).
  ASSERT_OK(submit(queue(0), {}, {}, {{*done, 1}}));
  ASSERT_OK(submit(queue(0), {}, {*cbBusy}, {{*done, 2}}));
  // Its callback runs when it is issued, on the GPU's progress or not.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (busy.calls.load() == 0 && std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(busy.calls.load(), 1);
  EXPECT_NE(busy.thread, std::this_thread::get_id())
      << "issued on the submitting thread behind work that had not completed";
  openGpu();
  ASSERT_OK(done->wait(2, kLongNs));
  // The issuing thread may still hold the queue (its issue lock, handing records on) for a moment
  // after the GPU finished: a submit that finds it so is handed on (under ThreadSanitizer on a
  // loaded 2-core machine, once in a CI run). So up to 20 rounds, each after a wait that saw the
  // queue's work complete: one must be issued inside submit.
  uint64_t value = 2;
  for (int round = 0; round < 20 && idle.thread != std::this_thread::get_id(); ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Its callback records the thread that issued it, before the signal the wait sees.
    ASSERT_OK(submit(queue(0), {}, {*cbIdle}, {{*done, ++value}}));
    ASSERT_OK(done->wait(value, kLongNs));
  }
  EXPECT_EQ(idle.thread, std::this_thread::get_id())
      << "not issued inside submit once the queue's work completed (20 rounds)";
}

// A submission of graph command buffers only is issued inside submit also behind work that has
// not completed (StreamQueue::light: its driver calls are a launch and an event record, the
// hand-off would double the process's CPU), where a replayed one goes to the issuing thread (the
// test above). While the GPU is held the queue is not idle, so a direct issue can only be this.
TEST_P(StreamBusyTest, AGraphSubmissionBehindUnfinishedWorkIsIssuedInsideSubmit) {
  if (!(props_.capabilities & baton::kCapabilityGraphCommandBuffers))
    GTEST_SKIP() << "the driver has no graphs (kCapabilityGraphCommandBuffers)";
  baton::stream::setIssueMode(baton::stream::IssueMode::WhenIdle);
  struct Reset {
    ~Reset() { baton::stream::resetIssueMode(); }
  } reset;
  if (!holdGpu()) GTEST_SKIP() << skip_;
  auto work = makeBuffer(*device_, 256, baton::MemoryKind::Device);
  baton::CommandBufferCreateInfo graph;
  graph.usage = baton::CommandBufferUsage::Graph;
  auto cb = makeCommands(
      *device_, [&](baton::CommandBuffer c) { EXPECT_OK(c.fillBuffer(*work, 0, 256, 7u)); }, graph);
  auto done = makeSemaphore("done");
  ASSERT_OK(submit(queue(0), {}, {}, {{*done, 1}}));  // behind the held GPU: the issuing thread's
  const baton::stream::Stats before = baton::stream::stats();
  // The issuing thread may still hold the queue (the submission above) for a moment: a submit
  // that finds it so is handed on. Up to 20 rounds: one must be issued inside submit.
  uint64_t value = 1;
  for (int round = 0; round < 20 && baton::stream::stats().directIssued == before.directIssued;
       ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, ++value}}));
  }
  const baton::stream::Stats after = baton::stream::stats();
  EXPECT_GE(after.directIssued - before.directIssued, 1u)
      << "no graph submission was issued inside submit in " << value - 1 << " rounds";
  EXPECT_GE(after.graphLaunches - before.graphLaunches, 1u);
  uint64_t reached = 0;
  ASSERT_OK(done->getValue(&reached));
  EXPECT_EQ(reached, 0u) << "the GPU was not held: the queue may have been idle";
  openGpu();
  ASSERT_OK(done->wait(value, kLongNs)) << sink_.dump();
}

// A queue whose work completed without anyone observing it (its completion thread looks lazily,
// nothing waited) while the device's issuing thread sleeps: a submit does not hand the next
// submission to the sleeping thread (a wake-up, tens of µs) but queries the queue's newest record
// and, finding it complete, issues directly (StreamQueue::startDirect; Stats::directAfterQuery).
// The completion thread's lazy look may still see the work complete first (then the submission
// is direct through the usual check): up to 10 rounds, each holding the GPU for 40 ms so that
// the lazy looks back off to 16 ms, until one is issued after the query.
TEST_P(StreamBusyTest, AQueueThatRanDryUnobservedIsIssuedOnTheSubmittingThread) {
  baton::stream::setIssueMode(baton::stream::IssueMode::WhenIdle);
  struct Reset {
    ~Reset() { baton::stream::resetIssueMode(); }
  } reset;
  auto done = makeSemaphore("done");
  uint64_t value = 0, afterQuery = 0;
  for (int round = 0; round < 10 && afterQuery == 0; ++round) {
    if (!holdGpu()) GTEST_SKIP() << skip_;
    ASSERT_OK(submit(queue(0), {}, {}, {{*done, ++value}}));
    std::this_thread::sleep_for(std::chrono::milliseconds(40));  // the issuing thread sleeps
    openGpu();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the GPU runs dry, unobserved
    ThreadSeen seen;
    auto cb = makeReplayCommands(
        [&](baton::CommandBuffer c) { EXPECT_OK(c.native(recordThread, &seen)); });
    const baton::stream::Stats before = baton::stream::stats();
    ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, ++value}}));
    const baton::stream::Stats after = baton::stream::stats();
    EXPECT_EQ(seen.calls.load(), 1) << "round " << round << ": not issued inside submit";
    EXPECT_EQ(seen.thread, std::this_thread::get_id()) << "round " << round;
    afterQuery = after.directAfterQuery - before.directAfterQuery;
    ASSERT_OK(done->wait(value, kLongNs)) << sink_.dump();
  }
  EXPECT_EQ(afterQuery, 1u) << "in 10 rounds, no submission was issued after the query";
}

// A burst of submissions with no wait and no command buffers (the first of a frame,
// fire-and-forget work) to a queue that runs dry as fast as it is fed, while the issuing thread
// sleeps: each one would find the queue dry and pay the whole issue on the submitting thread.
// Instead, one that comes within kDirectBurstGapNs of the previous such one wakes the issuing
// thread, which takes the rest (Stats::directInBurst), so at most the first two are issued
// directly. Where a submission takes longer than that gap here (a badly overloaded machine), no
// burst can form: skipped, saying so.
TEST_P(StreamBackendTest, ABurstToAQueueThatRunsDryGoesToTheIssuingThread) {
  baton::stream::setIssueMode(baton::stream::IssueMode::WhenIdle);
  struct Reset {
    ~Reset() { baton::stream::resetIssueMode(); }
  } reset;
  auto done = makeSemaphore("done");
  ASSERT_OK(submit(queue(0), {}, {}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs)) << sink_.dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the issuing thread sleeps
  constexpr int kBurst = 64;
  std::vector<std::chrono::steady_clock::time_point> starts;
  const baton::stream::Stats before = baton::stream::stats();
  for (int i = 0; i < kBurst; ++i) {
    starts.push_back(std::chrono::steady_clock::now());
    ASSERT_OK(queue(0).submit(baton::SubmitInfo{}));
  }
  const baton::stream::Stats after = baton::stream::stats();
  ASSERT_OK(submit(queue(0), {}, {}, {{*done, 2}}));
  ASSERT_OK(done->wait(2, kLongNs)) << sink_.dump();
  // The first submission finds the queue known idle (the wait saw it) and goes direct; the
  // second asks the stream, and the third is in a burst when it comes within kDirectBurstGapNs
  // (50 µs) of the second.
  const auto gapNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(starts[2] - starts[1]).count();
  if (gapNs >= 40'000)
    GTEST_SKIP() << "the second submit took " << gapNs << " ns here: too slow for a burst";
  const uint64_t direct = after.directIssued - before.directIssued;
  const uint64_t inBurst = after.directInBurst - before.directInBurst;
  std::printf("burst of %d: %llu issued directly, %llu handed over as a burst\n", kBurst,
              static_cast<unsigned long long>(direct), static_cast<unsigned long long>(inBurst));
  EXPECT_LE(direct, 2u) << "the burst was issued on the submitting thread";
}

// A host wait for a value that a completion thread publishes (here a host call's: no event to
// spin on) polls as long as the publishing device's host waits spin (noteHostPublisherSpin):
// told to spin for the whole wait, the waiting thread stays on the CPU through a 60 ms host call;
// by default it sleeps after 50 µs. Measured as the waiting thread's CPU time.
Result sleep60ms(void* finished) {
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  static_cast<std::atomic<int>*>(finished)->fetch_add(1);
  return Result::Success;
}
double threadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

TEST_P(StreamBackendTest, AHostPublishedValueIsPolledAsLongAsItsDevicesHostWaitsSpin) {
  auto s = makeSemaphore("published by the host");
  std::atomic<int> finished{0};
  auto call =
      makeCommands([&](baton::CommandBuffer cb) { EXPECT_OK(cb.hostCall(sleep60ms, &finished)); });
  auto waitCpuMs = [&](uint64_t value) {
    const double cpu = threadCpuMs();
    EXPECT_OK(s->wait(value, kLongNs)) << sink_.dump();
    return threadCpuMs() - cpu;
  };
  // The fake driver's sync mode runs the call inside submit: then there is no wait to measure.
  const char* sync = "the host call ran inside submit (the fake driver's sync mode): no wait";
  ASSERT_OK(submit(queue(0), {}, {*call}, {{*s, 1}}));
  if (finished.load() >= 1) GTEST_SKIP() << sync;
  const double sleeping = waitCpuMs(1);
  ASSERT_OK(device_->setHostWaitSpin(baton::kHostWaitSpinForever));
  ASSERT_OK(submit(queue(0), {}, {*call}, {{*s, 2}}));
  if (finished.load() >= 2) {
    EXPECT_OK(device_->setHostWaitSpin(baton::kHostWaitSpinDefaultNs));
    GTEST_SKIP() << sync;
  }
  const double spinning = waitCpuMs(2);
  EXPECT_OK(device_->setHostWaitSpin(baton::kHostWaitSpinDefaultNs));
  std::printf("waiting thread's CPU over a 60 ms host call: %.2f ms by default, %.2f ms spinning\n",
              sleeping, spinning);
  EXPECT_LT(sleeping, 15.0) << "the default host wait did not sleep";
  EXPECT_GT(spinning, 12.0) << "a wait told to spin slept";
}

// Signals behind a submission with host calls are published by the host (the queue's signal
// order) only while such a submission is ahead of them: once it finished, those behind it are
// published as timepoints, and a queue waiting for one is issued with a GPU-side wait before the
// work it waits for has run.
// A host call that holds its stream until `release` is set (at most 10 s).
Result holdUntilReleased(void* user) {
  auto* release = static_cast<std::atomic<bool>*>(user);
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!release->load() && std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  return Result::Success;
}

TEST_P(StreamBusyTest, SignalsBehindFinishedHostCallsArePublishedOnTheGpu) {
  if (!kernelsMissing_.empty())
    GTEST_SKIP() << "needs the gate kernel (" << kernelsMissing_
                 << "); the fake driver's pause would hold the host call too";
  auto s = makeSemaphore("host call"), t = makeSemaphore("behind it"),
       u = makeSemaphore("other queue");
  std::atomic<bool> release{false};
  struct Release {  // however the test ends, the host call returns
    std::atomic<bool>& flag;
    ~Release() { flag = true; }
  } released{release};
  auto call = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.hostCall(holdUntilReleased, &release)); });
  const baton::stream::Stats before = baton::stream::stats();
  ASSERT_OK(submit(queue(0), {}, {*call}, {{*s, 1}}));
  ASSERT_TRUE(holdGpu()) << skip_;                 // the gate kernel, after the host call
  ASSERT_OK(submit(queue(0), {}, {}, {{*t, 1}}));  // released while the host call is ahead
  ThreadSeen issued;
  auto mark = makeReplayCommands(
      [&](baton::CommandBuffer cb) { EXPECT_OK(cb.native(recordThread, &issued)); });
  ASSERT_OK(submit(queue(1), {{*t, 1}}, {*mark}, {{*u, 1}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(issued.calls.load(), 0) << "queue 1 was issued before t's signal was published";
  release = true;
  ASSERT_OK(s->wait(1, kLongNs)) << sink_.dump();  // the host call ran, its signal is out
  const auto give = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (issued.calls.load() == 0 && std::chrono::steady_clock::now() < give)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(issued.calls.load(), 1) << "queue 1 still waits for the host to publish t";
  EXPECT_GE(baton::stream::stats().republished - before.republished, 1u);
  uint64_t v = 1;
  ASSERT_OK(u->getValue(&v));
  EXPECT_EQ(v, 0u) << "queue 1 ran before queue 0 reached t";
  openGpu();
  ASSERT_OK(u->wait(1, kLongNs)) << sink_.dump();
  ASSERT_OK(t->getValue(&v));
  EXPECT_EQ(v, 1u);
}

BATON_INSTANTIATE_FOR_STREAM_BACKENDS(StreamBackendTest);
BATON_INSTANTIATE_FOR_STREAM_BACKENDS(StreamBusyTest);

}  // namespace
}  // namespace baton_test
