// The validation layer's own mistakes, shown with plain Vulkan and no baton. Each test makes calls
// that are valid by the Vulkan specification, checks that the Khronos validation layer reports them
// anyway, and says why the report is wrong. They are the evidence behind the one filter rule in
// vulkan_validation.hpp and the layer settings in vk_layer_settings.txt.
//
// They need the layer: without BATON_VULKAN_VALIDATION they skip. A layer that no longer makes
// the mistake makes them fail with a note, so that the filter or the setting they justify can
// go. Seen with Debian 12's vulkan-validationlayers 1.3.239.
#define BATON_VULKAN_CONTEXT_NO_BATON
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "vulkan_context.hpp"

namespace {

using baton::test::pendingSignalAlreadyReached;
using baton::test::ValidationMessage;
using baton::test::VulkanContext;
using baton::test::VulkanValidation;

constexpr uint64_t kSliceNs = 10000000;  // 10 ms, as baton's bridge waits
constexpr uint64_t kLongNs = 20000000000ull;
constexpr const char* k03259 = "VUID-VkSemaphoreSignalInfo-value-03259";
constexpr const char* kStateTimeout = "UNASSIGNED-VkSemaphore-state-timeout";

class LayerRepro : public ::testing::Test {
 protected:
  void SetUp() override {
    if (VulkanValidation::requested() == VulkanValidation::Mode::Off)
      GTEST_SKIP() << "BATON_VULKAN_VALIDATION is not set: these tests reproduce the layer's "
                      "messages and need it";
    vk = std::make_unique<VulkanContext>();
    if (!vk->ok()) GTEST_SKIP() << "no usable Vulkan device: " << vk->skip;
    // Nothing is filtered or fails the test on its own here: each test counts what the layer
    // said and judges it.
    vk->validation.filters.clear();
    vk->validation.label = "layer reproducer (errors expected): ";
    // The calls race as an application's would: no serialization of host timeline calls.
    baton::test::TimelineObserver::get().serialize = false;
    vk->validation.onError = [](const ValidationMessage& m) {
      std::printf("  the layer says: %s\n", m.text.c_str());
    };
  }
  // A timeline created exportable and exported as OPAQUE_FD (*fd, the caller's); skips where the
  // device has no VK_KHR_external_semaphore_fd.
  void exportedTimeline(VkSemaphore* s, int* fd) {
    if (!vk->externalSemaphoreFd)
      GTEST_SKIP() << vk->name << " has no VK_KHR_external_semaphore_fd (lavapipe): runs on GPUs";
    *s = vk->createExportableTimeline(0);
    ASSERT_NE(*s, VK_NULL_HANDLE) << vk->name << " cannot export timelines as OPAQUE_FD";
    *fd = vk->exportFd(*s);
    ASSERT_GE(*fd, 0);
  }
  std::vector<ValidationMessage> withId(const char* id) const {
    std::vector<ValidationMessage> out;
    for (const ValidationMessage& m : vk->validation.seen())
      if (m.id == id) out.push_back(m);
    return out;
  }

