// Vulkan interop tests (docs/guide.md, 'Vulkan interop'), bridged mode: a Vulkan device (lavapipe
// in CI) and baton's host backend share timeline semaphores and memory. Covers wait-before-signal
// in both directions, chains across a Vulkan queue, host backend queues and the host, failure and
// misuse, and fd/thread leaks. Without a Vulkan device every test skips and prints why.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"
#include "baton/baton.hpp"
#include "baton/vulkan.hpp"
#include "process_counts.hpp"
#include "test_support.hpp"
#include "vulkan_context.hpp"

namespace {

using namespace baton;
using baton::test::openFds;
using baton::test::threadCount;
using baton::test::threadCountReaches;
using baton::test::TimelineObserver;
using baton::test::VulkanBuffer;
using baton::test::VulkanContext;
using baton_test::containsText;
using baton_test::kLongNs;
using baton_test::kMs;
using baton_test::kShortNs;
using baton_test::lastError;
using baton_test::MessageSink;

const uint32_t kScaleAdd[] =
#include "scale_add.spv.h"
    ;

class Interop : public ::testing::Test {
 protected:
  // One Vulkan device for the whole suite: creating it is the slow part on lavapipe.
  static void SetUpTestSuite() { vk = new VulkanContext; }
  static void TearDownTestSuite() {
    delete vk;
    vk = nullptr;
  }

  void SetUp() override {
    if (!vk->ok()) GTEST_SKIP() << "no usable Vulkan device: " << vk->skip;
    ASSERT_OK(createInstance(sink.instanceInfo(backendBit(BackendKind::Host)), instance.put()));
    uint32_t count = 0;
    ASSERT_OK(instance->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> pds(count);
    ASSERT_OK(instance->enumeratePhysicalDevices(&count, pds.data()));
    PhysicalDevice host;
    for (PhysicalDevice pd : pds) {
      PhysicalDeviceProperties p;
      ASSERT_OK(pd.getProperties(&p));
      if (p.backend == BackendKind::Host) host = pd;
    }
    ASSERT_TRUE(host);
    DeviceCreateInfo di;
    di.queueCount = 2;
    ASSERT_OK(instance->createDevice(host, di, device.put()));
    ASSERT_OK(device->getQueue(0, &queue));
    ASSERT_OK(device->getQueue(1, &queue2));
    pipeline = vk->createPipeline(kScaleAdd, sizeof kScaleAdd);
  }

  void TearDown() override {
    if (!vk->ok()) return;
    vkDeviceWaitIdle(vk->device);
    vk->destroy(pipeline);
    for (VulkanBuffer& b : buffers) vk->destroy(b);
    for (VkSemaphore s : semaphores) vk->destroy(s);
  }

  // A timeline shared with Vulkan, owned by the test (destroyed after the baton side).
  struct Shared {
    VkSemaphore vk = VK_NULL_HANDLE;
    UniqueSemaphore baton;
  };
  Shared shared(uint64_t initial = 0, VulkanFailurePolicy policy = VulkanFailurePolicy::Hold) {
    Shared s;
    s.vk = vk->createTimeline(initial);
    semaphores.push_back(s.vk);
    VulkanSemaphoreImportInfo info;
    info.vulkan = vk->view();
    info.semaphore = s.vk;
    info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    info.device = *device;
    info.failurePolicy = policy;
    info.debugName = "shared";
    Result r = importVulkanSemaphore(*instance, info, s.baton.put());
    EXPECT_EQ(r, Result::Success) << lastError();
    return s;
  }

  VulkanBuffer hostBuffer(uint32_t uints) {
    buffers.push_back(vk->createHostBuffer(uints * sizeof(uint32_t)));
    return buffers.back();
  }

  UniqueBuffer import(const VulkanBuffer& b) {
    UniqueBuffer out;
    Result r = importVulkanMemory(*device, vk->importInfo(b), out.put());
    EXPECT_EQ(r, Result::Success) << lastError();
    return out;
  }

  UniqueSemaphore plain(const char* name) {
    UniqueSemaphore s;
    SemaphoreCreateInfo info;
    info.debugName = name;
    EXPECT_OK(instance->createSemaphore(info, s.put()));
    return s;
  }

  UniqueCommandBuffer commands() {
    UniqueCommandBuffer cb;
    EXPECT_OK(device->createCommandBuffer(cb.put()));
    EXPECT_OK(cb->begin());
    return cb;
  }

  static VulkanContext* vk;
  MessageSink sink;
  UniqueInstance instance;
  UniqueDevice device;
  Queue queue, queue2;
  VulkanContext::Pipeline pipeline;
  std::vector<VulkanBuffer> buffers;
  std::vector<VkSemaphore> semaphores;
};

VulkanContext* Interop::vk = nullptr;

// ---- what is supported and why -------------------------------------------------------------

TEST_F(Interop, QueryReportsBridgedModeAndWhy) {
  VulkanInteropSupport support;
  ASSERT_OK(queryVulkanInterop(vk->view(), *device, &support));
  EXPECT_TRUE(support.timelineSemaphores);
  EXPECT_EQ(support.batonSemaphoreImportTypes, 0u) << "the host backend imports nothing natively";
  EXPECT_EQ(support.batonMemoryImportTypes, 0u);
  EXPECT_FALSE(support.uuidMatches);
  EXPECT_EQ(support.semaphoreMode, InteropMode::Bridged);
  EXPECT_EQ(support.memoryMode, InteropMode::Bridged);
  EXPECT_TRUE(containsText(support.semaphoreReason, "host backend")) << support.semaphoreReason;
  if (!support.vulkanExternalSemaphoreFd) {  // lavapipe
    EXPECT_TRUE(
        containsText(support.semaphoreReason, "VK_KHR_external_semaphore_fd is not supported by"))
        << support.semaphoreReason;
  }
  if (containsText(vk->name, "llvmpipe")) {
    EXPECT_FALSE(support.vulkanExternalSemaphoreFd);
    EXPECT_TRUE(containsText(support.semaphoreReason, "lavapipe")) << support.semaphoreReason;
  }
  std::printf("[ info     ] %s: semaphores %s (%s)\n", vk->name.c_str(),
              interopModeName(support.semaphoreMode), support.semaphoreReason);
}

TEST_F(Interop, HostBackendMatchesNoVulkanDevice) {
  PhysicalDevice pd;
  Result r = matchVulkanPhysicalDevice(*instance, vk->view(), &pd);
  EXPECT_EQ(r, Result::ErrorNotSupported);
  EXPECT_TRUE(containsText(lastError(), "UUID")) << lastError();
  EXPECT_FALSE(pd);
}

TEST_F(Interop, ImportIsBridgedAndTheCallbackSaysWhy) {
  VulkanTimelineCreateInfo info;
  info.vulkan = vk->view();
  info.initialValue = 7;
  info.device = *device;
  info.debugName = "made";
  VulkanTimeline t;
  ASSERT_OK(createVulkanTimeline(*instance, info, &t));
  EXPECT_EQ(t.mode, InteropMode::Bridged);
  uint64_t v = 0;
  EXPECT_OK(t.baton.getValue(&v));
  EXPECT_EQ(v, 7u) << "the import starts at the Vulkan semaphore's value";

  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanSemaphoreInterop(t.baton, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Bridged);
  EXPECT_EQ(ii.semaphore, t.vulkan);
  EXPECT_EQ(ii.device, vk->device);
  EXPECT_TRUE(containsText(ii.reason, "native import is impossible")) << ii.reason;
  EXPECT_TRUE(sink.has(MessageSeverity::Info, "'made' imported from Vulkan device")) << sink.dump();
  EXPECT_TRUE(sink.has(MessageSeverity::Info, "bridged mode")) << sink.dump();
  EXPECT_OK(destroyVulkanTimeline(vk->view(), t));
}

TEST_F(Interop, NativeRequestIsRefusedWithEveryReason) {
  VkSemaphore s = vk->createTimeline();
  semaphores.push_back(s);
  VulkanSemaphoreImportInfo info;
  info.vulkan = vk->view();
  info.semaphore = s;
  info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  info.device = *device;
  info.mode = InteropModeRequest::Native;
  Semaphore out;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorNotSupported);
  std::string msg = lastError();
  EXPECT_TRUE(containsText(msg, "cannot import external timeline semaphores")) << msg;
  VulkanInteropSupport support;
  ASSERT_OK(queryVulkanInterop(vk->view(), *device, &support));
  if (support.vulkanExternalSemaphoreFd) {
    EXPECT_TRUE(containsText(msg, "not created exportable")) << msg;
  } else {
    EXPECT_TRUE(containsText(msg, "VK_KHR_external_semaphore_fd is not supported")) << msg;
  }
  EXPECT_FALSE(out);
  // Nothing was left behind: the same semaphore imports fine afterwards.
  info.mode = InteropModeRequest::Auto;
  UniqueSemaphore again;
  EXPECT_OK(importVulkanSemaphore(*instance, info, again.put()));
}

TEST_F(Interop, SemaphoreInfoOfAPlainSemaphoreIsRefused) {
  UniqueSemaphore s = plain("plain");
  VulkanInteropInfo ii;
  EXPECT_EQ(getVulkanSemaphoreInterop(*s, &ii), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "not imported from Vulkan")) << lastError();
}

