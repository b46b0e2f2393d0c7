// Graph command buffers (CommandBufferUsage::Graph) on the GPU stream backends, written once for
// CUDA and HIP: what end() builds (segments, captured native callbacks), what each submission
// launches, re-recording (update in place or a new instantiation, counted in stream::Stats),
// host-node failure, capture errors, driver errors at launch and bad input. On the fake driver in
// CI (graphs, capture and update emulated: tests/cuda/fake/fake_cuda.hpp, G1-G6) and on the GPU;
// the tests that need kernels skip without them.
#include <cstring>
#include <thread>

#include "stream_backend.hpp"
#include "stream_test_support.hpp"

namespace baton_test {
namespace {

using baton::CommandBuffer;
using baton::MemoryKind;
using baton::Result;

constexpr uint64_t kBytes = 4096;
constexpr uint32_t kWords = kBytes / 4;

class GraphCommandBufferTest : public StreamBackendTest {
 protected:
  static baton::CommandBufferCreateInfo graphInfo() {
    baton::CommandBufferCreateInfo info;
    info.usage = baton::CommandBufferUsage::Graph;
    info.debugName = "graph";
    return info;
  }
  template <class Record>
  baton::UniqueCommandBuffer makeGraph(Record&& record) {
    return makeCommands(*device_, std::forward<Record>(record), graphInfo());
  }
  baton::UniqueBuffer pinned(uint64_t size = kBytes) {
    return makeBuffer(*device_, size, MemoryKind::HostPinned);
  }
  baton::UniqueBuffer deviceBuffer(uint64_t size = kBytes) {
    return makeBuffer(*device_, size, MemoryKind::Device);
  }
  static baton::stream::Stats stats() { return baton::stream::stats(); }
  static std::string reasonOf(baton::Semaphore s) {
    char buffer[1024] = {};
    EXPECT_OK(s.getFailureReason(buffer, sizeof buffer));
    return buffer;
  }
  static uint64_t address(baton::Buffer b) {
    uint64_t a = 0;
    EXPECT_OK(b.getDeviceAddress(&a));
    return a;
  }
};

struct Counter {
  std::atomic<int> runs{0};
  static Result run(void* user) {
    static_cast<Counter*>(user)->runs.fetch_add(1);
    return Result::Success;
  }
};

// Copies, fills and updates run as graph nodes and the host call as a host node, on every
// submission: one instantiation at end(), one launch per submission (one segment: the host call
// is last).
TEST_P(GraphCommandBufferTest, CommandsRunInOrderOnEverySubmission) {
  auto work = deviceBuffer();
  auto out = pinned();
  uint32_t* words = map<uint32_t>(*out);
  const uint32_t update[4] = {0xA0, 0xA1, 0xA2, 0xA3};
  Counter host;
  const baton::stream::Stats before = stats();
  auto cb = makeGraph([&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*work, 0, kBytes, 0x11111111u));
    EXPECT_OK(c.updateBuffer(*work, 16, sizeof(update), update));
    EXPECT_OK(c.copyBuffer(*work, 0, *out, 0, kBytes));
    EXPECT_OK(c.hostCall(&Counter::run, &host));
  });
  const baton::stream::Stats built = stats();
  EXPECT_EQ(built.graphInstantiations - before.graphInstantiations, 1u);
  auto done = makeSemaphore("done");
  for (uint64_t round = 1; round <= 3; ++round) {
    std::memset(words, 0, kBytes);
    ASSERT_OK(submit(queue(round % 2), {}, {*cb}, {{*done, round}}));
    ASSERT_OK(done->wait(round, kLongNs)) << lastError();
    EXPECT_EQ(host.runs.load(), static_cast<int>(round));
    for (uint32_t i = 0; i < kWords; ++i) {
      const uint32_t want = i >= 4 && i < 8 ? update[i - 4] : 0x11111111u;
      ASSERT_EQ(words[i], want) << "word " << i << ", round " << round;
    }
  }
  const baton::stream::Stats after = stats();
  EXPECT_EQ(after.graphLaunches - built.graphLaunches, 3u);
  EXPECT_EQ(after.graphInstantiations, built.graphInstantiations);
}

