// Conformance: recorded commands (copy, fill, update, hostCall, native), their results in mapped
// memory and their order within a queue.
#include <atomic>
#include <cstring>
#include <deque>
#include <numeric>
#include <vector>

#include "backend_fixture.hpp"

namespace baton_test {
namespace {

using baton::CommandBuffer;
using baton::MemoryKind;
using baton::Result;
using baton::SemaphoreValue;

class CommandTest : public BackendTest {};

TEST_P(CommandTest, UpdateFillAndCopyResultsInMappedMemory) {
  constexpr uint64_t kSize = 1024;
  auto a = makeBuffer(kSize);
  auto b = makeBuffer(kSize);
  auto done = makeSemaphore();
  std::memset(map(*a), 0, kSize);
  std::memset(map(*b), 0, kSize);
  std::vector<uint8_t> pattern(256);
  std::iota(pattern.begin(), pattern.end(), uint8_t{0});
  auto cb = makeCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.updateBuffer(*a, 100, pattern.size(), pattern.data()));
    EXPECT_OK(c.fillBuffer(*b, 0, 64, 0xA5A5A5A5u));
    EXPECT_OK(c.copyBuffer(*a, 100, *b, 512, 256));
    EXPECT_OK(c.fillBuffer(*b, kSize - 8, 8, 0x01020304u));
  });
  // update copies its data at record time: changing the source afterwards has no effect.
  std::fill(pattern.begin(), pattern.end(), uint8_t{0xEE});
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs));

  const uint8_t* pa = map(*a);
  const uint8_t* pb = map(*b);
  for (uint64_t i = 0; i < kSize; ++i) {
    const uint8_t want = (i >= 100 && i < 356) ? static_cast<uint8_t>(i - 100) : 0;
    ASSERT_EQ(pa[i], want) << "a[" << i << "]";
  }
  const uint32_t* words = map<uint32_t>(*b);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(words[i], 0xA5A5A5A5u) << "b word " << i;
  for (uint64_t i = 64; i < 512; ++i) ASSERT_EQ(pb[i], 0) << "b[" << i << "]";
  for (uint64_t i = 512; i < 768; ++i) ASSERT_EQ(pb[i], static_cast<uint8_t>(i - 512));
  EXPECT_EQ(words[kSize / 4 - 2], 0x01020304u);
  EXPECT_EQ(words[kSize / 4 - 1], 0x01020304u);
}

struct GraphNative {
  std::atomic<int> calls{0};
  static baton::Result run(const baton::NativeQueue&, void* user) {
    static_cast<GraphNative*>(user)->calls++;
    return baton::Result::Success;
  }
};

// Every backend accepts graph command buffers: the GPU backends build graphs at end() and call a
// capturable native callback there, once; the host backend replays them, calling it at each
// submission. The results are the same.
TEST_P(CommandTest, GraphCommandBuffersRunOnEveryBackend) {
  constexpr uint64_t kSize = 1024;
  auto a = makeBuffer(kSize);
  auto b = makeBuffer(kSize);
  GraphNative native;
  std::atomic<int> hostCalls{0};
  baton::CommandBufferCreateInfo info;
  info.usage = baton::CommandBufferUsage::Graph;
  auto cb = makeCommandBuffer(info, [&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*a, 0, kSize, 0x01020304u));
    EXPECT_OK(c.native(&GraphNative::run, &native, baton::kNativeCapturable));
    EXPECT_OK(c.copyBuffer(*a, 0, *b, 0, kSize));
    EXPECT_OK(c.hostCall(
        [](void* p) {
          static_cast<std::atomic<int>*>(p)->fetch_add(1);
          return Result::Success;
        },
        &hostCalls));
  });
  const int atEnd = native.calls.load();
  EXPECT_EQ(atEnd, hostBackend() ? 0 : 1);
  auto done = makeSemaphore();
  for (uint64_t v = 1; v <= 2; ++v) {
    std::memset(map<uint32_t>(*b), 0, kSize);
    ASSERT_OK(submit(queue(v), {}, {*cb}, {{*done, v}}));
    ASSERT_OK(done->wait(v, kLongNs));
    EXPECT_EQ(map<uint32_t>(*b)[kSize / 4 - 1], 0x01020304u);
    EXPECT_EQ(hostCalls.load(), static_cast<int>(v));
  }
  EXPECT_EQ(native.calls.load(), hostBackend() ? 2 : 1);
}