// ---- host signals in both directions -------------------------------------------------------

TEST_F(Interop, BatonHostSignalReachesVulkanAtOnce) {
  Shared t = shared();
  ASSERT_OK(t.baton->signal(3));
  // Forwarded on the signalling thread, before signal() returns.
  EXPECT_EQ(vk->value(t.vk), 3u);
  ASSERT_OK(t.baton->signal(10));
  EXPECT_EQ(vk->wait(t.vk, 10, 0), VK_SUCCESS);
}

TEST_F(Interop, VulkanHostSignalReachesBaton) {
  Shared t = shared();
  EXPECT_EQ(t.baton->wait(4, 0), Result::Timeout);
  ASSERT_EQ(vk->signal(t.vk, 4), VK_SUCCESS);
  EXPECT_OK(t.baton->wait(4, kLongNs));
  uint64_t v = 0;
  EXPECT_OK(t.baton->getValue(&v));
  EXPECT_EQ(v, 4u);
}

// The watcher's vkWaitSemaphores, counted: interposed through VulkanDevice::getInstanceProcAddr,
// which is how baton resolves every Vulkan function (vkGetDeviceProcAddr included).
std::atomic<int> gVulkanWaits{0};
PFN_vkWaitSemaphores gRealWaitSemaphores = nullptr;
PFN_vkGetDeviceProcAddr gRealGetDeviceProcAddr = nullptr;
VKAPI_ATTR VkResult VKAPI_CALL countingWaitSemaphores(VkDevice device,
                                                      const VkSemaphoreWaitInfo* info,
                                                      uint64_t timeout) {
  gVulkanWaits.fetch_add(1);
  return gRealWaitSemaphores(device, info, timeout);
}
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL countingGetDeviceProcAddr(VkDevice device,
                                                                   const char* name) {
  PFN_vkVoidFunction real = gRealGetDeviceProcAddr(device, name);
  if (real &&
      (!std::strcmp(name, "vkWaitSemaphores") || !std::strcmp(name, "vkWaitSemaphoresKHR"))) {
    gRealWaitSemaphores = reinterpret_cast<PFN_vkWaitSemaphores>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(countingWaitSemaphores);
  }
  return real;
}
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL countingGetInstanceProcAddr(VkInstance instance,
                                                                     const char* name) {
  // Over the harness's observing functions (VulkanContext::view()), as every baton call here.
  if (!std::strcmp(name, "vkGetDeviceProcAddr")) {
    gRealGetDeviceProcAddr = reinterpret_cast<PFN_vkGetDeviceProcAddr>(
        TimelineObserver::getInstanceProcAddr(instance, name));
    return reinterpret_cast<PFN_vkVoidFunction>(countingGetDeviceProcAddr);
  }
  return TimelineObserver::getInstanceProcAddr(instance, name);
}