struct Probe {
  const uint32_t* word = nullptr;
  std::atomic<uint32_t> seen{0};
  std::atomic<bool> fail{false};
  static Result run(void* user) {
    auto* p = static_cast<Probe*>(user);
    p->seen = __atomic_load_n(p->word, __ATOMIC_SEQ_CST);
    return p->fail ? Result::ErrorNotSupported : Result::Success;
  }
};

// A host call followed by other work ends a graph: the rest is a second graph, launched once the
// host call's result is known, and not launched at all when it failed (the replayed submission's
// semantics: commands after a failed host call do not run).
TEST_P(GraphCommandBufferTest, AHostCallFailureStopsTheGraphAfterIt) {
  auto out = pinned();
  uint32_t* words = map<uint32_t>(*out);
  Probe probe;
  probe.word = words;
  const baton::stream::Stats before = stats();
  auto cb = makeGraph([&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*out, 0, kBytes, 0xAAAAAAAAu));
    EXPECT_OK(c.hostCall(&Probe::run, &probe));
    EXPECT_OK(c.fillBuffer(*out, 0, kBytes, 0xBBBBBBBBu));
  });
  EXPECT_EQ(stats().graphInstantiations - before.graphInstantiations, 2u);
  auto done = makeSemaphore("done");
  std::memset(words, 0, kBytes);
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs)) << lastError();
  EXPECT_EQ(probe.seen.load(), 0xAAAAAAAAu);  // the first graph ran before the host call
  EXPECT_EQ(words[kWords - 1], 0xBBBBBBBBu);  // the second after it

  probe.fail = true;
  std::memset(words, 0, kBytes);
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 2}}));
  EXPECT_EQ(done->wait(2, kLongNs), Result::ErrorSemaphoreFailed);
  const std::string reason = reasonOf(*done);
  EXPECT_TRUE(containsText(reason, "a hostCall on")) << reason;
  EXPECT_TRUE(containsText(reason, "returned ErrorNotSupported")) << reason;
  EXPECT_EQ(words[0], 0xAAAAAAAAu);           // the graph before the host call ran
  EXPECT_EQ(words[kWords - 1], 0xAAAAAAAAu);  // the one after it did not

  // The queue goes on: the next submission runs the whole recording again.
  probe.fail = false;
  auto next = makeSemaphore("next");
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*next, 1}}));
  ASSERT_OK(next->wait(1, kLongNs)) << lastError();
  EXPECT_EQ(words[kWords - 1], 0xBBBBBBBBu);
}

// The same across command lists: a graph that ends with a failing host call stops the next command
// buffer of the same submission (a replayed submission is suspended there too).
TEST_P(GraphCommandBufferTest, AHostCallFailureStopsTheNextCommandBuffer) {
  auto out = pinned();
  uint32_t* words = map<uint32_t>(*out);
  Probe probe;
  probe.word = words;
  probe.fail = true;
  auto first = makeGraph([&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*out, 0, kBytes, 0xAAAAAAAAu));
    EXPECT_OK(c.hostCall(&Probe::run, &probe));
  });
  auto second =
      makeGraph([&](CommandBuffer c) { EXPECT_OK(c.fillBuffer(*out, 0, kBytes, 0xBBBBBBBBu)); });
  auto done = makeSemaphore("done");
  std::memset(words, 0, kBytes);
  ASSERT_OK(submit(queue(0), {}, {*first, *second}, {{*done, 1}}));
  EXPECT_EQ(done->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(probe.seen.load(), 0xAAAAAAAAu);
  EXPECT_EQ(words[kWords - 1], 0xAAAAAAAAu);  // the second command buffer did not run

  probe.fail = false;
  auto next = makeSemaphore("next");
  ASSERT_OK(submit(queue(0), {}, {*first, *second}, {{*next, 1}}));
  ASSERT_OK(next->wait(1, kLongNs)) << lastError();
  EXPECT_EQ(words[kWords - 1], 0xBBBBBBBBu);
}

