// HIP-only tests. The tests HIP shares with CUDA are written once in tests/stream/stream_tests.cpp
// and run here on HIP through hip_hooks.cpp (StreamBackendTest.<test>/hip); this file holds what is
// HIP's own (impl/hip): properties from gcnArchName and hipDeviceGetUuid with the capabilities HIP
// 5.2 lacks, HIP work of the application's enqueued on baton's hipStream_t, host calls through
// hipStreamAddCallback (5.2 does not export hipLaunchHostFunc), and queue-ordered allocation from
// the device's default memory pool. Each test skips, with the runtime's reason, without a HIP
// device (AMD's runtime on a machine without an AMD GPU: "hipInit failed: hipErrorInvalidDevice").
// Their command buffers are replayed (makeReplayCommands) in every registration: each observes what
// a replayed submission calls (hipStreamAddCallback, a native callback per issue).
#include <atomic>
#include <functional>

#include "hip_symbols.hpp"
#include "stream_test_support.hpp"

namespace baton_test {
namespace {

using baton::MemoryKind;
using baton::Result;

constexpr uint32_t kPattern = 0x41D0BA70u;

class HipTest : public StreamBackendTest {
 protected:
  const baton::hip::Symbols& hip() const { return baton::hip::symbols(); }

  // Makes the next call of `api` fail with hipErrorInvalidValue, runs `enqueue`, waits for
  // `failed` to fail, and returns its reason, which must name the call and the error.
  std::string failureOfInjectedError(const char* api, baton::Semaphore failed,
                                     const std::function<void()>& enqueue) {
    baton::hip::clearFaults();
    EXPECT_TRUE(baton::hip::injectFault(api, hipErrorInvalidValue));
    enqueue();
    EXPECT_EQ(failed.wait(1, kLongNs), Result::ErrorSemaphoreFailed);
    EXPECT_EQ(baton::hip::faultsFired(), 1u);
    baton::hip::clearFaults();
    char reason[512] = {};
    EXPECT_OK(failed.getFailureReason(reason, sizeof reason));
    EXPECT_TRUE(containsText(reason, api)) << reason;
    EXPECT_TRUE(containsText(reason, "hipErrorInvalidValue")) << reason;
    return reason;
  }
};

// The architecture is AMD's gcnArchName ("gfx90a:sramecc+:xnack-"); 5.2 has no timeline
// external-semaphore handle type, so Vulkan semaphores are bridged and the capability is absent;
// memory import is there when the runtime exports it. (The UUID, memory and the capabilities
// every GPU backend has: StreamBackendTest.PhysicalDeviceProperties/hip.)
TEST_P(HipTest, PhysicalDeviceProperties) {
  for (const baton::PhysicalDeviceProperties& p : gpuProps_) {
    EXPECT_NE(p.arch[0], '\0') << "no gcnArchName for " << p.name;
    EXPECT_FALSE(p.capabilities & baton::kCapabilityExternalSemaphoreTimelineFd)
        << "HIP 5.2 cannot import a Vulkan timeline semaphore";
    const bool memoryImport = hip().hipImportExternalMemory &&
                              hip().hipExternalMemoryGetMappedBuffer &&
                              hip().hipDestroyExternalMemory;
    EXPECT_EQ((p.capabilities & baton::kCapabilityExternalMemoryOpaqueFd) != 0, memoryImport);
    std::printf("hip:%u %s: arch %s\n", p.ordinal, p.name, p.arch);
  }
}

// The application's own HIP call, on the hipStream_t a native callback receives: it runs in
// order between baton's fill and baton's copy on the same stream.
struct HipMemset {
  const baton::hip::Symbols* hip = nullptr;
  uint64_t address = 0;
  size_t words = 0;
  baton::NativeQueue seen;
  hipError_t result = hipSuccess;
  static Result run(const baton::NativeQueue& q, void* user) {
    auto* self = static_cast<HipMemset*>(user);
    self->seen = q;
    self->result = self->hip->hipMemsetD32Async(
        reinterpret_cast<hipDeviceptr_t>(static_cast<uintptr_t>(self->address)),
        static_cast<int>(kPattern), self->words, static_cast<hipStream_t>(q.stream));
    return self->result == hipSuccess ? Result::Success : Result::ErrorDriver;
  }
};

TEST_P(HipTest, NativeCallbackEnqueuesHipWorkOnTheQueuesStream) {
  const uint64_t size = 64 << 10;
  auto data = makeBuffer(size, MemoryKind::Device);
  auto out = makeBuffer(size, MemoryKind::HostPinned);
  std::memset(map(*out), 0, size);
  HipMemset memset;
  memset.hip = &hip();
  memset.words = size / 4;
  ASSERT_OK(data->getDeviceAddress(&memset.address));
  auto s = makeSemaphore("hip-native");
  auto cb = makeReplayCommands([&](baton::CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*data, 0, size, 1));
    EXPECT_OK(c.native(&HipMemset::run, &memset));
    EXPECT_OK(c.copyBuffer(*data, 0, *out, 0, size));
  });
  ASSERT_OK(submit(queue(1), {}, {*cb}, {{*s, 1}}));
  ASSERT_OK(s->wait(1, kLongNs));
  EXPECT_EQ(memset.result, hipSuccess) << baton::hip::resultName(memset.result);
  EXPECT_EQ(memset.seen.backend, baton::BackendKind::Hip);
  EXPECT_NE(memset.seen.stream, nullptr)
      << "a hipStream_t (baton's streams are never the null one)";
  EXPECT_EQ(memset.seen.queueIndex, 1u);
  auto* words = map<uint32_t>(*out);
  for (uint64_t i = 0; i < size / 4; i += 257) ASSERT_EQ(words[i], kPattern) << "word " << i;
  EXPECT_EQ(words[size / 4 - 1], kPattern);
}