TEST_F(Interop, TheBridgeWaitsOnVulkanOnlyWhileSomethingInBatonWaits) {
  VkSemaphore s = vk->createTimeline(0);
  semaphores.push_back(s);
  VulkanSemaphoreImportInfo info;
  info.vulkan = vk->view();
  info.vulkan.getInstanceProcAddr = countingGetInstanceProcAddr;
  info.semaphore = s;
  info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  info.device = *device;
  info.debugName = "on demand";
  const int before = gVulkanWaits.load();
  UniqueSemaphore t;
  ASSERT_OK(importVulkanSemaphore(*instance, info, t.put()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(gVulkanWaits.load(), before) << "nothing in baton waits, yet the bridge waited";

  // Reads do not depend on the watcher: a value Vulkan reached is seen at once, and a host
  // signal that would not raise it is refused.
  ASSERT_EQ(vk->signal(s, 3), VK_SUCCESS);
  uint64_t v = 0;
  EXPECT_OK(t->getValue(&v));
  EXPECT_EQ(v, 3u);
  ASSERT_EQ(vk->signal(s, 4), VK_SUCCESS);
  EXPECT_OK(t->wait(4, 0));
  ASSERT_EQ(vk->signal(s, 5), VK_SUCCESS);
  EXPECT_EQ(t->signal(5), Result::ErrorNonIncreasingValue) << lastError();
  EXPECT_EQ(gVulkanWaits.load(), before);

  // A host wait that sleeps makes the bridge watch, and Vulkan's signal wakes it.
  std::atomic<bool> woke{false};
  Result waited = Result::ErrorInvalidState;  // replaced by the wait
  std::thread waiter([&] {
    waited = t->wait(7, kLongNs);
    woke = true;
  });
  const auto give = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (gVulkanWaits.load() == before && std::chrono::steady_clock::now() < give)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GT(gVulkanWaits.load(), before) << "a host waiter sleeps, but the bridge does not watch";
  EXPECT_FALSE(woke.load());
  ASSERT_EQ(vk->signal(s, 7), VK_SUCCESS);
  waiter.join();
  EXPECT_OK(waited);

  // So does a held submission of a baton queue.
  UniqueSemaphore done = plain("done");
  SemaphoreValue wait{*t, 9}, signal{*done, 1};
  SubmitInfo submit;
  submit.waits = Span<const SemaphoreValue>(&wait, 1);
  submit.signals = Span<const SemaphoreValue>(&signal, 1);
  ASSERT_OK(queue.submit(submit));
  EXPECT_EQ(done->wait(1, kShortNs), Result::Timeout) << "the submission did not wait";
  ASSERT_EQ(vk->signal(s, 9), VK_SUCCESS);
  EXPECT_OK(done->wait(1, kLongNs));

  // Nothing waits any more: after its current wait (at most one 10 ms slice), it stops.
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  const int settled = gVulkanWaits.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(gVulkanWaits.load(), settled) << "the bridge kept waiting after its waiters left";
}

TEST_F(Interop, HostPingPongThroughBothApis) {
  // One thread speaks Vulkan, the other baton, alternating on one timeline: every value crosses
  // the bridge one way or the other, and a lost wake-up would hang (bounded by kLongNs).
  Shared t = shared();
  constexpr uint64_t kRounds = 300;
  std::thread vulkanSide([&] {
    for (uint64_t i = 0; i < kRounds; ++i) {
      if (vk->wait(t.vk, 2 * i + 1, kLongNs) != VK_SUCCESS) return;
      vk->signal(t.vk, 2 * i + 2);
    }
  });
  for (uint64_t i = 0; i < kRounds; ++i) {
    ASSERT_OK(t.baton->signal(2 * i + 1));
    ASSERT_OK(t.baton->wait(2 * i + 2, kLongNs)) << "round " << i;
  }
  vulkanSide.join();
  EXPECT_EQ(vk->value(t.vk), 2 * kRounds);
}

// ---- wait-before-signal, queues ------------------------------------------------------------

TEST_F(Interop, VulkanSubmitWaitsForAValueABatonQueueSignalsLater) {
  constexpr uint32_t kCount = 256;
  Shared t = shared();
  VulkanBuffer vb = hostBuffer(kCount);
  UniqueBuffer b = import(vb);
  VkCommandBuffer cmd = vk->recordDispatch(pipeline, vb, kCount, 7);
  // Vulkan first: it waits for value 1, which nothing has been asked to signal yet.
  ASSERT_EQ(vk->submit({{t.vk, 1}}, cmd, {{t.vk, 2}}), VK_SUCCESS);
  std::this_thread::sleep_for(std::chrono::nanoseconds(kShortNs));
  EXPECT_EQ(vk->value(t.vk), 0u) << "the Vulkan submission ran before its wait was satisfied";

  // Then the baton host queue writes the input and signals 1.
  UniqueCommandBuffer cb = commands();
  ASSERT_OK(cb->fillBuffer(*b, 0, kCount * 4, 5));
  ASSERT_OK(cb->end());
  CommandBuffer cbs[] = {*cb};
  SemaphoreValue signal{*t.baton, 1};
  SubmitInfo submit;
  submit.commandBuffers = cbs;
  submit.signals = Span<const SemaphoreValue>(&signal, 1);
  ASSERT_OK(queue.submit(submit));

  // The host waits through baton for the value Vulkan signals.
  ASSERT_OK(t.baton->wait(2, kLongNs));
  void* p = nullptr;
  ASSERT_OK(b->map(&p));
  const auto* values = static_cast<const uint32_t*>(p);
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(values[i], 5u * 3 + 7) << "index " << i;
}

struct Observed {
  const uint32_t* values = nullptr;
  uint32_t count = 0;
  std::vector<uint32_t> seen;
};

Result readBack(void* user) {
  auto* o = static_cast<Observed*>(user);
  o->seen.assign(o->values, o->values + o->count);
  return Result::Success;
}

TEST_F(Interop, BatonQueueWaitsForAValueAVulkanSubmitSignalsLater) {
  constexpr uint32_t kCount = 128;
  Shared t = shared();
  UniqueSemaphore done = plain("done");
  VulkanBuffer vb = hostBuffer(kCount);
  UniqueBuffer b = import(vb);
  void* p = nullptr;
  ASSERT_OK(b->map(&p));
  std::memset(p, 0, kCount * 4);  // Vulkan memory starts undefined
  Observed observed{static_cast<const uint32_t*>(p), kCount, {}};

  // baton first: the host queue waits for 1, which only Vulkan will signal.
  UniqueCommandBuffer cb = commands();
  ASSERT_OK(cb->hostCall(&readBack, &observed));
  ASSERT_OK(cb->end());
  CommandBuffer cbs[] = {*cb};
  SemaphoreValue wait{*t.baton, 1};
  SemaphoreValue signal{*done, 1};
  SubmitInfo submit;
  submit.waits = Span<const SemaphoreValue>(&wait, 1);
  submit.commandBuffers = cbs;
  submit.signals = Span<const SemaphoreValue>(&signal, 1);
  ASSERT_OK(queue.submit(submit));
  EXPECT_EQ(done->wait(1, kShortNs), Result::Timeout) << "the baton submission did not wait";

  VkCommandBuffer cmd = vk->recordDispatch(pipeline, vb, kCount, 9);
  ASSERT_EQ(vk->submit({}, cmd, {{t.vk, 1}}), VK_SUCCESS);
  ASSERT_OK(done->wait(1, kLongNs));
  ASSERT_EQ(observed.seen.size(), kCount);
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(observed.seen[i], 9u) << "index " << i;
}

struct Bump {
  uint32_t* values;
  uint32_t count;
};

Result bump(void* user) {
  auto* b = static_cast<Bump*>(user);
  for (uint32_t i = 0; i < b->count; ++i) b->values[i] += 1;
  return Result::Success;
}

TEST_F(Interop, ChainVulkanQueueHostQueueHostAllSubmittedUpFront) {
  // Rounds alternate a Vulkan dispatch (v = 3v + 1, signals 2r+1) and a baton host queue step
  // (v += 1, signals 2r+2), each waiting for the other's previous value; everything is submitted
  // before anything runs, and the host only waits for the last value.
  constexpr uint32_t kCount = 64;
  constexpr uint64_t kRounds = 40;
  Shared t = shared();
  VulkanBuffer vb = hostBuffer(kCount);
  UniqueBuffer b = import(vb);
  void* p = nullptr;
  ASSERT_OK(b->map(&p));
  std::memset(p, 0, kCount * 4);  // Vulkan memory starts undefined
  Bump bumpInfo{static_cast<uint32_t*>(p), kCount};
  VkCommandBuffer cmd = vk->recordDispatch(pipeline, vb, kCount, 1);
  UniqueCommandBuffer cb = commands();
  ASSERT_OK(cb->hostCall(&bump, &bumpInfo));
  ASSERT_OK(cb->end());
  CommandBuffer cbs[] = {*cb};

  for (uint64_t r = 0; r < kRounds; ++r) {
    std::vector<VulkanContext::Timepoint> waits;
    if (r) waits.push_back({t.vk, 2 * r});
    ASSERT_EQ(vk->submit(waits, cmd, {{t.vk, 2 * r + 1}}), VK_SUCCESS);
    SemaphoreValue wait{*t.baton, 2 * r + 1};
    SemaphoreValue signal{*t.baton, 2 * r + 2};
    SubmitInfo submit;
    submit.waits = Span<const SemaphoreValue>(&wait, 1);
    submit.commandBuffers = cbs;
    submit.signals = Span<const SemaphoreValue>(&signal, 1);
    // Alternate the two host queues: ordering comes from the timeline alone.
    ASSERT_OK((r % 2 ? queue2 : queue).submit(submit)) << "round " << r;
  }
  ASSERT_OK(t.baton->wait(2 * kRounds, kLongNs));
  // The forward of the last value lands right after baton publishes it (vulkan.hpp, ordering).
  EXPECT_EQ(vk->wait(t.vk, 2 * kRounds, kLongNs), VK_SUCCESS);
  uint32_t expected = 0;
  for (uint64_t r = 0; r < kRounds; ++r) expected = expected * 3 + 1 + 1;
  const auto* values = static_cast<const uint32_t*>(p);
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(values[i], expected) << "index " << i;
}

// ---- failure -------------------------------------------------------------------------------

TEST_F(Interop, FailureHoldStopsForwardingAndBatonWaitersSeeIt) {
  Shared t = shared();
  VkSemaphore after = vk->createTimeline();
  semaphores.push_back(after);
  ASSERT_EQ(vk->submit({{t.vk, 1}}, VK_NULL_HANDLE, {{after, 1}}), VK_SUCCESS);

  ASSERT_OK(t.baton->fail("the producer died"));
  EXPECT_EQ(t.baton->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "the producer died")) << lastError();
  EXPECT_TRUE(sink.has(MessageSeverity::Warning, "VulkanFailurePolicy::Hold")) << sink.dump();
  // Vulkan has no failure: with Hold it is simply never signalled.
  std::this_thread::sleep_for(std::chrono::nanoseconds(kShortNs));
  EXPECT_EQ(vk->value(t.vk), 0u);
  EXPECT_EQ(vk->value(after), 0u);

  // Vulkan signalling it afterwards releases Vulkan, and does not turn the baton failure into
  // a success.
  ASSERT_EQ(vk->signal(t.vk, 1), VK_SUCCESS);
  EXPECT_EQ(vk->wait(after, 1, kLongNs), VK_SUCCESS);
  std::this_thread::sleep_for(std::chrono::nanoseconds(kShortNs));
  EXPECT_EQ(t.baton->wait(1, 0), Result::ErrorSemaphoreFailed);
  uint64_t v = 99;
  EXPECT_EQ(t.baton->getValue(&v), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(v, 0u);
}

TEST_F(Interop, FailureReleaseLetsVulkanWaitsReturn) {
  Shared t = shared(0, VulkanFailurePolicy::Release);
  VkSemaphore after = vk->createTimeline();
  semaphores.push_back(after);
  ASSERT_EQ(vk->submit({{t.vk, 5}}, VK_NULL_HANDLE, {{after, 1}}), VK_SUCCESS);
  ASSERT_OK(t.baton->fail("simulation diverged"));
  EXPECT_EQ(vk->wait(after, 1, kLongNs), VK_SUCCESS) << "the Vulkan wait was not released";
  EXPECT_GE(vk->value(t.vk), 5u);
  EXPECT_TRUE(sink.has(MessageSeverity::Warning, "VulkanFailurePolicy::Release")) << sink.dump();
  EXPECT_EQ(t.baton->wait(5, 0), Result::ErrorSemaphoreFailed);
}

Result failingStep(void*) { return Result::ErrorHostCallFailed; }

TEST_F(Interop, AFailedProducerFailsTheChainBehindIt) {
  // host queue (fails) -> shared timeline -> another host queue -> host; Vulkan, waiting on the
  // shared timeline, is released by the Release policy instead of hanging.
  Shared t = shared(0, VulkanFailurePolicy::Release);
  UniqueSemaphore last = plain("last");
  VkSemaphore after = vk->createTimeline();
  semaphores.push_back(after);
  ASSERT_EQ(vk->submit({{t.vk, 1}}, VK_NULL_HANDLE, {{after, 1}}), VK_SUCCESS);

  UniqueCommandBuffer consumer = commands();
  ASSERT_OK(consumer->end());
  CommandBuffer consumerCbs[] = {*consumer};
  SemaphoreValue wait{*t.baton, 1};
  SemaphoreValue signalLast{*last, 1};
  SubmitInfo second;
  second.waits = Span<const SemaphoreValue>(&wait, 1);
  second.commandBuffers = consumerCbs;
  second.signals = Span<const SemaphoreValue>(&signalLast, 1);
  ASSERT_OK(queue2.submit(second));

  UniqueCommandBuffer producer = commands();
  ASSERT_OK(producer->hostCall(&failingStep, nullptr));
  ASSERT_OK(producer->end());
  CommandBuffer producerCbs[] = {*producer};
  SemaphoreValue signal{*t.baton, 1};
  SubmitInfo first;
  first.commandBuffers = producerCbs;
  first.signals = Span<const SemaphoreValue>(&signal, 1);
  ASSERT_OK(queue.submit(first));

  EXPECT_EQ(last->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "hostCall")) << lastError();
  EXPECT_EQ(vk->wait(after, 1, kLongNs), VK_SUCCESS);
}

TEST_F(Interop, DestroyingAnImportWithWorkPendingFailsItAndStopsForwarding) {
  Shared t = shared();
  UniqueSemaphore gate = plain("gate");
  UniqueCommandBuffer cb = commands();
  ASSERT_OK(cb->end());
  CommandBuffer cbs[] = {*cb};
  SemaphoreValue wait{*gate, 1};
  SemaphoreValue signal{*t.baton, 1};
  SubmitInfo submit;
  submit.waits = Span<const SemaphoreValue>(&wait, 1);
  submit.commandBuffers = cbs;
  submit.signals = Span<const SemaphoreValue>(&signal, 1);
  ASSERT_OK(queue.submit(submit));

  Semaphore handle = t.baton.release();
  EXPECT_EQ(handle.destroy(), Result::ErrorObjectInUse);
  EXPECT_TRUE(containsText(lastError(), "pending work")) << lastError();
  // The held submission runs later; the import is gone, so nothing reaches Vulkan (and the
  // VkSemaphore may be destroyed right away).
  ASSERT_OK(gate->signal(1));
  ASSERT_OK(queue.waitIdle(kLongNs));
  EXPECT_EQ(vk->value(t.vk), 0u);
  EXPECT_EQ(handle.signal(2), Result::ErrorInvalidHandle);
}

// ---- misuse --------------------------------------------------------------------------------

TEST_F(Interop, BinaryOrUnstatedSemaphoreTypeIsRefused) {
  VkSemaphore binary = vk->createBinary();
  semaphores.push_back(binary);
  VulkanSemaphoreImportInfo info;
  info.vulkan = vk->view();
  info.semaphore = binary;
  Semaphore out;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "semaphoreType is not stated")) << lastError();
  info.semaphoreType = VK_SEMAPHORE_TYPE_BINARY;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorNotSupported);
  EXPECT_TRUE(containsText(lastError(), "only timeline semaphores")) << lastError();
  EXPECT_FALSE(out);
}