  std::unique_ptr<VulkanContext> vk;
};

// A thread waits in 10 ms slices for value 6 of a timeline that only host signals move (no queue
// work exists in this program). The main thread signals 7, which ends that wait, and reads the
// value back: 7. It then signals 9. Valid: 9 is above the current value (03258), and there is no
// pending signal operation at all (03259): vkSignalSemaphore's signal happened when it returned.
// Layer 1.3.239 reports "value (9) must be less than value of any pending signal operation (7)":
// its record of the host signal of 7 stays pending when a wait for a lower value raced it. This is
// baton's bridge (a thread waiting for the next value in slices) next to an application's host
// signals, as Interop.TheBridgeWaitsOnVulkanOnlyWhileSomethingInBatonWaits does.
TEST_F(LayerRepro, HostWaitSatisfiedByAHigherHostSignalLeavesAPendingSignal) {
  VkSemaphore s = vk->createTimeline(0);
  ASSERT_EQ(vk->signal(s, 5), VK_SUCCESS);
  std::atomic<bool> waiting{false};
  std::thread waiter([&] {
    waiting = true;
    while (vk->wait(s, 6, kSliceNs) == VK_TIMEOUT) {
    }
    vk->value(s);
  });
  while (!waiting) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // in a slice
  ASSERT_EQ(vk->signal(s, 7), VK_SUCCESS);
  waiter.join();
  ASSERT_EQ(vk->value(s), 7u);
  EXPECT_TRUE(withId(k03259).empty()) << "reported before the signal it is about";
  ASSERT_EQ(vk->signal(s, 9), VK_SUCCESS);
  EXPECT_EQ(vk->value(s), 9u);
  vk->destroy(s);

  const std::vector<ValidationMessage> reported = withId(k03259);
  ASSERT_EQ(reported.size(), 1u) << "layer 1.3.239 reports the signal of 9 once; this layer "
                                    "does not (any more?): the 03259 filter may be unneeded";
  EXPECT_NE(reported[0].text.find("value (9)"), std::string::npos) << reported[0].text;
  EXPECT_NE(reported[0].text.find("pending signal operation (7)"), std::string::npos)
      << reported[0].text;
  EXPECT_EQ(vk->validation.messages(), 1) << "and nothing else";
}

// The same mistake when the completion of a queue's signal comes to light through another handle
// of the same payload, as with a timeline exported to CUDA (native interop): a queue submission
// waits for 1 and signals 2 on `s`; the host signals 1 through `imported` (an OPAQUE_FD import of
// `s` on the same device), waits for 2 through it and reads 2 back from `s` itself. The signal
// of 2 has executed, yet the host signal of 3 on `s` is reported against a pending signal (2).
TEST_F(LayerRepro, SignalObservedThroughAnImportLeavesItPending) {
  VkSemaphore s = VK_NULL_HANDLE;
  int fd = -1;
  exportedTimeline(&s, &fd);
  if (IsSkipped() || HasFatalFailure()) return;
  VkSemaphore imported = vk->createTimeline(0);
  auto importFd = reinterpret_cast<PFN_vkImportSemaphoreFdKHR>(
      vkGetDeviceProcAddr(vk->device, "vkImportSemaphoreFdKHR"));
  ASSERT_NE(importFd, nullptr);
  auto info = baton::test::vkStruct<VkImportSemaphoreFdInfoKHR>(
      VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR);
  info.semaphore = imported;
  info.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  info.fd = fd;
  ASSERT_EQ(importFd(vk->device, &info), VK_SUCCESS);  // the import owns fd now

  ASSERT_EQ(vk->submit({{s, 1}}, VK_NULL_HANDLE, {{s, 2}}), VK_SUCCESS);
  ASSERT_EQ(vk->signal(imported, 1), VK_SUCCESS);
  ASSERT_EQ(vk->wait(imported, 2, kLongNs), VK_SUCCESS);
  ASSERT_EQ(vk->value(s), 2u) << "the queue's signal of 2 executed";
  ASSERT_EQ(vk->signal(s, 3), VK_SUCCESS);
  EXPECT_EQ(vk->value(s), 3u);
  vkQueueWaitIdle(vk->queue);
  vk->destroy(imported);
  vk->destroy(s);

  const std::vector<ValidationMessage> reported = withId(k03259);
  ASSERT_FALSE(reported.empty()) << "this layer does not report the host signal of 3: the "
                                    "03259 filter may be unneeded for imported timelines";
  EXPECT_NE(reported[0].text.find("pending signal operation (2)"), std::string::npos)
      << reported[0].text;
}

// The smallest form of the native-interop reports (NativeInterop.* on the H100: 408 of them, all
// "value (N) must be less than value of any pending signal operation (N-1)"): a timeline created
// exportable and exported as OPAQUE_FD, so that the layer treats it as external. Reading its
// value (0) and then signalling 1 from the host is valid: there is no signal operation at all,
// pending or not. The layer reports "value (1) must be less than value of any pending signal
// operation (0)": its record of the external read is itself a signal operation that stays pending.
// baton reads a shared timeline's value before each host signal it forwards (VUID 03258 forbids
// signalling a value the semaphore already has).
TEST_F(LayerRepro, ReadingAnExportedTimelineLeavesAPendingSignal) {
  VkSemaphore s = VK_NULL_HANDLE;
  int fd = -1;
  exportedTimeline(&s, &fd);
  if (IsSkipped() || HasFatalFailure()) return;
  close(fd);  // exported is enough: the layer no longer tracks the payload as its own
  ASSERT_EQ(vk->value(s), 0u);
  ASSERT_EQ(vk->signal(s, 1), VK_SUCCESS);
  ASSERT_EQ(vk->value(s), 1u);
  ASSERT_EQ(vk->signal(s, 2), VK_SUCCESS);
  vk->destroy(s);

  const std::vector<ValidationMessage> reported = withId(k03259);
  ASSERT_FALSE(reported.empty()) << "this layer does not report it: the 03259 filter may be "
                                    "unneeded for exported timelines";
  EXPECT_NE(reported[0].text.find("value (1)"), std::string::npos) << reported[0].text;
  EXPECT_NE(reported[0].text.find("pending signal operation (0)"), std::string::npos)
      << reported[0].text;
  for (const ValidationMessage& m : reported)
    std::printf("  reported: %s\n", m.text.substr(m.text.find("vkSignalSemaphore")).c_str());
}

// The rule that filters the two reports above matches them, and only because of what was
// observed: the same message about a semaphore never seen at that value is not filtered.
TEST_F(LayerRepro, TheFilterRuleNeedsTheObservedValue) {
  VkSemaphore s = vk->createTimeline(0);
  ASSERT_EQ(vk->signal(s, 7), VK_SUCCESS);
  ValidationMessage m;
  m.severity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  m.id = k03259;
  m.objects.push_back(reinterpret_cast<uint64_t>(s));
  m.text =
      "vkSignalSemaphore(): value (9) must be less than value of any pending signal "
      "operation (7) for semaphore";
  EXPECT_TRUE(pendingSignalAlreadyReached(m)) << "7 was reached";
  m.text =
      "vkSignalSemaphore(): value (9) must be less than value of any pending signal "
      "operation (8) for semaphore";
  EXPECT_FALSE(pendingSignalAlreadyReached(m)) << "8 was never seen: may be pending";
  m.objects[0] = 0x1234;
  m.text =
      "vkSignalSemaphore(): value (9) must be less than value of any pending signal "
      "operation (7) for semaphore";
  EXPECT_FALSE(pendingSignalAlreadyReached(m)) << "another semaphore";
  vk->destroy(s);
}

// Three threads, as a timeline bridged between baton and Vulkan has them: `vulkan` waits for odd
// values and signals even ones; the test's thread signals odd values and waits for even ones by
// asking `watcher`, which waits in 10 ms slices for the next value and reads the counter back, as
// baton's bridge thread does. Valid throughout: host signals only, each above the current value.
//
// Layer 1.3.239 stalls here: a vkWaitSemaphores that returns because another thread's
// vkSignalSemaphore reached the driver waits, holding a lock, for that signal's bookkeeping, which
// needs the lock; after its 10 s timeout it reports UNASSIGNED-VkSemaphore-state-timeout ("most
// likely a validation bug"). Core checks do so under coarse locking (its default), not under
// fine-grained locking (vk_layer_settings.txt); synchronization validation does so under either.
// meson runs this test three ways (BATON_REPRO_LOCKING names the settings file's locking):
//   core + fine-grained locking           no message, no stall (the setting the tests use);
//   core + coarse locking                 stalls;
//   core + synchronization, fine-grained  stalls (why the harness serializes host timeline calls
//                                         under synchronization validation, TimelineObserver).
TEST_F(LayerRepro, HostWaitsThatRaceHostSignalsStallUnlessLockedFinely) {
  const char* locking = std::getenv("BATON_REPRO_LOCKING");
  const bool coarse = locking && !std::strcmp(locking, "coarse");
  const bool sync = vk->validation.mode() == VulkanValidation::Mode::Sync;
  const bool stallExpected = coarse || sync;
  VkSemaphore s = vk->createTimeline(0);
  // Each round is a race the layer loses most of the time; on a loaded machine it can take
  // hundreds of rounds. The rounds go on until the first stall, 20000 rounds or (without a stall
  // expected) 20 s: a round takes about 0.1 ms on lavapipe, 9 ms on the NVIDIA driver (whose host
  // waits notice a host signal that late).
  constexpr uint64_t kRounds = 20000;
  const double limit = stallExpected ? 100.0 : 20.0;
  std::atomic<uint64_t> seen{0};
  std::atomic<bool> stop{false};
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const auto start = Clock::now();
  std::thread vulkan([&] {
    for (uint64_t i = 0; i < kRounds; ++i) {
      if (vk->wait(s, 2 * i + 1, kLongNs) != VK_SUCCESS || stop) return;
      vk->signal(s, 2 * i + 2);
    }
  });
  std::thread watcher([&] {
    while (!stop) {
      if (vk->wait(s, seen.load() + 1, kSliceNs) != VK_SUCCESS) continue;
      seen = std::max(seen.load(), vk->value(s));
    }
  });
  uint64_t rounds = 0;
  double longest = 0;  // the longest round, in seconds: a stall is the layer's 10 s timeout
  for (; rounds < kRounds && since(start) < limit; ++rounds) {
    if (vk->validation.count(kStateTimeout) > 0) break;  // once is enough
    const auto round = Clock::now();
    ASSERT_EQ(vk->signal(s, 2 * rounds + 1), VK_SUCCESS);
    while (seen.load() < 2 * rounds + 2) std::this_thread::yield();
    longest = std::max(longest, since(round));
  }
  stop = true;
  if (rounds < kRounds) vk->signal(s, 2 * rounds + 1);  // ends `vulkan`'s wait; it then stops
  vulkan.join();
  watcher.join();
  vk->destroy(s);
  std::printf("%llu rounds in %.2f s, the longest %.3f s: %s, %s locking\n",
              static_cast<unsigned long long>(rounds), since(start), longest,
              VulkanValidation::name(vk->validation.mode()), coarse ? "coarse" : "fine-grained");
  if (stallExpected) {
    EXPECT_GE(vk->validation.count(kStateTimeout), 1)
        << "this layer does not stall here: the setting or serialization it justifies may go";
    EXPECT_GE(longest, 9.0) << "the layer's timeout is 10 s";
  } else {
    EXPECT_EQ(vk->validation.messages(), 0);
    EXPECT_LT(longest, 9.0);
  }
}

}  // namespace