// An infallible host call stays inside the graph (one graph for the whole recording), and the
// work after it runs whatever it returns.
TEST_P(GraphCommandBufferTest, AnInfallibleHostCallStaysInsideTheGraph) {
  auto out = pinned();
  uint32_t* words = map<uint32_t>(*out);
  Probe probe;
  probe.word = words;
  probe.fail = true;
  const baton::stream::Stats before = stats();
  auto cb = makeGraph([&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*out, 0, kBytes, 0xAAAAAAAAu));
    EXPECT_OK(c.hostCall(&Probe::run, &probe, baton::kHostCallInfallible));
    EXPECT_OK(c.fillBuffer(*out, 0, kBytes, 0xBBBBBBBBu));
  });
  EXPECT_EQ(stats().graphInstantiations - before.graphInstantiations, 1u);
  auto done = makeSemaphore("done");
  for (uint64_t v = 1; v <= 2; ++v) {
    std::memset(words, 0, kBytes);
    ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, v}}));
    ASSERT_OK(done->wait(v, kLongNs)) << lastError();
    EXPECT_EQ(probe.seen.load(), 0xAAAAAAAAu);
    EXPECT_EQ(words[kWords - 1], 0xBBBBBBBBu);
  }
  EXPECT_EQ(stats().graphLaunches - before.graphLaunches, 2u);
}

// Re-recording: an executable graph that no submission uses any more is updated in place when the
// new recording has the same shape; one a pending submission still uses is not touched (the
// submission keeps its recording), and another shape is instantiated anew.
TEST_P(GraphCommandBufferTest, ReRecordingUpdatesInPlaceAndPendingSubmissionsKeepTheirs) {
  auto out = pinned();
  uint32_t* words = map<uint32_t>(*out);
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(device_->createCommandBuffer(graphInfo(), cb.put()));
  auto record = [&](uint32_t value, int fills) {
    ASSERT_OK(cb->begin());
    for (int i = 0; i < fills; ++i) ASSERT_OK(cb->fillBuffer(*out, 0, kBytes, value + i));
    ASSERT_OK(cb->end());
  };
  auto done = makeSemaphore("done");
  uint64_t value = 0;
  auto run = [&](uint32_t expect) {
    std::memset(words, 0, kBytes);
    ++value;
    ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, value}}));
    ASSERT_OK(done->wait(value, kLongNs)) << lastError();
    EXPECT_EQ(words[0], expect);
    // Once the queue is idle its completed submissions have let their recordings go, and with
    // them the executable graphs, which the next recording may update.
    ASSERT_OK(queue(0).waitIdle(kLongNs));
  };

  baton::stream::Stats s0 = stats();
  record(1, 1);
  run(1);
  baton::stream::Stats s1 = stats();
  EXPECT_EQ(s1.graphInstantiations - s0.graphInstantiations, 1u);

  record(2, 1);  // same shape, nothing pending: updated in place
  baton::stream::Stats s2 = stats();
  EXPECT_EQ(s2.graphUpdates - s1.graphUpdates, 1u);
  EXPECT_EQ(s2.graphInstantiations, s1.graphInstantiations);
  run(2);

  // Held on a host semaphore: its recording (fill 2) stays in use while the buffer is re-recorded.
  auto gate = makeSemaphore("gate"), held = makeSemaphore("held");
  std::memset(words, 0, kBytes);
  ASSERT_OK(submit(queue(1), {{*gate, 1}}, {*cb}, {{*held, 1}}));
  record(3, 1);
  baton::stream::Stats s3 = stats();
  EXPECT_EQ(s3.graphUpdates, s2.graphUpdates);  // the idle graph was in use: none to update
  EXPECT_EQ(s3.graphInstantiations - s2.graphInstantiations, 1u);
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(held->wait(1, kLongNs)) << lastError();
  EXPECT_EQ(words[0], 2u);  // the held submission ran the recording it was given
  run(3);

  record(4, 2);  // another shape: instantiated
  baton::stream::Stats s4 = stats();
  EXPECT_EQ(s4.graphInstantiations - s3.graphInstantiations, 1u);
  run(5);  // the second fill (4 + 1) wins
}

struct Captured {
  Captured(const StreamHooks& h, uint64_t dstAddress, uint64_t srcAddress, uint64_t bytes)
      : hooks(&h), dst(dstAddress), src(srcAddress), size(bytes) {}
  const StreamHooks* hooks = nullptr;
  uint64_t dst = 0, src = 0, size = 0;
  std::atomic<int> calls{0};
  std::atomic<uint32_t> queueIndex{0};
  bool synchronize = false;  // makes a call that capture does not allow
  Result result = Result::Success;
  static Result run(const baton::NativeQueue& q, void* user) {
    auto* c = static_cast<Captured*>(user);
    c->calls.fetch_add(1);
    c->queueIndex = q.queueIndex;
    if (c->hooks->copyAsync(c->dst, c->src, c->size, q.stream) != 0) return Result::ErrorDriver;
    if (c->synchronize) (void)c->hooks->synchronize(q.stream);
    return c->result;
  }
};