TEST_F(Interop, ASemaphoreCannotBeImportedTwice) {
  Shared t = shared();
  VulkanSemaphoreImportInfo info;
  info.vulkan = vk->view();
  info.semaphore = t.vk;
  info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  Semaphore out;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorInvalidState);
  EXPECT_TRUE(containsText(lastError(), "already imported")) << lastError();
}

TEST_F(Interop, FdOwnershipAndBadFds) {
  VkSemaphore s = vk->createTimeline();
  semaphores.push_back(s);
  VulkanSemaphoreImportInfo info;
  info.vulkan = vk->view();
  info.semaphore = s;
  info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  Semaphore out;
  info.fd = 1 << 20;  // far above any open descriptor
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "not an open file descriptor")) << lastError();
  info.fd = -7;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorInvalidArgument);

  // A valid fd belongs to baton after a successful import (bridged: closed at once).
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  info.fd = fd;
  UniqueSemaphore imported;
  ASSERT_OK(importVulkanSemaphore(*instance, info, imported.put()));
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "baton did not take the fd";
}

TEST_F(Interop, DevicesOfAnotherInstanceAreRefused) {
  MessageSink otherSink;
  UniqueInstance other;
  ASSERT_OK(createInstance(otherSink.instanceInfo(backendBit(BackendKind::Host)), other.put()));
  VkSemaphore s = vk->createTimeline();
  semaphores.push_back(s);
  VulkanSemaphoreImportInfo info;
  info.vulkan = vk->view();
  info.semaphore = s;
  info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  info.device = *device;  // of `instance`, not `other`
  Semaphore out;
  EXPECT_EQ(importVulkanSemaphore(*other, info, &out), Result::ErrorDeviceMismatch);
  EXPECT_TRUE(containsText(lastError(), "another instance")) << lastError();
}