// kHostCallInfallible: the call's error is reported as a warning, the commands after it run and
// the signals are reached (on every backend, replayed or recorded as a graph).
TEST_P(CommandTest, AnInfallibleHostCallsErrorDoesNotFailTheSubmission) {
  constexpr uint64_t kSize = 256;
  auto out = makeBuffer(kSize);
  std::memset(map(*out), 0, kSize);
  auto cb = makeCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.hostCall([](void*) { return Result::ErrorNotSupported; }, nullptr,
                         baton::kHostCallInfallible));
    EXPECT_OK(c.fillBuffer(*out, 0, kSize, 0x5EEDu));
  });
  auto done = makeSemaphore();
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  EXPECT_OK(done->wait(1, kLongNs));
  EXPECT_EQ(map<uint32_t>(*out)[kSize / 4 - 1], 0x5EEDu);
  EXPECT_TRUE(sink_.has(baton::MessageSeverity::Warning, "infallible hostCall")) << sink_.dump();
  EXPECT_TRUE(sink_.has(baton::MessageSeverity::Warning, "ErrorNotSupported")) << sink_.dump();
  baton::UniqueCommandBuffer bad;
  ASSERT_OK(device().createCommandBuffer(bad.put()));
  ASSERT_OK(bad->begin());
  EXPECT_EQ(bad->hostCall([](void*) { return Result::Success; }, nullptr, 0x4),
            Result::ErrorInvalidArgument);
}

TEST_P(CommandTest, CopyFromDeviceMemoryToHostPinned) {
  if (!(props_.capabilities & baton::kCapabilityDeviceMemory))
    GTEST_SKIP() << "no device memory on this device";
  constexpr uint64_t kSize = 4096;
  auto deviceBuffer = makeBuffer(kSize, MemoryKind::Device);
  auto readback = makeBuffer(kSize);
  auto done = makeSemaphore();
  std::vector<uint32_t> data(kSize / 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint32_t>(i * 2654435761u);
  auto cb = makeCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*deviceBuffer, 0, kSize, 0));
    EXPECT_OK(c.updateBuffer(*deviceBuffer, 0, kSize, data.data()));
    EXPECT_OK(c.copyBuffer(*deviceBuffer, 0, *readback, 0, kSize));
  });
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs));
  EXPECT_EQ(std::memcmp(map(*readback), data.data(), kSize), 0);
}

TEST_P(CommandTest, CopyWithinOneBuffer) {
  auto buf = makeBuffer(256);
  auto done = makeSemaphore();
  uint8_t* p = map(*buf);
  for (int i = 0; i < 256; ++i) p[i] = static_cast<uint8_t>(i);
  // Adjacent, non-overlapping ranges of one buffer are allowed.
  auto cb =
      makeCommandBuffer([&](CommandBuffer c) { EXPECT_OK(c.copyBuffer(*buf, 0, *buf, 128, 128)); });
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs));
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(p[i], i);
    EXPECT_EQ(p[128 + i], i);
  }
}

TEST_P(CommandTest, CommandsRunOnlyAfterTheirWaits) {
  auto buf = makeBuffer(64);
  auto gate = makeSemaphore();
  auto done = makeSemaphore();
  std::memset(map(*buf), 0, 64);
  auto cb = makeCommandBuffer(
      [&](CommandBuffer c) { EXPECT_OK(c.fillBuffer(*buf, 0, 64, 0x11111111u)); });
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {*cb}, {{*done, 1}}));
  EXPECT_EQ(done->wait(1, kShortNs), Result::Timeout);
  EXPECT_EQ(map<uint32_t>(*buf)[0], 0u) << "the fill ran before its wait was satisfied";
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(done->wait(1, kLongNs));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(map<uint32_t>(*buf)[i], 0x11111111u);
}