// A capturable native callback runs once, inside end(), on a capture stream; what it enqueued is
// replayed by every submission.
TEST_P(GraphCommandBufferTest, ACapturableCallbackIsCapturedOnceAndReplayed) {
  auto work = deviceBuffer();
  auto out = pinned();
  uint32_t* words = map<uint32_t>(*out);
  Captured copy(hooks(), address(*out), address(*work), kBytes);
  auto cb = makeGraph([&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*work, 0, kBytes, 0x5A5A5A5Au));
    EXPECT_OK(c.native(&Captured::run, &copy, baton::kNativeCapturable));
  });
  EXPECT_EQ(copy.calls.load(), 1);
  EXPECT_EQ(copy.queueIndex.load(), baton::kCaptureQueueIndex);
  auto done = makeSemaphore("done");
  for (uint64_t round = 1; round <= 3; ++round) {
    std::memset(words, 0, kBytes);
    ASSERT_OK(submit(queue(round), {}, {*cb}, {{*done, round}}));
    ASSERT_OK(done->wait(round, kLongNs)) << lastError();
    EXPECT_EQ(words[0], 0x5A5A5A5Au);
    EXPECT_EQ(words[kWords - 1], 0x5A5A5A5Au);
  }
  EXPECT_EQ(copy.calls.load(), 1);  // never called at submission
}

// A kernel launched by a capturable callback runs on every launch of the graph: the gate kernel
// holds the queue until it is opened, each time.
TEST_P(GraphCommandBufferTest, ACapturedKernelRunsOnEverySubmission) {
  BATON_REQUIRE_KERNELS();
  Gate gate(*device_, kernels_);
  auto cb = makeGraph([&](CommandBuffer c) { gate.record(c); });
  auto done = makeSemaphore("done");
  for (uint64_t round = 1; round <= 2; ++round) {
    gate.close();
    ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, round}}));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    uint64_t v = 0;
    ASSERT_OK(done->getValue(&v));
    EXPECT_EQ(v, round - 1) << "the captured gate kernel did not hold the queue";
    gate.open();
    ASSERT_OK(done->wait(round, kLongNs)) << lastError();
  }
}

Result nativeNoop(const baton::NativeQueue&, void*) { return Result::Success; }

// A graph command buffer refuses native callbacks that are not capturable, and unknown flags.
TEST_P(GraphCommandBufferTest, UncapturableCallbacksAreRefused) {
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(device_->createCommandBuffer(graphInfo(), cb.put()));
  ASSERT_OK(cb->begin());
  EXPECT_EQ(cb->native(&nativeNoop, nullptr), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "kNativeCapturable")) << lastError();
  EXPECT_TRUE(containsText(lastError(), "'graph'")) << lastError();
  EXPECT_EQ(cb->native(&nativeNoop, nullptr, 0x2), Result::ErrorInvalidArgument);
  EXPECT_OK(cb->native(&nativeNoop, nullptr, baton::kNativeCapturable));
  EXPECT_OK(cb->end());
  // The same flags on a replayed command buffer: accepted, nothing refused.
  auto replay = makeReplayCommands([&](CommandBuffer c) {
    EXPECT_OK(c.native(&nativeNoop, nullptr, baton::kNativeCapturable));
  });
  auto done = makeSemaphore("done");
  ASSERT_OK(submit(queue(0), {}, {*cb, *replay}, {{*done, 1}}));
  EXPECT_OK(done->wait(1, kLongNs)) << lastError();
}