TEST_F(Interop, NullAndMissingArguments) {
  VulkanSemaphoreImportInfo info;
  Semaphore out;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorInvalidArgument);
  info.vulkan = vk->view();
  info.semaphore = vk->createTimeline();
  semaphores.push_back(info.semaphore);
  info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, nullptr), Result::ErrorInvalidArgument);
  EXPECT_EQ(importVulkanSemaphore(Instance(), info, &out), Result::ErrorInvalidHandle);
  info.vulkan.device = VK_NULL_HANDLE;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "device is null")) << lastError();
  info.vulkan = vk->view();
  info.mode = static_cast<InteropModeRequest>(42);
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &out), Result::ErrorInvalidArgument);
  EXPECT_FALSE(out);
}

TEST_F(Interop, UuidMismatchIsReported) {
  // Needs a GPU backend device that is not the Vulkan device (e.g. CUDA next to lavapipe).
  auto id = baton::test::vkStruct<VkPhysicalDeviceIDProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES);
  auto props = baton::test::vkStruct<VkPhysicalDeviceProperties2>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &id);
  vkGetPhysicalDeviceProperties2(vk->physical, &props);
  MessageSink allSink;
  UniqueInstance all;
  ASSERT_OK(createInstance(allSink.instanceInfo(kAllBackends), all.put()));
  uint32_t count = 0;
  ASSERT_OK(all->enumeratePhysicalDevices(&count, nullptr));
  std::vector<PhysicalDevice> pds(count);
  ASSERT_OK(all->enumeratePhysicalDevices(&count, pds.data()));
  PhysicalDevice other;
  for (PhysicalDevice pd : pds) {
    PhysicalDeviceProperties p;
    ASSERT_OK(pd.getProperties(&p));
    if (p.backend != BackendKind::Host && std::memcmp(p.uuid, id.deviceUUID, VK_UUID_SIZE) != 0)
      other = pd;
  }
  if (!other) GTEST_SKIP() << "no CUDA/HIP device other than the Vulkan device " << vk->name;
  UniqueDevice gpuDevice;
  ASSERT_OK(all->createDevice(other, DeviceCreateInfo{}, gpuDevice.put()));
  VulkanSemaphoreImportInfo info;
  info.vulkan = vk->view();
  info.semaphore = vk->createTimeline();
  semaphores.push_back(info.semaphore);
  info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  info.device = *gpuDevice;
  info.mode = InteropModeRequest::Native;
  Semaphore out;
  EXPECT_EQ(importVulkanSemaphore(*all, info, &out), Result::ErrorDeviceMismatch);
  EXPECT_TRUE(containsText(lastError(), "UUID")) << lastError();
  info.mode = InteropModeRequest::Auto;  // bridges, and warns: probably the wrong device
  UniqueSemaphore bridged;
  ASSERT_OK(importVulkanSemaphore(*all, info, bridged.put()));
  EXPECT_TRUE(allSink.has(MessageSeverity::Warning, "UUID")) << allSink.dump();
}