TEST_P(CommandTest, DataFlowsAcrossQueuesThroughASemaphore) {
  // Producer on queue 0 writes, consumer on queue 1 copies what it wrote; the consumer is
  // submitted first, so only the semaphore orders the two.
  constexpr uint64_t kSize = 512;
  auto src = makeBuffer(kSize);
  auto dst = makeBuffer(kSize);
  auto produced = makeSemaphore();
  auto consumed = makeSemaphore();
  std::memset(map(*dst), 0, kSize);
  auto producer = makeCommandBuffer(
      [&](CommandBuffer c) { EXPECT_OK(c.fillBuffer(*src, 0, kSize, 0xC0FFEE00u)); });
  auto consumer =
      makeCommandBuffer([&](CommandBuffer c) { EXPECT_OK(c.copyBuffer(*src, 0, *dst, 0, kSize)); });
  ASSERT_OK(submit(queue(1), {{*produced, 1}}, {*consumer}, {{*consumed, 1}}));
  ASSERT_OK(submit(queue(0), {}, {*producer}, {{*produced, 1}}));
  ASSERT_OK(consumed->wait(1, kLongNs));
  for (uint64_t i = 0; i < kSize / 4; ++i) ASSERT_EQ(map<uint32_t>(*dst)[i], 0xC0FFEE00u) << i;
}

TEST_P(CommandTest, HostCallsRunInQueueOrder) {
  EventLog log;
  auto done = makeSemaphore();
  std::deque<LogEntry> entries;
  for (int i = 0; i < 12; ++i) entries.push_back({&log, i});
  // Three command buffers of four host calls each, submitted as 3 batches of one and one batch
  // of all three; the log must read 0..11 then 0..11 again.
  std::vector<baton::UniqueCommandBuffer> owned;
  for (int c = 0; c < 3; ++c)
    owned.push_back(makeCommandBuffer([&](CommandBuffer cb) {
      for (int i = 0; i < 4; ++i) EXPECT_OK(cb.hostCall(appendToLog, &entries[c * 4 + i]));
    }));
  for (int c = 0; c < 3; ++c) ASSERT_OK(submit(queue(0), {}, {*owned[c]}, {}));
  ASSERT_OK(submit(queue(0), {}, {*owned[0], *owned[1], *owned[2]}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs));
  std::vector<int> expected;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 12; ++i) expected.push_back(i);
  EXPECT_EQ(log.events(), expected);
}

TEST_P(CommandTest, HostCallAndNativeOrderWithinAQueue) {
  // Even events come from host calls, odd ones from native callbacks, interleaved across
  // commands and batches.
  EventLog log;
  auto done = makeSemaphore();
  std::deque<LogEntry> entries;
  for (int i = 0; i < 8; ++i) entries.push_back({&log, i});
  auto first = makeReplayCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.hostCall(appendToLog, &entries[0]));
    EXPECT_OK(c.native(appendToLogNative, &entries[1]));
    EXPECT_OK(c.hostCall(appendToLog, &entries[2]));
    EXPECT_OK(c.native(appendToLogNative, &entries[3]));
  });
  auto second = makeReplayCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.native(appendToLogNative, &entries[5]));
    EXPECT_OK(c.hostCall(appendToLog, &entries[4]));
  });
  auto third = makeReplayCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.hostCall(appendToLog, &entries[6]));
    EXPECT_OK(c.native(appendToLogNative, &entries[7]));
  });
  ASSERT_OK(submit(queue(0), {}, {*first}, {}));
  ASSERT_OK(submit(queue(0), {}, {*second, *third}, {{*done, 1}}));
  ASSERT_OK(done->wait(1, kLongNs));
  const std::vector<int> events = log.events();
  if (hostBackend()) {
    // On the host backend a native callback's own work is the work: exact recorded order.
    EXPECT_EQ(events, (std::vector<int>{0, 1, 2, 3, 5, 4, 6, 7}));
  } else {
    // On GPU backends native callbacks run when the batch is issued, host calls when the stream
    // reaches them: each kind is in order, the interleaving is not defined.
    std::vector<int> host, native;
    for (int e : events) (e % 2 == 0 ? host : native).push_back(e);
    EXPECT_EQ(host, (std::vector<int>{0, 2, 4, 6}));
    EXPECT_EQ(native, (std::vector<int>{1, 3, 5, 7}));
  }
}