// What capture refuses, or a callback's error, fails end(): nothing is ended, and the command
// buffer records again afterwards.
TEST_P(GraphCommandBufferTest, ACaptureThatFailsFailsEnd) {
  auto work = deviceBuffer();
  auto out = pinned();
  Captured bad(hooks(), address(*out), address(*work), 64);
  bad.synchronize = true;
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(device_->createCommandBuffer(graphInfo(), cb.put()));
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->native(&Captured::run, &bad, baton::kNativeCapturable));
  Result r = cb->end();
  EXPECT_NE(r, Result::Success);
  EXPECT_TRUE(containsText(lastError(), "capturing the native callback of command 0"))
      << baton::resultName(r) << ": " << lastError();
  auto done = makeSemaphore("done");
  EXPECT_EQ(submit(queue(0), {}, {*cb}, {{*done, 1}}), Result::ErrorInvalidState);
  EXPECT_EQ(cb->end(), Result::ErrorInvalidState);  // the recording was discarded

  bad.synchronize = false;
  bad.result = Result::ErrorNotSupported;
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->native(&Captured::run, &bad, baton::kNativeCapturable));
  EXPECT_EQ(cb->end(), Result::ErrorHostCallFailed);
  EXPECT_TRUE(containsText(lastError(), "ErrorNotSupported")) << lastError();

  bad.result = Result::Success;
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->native(&Captured::run, &bad, baton::kNativeCapturable));
  ASSERT_OK(cb->end());
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  EXPECT_OK(done->wait(1, kLongNs)) << lastError();
}

// A capture whose end fails (an injected error) fails end() with the driver's words, and leaves
// the device's capture stream usable: the next recording captures again (found by the fault
// sweep: a failed end left the stream capturing, and every later capture of the device failed).
TEST_P(GraphCommandBufferTest, AFailedEndOfACaptureLeavesCapturesWorking) {
  auto work = deviceBuffer();
  auto out = pinned();
  Captured copy(hooks(), address(*out), address(*work), 64);
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(device_->createCommandBuffer(graphInfo(), cb.put()));
  hooks().clearFaults();
  ASSERT_TRUE(hooks().injectFault(hooks().endCaptureApi, Fault::InvalidValue));
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->native(&Captured::run, &copy, baton::kNativeCapturable));
  EXPECT_EQ(cb->end(), Result::ErrorDriver);
  EXPECT_EQ(hooks().faultsFired(), 1u);
  hooks().clearFaults();
  EXPECT_TRUE(containsText(lastError(), hooks().endCaptureApi)) << lastError();
  EXPECT_TRUE(containsText(lastError(), hooks().invalidValueName)) << lastError();
  for (int round = 1; round <= 2; ++round) {
    ASSERT_OK(cb->begin());
    ASSERT_OK(cb->fillBuffer(*work, 0, 64, 0x42u + round));
    ASSERT_OK(cb->native(&Captured::run, &copy, baton::kNativeCapturable));
    ASSERT_OK(cb->end()) << "round " << round << ": " << lastError();
    auto done = makeSemaphore("done");
    ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
    ASSERT_OK(done->wait(1, kLongNs)) << lastError();
    EXPECT_EQ(map<uint32_t>(*out)[0], 0x42u + round);
  }
}

// A driver error at launch fails that submission's signals with the driver's words; the queue and
// the graph go on.
TEST_P(GraphCommandBufferTest, ALaunchErrorFailsTheSignals) {
  auto out = pinned();
  auto cb = makeGraph([&](CommandBuffer c) { EXPECT_OK(c.fillBuffer(*out, 0, kBytes, 7u)); });
  auto failed = makeSemaphore("failed"), next = makeSemaphore("next");
  hooks().clearFaults();
  ASSERT_TRUE(hooks().injectFault(hooks().graphLaunchApi, Fault::InvalidValue));
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*failed, 1}}));
  EXPECT_EQ(failed->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(hooks().faultsFired(), 1u);
  hooks().clearFaults();
  const std::string reason = reasonOf(*failed);
  EXPECT_TRUE(containsText(reason, hooks().graphLaunchApi)) << reason;
  EXPECT_TRUE(containsText(reason, hooks().invalidValueName)) << reason;
  std::memset(map<uint32_t>(*out), 0, kBytes);
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*next, 1}}));
  ASSERT_OK(next->wait(1, kLongNs)) << lastError();
  EXPECT_EQ(map<uint32_t>(*out)[0], 7u);
}