// HIP imports no Vulkan timeline natively (ROCm 5.2 has no timeline external-semaphore handle
// type): a HIP device's import is bridged, says why, and a native request is refused. Then the
// bridge carries signals both ways through HIP queues, consumers submitted first. Runs where the
// HIP backend has a device: the fake driver in CI, the translation library on the H100.
TEST_F(Interop, HipSemaphoresAreBridgedAndSayWhy) {
  MessageSink hipSink;
  UniqueInstance all;
  ASSERT_OK(createInstance(hipSink.instanceInfo(kAllBackends), all.put()));
  uint32_t count = 0;
  ASSERT_OK(all->enumerateBackends(&count, nullptr));
  std::vector<BackendInfo> infos(count);
  ASSERT_OK(all->enumerateBackends(&count, infos.data()));
  for (const BackendInfo& b : infos) {
    if (b.kind != BackendKind::Hip) continue;
    if (!b.compiled || !b.available || b.deviceCount == 0) {
      if (baton_test::backendRequired(BackendKind::Hip))
        FAIL() << "hip is required here (BATON_TEST_REQUIRE_BACKENDS): " << b.reason;
      GTEST_SKIP() << "hip: " << (b.deviceCount == 0 && b.available ? "no devices: " : "")
                   << b.reason;
    }
  }
  ASSERT_OK(all->enumeratePhysicalDevices(&count, nullptr));
  std::vector<PhysicalDevice> pds(count);
  ASSERT_OK(all->enumeratePhysicalDevices(&count, pds.data()));
  PhysicalDevice hip;
  for (PhysicalDevice pd : pds) {
    PhysicalDeviceProperties p;
    ASSERT_OK(pd.getProperties(&p));
    if (p.backend == BackendKind::Hip && !hip) {
      hip = pd;
      EXPECT_FALSE(p.capabilities & kCapabilityExternalSemaphoreTimelineFd);
    }
  }
  ASSERT_TRUE(hip);
  UniqueDevice hipDevice;
  DeviceCreateInfo di;
  di.queueCount = 2;
  ASSERT_OK(all->createDevice(hip, di, hipDevice.put()));
  Queue q0, q1;
  ASSERT_OK(hipDevice->getQueue(0, &q0));
  ASSERT_OK(hipDevice->getQueue(1, &q1));

  VulkanSemaphoreImportInfo info;
  info.vulkan = vk->view();
  info.semaphore = vk->createTimeline();
  semaphores.push_back(info.semaphore);
  info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  info.device = *hipDevice;
  info.mode = InteropModeRequest::Native;
  // Refused with every reason: the HIP one, and where the HIP device is not the Vulkan device
  // (the fake driver next to lavapipe) the UUIDs too, which then decides the result code.
  Semaphore refused;
  Result r = importVulkanSemaphore(*all, info, &refused);
  EXPECT_TRUE(r == Result::ErrorNotSupported || r == Result::ErrorDeviceMismatch) << resultName(r);
  EXPECT_TRUE(containsText(lastError(), "no timeline external-semaphore handle type"))
      << lastError();
  info.mode = InteropModeRequest::Auto;
  UniqueSemaphore shared;
  ASSERT_OK(importVulkanSemaphore(*all, info, shared.put()));
  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanSemaphoreInterop(*shared, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Bridged);
  EXPECT_TRUE(containsText(ii.reason, "HIP (ROCm 5.2) has no timeline external-semaphore handle"))
      << ii.reason;

  // Vulkan -> HIP: a HIP queue waits for 1 before the host signals it through Vulkan; HIP ->
  // Vulkan: it signals 2, which a Vulkan host wait sees.
  UniqueSemaphore done;
  ASSERT_OK(all->createSemaphore(SemaphoreCreateInfo{}, done.put()));
  SemaphoreValue waitOne[] = {{*shared, 1}};
  SemaphoreValue signalTwo[] = {{*shared, 2}, {*done, 1}};
  SubmitInfo consumer;
  consumer.waits = waitOne;
  consumer.signals = signalTwo;
  ASSERT_OK(q1.submit(consumer));
  EXPECT_EQ(done->wait(1, 5 * kMs), Result::Timeout) << "ran before Vulkan signalled 1";
  ASSERT_EQ(vk->signal(info.semaphore, 1), VK_SUCCESS);
  ASSERT_OK(done->wait(1, kLongNs)) << hipSink.dump();
  EXPECT_EQ(vk->wait(info.semaphore, 2, kLongNs), VK_SUCCESS);
  EXPECT_GE(vk->value(info.semaphore), 2u);
  EXPECT_OK(hipDevice->waitIdle(kLongNs));
}