struct NativeSeen {
  std::atomic<int> calls{0};
  baton::NativeQueue last;
};

TEST_P(CommandTest, NativeCallbackReceivesItsQueue) {
  for (uint32_t i = 0; i < queueCount(); ++i) {
    NativeSeen seen;
    auto done = makeSemaphore();
    auto cb = makeReplayCommandBuffer([&](CommandBuffer c) {
      EXPECT_OK(c.native(
          [](const baton::NativeQueue& q, void* p) {
            auto* s = static_cast<NativeSeen*>(p);
            s->last = q;
            s->calls++;
            return Result::Success;
          },
          &seen));
    });
    ASSERT_OK(submit(queue(i), {}, {*cb}, {{*done, 1}}));
    ASSERT_OK(done->wait(1, kLongNs));
    EXPECT_EQ(seen.calls.load(), 1);
    EXPECT_EQ(seen.last.backend, backend());
    EXPECT_EQ(seen.last.queueIndex, i);
    EXPECT_EQ(seen.last.deviceOrdinal, static_cast<int32_t>(props_.ordinal));
    if (hostBackend())
      EXPECT_EQ(seen.last.stream, nullptr);
    else
      EXPECT_NE(seen.last.stream, nullptr);
  }
}

TEST_P(CommandTest, ResubmittingACommandBufferRunsItEachTime) {
  std::atomic<int> runs{0};
  auto done = makeSemaphore();
  auto cb = makeCommandBuffer([&](CommandBuffer c) {
    EXPECT_OK(c.hostCall(
        [](void* p) {
          static_cast<std::atomic<int>*>(p)->fetch_add(1);
          return Result::Success;
        },
        &runs));
  });
  for (uint64_t i = 1; i <= 5; ++i) ASSERT_OK(submit(queue(i % 2), {}, {*cb}, {{*done, i}}));
  EXPECT_OK(queue(0).waitIdle(kLongNs));
  EXPECT_OK(queue(1).waitIdle(kLongNs));
  EXPECT_EQ(runs.load(), 5);
}

TEST_P(CommandTest, ReRecordingKeepsPendingSubmissionsRecording) {
  EventLog log;
  LogEntry one{&log, 1}, two{&log, 2};
  auto gate = makeSemaphore();
  auto done = makeSemaphore();
  auto cb = makeCommandBuffer([&](CommandBuffer c) { EXPECT_OK(c.hostCall(appendToLog, &one)); });
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {*cb}, {{*done, 1}}));
  // Re-record while the first submission is held: it must keep the old recording.
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->hostCall(appendToLog, &two));
  ASSERT_OK(cb->end());
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 2}}));
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(done->wait(2, kLongNs));
  EXPECT_EQ(log.events(), (std::vector<int>{1, 2}));
}

TEST_P(CommandTest, EmptyCommandBufferIsSubmittable) {
  auto done = makeSemaphore();
  auto cb = makeCommandBuffer([](CommandBuffer) {});
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
  EXPECT_OK(done->wait(1, kLongNs));
}

TEST_P(CommandTest, BufferPropertiesAndAddresses) {
  auto buf = makeBuffer(4096);
  uint64_t size = 0;
  ASSERT_OK(buf->getSize(&size));
  EXPECT_EQ(size, 4096u);
  uint64_t address = 0;
  ASSERT_OK(buf->getDeviceAddress(&address));
  EXPECT_NE(address, 0u);
  void* p = nullptr;
  ASSERT_OK(buf->map(&p));
  EXPECT_NE(p, nullptr);
  if (hostBackend()) {
    // On the host backend the device address is the host address.
    EXPECT_EQ(address, reinterpret_cast<uint64_t>(p));
  }
}

BATON_INSTANTIATE_FOR_BACKENDS(CommandTest);

}  // namespace
}  // namespace baton_test