// Submissions of one graph command buffer from several threads to several queues: every launch
// runs its own submission's host calls (the host nodes' FIFOs), none is lost or run twice.
TEST_P(GraphCommandBufferTest, ConcurrentSubmissionsOfOneGraphRunEachHostCallOnce) {
  auto out = pinned();
  Counter host;
  auto cb = makeGraph([&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*out, 0, 64, 1u));
    EXPECT_OK(c.hostCall(&Counter::run, &host));
    EXPECT_OK(c.hostCall(&Counter::run, &host));
  });
  constexpr int kThreads = 4, kEach = 50;
  std::vector<baton::UniqueSemaphore> sems;
  for (int t = 0; t < kThreads; ++t) sems.push_back(makeSemaphore("per-thread"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = 1; i <= kEach; ++i) EXPECT_OK(submit(queue(t), {}, {*cb}, {{*sems[t], i}}));
    });
  for (std::thread& t : threads) t.join();
  for (auto& s : sems) EXPECT_OK(s->wait(kEach, kLongNs)) << lastError();
  EXPECT_EQ(host.runs.load(), 2 * kThreads * kEach);
}

// Buffers must have memory at end(): a graph holds device addresses.
TEST_P(GraphCommandBufferTest, ABufferWithoutMemoryAtEndIsRefused) {
  if (!(props_.capabilities & baton::kCapabilityStreamOrderedAlloc))
    GTEST_SKIP() << "no queue-ordered allocation on this device";
  auto out = pinned();
  baton::BufferCreateInfo info;
  info.size = kBytes;
  info.memory = MemoryKind::Device;
  baton::Buffer later;
  auto allocated = makeSemaphore("allocated"), gate = makeSemaphore("gate");
  ASSERT_OK(queue(0).allocaBuffer({{*gate, 1}}, info, {{*allocated, 1}}, &later));
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(device_->createCommandBuffer(graphInfo(), cb.put()));
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->copyBuffer(later, 0, *out, 0, kBytes));
  EXPECT_EQ(cb->end(), Result::ErrorInvalidState);
  EXPECT_TRUE(containsText(lastError(), "must have memory at end()")) << lastError();
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(allocated->wait(1, kLongNs)) << lastError();
  ASSERT_OK(cb->begin());  // now it has memory
  ASSERT_OK(cb->copyBuffer(later, 0, *out, 0, kBytes));
  ASSERT_OK(cb->end());
  auto done = makeSemaphore("done"), freed = makeSemaphore("freed");
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs)) << lastError();
  ASSERT_OK(queue(0).deallocaBuffer({{*done, 1}}, later, {{*freed, 1}}));
  ASSERT_OK(freed->wait(1, kLongNs)) << lastError();
}

// Bad input at creation: an unknown usage.
TEST_P(GraphCommandBufferTest, AnUnknownUsageIsRefused) {
  baton::CommandBufferCreateInfo info;
  info.usage = static_cast<baton::CommandBufferUsage>(7);
  baton::CommandBuffer cb;
  EXPECT_EQ(device_->createCommandBuffer(info, &cb), Result::ErrorInvalidArgument);
  EXPECT_FALSE(cb);
  EXPECT_TRUE(props_.capabilities & baton::kCapabilityGraphCommandBuffers)
      << "the stream backends advertise graph command buffers where the driver has graphs";
}

// A driver without the graph entry points (hidden here with BATON_DRIVER_HIDE_SYMBOLS, in the
// -no-graphs registrations): the capability is clear, graph usage is refused with the reason, and
// replayed command buffers run as before.
TEST_P(GraphCommandBufferTest, WithoutGraphsTheUsageIsRefused) {
  if (props_.capabilities & baton::kCapabilityGraphCommandBuffers)
    GTEST_SKIP() << "the driver has graphs (the -no-graphs registrations hide them with "
                    "BATON_DRIVER_HIDE_SYMBOLS)";
  baton::CommandBuffer cb;
  EXPECT_EQ(device_->createCommandBuffer(graphInfo(), &cb), Result::ErrorNotSupported);
  EXPECT_FALSE(cb);
  EXPECT_TRUE(containsText(lastError(), "kCapabilityGraphCommandBuffers")) << lastError();
  auto out = pinned();
  auto replay =
      makeReplayCommands([&](CommandBuffer c) { EXPECT_OK(c.fillBuffer(*out, 0, kBytes, 3u)); });
  auto done = makeSemaphore("done");
  ASSERT_OK(submit(queue(0), {}, {*replay}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs)) << lastError();
  EXPECT_EQ(map<uint32_t>(*out)[0], 3u);
}

BATON_INSTANTIATE_FOR_STREAM_BACKENDS(GraphCommandBufferTest);

}  // namespace
}  // namespace baton_test