// ---- memory --------------------------------------------------------------------------------

TEST_F(Interop, MemoryImportSharesTheMapping) {
  constexpr uint32_t kCount = 1024;
  VulkanBuffer vb = hostBuffer(kCount);
  UniqueBuffer b = import(vb);
  uint64_t size = 0;
  ASSERT_OK(b->getSize(&size));
  EXPECT_EQ(size, kCount * 4u);
  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanMemoryInterop(*b, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Bridged);
  EXPECT_EQ(ii.memory, vb.memory);

  // Host queue copy from a plain baton buffer into the imported one; Vulkan then scales it.
  UniqueBuffer src;
  BufferCreateInfo bci;
  bci.size = kCount * 4;
  ASSERT_OK(device->createBuffer(bci, src.put()));
  void* sp = nullptr;
  ASSERT_OK(src->map(&sp));
  for (uint32_t i = 0; i < kCount; ++i) static_cast<uint32_t*>(sp)[i] = i;
  Shared t = shared();
  UniqueCommandBuffer cb = commands();
  ASSERT_OK(cb->copyBuffer(*src, 0, *b, 0, kCount * 4));
  ASSERT_OK(cb->end());
  CommandBuffer cbs[] = {*cb};
  SemaphoreValue signal{*t.baton, 1};
  SubmitInfo submit;
  submit.commandBuffers = cbs;
  submit.signals = Span<const SemaphoreValue>(&signal, 1);
  VkCommandBuffer cmd = vk->recordDispatch(pipeline, vb, kCount, 2);
  ASSERT_EQ(vk->submit({{t.vk, 1}}, cmd, {{t.vk, 2}}), VK_SUCCESS);
  ASSERT_OK(queue.submit(submit));
  ASSERT_OK(t.baton->wait(2, kLongNs));
  void* p = nullptr;
  ASSERT_OK(b->map(&p));
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(static_cast<uint32_t*>(p)[i], i * 3 + 2);
}

