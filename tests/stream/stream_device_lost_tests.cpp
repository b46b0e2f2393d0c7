// Device loss on the GPU stream backends, written once for CUDA and HIP (docs/architecture.md,
// 'Failure and device loss'). A sticky fault poisons the context for the rest of the process, so
// these tests have their own executable per backend (baton-cuda-device-lost, baton-hip-device-lost:
// this file and the backend's hooks), and the real fault runs last (gtest runs tests in the order
// they are defined).
//
// What must hold: every semaphore with a pending signal on the device fails with DeviceLost,
// host waiters return promptly, submissions held on the device fail, later submissions and
// waitIdle return ErrorDeviceLost, and destroying the device does not hang.
#include <thread>

#include "stream_test_support.hpp"

namespace baton_test {
namespace {

using baton::MemoryKind;
using baton::Result;

// How long "promptly" may take: detection is one event query or one wake of the completion
// thread; the bound only guards against hangs on a loaded machine.
constexpr double kPromptSeconds = 5.0;

class StreamDeviceLostTest : public StreamBackendTest {};

// A sticky error reported by the driver (injected at the wrapper, so the real context stays
// healthy) marks the device lost, through the completion thread.
TEST_P(StreamDeviceLostTest, InjectedStickyErrorMarksTheDeviceLost) {
  auto s = makeSemaphore("injected-sticky");
  hooks().clearFaults();
  ASSERT_TRUE(hooks().injectFault(hooks().eventRecordApi, Fault::IllegalAddress));
  ASSERT_OK(submit(queue(0), {}, {}, {{*s, 1}}));
  auto start = Clock::now();
  EXPECT_EQ(s->wait(1, kLongNs), Result::ErrorDeviceLost) << lastError();
  EXPECT_LT(secondsSince(start), kPromptSeconds);
  // The fault fired on the queue's issuing thread, before the signal failed.
  EXPECT_EQ(hooks().faultsFired(), 1u);
  hooks().clearFaults();
  EXPECT_TRUE(containsText(lastError(), hooks().illegalAddressName)) << lastError();
  // markLost runs on the completion thread; later submissions see it.
  start = Clock::now();
  Result r = Result::Success;
  while (secondsSince(start) < kPromptSeconds) {
    r = submit(queue(1), {}, {}, {});
    if (r == Result::ErrorDeviceLost) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(r, Result::ErrorDeviceLost);
  EXPECT_EQ(device_->waitIdle(kLongNs), Result::ErrorDeviceLost);
}

// The same error at a graph command buffer's launch: the submission's signals and the device
// are lost, held work fails, nothing hangs.
TEST_P(StreamDeviceLostTest, InjectedStickyErrorAtAGraphLaunchMarksTheDeviceLost) {
  auto s = makeSemaphore("graph-lost"), held = makeSemaphore("held"),
       never = makeSemaphore("never");
  baton::BufferCreateInfo info;
  info.size = 256;
  info.memory = MemoryKind::HostPinned;
  baton::UniqueBuffer out;
  ASSERT_OK(device_->createBuffer(info, out.put()));
  baton::CommandBufferCreateInfo graph;
  graph.usage = baton::CommandBufferUsage::Graph;
  auto cb = makeCommands(
      *device_, [&](baton::CommandBuffer c) { EXPECT_OK(c.fillBuffer(*out, 0, 256, 9u)); }, graph);
  ASSERT_OK(submit(queue(1), {{*never, 1}}, {*cb}, {{*held, 1}}));
  hooks().clearFaults();
  ASSERT_TRUE(hooks().injectFault(hooks().graphLaunchApi, Fault::IllegalAddress));
  ASSERT_OK(submit(queue(0), {}, {*cb}, {{*s, 1}}));
  auto start = Clock::now();
  EXPECT_EQ(s->wait(1, kLongNs), Result::ErrorDeviceLost) << lastError();
  EXPECT_LT(secondsSince(start), kPromptSeconds);
  EXPECT_EQ(hooks().faultsFired(), 1u);
  hooks().clearFaults();
  EXPECT_TRUE(containsText(lastError(), hooks().graphLaunchApi)) << lastError();
  EXPECT_TRUE(containsText(lastError(), hooks().illegalAddressName)) << lastError();
  Result r = held->wait(1, kLongNs);
  EXPECT_TRUE(r == Result::ErrorDeviceLost || r == Result::ErrorSemaphoreFailed)
      << baton::resultName(r) << ": " << lastError();
  start = Clock::now();
  while (secondsSince(start) < kPromptSeconds) {
    r = submit(queue(2), {}, {*cb}, {});
    if (r == Result::ErrorDeviceLost) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(r, Result::ErrorDeviceLost);
}

// A kernel that writes to an invalid address (PTX, launched through a native callback).
TEST_P(StreamDeviceLostTest, IllegalAddressLosesTheDeviceAndNothingHangs) {
  BATON_REQUIRE_KERNELS();
  auto faulted = makeSemaphore("faulted"), behind = makeSemaphore("behind"),
       held = makeSemaphore("held"), hostOnly = makeSemaphore("host-only"),
       downstream = makeSemaphore("downstream");
  KernelCall bad;
  bad.hooks = &hooks();
  bad.function = kernels().badWrite;
  bad.argument = 0x10;  // never mapped
  // Capturable: in the -graph registrations the kernel is captured into a graph command buffer,
  // and the device is lost during the graph's launch.
  auto crash = makeCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.native(&KernelCall::native, &bad, baton::kNativeCapturable));
  });
  // Held on a host semaphore that is never signalled: must fail when the device is lost.
  ASSERT_OK(submit(queue(2), {{*hostOnly, 1}}, {}, {{*held, 1}}));
  ASSERT_OK(submit(queue(0), {}, {*crash}, {{*faulted, 1}}));
  // Behind the crash on the same queue, and waiting GPU-side on another queue.
  ASSERT_OK(submit(queue(0), {}, {}, {{*behind, 1}}));
  ASSERT_OK(submit(queue(1), {{*faulted, 1}}, {}, {{*downstream, 1}}));