// Host calls are enqueued with hipStreamAddCallback: HIP 5.2 declares hipLaunchHostFunc but does
// not export it (nor do the fake driver and the translation library). A failure there fails the
// submission's signals naming the call, the host call does not run, and the queue stays usable.
TEST_P(HipTest, HostCallsRunThroughHipStreamAddCallback) {
  if (hip().hipLaunchHostFunc)
    GTEST_SKIP() << "this HIP runtime exports hipLaunchHostFunc, which baton then uses instead "
                    "of hipStreamAddCallback";
  std::atomic<int> ran{0};
  auto call = makeReplayCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.hostCall(
        [](void* user) {
          static_cast<std::atomic<int>*>(user)->fetch_add(1);
          return Result::Success;
        },
        &ran));
  });
  auto s = makeSemaphore("callback-failed");
  failureOfInjectedError("hipStreamAddCallback", *s, [&] {
    ASSERT_OK(submit(queue(0), {}, {*call}, {{*s, 1}}));
  });
  EXPECT_EQ(ran.load(), 0);

  auto t = makeSemaphore("callback-ok");
  ASSERT_OK(submit(queue(0), {}, {*call}, {{*t, 1}}));
  ASSERT_OK(t->wait(1, kLongNs));
  EXPECT_EQ(ran.load(), 1);
}

// alloca draws from the device's default pool (hipDeviceGetDefaultMemPool, the pool
// hipMallocAsync uses, so baton shares its cache with the application) through
// hipMallocFromPoolAsync: the capability follows the runtime's pool support, an allocation error
// fails the alloca's signals naming the call, and the next alloca works.
TEST_P(HipTest, QueueOrderedAllocationUsesTheDefaultPool) {
  int poolsSupported = 0;
  (void)hip().hipDeviceGetAttribute(&poolsSupported, hipDeviceAttributeMemoryPoolsSupported,
                                    static_cast<int>(props_.ordinal));
  hipMemPool_t pool = nullptr;
  const bool hasPool =
      poolsSupported && hip().hipDeviceGetDefaultMemPool && hip().hipMallocFromPoolAsync &&
      hip().hipFreeAsync &&
      hip().hipDeviceGetDefaultMemPool(&pool, static_cast<int>(props_.ordinal)) == hipSuccess &&
      pool;
  EXPECT_EQ((props_.capabilities & baton::kCapabilityStreamOrderedAlloc) != 0, hasPool);
  if (!hasPool) GTEST_SKIP() << "no default memory pool on " << props_.name;

  const uint64_t size = 64 << 10;
  baton::BufferCreateInfo info;
  info.size = size;
  auto failed = makeSemaphore("alloc-failed");
  baton::Buffer lost;
  failureOfInjectedError("hipMallocFromPoolAsync", *failed, [&] {
    ASSERT_OK(queue(0).allocaBuffer({}, info, {{*failed, 1}}, &lost));
  });
  EXPECT_OK(lost.destroy());

  auto out = makeBuffer(size, MemoryKind::HostPinned);
  auto allocated = makeSemaphore("allocated"), freed = makeSemaphore("freed");
  baton::Buffer b;
  ASSERT_OK(queue(0).allocaBuffer({}, info, {{*allocated, 1}}, &b));
  auto use = makeReplayCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.fillBuffer(b, 0, size, kPattern));
    EXPECT_OK(cb.copyBuffer(b, 0, *out, 0, size));
  });
  ASSERT_OK(submit(queue(1), {{*allocated, 1}}, {*use}, {}));
  ASSERT_OK(queue(1).deallocaBuffer({}, b, {{*freed, 1}}));
  ASSERT_OK(freed->wait(1, kLongNs));
  auto* words = map<uint32_t>(*out);
  EXPECT_EQ(words[0], kPattern);
  EXPECT_EQ(words[size / 4 - 1], kPattern);
}