TEST_F(Interop, MemoryImportUsesAnExistingMapping) {
  VulkanBuffer vb = hostBuffer(64);
  void* mine = nullptr;
  ASSERT_EQ(vkMapMemory(vk->device, vb.memory, 0, VK_WHOLE_SIZE, 0, &mine), VK_SUCCESS);
  VulkanMemoryImportInfo info = vk->importInfo(vb);
  info.hostPointer = mine;
  UniqueBuffer b;
  ASSERT_OK(importVulkanMemory(*device, info, b.put()));
  void* p = nullptr;
  ASSERT_OK(b->map(&p));
  EXPECT_EQ(p, mine);
  b.reset();
  vkUnmapMemory(vk->device, vb.memory);  // still ours: baton did not map it
}

TEST_F(Interop, MemoryImportBadInput) {
  VulkanBuffer vb = hostBuffer(64);
  Buffer out;
  VulkanMemoryImportInfo info = vk->importInfo(vb);
  info.size = 0;
  EXPECT_EQ(importVulkanMemory(*device, info, &out), Result::ErrorInvalidArgument);
  info = vk->importInfo(vb);
  info.offset = info.allocationSize;
  EXPECT_EQ(importVulkanMemory(*device, info, &out), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "outside the allocation")) << lastError();
  info = vk->importInfo(vb);
  info.memoryTypeIndex = 77;
  EXPECT_EQ(importVulkanMemory(*device, info, &out), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "memoryTypeIndex")) << lastError();
  info = vk->importInfo(vb);
  info.memory = VK_NULL_HANDLE;
  EXPECT_EQ(importVulkanMemory(*device, info, &out), Result::ErrorInvalidArgument);
  info = vk->importInfo(vb);
  info.fd = 1 << 20;
  EXPECT_EQ(importVulkanMemory(*device, info, &out), Result::ErrorInvalidArgument);
  info = vk->importInfo(vb);
  info.mode = InteropModeRequest::Native;
  EXPECT_EQ(importVulkanMemory(*device, info, &out), Result::ErrorNotSupported);
  EXPECT_TRUE(containsText(lastError(), "cannot import external memory")) << lastError();
  EXPECT_FALSE(out);
  UniqueBuffer plainBuffer;
  BufferCreateInfo bci;
  bci.size = 64;
  ASSERT_OK(device->createBuffer(bci, plainBuffer.put()));
  VulkanInteropInfo ii;
  EXPECT_EQ(getVulkanMemoryInterop(*plainBuffer, &ii), Result::ErrorInvalidArgument);
}

// ---- lifetimes and leaks -------------------------------------------------------------------

TEST_F(Interop, NoFdOrThreadLeaks) {
  // Warm up once: Vulkan drivers start their own threads and open files lazily.
  {
    Shared t = shared();
    ASSERT_OK(t.baton->signal(1));
  }
  const size_t fds = openFds();
  const size_t threads = threadCount();
  for (int i = 0; i < 25; ++i) {
    VulkanTimelineCreateInfo info;
    info.vulkan = vk->view();
    info.device = *device;
    VulkanTimeline t;
    ASSERT_OK(createVulkanTimeline(*instance, info, &t));
    EXPECT_EQ(threadCount(), threads + 1) << "one watcher thread per import";
    ASSERT_OK(t.baton.signal(1));
    ASSERT_EQ(vk->signal(t.vulkan, 2), VK_SUCCESS);
    ASSERT_OK(t.baton.wait(2, kLongNs));
    VulkanBuffer vb = vk->createHostBuffer(256);
    UniqueBuffer b;
    ASSERT_OK(importVulkanMemory(*device, vk->importInfo(vb), b.put()));
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    VulkanSemaphoreImportInfo second;
    second.vulkan = vk->view();
    second.semaphore = vk->createTimeline();
    second.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    second.fd = fd;
    UniqueSemaphore s2;
    ASSERT_OK(importVulkanSemaphore(*instance, second, s2.put()));
    s2.reset();
    vk->destroy(second.semaphore);
    b.reset();
    vk->destroy(vb);
    EXPECT_OK(destroyVulkanTimeline(vk->view(), t));
  }
  EXPECT_TRUE(threadCountReaches(threads)) << threadCount() << " threads, expected " << threads;
  EXPECT_EQ(openFds(), fds);
}

TEST_F(Interop, DestroyingTheInstanceDetachesItsImports) {
  Shared t = shared();
  const size_t threads = threadCount();
  Semaphore leaked = t.baton.release();
  device.reset();
  EXPECT_EQ(instance.release().destroy(), Result::ErrorObjectInUse);
  // The bridge stopped with the import: the VkSemaphore is the application's again.
  EXPECT_TRUE(threadCountReaches(threads - 1 - 2))
      << "bridge and host queue threads should be gone: " << threadCount();
  EXPECT_EQ(vk->signal(t.vk, 1), VK_SUCCESS);
  EXPECT_EQ(leaked.signal(2), Result::ErrorInvalidHandle);
}

}  // namespace