  auto start = Clock::now();
  EXPECT_EQ(faulted->wait(1, kLongNs), Result::ErrorDeviceLost) << lastError();
  double took = secondsSince(start);
  std::printf("host waiter returned %s after %.1f ms: %s\n", "ErrorDeviceLost", took * 1e3,
              lastError().c_str());
  EXPECT_LT(took, kPromptSeconds);
  EXPECT_TRUE(containsText(lastError(), hooks().illegalAddressName) ||
              containsText(lastError(), hooks().launchFailedName))
      << lastError();

  for (baton::Semaphore s : {*behind, *downstream, *held}) {
    start = Clock::now();
    Result r = s.wait(1, kLongNs);
    EXPECT_TRUE(r == Result::ErrorDeviceLost || r == Result::ErrorSemaphoreFailed)
        << baton::resultName(r) << ": " << lastError();
    EXPECT_LT(secondsSince(start), kPromptSeconds);
  }
  baton::SemaphoreValue all[] = {{*faulted, 1}, {*behind, 1}};
  EXPECT_EQ(device_->waitSemaphores(all, baton::WaitMode::All, kLongNs), Result::ErrorDeviceLost);
  EXPECT_EQ(submit(queue(3), {}, {}, {}), Result::ErrorDeviceLost);
  baton::UniqueBuffer b;
  baton::BufferCreateInfo info;
  info.size = 64;
  EXPECT_EQ(device_->createBuffer(info, b.put()), Result::ErrorDeviceLost);
  EXPECT_EQ(device_->waitIdle(kLongNs), Result::ErrorDeviceLost);
  // An unrelated semaphore is untouched and still usable from the host.
  auto unrelated = makeSemaphore("unrelated");
  EXPECT_OK(unrelated->signal(3));
  // TearDown destroys the device: must not hang.
}

BATON_INSTANTIATE_FOR_STREAM_BACKENDS(StreamDeviceLostTest);

}  // namespace
}  // namespace baton_test