// The graph entry points baton resolves (optional: ROCm 5.2 exports them, as do the translation
// library and the fake driver), used by application code on the queue's stream from a native
// callback: a graph of a fill and a host node after it, built, instantiated and launched; a
// capture of a second fill (relaxed mode: baton's other threads keep calling the runtime); and
// an update of the first executable graph from a graph of the same shape with another value,
// launched by a second submission. Results are read back through a copy recorded after each.
struct GraphWork {
  const baton::hip::Symbols* hip = nullptr;
  hipDeviceptr_t address = nullptr;
  size_t words = 0;
  uint32_t value = 0;
  std::atomic<int> hostRuns{0};
  hipError_t result = hipSuccess;
  const char* failed = "";
  hipStreamCaptureStatus during = hipStreamCaptureStatusNone;
  hipGraphExec_t built = nullptr, captured = nullptr;
  hipGraph_t graphs[3] = {};
  hipGraphExecUpdateResult update = hipGraphExecUpdateError;

  bool ok(hipError_t r, const char* what) {
    if (r == hipSuccess) return true;
    result = r;
    failed = what;
    return false;
  }
  // A fill of `value` over the whole buffer, then a host node counting its runs.
  bool build(hipGraph_t* g, uint32_t fill) {
    if (!ok(hip->hipGraphCreate(g, 0), "hipGraphCreate")) return false;
    hipMemsetParams mp{};
    mp.dst = address;
    mp.elementSize = 4;
    mp.width = words;
    mp.height = 1;
    mp.value = fill;
    hipGraphNode_t fillNode = nullptr, hostNode = nullptr;
    if (!ok(hip->hipGraphAddMemsetNode(&fillNode, *g, nullptr, 0, &mp), "hipGraphAddMemsetNode"))
      return false;
    hipHostNodeParams hp{};
    hp.fn = [](void* user) { static_cast<GraphWork*>(user)->hostRuns.fetch_add(1); };
    hp.userData = this;
    return ok(hip->hipGraphAddHostNode(&hostNode, *g, &fillNode, 1, &hp), "hipGraphAddHostNode");
  }
  static Result first(const baton::NativeQueue& q, void* user) {
    auto& w = *static_cast<GraphWork*>(user);
    auto stream = static_cast<hipStream_t>(q.stream);
    const baton::hip::Symbols& h = *w.hip;
    if (!w.build(&w.graphs[0], kPattern) ||
        !w.ok(h.hipGraphInstantiateWithFlags(&w.built, w.graphs[0], 0), "instantiate") ||
        !w.ok(h.hipGraphLaunch(w.built, stream), "hipGraphLaunch") ||
        !w.ok(h.hipStreamBeginCapture(stream, hipStreamCaptureModeRelaxed), "begin capture") ||
        !w.ok(h.hipMemsetD32Async(w.address, static_cast<int>(kPattern + 1), w.words / 2, stream),
              "captured fill") ||
        !w.ok(h.hipStreamIsCapturing(stream, &w.during), "hipStreamIsCapturing") ||
        !w.ok(h.hipStreamEndCapture(stream, &w.graphs[1]), "hipStreamEndCapture") ||
        !w.ok(h.hipGraphInstantiateWithFlags(&w.captured, w.graphs[1], 0), "instantiate") ||
        !w.ok(h.hipGraphLaunch(w.captured, stream), "hipGraphLaunch"))
      return Result::ErrorDriver;
    return Result::Success;
  }
  static Result second(const baton::NativeQueue& q, void* user) {
    auto& w = *static_cast<GraphWork*>(user);
    hipGraphNode_t errorNode = nullptr;
    if (!w.build(&w.graphs[2], kPattern + 2) ||
        !w.ok(w.hip->hipGraphExecUpdate(w.built, w.graphs[2], &errorNode, &w.update),
              "hipGraphExecUpdate") ||
        !w.ok(w.hip->hipGraphLaunch(w.built, static_cast<hipStream_t>(q.stream)), "hipGraphLaunch"))
      return Result::ErrorDriver;
    return Result::Success;
  }
};

TEST_P(HipTest, GraphsBuiltCapturedAndUpdatedRunOnTheQueuesStream) {
  const baton::hip::Symbols& h = hip();
  if (!h.hipGraphCreate || !h.hipGraphAddMemsetNode || !h.hipGraphAddHostNode ||
      !h.hipGraphInstantiateWithFlags || !h.hipGraphLaunch || !h.hipGraphExecUpdate ||
      !h.hipStreamBeginCapture || !h.hipStreamEndCapture || !h.hipStreamIsCapturing ||
      !h.hipGraphExecDestroy || !h.hipGraphDestroy)
    GTEST_SKIP() << "this HIP runtime does not export the graph entry points";
  const uint64_t size = 64 << 10;
  auto data = makeBuffer(size, MemoryKind::Device);
  auto out = makeBuffer(size, MemoryKind::HostPinned);
  GraphWork w;
  w.hip = &h;
  w.words = size / 4;
  uint64_t address = 0;
  ASSERT_OK(data->getDeviceAddress(&address));
  w.address = reinterpret_cast<hipDeviceptr_t>(address);
  auto s = makeSemaphore("graphs");
  auto first = makeReplayCommands([&](baton::CommandBuffer c) {
    EXPECT_OK(c.native(&GraphWork::first, &w));
    EXPECT_OK(c.copyBuffer(*data, 0, *out, 0, size));
  });
  ASSERT_OK(submit(queue(0), {}, {*first}, {{*s, 1}}));
  ASSERT_OK(s->wait(1, kLongNs)) << w.failed << ": " << baton::hip::resultName(w.result);
  EXPECT_EQ(w.during, hipStreamCaptureStatusActive);
  EXPECT_EQ(w.hostRuns.load(), 1);
  auto* words = map<uint32_t>(*out);
  EXPECT_EQ(words[0], kPattern + 1) << "the captured fill did not run after the graph's";
  EXPECT_EQ(words[w.words / 2 - 1], kPattern + 1);
  EXPECT_EQ(words[w.words / 2], kPattern) << "the built graph's fill did not run";
  EXPECT_EQ(words[w.words - 1], kPattern);

  auto second = makeReplayCommands([&](baton::CommandBuffer c) {
    EXPECT_OK(c.native(&GraphWork::second, &w));
    EXPECT_OK(c.copyBuffer(*data, 0, *out, 0, size));
  });
  ASSERT_OK(submit(queue(0), {}, {*second}, {{*s, 2}}));
  ASSERT_OK(s->wait(2, kLongNs)) << w.failed << ": " << baton::hip::resultName(w.result);
  EXPECT_EQ(w.update, hipGraphExecUpdateSuccess);
  EXPECT_EQ(w.hostRuns.load(), 2);
  EXPECT_EQ(words[0], kPattern + 2) << "the updated graph did not use its new value";
  EXPECT_EQ(words[w.words - 1], kPattern + 2);
  EXPECT_EQ(h.hipGraphExecDestroy(w.built), hipSuccess);
  EXPECT_EQ(h.hipGraphExecDestroy(w.captured), hipSuccess);
  for (hipGraph_t g : w.graphs) EXPECT_EQ(h.hipGraphDestroy(g), hipSuccess);
}

INSTANTIATE_TEST_SUITE_P(, HipTest, ::testing::Values(baton::BackendKind::Hip), BackendParamName());

}  // namespace
}  // namespace baton_test
